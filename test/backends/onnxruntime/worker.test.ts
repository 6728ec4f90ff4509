/**
 * The onnxruntime backend's session workers (host/src/backends/onnxruntime/session-worker.ts):
 * ONNX Runtime computes off the event loop, instances of one model compute at the same time, and
 * errors, a worker's death, cancellation and unload behave. The model is a MatMul chain whose run
 * time the test picks by the input's size (test/helpers/onnx-model.ts).
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxInstance, OnnxRuntimeResolver } from '../../../host/src/backends/onnxruntime/index.js';
import type { RunPlacement } from '../../../host/src/backends/onnxruntime/placement.js';
import type { TritonError } from '../../../host/src/contract/errors.js';
import { inferAndCollect } from '../../../host/src/dataplane/inference.js';
import { emptyRequestInit } from '../../../host/src/dataplane/request-parameters.js';
import { SINGLE_USER, type BackendModel, type ExecuteTimings, type InstanceSpec, type ModelLoadContext } from '../../../host/src/contract/types.js';
import { request, tensor } from '../../helpers/backend-request.js';
import { config, collector } from '../../helpers/model-version.js';
import { matmulChainConfig, matmulChainModel } from '../../../bench/onnx-model.js';
import { perTestServers } from '../../helpers/servers.js';
import { postJson, tempRepo } from '../../helpers/repo.js';
import { sleep } from '../../helpers/wait.js';

const STEPS = 8;
/** N for a run of roughly 100-400 ms on this machine's cores (8 MatMuls of N×N FP32). */
const SLOW_N = 1024;

/** The N×N identity matrix (the chain's output is the identity again). */
function identity(n: number): Float32Array {
  const a = new Float32Array(n * n);
  for (let i = 0; i < n; i++) a[i * n + i] = 1;
  return a;
}

function mmRequest(n: number) {
  return request('mm', [tensor('INPUT0', 'FP32', [n, n], identity(n))], ['OUTPUT0']);
}

const SPEC: InstanceSpec = { name: 'mm_0', groupName: 'mm', kind: 'KIND_CPU', deviceId: 0 } as InstanceSpec;

let dir: string;
let model: BackendModel;
const resolver = new OnnxRuntimeResolver();

/** Loads `mm` (the MatMul chain, `instances` in the config) through the onnxruntime backend. */
async function loadMm(instances: number, parameters: Record<string, string> = {}, via: OnnxRuntimeResolver = resolver): Promise<BackendModel> {
  const cfg = config(matmulChainConfig('mm', instances, parameters), 'mm');
  const backend = (await via.resolve({ config: cfg } as never))!;
  const ctx = {
    key: { namespace: '', name: 'mm' },
    name: 'mm',
    version: 1,
    origin: { kind: 'repository', repository: dir },
    server: undefined as never,
    modelPath: join(dir, 'mm'),
    versionPath: join(dir, 'mm', '1'),
    config: cfg,
    autoCompleteConfig: true,
    logger: pino({ level: 'silent' }),
  } as ModelLoadContext;
  return backend.loadModel(ctx);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'warden-ort-'));
  mkdirSync(join(dir, 'mm', '1'), { recursive: true });
  writeFileSync(join(dir, 'mm', '1', 'model.onnx'), matmulChainModel(STEPS));
  model = await loadMm(2);
});

afterAll(async () => {
  await model?.finalize();
  await resolver.finalizeAll(); // waits for the sessions still being released
  rmSync(dir, { recursive: true, force: true });
});

async function run(inst: OnnxInstance, n: number) {
  const { sender, done } = collector();
  const timings = (await inst.execute([mmRequest(n)], [sender])) as ExecuteTimings;
  const outcome = await done;
  return { timings, outcome };
}

function expectIdentity(data: Uint8Array, n: number): void {
  const f = new Float32Array(data.buffer, data.byteOffset, n * n);
  expect(f.length).toBe(n * n);
  for (let i = 0; i < n; i += Math.max(1, n >> 3)) {
    expect(f[i * n + i]).toBe(1);
    expect(f[i * n + ((i + 1) % n)]).toBe(0);
  }
}

/**
 * A SLOW_N identity run on `inst`, checked, with how many times the event loop turned while it
 * ran: a few turns if it computed on the loop, thousands if the loop was free (no clock read).
 */
