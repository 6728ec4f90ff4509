/**
 * Sandboxed BLS (`warden:backend/inference`, wit/inference.wit; contract/bls.ts) end to end, on
 * both engines: a tenant uploads the sample caller (sample-backends/wasm/c/bls.c) over the load API
 * and it calls the operator's `simple` (shared with the tenant) and post-processes the answer, or
 * streams from the decoupled `repeat_native`; then the attacks: an ungranted model, another
 * tenant's model, an operator model not shared with the tenant, a grant of itself, a fan-out bomb,
 * a callee that outlives the caller's deadline (its call is cancelled), and a decoupled callee
 * through `infer`.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { opsConfig, OpsResolver, opsSeen } from '../../ensemble/ops-backend.js';
import { fetchAs, tempRepo } from '../../helpers/repo.js';
import { until } from '../../helpers/wait.js';
import { serverPerSuite, tenantServerPerSuite, testTokens } from '../../helpers/servers.js';
import * as h from './helpers.js';

const TOKENS = testTokens('acme', 'beta', 'gamma', 'admin');
const CALLER = () => readFileSync(join(h.REPO, 'bls_wasm', '1', 'model.wasm')).toString('base64');

const io = (names: string[], dims: number[]) => names.map((name) => ({ name, data_type: 'TYPE_INT32', dims }));
const params = (p: Record<string, string>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, { string_value: v }]));
/** The config of an uploaded caller of `simple`-shaped models: `grants` are `bls_model:` names. */
const callerConfig = (engine: string, grants: string[], extra: Record<string, string> = {}) =>
  JSON.stringify({
    backend: 'wasm',
    max_batch_size: 0,
    input: io(['INPUT0', 'INPUT1'], [1, 16]),
    output: io(['OUTPUT0', 'OUTPUT1'], [1, 16]),
    parameters: params({ engine, execute_timeout_ms: '5000', ...Object.fromEntries(grants.map((g) => [`bls_model:${g}`, '*'])), ...extra }),
  });
/** The decoupled caller of `repeat_native`-shaped models. */
const streamerConfig = (engine: string, grants: string[], timeoutMs: number) =>
  JSON.stringify({
    backend: 'wasm',
    max_batch_size: 0,
    model_transaction_policy: { decoupled: true },
    input: [
      { name: 'IN', data_type: 'TYPE_INT32', dims: [-1] },
      { name: 'DELAY', data_type: 'TYPE_UINT32', dims: [-1] },
      { name: 'WAIT', data_type: 'TYPE_UINT32', dims: [1] },
    ],
    output: [
      { name: 'OUT', data_type: 'TYPE_INT32', dims: [1] },
      { name: 'IDX', data_type: 'TYPE_UINT32', dims: [1] },
    ],
    parameters: params({
      engine,
      execute_timeout_ms: String(timeoutMs),
      callee: grants[0]!,
      ...Object.fromEntries(grants.map((g) => [`bls_model:${g}`, '*'])),
    }),
  });

const INPUT0 = Array.from({ length: 16 }, (_, i) => i + 1);
const INPUT1 = Array.from({ length: 16 }, () => 1);
const simpleBody = (parameters: Record<string, unknown> = {}) => ({
  parameters,
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: INPUT0 },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: INPUT1 },
  ],
});

beforeAll(() => h.ensureBuilt());

