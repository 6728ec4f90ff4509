/**
 * Ensembles (spec §5.6) on a real server: a 2-step chain, a diamond whose branches run
 * concurrently, an ensemble of ensembles, a decoupled step (the ensemble is then decoupled), a
 * failing step, cancellation reaching the steps, statistics per composing model and of the
 * ensemble, load-time validation with Triton's wording, and composing models loaded with the
 * ensemble in explicit mode.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inferAndCollect } from '../../host/src/dataplane/inference.js';
import { emptyRequestInit } from '../../host/src/dataplane/request-parameters.js';
import { SINGLE_USER, type Tensor } from '../../host/src/contract/types.js';
import type { RunningServer } from '../../host/src/server.js';
import { ManualClock } from '../helpers/clock.js';
import { startTestServer } from '../helpers/servers.js';
import { getJson, postJson, tempRepo, type TempRepo } from '../helpers/repo.js';
import { until } from '../helpers/wait.js';
import { ensembleConfig, opsConfig, OpsResolver, opsSeen, pipeConfig } from './ops-backend.js';

let repo: TempRepo;
let server: RunningServer;
/** The time of the ops models' `delay_ms`: a slow step holds its instance until the test moves it. */
const opsClock = new ManualClock();

const model = (name: string, config: string) => {
  repo.addModel(name, `name: "${name}"\n${config}`);
};

const intsTensor = (name: string, values: number[]): Tensor => ({
  name,
  datatype: 'INT32',
  shape: [values.length],
  data: new Uint8Array(Int32Array.from(values).buffer),
});
const ints = (t: Tensor | undefined) => Array.from(new Int32Array(t!.data.slice().buffer));
const infer = (name: string, x: number[]) =>
  postJson(`${server.httpUrl}/v2/models/${name}/infer`, { inputs: [{ name: 'X', datatype: 'INT32', shape: [x.length], data: x }] });
const stats = async (name: string) => (await getJson(`${server.httpUrl}/v2/models/${name}/stats`)).json.model_stats[0];