async function slowRun(inst: OnnxInstance) {
  let turns = 0;
  let running = true;
  const turn = (): void => {
    if (!running) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  const { outcome } = await run(inst, SLOW_N);
  running = false;
  expectIdentity(outcome.response!.outputs[0]!.data, SLOW_N);
  return { outcome, turns };
}

/** Loop turns during a SLOW_N run beyond which it did not compute on the loop. */
const FREE_LOOP_TURNS = 50;

describe('onnxruntime session workers', () => {
  it('a long ONNX Runtime run does not block the event loop', async () => {
    const inst = (await model.createInstance(SPEC)) as OnnxInstance;
    try {
      await run(inst, 32); // warm-up
      const onWorker = inst.runs.worker;
      const { outcome, turns } = await slowRun(inst);
      expect(outcome.response!.outputs[0]!.shape).toEqual([SLOW_N, SLOW_N]);
      expect(inst.runs.worker).toBe(onWorker + 1);
      // on the JS thread the loop would stall for the whole run; here it keeps turning
      expect(turns).toBeGreaterThan(FREE_LOOP_TURNS);
    } finally {
      await inst.finalize();
    }
  });

  it('two instances of one model compute at the same time', async () => {
    const a = (await model.createInstance(SPEC)) as OnnxInstance;
    const b = (await model.createInstance(SPEC)) as OnnxInstance;
    try {
      await Promise.all([run(a, 32), run(b, 32)]);
      const [ra, rb] = await Promise.all([run(a, SLOW_N), run(b, SLOW_N)]);
      expectIdentity(ra.outcome.response!.outputs[0]!.data, SLOW_N);
      expectIdentity(rb.outcome.response!.outputs[0]!.data, SLOW_N);
      // compute intervals (measured in each worker on the same monotonic clock) overlap
      const [sa, ea, sb, eb] = [ra.timings.computeStartNs, ra.timings.computeEndNs, rb.timings.computeStartNs, rb.timings.computeEndNs];
      expect(sa! < eb! && sb! < ea!, `a ${sa}-${ea}, b ${sb}-${eb}`).toBe(true);
    } finally {
      await Promise.all([a.finalize(), b.finalize()]);
    }
  });

  it('runs cheaper than a thread hop move inline; a large input on the same instance still runs on the worker', async () => {
    // a generous inline_run_max_us, so that preemption on a busy machine cannot make the tiny runs look slow
    const generous = await loadMm(1, { inline_run_max_us: '50000' });
    const inst = (await generous.createInstance(SPEC)) as OnnxInstance;
    try {
      for (let i = 0; i < 30 && inst.runs.inline < 3; i++) {
        const { outcome } = await run(inst, 4);
        expectIdentity(outcome.response!.outputs[0]!.data, 4);
        await sleep(2); // the inline session opens in the background
      }
      expect(inst.runs.inline, JSON.stringify(inst.runs)).toBeGreaterThanOrEqual(3);
      const onWorker = inst.runs.worker;
      const { turns } = await slowRun(inst);
      expect(inst.runs.worker).toBe(onWorker + 1);
      expect(turns).toBeGreaterThan(FREE_LOOP_TURNS);
      // an ONNX Runtime error inline is the same INTERNAL error as on the worker
      const inlineBefore = inst.runs.inline;
      const bad = request('mm', [tensor('INPUT0', 'FP32', [2, 3], new Float32Array(6))], ['OUTPUT0']);
      await expect(inst.execute([bad], [collector().sender])).rejects.toMatchObject({
        code: 'INTERNAL',
        message: expect.stringMatching(/onnxruntime execute failure: .*MatMul/i),
      });
      expect(inst.runs.inline).toBe(inlineBefore + 1);
    } finally {
      await inst.finalize();
      await generous.finalize();
    }
  });

  it("inline runs are timed on the event loop's CPU clock where the session computes on that thread alone (intra_op_thread_count 1)", async () => {
    let step = 0;
    let now = 0;
    const timed = new OnnxRuntimeResolver({ inlineClock: () => (now += step) });
    try {
      for (const [params, usesClock] of [
        [{ inline_run_max_us: '50000' }, true],
        [{ inline_run_max_us: '50000', intra_op_thread_count: '2' }, false],
      ] as const) {
        const m = await loadMm(1, params, timed);
        const inst = (await m.createInstance(SPEC)) as OnnxInstance;
        try {
          step = 0;
          for (let i = 0; i < 30 && inst.runs.inline < 2; i++) {
            await run(inst, 4);
            await sleep(2); // the inline session opens in the background
          }
          expect(inst.runs.inline, JSON.stringify(inst.runs)).toBeGreaterThanOrEqual(2);
          step = 10e9; // every read of the clock: +10 s of CPU, so an inline run timed on it is very slow
          const reads = now;
          await run(inst, 4);
          expect(now, 'a run fast by the wall clock is not timed on the CPU clock').toBe(reads);
          // as after a run slow by the wall clock: the next runs are checked on the CPU clock
          (inst as unknown as { placement: RunPlacement }).placement.record(4 * 4 * 4, 1e9, false);
          await run(inst, 4);
          step = 0;
          const before = inst.runs.worker;
          await run(inst, 4);
          // by the CPU clock the size went back to the worker; by the wall clock (2 intra-op threads) it stayed
          expect(inst.runs.worker - before, JSON.stringify({ params, runs: inst.runs })).toBe(usesClock ? 1 : 0);
        } finally {
          await inst.finalize();
          await m.finalize();
        }
      }
    } finally {
      await timed.finalizeAll();
    }
  });

  it('inline_run_max_us 0 keeps every run on the worker', async () => {
    const never = await loadMm(1, { inline_run_max_us: '0' });
    const inst = (await never.createInstance(SPEC)) as OnnxInstance;
    try {
      for (let i = 0; i < 5; i++) await run(inst, 4);
      expect(inst.runs).toEqual({ inline: 0, worker: 5 });
    } finally {
      await inst.finalize();
      await never.finalize();
    }
  });

  it('an ONNX Runtime error is INTERNAL with its message, and the instance keeps serving', async () => {
    const inst = (await model.createInstance(SPEC)) as OnnxInstance;
    try {
      const bad = request('mm', [tensor('INPUT0', 'FP32', [2, 3], new Float32Array(6))], ['OUTPUT0']);
      const { sender } = collector();
      await expect(inst.execute([bad], [sender])).rejects.toMatchObject({
        code: 'INTERNAL',
        message: expect.stringMatching(/onnxruntime execute failure: .*MatMul/i),
      });
      const { outcome } = await run(inst, 8);
      expectIdentity(outcome.response!.outputs[0]!.data, 8);
    } finally {
      await inst.finalize();
    }
  });

  it('a worker that dies with a batch posted to it fails that batch; the instance starts a new worker and recovers', async () => {
    const inst = (await model.createInstance(SPEC)) as OnnxInstance;
    try {
      const first = inst.sessionWorker!;
      // terminate only an idle worker: see worker.ts (terminating inside ONNX Runtime's run aborts the process)
      const terminated = first.thread.terminate();
      const { sender } = collector();
      const inFlight = inst.execute([mmRequest(SLOW_N)], [sender]);
      await terminated;
      await expect(inFlight).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/onnxruntime worker of model 'mm' exited/) });
      expect(first.alive).toBe(false);
      expect(inst.isReady()).toBe(true);
      const { outcome } = await run(inst, 16);
      expectIdentity(outcome.response!.outputs[0]!.data, 16);
      expect(inst.sessionWorker).not.toBe(first);
      expect(inst.sessionWorker!.alive).toBe(true);
    } finally {
      await inst.finalize();
    }
  });

  it('finalize releases the session and ends the thread; execute afterwards is UNAVAILABLE', async () => {
    const inst = (await model.createInstance(SPEC)) as OnnxInstance;
    const thread = inst.sessionWorker!.thread;
    const exited = new Promise<number>((r) => thread.once('exit', r));
    await inst.finalize();
    await exited;
    const { sender } = collector();
    await expect(inst.execute([mmRequest(4)], [sender])).rejects.toMatchObject({ code: 'UNAVAILABLE' } satisfies Partial<TritonError>);
  });
});