describe.each(h.ENGINES)('sandboxed BLS on %s', (engine) => {
  const suite = tenantServerPerSuite(async () => {
    const repo = tempRepo(['simple']);
    // the operator's decoupled repeat (native), not shared with acme
    repo.write('repeat_native/config.pbtxt', readFileSync(join(h.REPO, 'repeat_native', 'config.pbtxt')));
    mkdirSync(join(repo.path, 'repeat_native', '1'), { recursive: true });
    // an in-process test backend that holds each request 5 s and records whether it was cancelled
    repo.addModel('slow', `name: "slow"\n${opsConfig('inc', { delayMs: 5000 })}`);
    return {
      repo,
      tenants: [
        { id: 'acme', token: TOKENS.acme, shared_models: ['simple'] },
        { id: 'beta', token: TOKENS.beta, shared_models: ['simple', 'repeat_native', 'slow'] },
        // one request in flight at a time: a call made while serving one is over the quota
        { id: 'gamma', token: TOKENS.gamma, shared_models: ['simple'], quotas: { max_inflight: 1 } },
        { id: 'admin', token: TOKENS.admin, role: 'admin' },
      ],
      opts: { loadModels: ['*'], separateUploads: true, backendResolvers: [new OpsResolver()] },
    };
  }, 120_000);

  const as = (who: keyof typeof TOKENS, method: 'GET' | 'POST', path: string, body?: unknown) =>
    fetchAs(TOKENS[who], method, `${suite.server.httpUrl}${path}`, body);
  const upload = (who: keyof typeof TOKENS, name: string, config: string) =>
    as(who, 'POST', `/v2/repository/models/${name}/load`, { parameters: { config, 'file:1/model.wasm': CALLER() } });
  const infer = (who: keyof typeof TOKENS, model: string, parameters: Record<string, unknown> = {}) =>
    as(who, 'POST', `/v2/models/${model}/infer`, simpleBody(parameters));
  const simpleCount = async () => {
    const r = await as('admin', 'GET', '/v2/models/simple/stats');
    return Number(r.json.model_stats[0].inference_count);
  };

  beforeAll(async () => {
    expect((await upload('acme', 'caller', callerConfig(engine, ['simple']))).status).toBe(200);
    // beta's own model, which acme must never reach
    expect((await upload('beta', 'secret', callerConfig(engine, ['simple']))).status).toBe(200);
  }, 120_000);

  it("calls the granted `simple` and post-processes its answer; simple's statistics count the call", async () => {
    const before = await simpleCount();
    const r = await infer('acme', 'caller');
    expect(r.status, r.text).toBe(200);
    const out = Object.fromEntries(r.json.outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
    expect(out.OUTPUT0).toEqual(INPUT0.map((x) => 2 * x));
    expect(out.OUTPUT1).toEqual(INPUT1.map((x) => 2 * x));
    expect(await simpleCount()).toBe(before + 1);
  });

  it('several calls in flight from one execute (started before the first next)', async () => {
    const before = await simpleCount();
    const r = await infer('acme', 'caller', { calls: 8 });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual(INPUT0.map((x) => 2 * x));
    expect(await simpleCount()).toBe(before + 8);
  });

  it('a model that is not granted, another tenant’s model and an operator model not shared look exactly like a missing model', async () => {
    const missing = await infer('acme', 'caller', { callee: 'no_such_model' });
    expect(missing.status).toBe(404);
    expect(missing.json.error).toBe("Request for unknown model: 'no_such_model' is not found");
    for (const callee of ['secret', 'repeat_native', 'caller']) {
      const r = await infer('acme', 'caller', { callee });
      expect(r.status, callee).toBe(404);
      expect(r.json.error, callee).toBe(`Request for unknown model: '${callee}' is not found`);
    }
  });

  it("a grant of another tenant's model, of an unshared operator model, or of itself refuses the load", async () => {
    for (const grant of ['secret', 'repeat_native', 'no_such_model']) {
      const r = await upload('acme', 'greedy', callerConfig(engine, [grant]));
      expect(r.status, grant).toBe(400);
      expect(r.json.error, grant).toBe(`model 'greedy': granted model '${grant}' cannot be called: no such model is available to this model`);
    }
    const self = await upload('acme', 'narcissus', callerConfig(engine, ['narcissus']));
    expect(self.status).toBe(400);
    expect(self.json.error).toMatch(/circular dependency/);
    const bad = await upload('acme', 'malformed', callerConfig(engine, [], { 'bls_model:simple': 'latest' }));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/parameter 'bls_model:simple' must be '\*' or comma-separated version numbers/);
  });

  it("the calls are the owner's requests: its max_inflight quota counts them", async () => {
    expect((await upload('gamma', 'caller', callerConfig(engine, ['simple']))).status).toBe(200);
    const r = await infer('gamma', 'caller');
    expect(r.status).toBe(503);
    expect(r.json.error).toBe("tenant 'gamma' has 1 inference requests in flight, its quota (max_inflight)");
    // the same call made by the client directly is within the quota
    expect((await as('gamma', 'POST', '/v2/models/simple/infer', simpleBody())).status).toBe(200);
  });

  it('a fan-out bomb stops at the in-flight limit, and the instance serves again', async () => {
    const r = await infer('acme', 'caller', { calls: 5000 });
    expect(r.status).toBe(503);
    expect(r.json.error).toBe('too many model calls in flight in this execute (at most 16)');
    const again = await infer('acme', 'caller');
    expect(again.status, again.text).toBe(200);
  });

  it('a decoupled callee through infer is refused with a clear error', async () => {
    const r = await infer('beta', 'secret', { callee: 'repeat_native' });
    // beta may reach repeat_native (shared) but `secret` does not grant it
    expect(r.status).toBe(404);
    expect((await upload('beta', 'wrong_way', callerConfig(engine, ['simple', 'repeat_native'], { callee: 'repeat_native' }))).status).toBe(200);
    const w = await infer('beta', 'wrong_way');
    expect(w.status).toBe(400);
    expect(w.json.error).toBe("model 'repeat_native' is decoupled: call it with start and next, not infer");
  });

  it('streams every response of a decoupled callee', async () => {
    expect((await upload('beta', 'streamer', streamerConfig(engine, ['repeat_native'], 10_000))).status).toBe(200);
    const res = await fetch(`${suite.server.httpUrl}/v2/models/streamer/generate_stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.beta}` },
      body: JSON.stringify({ IN: [4, 5, 6], DELAY: [0, 5, 5], WAIT: [0] }),
    });
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.replace(/^data: /, '')) as Record<string, unknown>);
    expect(events.map((e) => [e.OUT, e.IDX])).toEqual([
      [4, 0],
      [5, 1],
      [6, 2],
    ]);
  });

  it("a callee that outlives the caller's deadline: the caller fails at its deadline and its call in flight is cancelled", async () => {
    const config = JSON.stringify({
      backend: 'wasm',
      max_batch_size: 0,
      input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [-1] }],
      output: io(['OUTPUT0', 'OUTPUT1'], [-1]),
      parameters: params({ engine, execute_timeout_ms: '400', callee: 'slow', 'bls_model:slow': '*' }),
    });
    expect((await upload('beta', 'impatient', config)).status).toBe(200);
    opsSeen.held.clear();
    const r = await as('beta', 'POST', '/v2/models/impatient/infer', { inputs: [{ name: 'IN', datatype: 'INT32', shape: [2], data: [1, 2] }] });
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/deadline/);
    // `slow` holds its request for 5 s: the deadline kill cancelled it meanwhile (the flag its backend checks)
    const held = [...opsSeen.held];
    expect(held).toHaveLength(1);
    await until(() => held[0]!.cancelled, { within: 2000, what: 'the call cancelled' });
  });
});