beforeAll(async () => {
  repo = tempRepo();
  model('inc', opsConfig('inc'));
  model('double', opsConfig('double'));
  model('add', opsConfig('add'));
  model('fail', opsConfig('fail'));
  model('split', opsConfig('split'));
  model('slow_inc', opsConfig('inc', { delayMs: 250 }));
  model('slow_double', opsConfig('double', { delayMs: 250 }));
  model('very_slow', opsConfig('inc', { delayMs: 600 }));
  model('stats_inc', opsConfig('inc'));
  model('stats_double', opsConfig('double'));
  model('fp32_inc', opsConfig('inc', { datatype: 'TYPE_FP32' }));
  // X -> inc -> T -> double -> Y
  model('chain', pipeConfig('inc', 'double'));
  // X -> slow_inc -> T1, X -> slow_double -> T2, add(T1, T2) -> Y
  model(
    'diamond',
    ensembleConfig(
      ['X'],
      ['Y'],
      [
        { model: 'add', inputs: { A: 'T1', B: 'T2' }, outputs: { OUT: 'Y' } },
        { model: 'slow_inc', inputs: { IN: 'X' }, outputs: { OUT: 'T1' } },
        { model: 'slow_double', inputs: { IN: 'X' }, outputs: { OUT: 'T2' } },
      ],
    ),
  );
  // X -> chain (an ensemble) -> T -> inc -> Y
  model(
    'outer',
    ensembleConfig(
      ['X'],
      ['Y'],
      [
        { model: 'chain', inputs: { X: 'X' }, outputs: { Y: 'T' } },
        { model: 'inc', inputs: { IN: 'T' }, outputs: { OUT: 'Y' } },
      ],
    ),
  );
  // X -> split (decoupled) -> T -> inc -> Y: one response per element
  model('stream', pipeConfig('split', 'inc'));
  // The same stream through a slow step (2 instances), with and without max_inflight_requests.
  model('slow_inc_free', opsConfig('inc', { delayMs: 60 }));
  model('slow_inc_limited', opsConfig('inc', { delayMs: 60 }));
  model('stream_free', pipeConfig('split', 'slow_inc_free'));
  model('stream_limited', pipeConfig('split', 'slow_inc_limited', 1));
  model('broken', pipeConfig('inc', 'fail'));
  model('cancellable', ensembleConfig(['X'], ['Y'], [{ model: 'very_slow', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]));
  model('stats_chain', pipeConfig('stats_inc', 'stats_double'));
  // Invalid ones (loaded by the tests).
  model('missing_step', ensembleConfig(['X'], ['Y'], [{ model: 'no_such_model', inputs: { IN: 'X' }, outputs: { OUT: 'Y' } }]));
  model('bad_type', pipeConfig('inc', 'fp32_inc'));
  model('bad_input', ensembleConfig(['X'], ['Y'], [{ model: 'inc', inputs: { NOPE: 'X' }, outputs: { OUT: 'Y' } }]));
  model('cycle_a', ensembleConfig(['X'], ['Y'], [{ model: 'cycle_b', inputs: { X: 'X' }, outputs: { Y: 'Y' } }]));
  model('cycle_b', ensembleConfig(['X'], ['Y'], [{ model: 'cycle_a', inputs: { X: 'X' }, outputs: { Y: 'Y' } }]));
  model(
    'mixed_decoupled',
    ensembleConfig(
      ['X'],
      ['Y'],
      [
        { model: 'split', inputs: { IN: 'X' }, outputs: { OUT: 'P' } },
        { model: 'add', inputs: { A: 'P', B: 'X' }, outputs: { OUT: 'Z' } },
        { model: 'inc', inputs: { IN: 'Z' }, outputs: { OUT: 'Y' } },
      ],
    ),
  );
  server = await startTestServer(repo, {
    // Only the ensembles: their composing models are loaded with them (Triton's explicit mode).
    loadModels: ['chain', 'diamond', 'outer', 'stream', 'stream_free', 'stream_limited', 'broken', 'cancellable', 'stats_chain'],
    backendResolvers: [new OpsResolver(opsClock)],
  });
});
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

describe('execution', () => {
  it('a 2-step chain over HTTP: Y = (X + 1) * 2', async () => {
    const r = await infer('chain', [1, 2, 3]);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ model_name: 'chain', model_version: '1', outputs: [{ name: 'Y', datatype: 'INT32', shape: [3], data: [4, 6, 8] }] });
  });

  it('composing models were loaded with the ensembles (explicit mode)', async () => {
    const index = (await postJson(`${server.httpUrl}/v2/repository/index`, { ready: true })).json as { name: string }[];
    const ready = index.map((e) => e.name);
    expect(ready).toEqual(expect.arrayContaining(['inc', 'double', 'add', 'fail', 'split', 'slow_inc', 'slow_double', 'chain', 'outer']));
    expect(ready).not.toContain('fp32_inc');
  });

  it('a diamond: the two independent steps run concurrently, then the join', async () => {
    opsSeen.runs.length = 0;
    const pending = infer('diamond', [1, 2]);
    // Both branches hold an instance at the same time; the join waits for them.
    await until(() => opsClock.pending === 2, { what: 'both branches executing' });
    expect(opsSeen.runs).toEqual([]);
    opsClock.advance(250);
    const r = await pending;
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].data).toEqual([1 + 1 + 2, 2 + 1 + 4]);
    const a = opsSeen.runs.find((x) => x.model === 'slow_inc')!;
    const b = opsSeen.runs.find((x) => x.model === 'slow_double')!;
    const join = opsSeen.runs.find((x) => x.model === 'add')!;
    // Each branch started before the other ended; the join started after both.
    expect(a.start).toBeLessThan(b.end);
    expect(b.start).toBeLessThan(a.end);
    expect(join.start).toBeGreaterThanOrEqual(Math.max(a.end, b.end) - 1);
  });

  it('an ensemble of ensembles', async () => {
    const r = await infer('outer', [5]);
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].data).toEqual([13]);
  });

  it('a decoupled step: each of its responses flows downstream; the ensemble is decoupled', async () => {
    const cfg = (await getJson(`${server.httpUrl}/v2/models/stream/config`)).json;
    expect(cfg.model_transaction_policy).toEqual({ decoupled: true });
    expect((await getJson(`${server.httpUrl}/v2/models/chain/config`)).json.model_transaction_policy).toEqual({ decoupled: false });
    const init = { ...emptyRequestInit('stream', -1), inputs: [intsTensor('X', [10, 20, 30])] };
    const { responses } = await inferAndCollect(server.api, SINGLE_USER, 'stream', -1, init);
    expect(responses.map((r) => ints(r.outputs[0]))).toEqual([[11], [21], [31]]);
    // Like any decoupled model, /infer refuses it (as repeat_wasm is refused).
    const r = await infer('stream', [1]);
    expect(r.status).toBe(501);
  });

  it("max_inflight_requests bounds the requests in flight at a step: a decoupled step's responses wait for the slow step", async () => {
    const overlaps = (model: string) => {
      const runs = opsSeen.runs.filter((x) => x.model === model).sort((a, b) => a.start - b.start);
      expect(runs).toHaveLength(4);
      return runs.slice(1).filter((r, k) => r.start < runs[k]!.end - 1).length;
    };
    for (const [name, wantOverlap] of [
      ['stream_limited', false],
      ['stream_free', true],
    ] as const) {
      opsSeen.runs.length = 0;
      const init = { ...emptyRequestInit(name, -1), inputs: [intsTensor('X', [1, 2, 3, 4])] };
      let done = false;
      const collected = inferAndCollect(server.api, SINGLE_USER, name, -1, init).finally(() => (done = true));
      // Each round: the slow step's requests in flight at once (2 instances; 1 with the limit) finish together.
      for (let round = 0; !done; round++) {
        await until(() => done || opsClock.pending === (wantOverlap ? 2 : 1), { what: `${name}: round ${round} of the slow step` });
        opsClock.advance(60);
      }
      const { responses } = await collected;
      expect(
        responses.map((r) => ints(r.outputs[0])),
        name,
      ).toEqual([[2], [3], [4], [5]]);
      // Limited to 1: one slow request at a time although the slow model has 2 instances.
      if (wantOverlap) expect(overlaps(`slow_inc_free`), name).toBeGreaterThan(0);
      else expect(overlaps(`slow_inc_limited`), name).toBe(0);
    }
    expect((await getJson(`${server.httpUrl}/v2/models/stream_limited/config`)).json.ensemble_scheduling.max_inflight_requests).toBe(1);
  });

  it("a failing step fails the ensemble request with the step's error", async () => {
    const r = await infer('broken', [1]);
    expect(r.status).toBe(500);
    // Triton's EnsembleContext::FinishEnsemble names the ensemble (tritonserver 2.51 answered a
    // step's error response so: "in ensemble 'ens_err', <the step's message>").
    expect(r.json.error).toBe("in ensemble 'broken', step failed on purpose");
  });

  it('cancellation reaches the step in flight; the request ends CANCELLED', async () => {
    opsSeen.runs.length = 0;
    const ac = new AbortController();
    const init = { ...emptyRequestInit('cancellable', -1), inputs: [intsTensor('X', [1])] };
    const p = inferAndCollect(server.api, SINGLE_USER, 'cancellable', -1, init, ac.signal);
    await until(() => opsSeen.held.size === 1, { what: 'very_slow executing' });
    const [step] = opsSeen.held;
    ac.abort();
    await until(() => step!.cancelled, { what: 'the cancellation reaching the step' });
    opsClock.advance(600);
    await expect(p).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(opsSeen.runs.find((x) => x.model === 'very_slow')?.cancelled).toBe(true);
  });

  it('statistics: every step counts as an inference of its model; the ensemble counts its requests', async () => {
    for (let i = 0; i < 3; i++) expect((await infer('stats_chain', [i])).status).toBe(200);
    const inc = await stats('stats_inc');
    const dbl = await stats('stats_double');
    const ens = await stats('stats_chain');
    expect(inc.inference_count).toBe(3);
    expect(inc.execution_count).toBe(3);
    expect(inc.inference_stats.success.count).toBe(3);
    expect(dbl.inference_count).toBe(3);
    expect(dbl.inference_stats.success.count).toBe(3);
    expect(ens.inference_count).toBe(3);
    expect(ens.execution_count).toBe(3);
    expect(ens.inference_stats.success.count).toBe(3);
    // The ensemble's queue and compute durations are the sums of its composing requests'.
    const sum = (k: string) => Number(inc.inference_stats[k].ns) + Number(dbl.inference_stats[k].ns);
    expect(Number(ens.inference_stats.compute_infer.ns)).toBe(sum('compute_infer'));
    expect(Number(ens.inference_stats.queue.ns)).toBe(sum('queue'));
  });
});

describe('validation at load (Triton wording)', () => {
  const load = (name: string) => postJson(`${server.httpUrl}/v2/repository/models/${name}/load`, {});

  it.each([
    ['a step naming a model that does not exist', 'missing_step', 'ensemble missing_step contains models that are not available or ambiguous: no_such_model'],
    [
      'inconsistent data types between steps',
      'bad_type',
      'in ensemble bad_type, ensemble tensor T: inconsistent data type: TYPE_INT32 is inferred from model inc while TYPE_FP32 is inferred from model fp32_inc',
    ],
    ['a map to an input the model does not have', 'bad_input', 'in ensemble bad_input, ensemble tensor X is mapping to non-existing input NOPE in model inc'],
    ['ensembles that depend on each other fail instead of hanging', 'cycle_a', /circular dependency between ensembles/],
    [
      'a step mixing a decoupled model’s responses with other tensors',
      'mixed_decoupled',
      "in ensemble mixed_decoupled, step of model 'add' receives inputs originated from different decoupled models",
    ],
  ] as const)('%s', async (_, name, error) => {
    const r = await load(name);
    expect(r.status).toBe(400);
    // a string: the error contains it
    expect(r.json.error).toMatch(error);
  });
});