describe('onnxruntime through the server', () => {
  const { serve } = perTestServers();

  function repoWithMm(instances: number) {
    const repo = tempRepo();
    repo.write('mm/1/model.onnx', matmulChainModel(STEPS));
    repo.write('mm/config.pbtxt', matmulChainConfig('mm', instances));
    return repo;
  }

  const mmInit = (id: string, n: number) => ({
    ...emptyRequestInit('mm', -1),
    id,
    inputs: [tensor('INPUT0', 'FP32', [n, n], identity(n))],
  });

  it('a queued request whose caller aborts is CANCELLED while the instance computes; the others complete', async () => {
    const repo = repoWithMm(1);
    try {
      const server = await serve(repo, { loadModels: ['mm'] });
      const first = inferAndCollect(server.api, SINGLE_USER, 'mm', -1, mmInit('busy', SLOW_N));
      const ac = new AbortController();
      const second = inferAndCollect(server.api, SINGLE_USER, 'mm', -1, mmInit('gone', 8), ac.signal);
      const third = inferAndCollect(server.api, SINGLE_USER, 'mm', -1, mmInit('after', 8));
      ac.abort();
      await expect(second).rejects.toMatchObject({ code: 'CANCELLED' });
      const [r1, r3] = await Promise.all([first, third]);
      expectIdentity(r1.responses[0]!.outputs[0]!.data, SLOW_N);
      expectIdentity(r3.responses[0]!.outputs[0]!.data, 8);
    } finally {
      repo.cleanup();
    }
  });

  it('unloading while a run is in flight lets it finish, then the model is gone', async () => {
    const repo = repoWithMm(1);
    try {
      const server = await serve(repo, { loadModels: ['mm'] });
      const inFlight = inferAndCollect(server.api, SINGLE_USER, 'mm', -1, mmInit('during-unload', SLOW_N));
      await sleep(10);
      const unload = await postJson(`${server.httpUrl}/v2/repository/models/mm/unload`, {});
      expect(unload.status, unload.text).toBe(200);
      const r = await inFlight;
      expectIdentity(r.responses[0]!.outputs[0]!.data, SLOW_N);
      const after = await postJson(`${server.httpUrl}/v2/models/mm/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1], data: [1] }] });
      expect(after.status).toBe(404);
      expect(after.text).toMatch(/Request for unknown model: 'mm' has no available versions/);
    } finally {
      repo.cleanup();
    }
  });
});