describe('recursion through an ensemble', () => {
  const ensemble = (step: string) => ({
    platform: 'ensemble',
    max_batch_size: 0,
    input: io(['INPUT0', 'INPUT1'], [1, 16]),
    output: io(['OUTPUT0', 'OUTPUT1'], [1, 16]),
    ensemble_scheduling: {
      step: [
        {
          model_name: step,
          model_version: -1,
          input_map: { INPUT0: 'INPUT0', INPUT1: 'INPUT1' },
          output_map: { OUTPUT0: 'OUTPUT0', OUTPUT1: 'OUTPUT1' },
        },
      ],
    },
  });
  const suite = serverPerSuite(async () => ({ repo: tempRepo(['simple']), opts: { loadModels: ['simple'] } }), 120_000);
  const post = (path: string, body: unknown) => fetchAs(undefined, 'POST', `${suite.server.httpUrl}${path}`, body);
  // an ensemble's upload holds an empty version folder's one file
  const load = (name: string, config: unknown, component?: string) =>
    post(`/v2/repository/models/${name}/load`, {
      parameters: {
        config: typeof config === 'string' ? config : JSON.stringify(config),
        ...(component ? { 'file:1/model.wasm': component } : { 'file:1/.keep': '' }),
      },
    });

  beforeAll(async () => {
    // outer -> ens -> inner -> simple
    expect((await load('inner', callerConfig('v8', ['simple']), CALLER())).status).toBe(200);
    const e = await load('ens', ensemble('inner'));
    expect(e.status, e.text).toBe(200);
    expect((await load('outer', callerConfig('v8', ['ens'], { callee: 'ens' }), CALLER())).status).toBe(200);
  }, 120_000);

  it("a chain through an ensemble serves; once the ensemble's step is the caller itself, the call is refused, not waited on", async () => {
    const ok = await post('/v2/models/outer/infer', simpleBody());
    expect(ok.status, ok.text).toBe(200);
    // inner doubles the inputs, outer post-processes that again: (2a + 2b, 2a - 2b)
    const out = Object.fromEntries(ok.json.outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
    expect(out.OUTPUT0).toEqual(INPUT0.map((x, i) => 2 * x + 2 * INPUT1[i]!));
    expect(out.OUTPUT1).toEqual(INPUT0.map((x, i) => 2 * x - 2 * INPUT1[i]!));
    // the ensemble now runs `outer` itself: outer -> ens -> outer
    const reload = await load('ens', ensemble('outer'));
    expect(reload.status, reload.text).toBe(200);
    const r = await post('/v2/models/outer/infer', simpleBody());
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/call to model 'outer' refused: the model is already on this call chain \(recursion\)/);
  });
});
