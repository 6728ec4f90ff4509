/**
 * Tenant identity in every shared key (DESIGN "Multi-tenancy"), end to end over HTTP and gRPC:
 * - sequence correlation ids are per tenant: on an operator sequence model shared with two
 *   tenants, B's 4242 is not A's 4242 (direct and oldest strategies; integer and string ids), and
 *   B's errors read exactly as for a sequence nobody started;
 * - client shared-memory keys are `/<tenant>.<rest>`: no tenant id is a prefix of another's, so
 *   `acme` cannot register (read, write or block) a key of `acme_corp`;
 * - a tenant's own model hides a shared operator model of the same name only while it is loaded
 *   (or loading / failed), not after it was unloaded.
 */
import { status } from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unaryCall } from '../helpers/grpc.js';
import { JsBackendResolver, echoConfig, sequenceConfig } from '../helpers/js-backend.js';
import { fetchAs, PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { sequenceStep, type SequenceStep, type SequenceStepArgs } from '../helpers/sequence-step.js';

const TOKENS = testTokens('a', 'b', 'acme', 'acme_corp');
type Who = keyof typeof TOKENS;

/** An accumulator (implicit state ACC_IN / ACC_OUT, START and READY controls) with the sequence `strategy`. */
const seqConfig = (name: string, strategy: string) =>
  sequenceConfig(
    name,
    `
  ${strategy}
  max_sequence_idle_microseconds: 60000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] }
  ]
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
    { mode: 'accumulate' },
  );

const shmFiles: string[] = [];

const suite = tenantServerPerSuite(async () => {
  await ensureBuilt();
  const repo = tempRepo([]);
  repo.addModel('seq_direct', seqConfig('seq_direct', 'direct { }'));
  repo.addModel('seq_oldest', seqConfig('seq_oldest', 'oldest { max_candidate_sequences: 4 }'));
  repo.addModel('m', `name: "m"\n${echoConfig()}`);
  const shared = ['seq_direct', 'seq_oldest', 'm'];
  const tenants = [
    { id: 'a', token: TOKENS.a, shared_models: shared },
    { id: 'b', token: TOKENS.b, shared_models: shared },
    { id: 'acme', token: TOKENS.acme },
    { id: 'acme_corp', token: TOKENS.acme_corp },
  ];
  return { repo, tenants, opts: { loadModels: ['*'], grpcPort: 0, allowClientShm: true, backendResolvers: [new JsBackendResolver()] } };
});
afterAll(() => {
  for (const f of shmFiles) rmSync(f, { force: true });
});

const call = (who: Who, method: 'GET' | 'POST', path: string, body?: unknown) => fetchAs(TOKENS[who], method, `${suite.server.httpUrl}${path}`, body);

/** One sequence step over `proto` as `who`: the running sum, or the error text (with the HTTP status / gRPC code). */
const step = (proto: 'http' | 'grpc', who: Who, ...args: SequenceStepArgs): Promise<SequenceStep> =>
  sequenceStep({ httpUrl: suite.server.httpUrl, client: suite.client }, proto, TOKENS[who], ...args);

describe('sequence correlation ids are scoped by tenant', () => {
  const cases: ['http' | 'grpc', string, number | string][] = [];
  for (const proto of ['http', 'grpc'] as const)
    for (const model of ['seq_direct', 'seq_oldest']) for (const id of [4242, 'order-4242']) cases.push([proto, model, id]);
  let n = 0;

  it.each(cases)("%s %s id %s: B can neither read, write, end nor reset A's sequence", async (proto, model, baseId) => {
    // A distinct id per case (the server is shared by the cases), same shape as the attack's.
    const id = typeof baseId === 'number' ? baseId + 100 * n++ : `${baseId}-${n++}`;
    const unknown = {
      error: `inference request for sequence ${id} to model '${model}' must specify the START flag on the first request of the sequence`,
      code: proto === 'http' ? 400 : status.INVALID_ARGUMENT,
    };
    expect(await step(proto, 'a', model, id, 10, { start: true })).toEqual({ value: 10 });
    // B continues "4242" without START: exactly the answer for a sequence nobody started.
    expect(await step(proto, 'b', model, id, 1)).toEqual(unknown);
    // B ends it: the same refusal; A's sequence is untouched.
    expect(await step(proto, 'b', model, id, 1, { end: true })).toEqual(unknown);
    expect(await step(proto, 'a', model, id, 5)).toEqual({ value: 15 });
    // B starts its own "4242": a new sequence of B's, which neither resets nor reads A's state.
    expect(await step(proto, 'b', model, id, 100, { start: true })).toEqual({ value: 100 });
    expect(await step(proto, 'a', model, id, 1)).toEqual({ value: 16 });
    expect(await step(proto, 'b', model, id, 2)).toEqual({ value: 102 });
    // A ends its sequence; B's goes on, then ends.
    expect(await step(proto, 'a', model, id, 1, { end: true })).toEqual({ value: 17 });
    expect(await step(proto, 'b', model, id, 3)).toEqual({ value: 105 });
    expect(await step(proto, 'b', model, id, 1, { end: true })).toEqual({ value: 106 });
    expect(await step(proto, 'a', model, id, 1)).toEqual(unknown);
  });
});

describe('client shared-memory keys: /<tenant>.<rest>, no tenant id a prefix of another', () => {
  const tag = randomBytes(6).toString('hex');
  /** A 64-byte shm object (under /dev/shm) holding `fill`. */
  const shmObject = (name: string, fill: number) => {
    const p = join('/dev/shm', name);
    writeFileSync(p, Buffer.alloc(64, fill));
    shmFiles.push(p);
    return `/${name}`;
  };
  const registerHttp = (who: Who, name: string, key: string) =>
    call(who, 'POST', `/v2/systemsharedmemory/region/${name}/register`, { key, offset: 0, byte_size: 64 });
  const registerGrpc = (who: Who, name: string, key: string) =>
    unaryCall(suite.client, 'SystemSharedMemoryRegister', { name, key, offset: 0, byte_size: 64 }, TOKENS[who]);

  it("acme cannot register acme_corp's keys, old-style or new (HTTP and gRPC)", async () => {
    const corpOld = shmObject(`acme_corp_secret-${tag}`, 7);
    const corpNew = shmObject(`acme_corp.secret-${tag}`, 7);
    for (const key of [corpOld, corpNew]) {
      const h = await registerHttp('acme', 'steal', key);
      expect(h.status, key).toBe(403);
      expect(h.json.error).toBe("tenant 'acme' may register only shared memory keys starting with '/acme.'");
      const g = await registerGrpc('acme', 'steal', key);
      expect(g.err?.code, key).toBe(status.PERMISSION_DENIED);
      expect(g.err?.details).toBe("tenant 'acme' may register only shared memory keys starting with '/acme.'");
    }
    expect((await call('acme', 'GET', '/v2/systemsharedmemory/status')).json).toEqual([]);
    // acme_corp registers its own key: nothing of acme's blocks it.
    expect((await registerHttp('acme_corp', 'secret', corpNew)).status).toBe(200);
    expect((await registerGrpc('acme_corp', 'secret2', corpNew)).err).toBeUndefined();
    expect((await call('acme_corp', 'GET', '/v2/systemsharedmemory/status')).json.map((r: any) => r.key)).toEqual([corpNew, corpNew]);
    expect((await call('acme_corp', 'POST', '/v2/systemsharedmemory/unregister', {})).status).toBe(200);
  });

  it('each tenant registers its own /<tenant>.<rest> keys; the underscore form is refused', async () => {
    const mine = shmObject(`acme.input-${tag}`, 1);
    const oldStyle = shmObject(`acme_input-${tag}`, 1);
    expect((await registerHttp('acme', 'in', mine)).status).toBe(200);
    expect((await registerHttp('acme', 'in_old', oldStyle)).status).toBe(403);
    expect((await registerGrpc('acme', 'in_old', oldStyle)).err?.code).toBe(status.PERMISSION_DENIED);
    expect((await registerGrpc('acme_corp', 'theirs', mine)).err?.code).toBe(status.PERMISSION_DENIED);
    expect((await call('acme', 'POST', '/v2/systemsharedmemory/unregister', {})).status).toBe(200);
  });
});

describe("a tenant's unloaded model no longer hides the shared model of the same name", () => {
  const identity = readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm')).toString('base64');
  const wasmConfig = JSON.stringify({
    backend: 'wasm',
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  });
  const echo = { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4], data: [1, 2, 3, 4] }] };

  it('HTTP and gRPC see the operator model again after the unload', async () => {
    expect((await call('a', 'GET', '/v2/models/m/config')).json.backend).toBe('jstest');
    const up = await call('a', 'POST', '/v2/repository/models/m/load', { parameters: { config: wasmConfig, 'file:1/model.wasm': identity } });
    expect(up.status, up.text).toBe(200);
    expect((await call('a', 'GET', '/v2/models/m/config')).json.backend).toBe('wasm');
    expect(
      (await call('a', 'POST', '/v2/models/m/infer', { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [3] }] })).json.outputs[0].data,
    ).toEqual([3]);
    expect((await call('a', 'POST', '/v2/repository/models/m/unload', {})).status).toBe(200);
    // The own model is unloaded: the shared one answers again, on every path.
    const cfg = await call('a', 'GET', '/v2/models/m/config');
    expect(cfg.status, cfg.text).toBe(200);
    expect(cfg.json.backend).toBe('jstest');
    expect((await call('a', 'GET', '/v2/models/m/ready')).status).toBe(200);
    const inf = await call('a', 'POST', '/v2/models/m/infer', echo);
    expect(inf.status, inf.text).toBe(200);
    expect(inf.json.outputs[0].data).toEqual([1, 2, 3, 4]);
    const g = await unaryCall(suite.client, 'ModelConfig', { name: 'm' }, TOKENS.a);
    expect(g.err).toBeUndefined();
    expect(g.res.config.backend).toBe('jstest');
    // Loading it again (from the tenant's stored upload) makes it the tenant's m again.
    expect((await call('a', 'POST', '/v2/repository/models/m/load', {})).status).toBe(200);
    expect((await call('a', 'GET', '/v2/models/m/config')).json.backend).toBe('wasm');
    expect((await call('a', 'POST', '/v2/repository/models/m/unload', {})).status).toBe(200);
  });
});
