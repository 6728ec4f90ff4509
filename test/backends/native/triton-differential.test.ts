/**
 * Differential test: Warden against the real tritonserver 2.51 of the pinned nvidia-pytriton wheel
 * (test/backends/native/triton-wheel.ts), both serving the same repository from the same backend files —
 * Warden's native backends (build/backends: warden_identity, warden_add_sub, warden_repeat,
 * warden_accumulate, loaded by both through the C ABI) and Triton's own Python backend with the models of
 * test/backends/native/triton-python-models. Each server is one process started once for the file.
 *
 * Compared over HTTP: `/config` as printed (byte for byte), model metadata, statistics shape
 * (keys and value types), the batch statistics the same requests add (HTTP and gRPC), status and text of the same bad requests and malformed
 * JSON, `--http-restricted-api` refusals, and the Python backend examples (add_sub, decoupled
 * repeat, BLS, model control from a model), an ensemble whose step's response parameters set
 * the sequence of the step downstream; over gRPC: answers, codes and texts of the same calls. Where Warden differs on purpose, the difference is allowed here and listed in
 * docs/triton-compatibility.md ("Differential test").
 *
 * Skips, saying why, where the wheel cannot be had or run (x86_64, glibc >= 2.35, system
 * libpython3.11, PyPI reachable once).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../../helpers/grpc.js';
import { freePort } from '../../helpers/repo.js';
import { BACKEND_DIR, MODEL_REPOSITORY, PROJECT_ROOT, requireNativeBuild } from './helpers.js';
import { ensureTritonWheel, libsOf, sharedBackendLayout, stopTritonServer, waitTritonReady, WHEEL_TRITONSERVER_LIB, type TritonWheel } from './triton-wheel.js';
import { sleep, until } from '../../helpers/wait.js';

const PY_MODELS = join(import.meta.dirname, 'triton-python-models');
const NATIVE_BACKENDS = ['warden_identity', 'warden_add_sub', 'warden_repeat', 'warden_accumulate'];
const NATIVE_MODELS = ['identity_native', 'add_sub_native', 'repeat_native'];
const PYTHON_MODELS = ['tp_add_sub', 'tp_repeat', 'tp_bls_add_sub', 'tp_control'];
const LOADED = [...NATIVE_MODELS, ...PYTHON_MODELS];
/**
 * X -> seq_echo (warden_identity: request parameter `response_<k>` comes back as response
 * parameter `<k>`) -> T -> seq_acc (warden_accumulate, a sequence model) -> Y: the ensemble's
 * request parameters reach seq_echo, whose response parameters sequence_id / sequence_start /
 * sequence_end then set seq_acc's correlation ID and flags (core ensemble_scheduler.cc).
 */
const SEQUENCE_OVERRIDE_MODELS: Record<string, string> = {
  seq_echo: `backend: "warden_identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
`,
  seq_acc: `backend: "warden_accumulate"
max_batch_size: 0
sequence_batching {
  max_sequence_idle_microseconds: 60000000
  direct { }
  state [ { input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 dims: [ 1 ] initial_state [ { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "init" } ] } ]
}
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 4 } ]
`,
  seq_override: `platform: "ensemble"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "seq_echo" model_version: -1 input_map { key: "INPUT0" value: "X" } output_map { key: "OUTPUT0" value: "T" } },
  { model_name: "seq_acc" model_version: -1 input_map { key: "INPUT" value: "T" } output_map { key: "OUTPUT" value: "Y" } }
] }
`,
};

interface Served {
  proc: ChildProcess;
  url: string;
  /** host:port of its gRPC endpoint. */
  grpc: string;
  log: string[];
}

let wheel: TritonWheel = { ok: false, reason: 'not prepared' };
let work: string | undefined;
let warden: Served | undefined;
let triton: Served | undefined;

const waitReady = (s: Served, name: string, ms: number): Promise<void> => waitTritonReady(s.url, s.proc, s.log, ms, name);

/** Distinct free ports, taken one after another (the two servers start side by side). */
const taken = new Set<number>();
async function port(): Promise<number> {
  for (;;) {
    const p = await freePort();
    if (!taken.has(p)) return (taken.add(p), p);
  }
}

async function launch(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, [http, grpc]: number[]): Promise<Served> {
  const log: string[] = [];
  const proc = spawn(cmd, [...args, `--http-port=${http}`, `--grpc-port=${grpc}`, '--allow-metrics=false'], {
    env,
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d: Buffer) => log.push(d.toString()));
  proc.stderr!.on('data', (d: Buffer) => log.push(d.toString()));
  const s = { proc, url: `http://127.0.0.1:${http}`, grpc: `127.0.0.1:${grpc}`, log };
  try {
    await waitReady(s, name, 180_000);
  } catch (e) {
    proc.kill('SIGKILL'); // never leave a server (and its stubs) behind
    throw e;
  }
  return s;
}

interface Answer {
  status: number;
  text: string;
}

async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** The same request to both servers: [warden, triton]; a server that dropped it is named, with its log. */
async function both(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<[Answer, Answer]> {
  const one = (s: Served, name: string) =>
    call(s.url, method, path, body, headers).catch(async (e: unknown) => {
      await sleep(500); // let an exit be seen
      throw new Error(
        `${name} dropped ${method} ${path} (${String(e)}; exit ${s.proc.exitCode ?? 'none'} ${s.proc.signalCode ?? ''}):\n${s.log.join('').slice(-3000)}`,
      );
    });
  return Promise.all([one(warden!, 'warden'), one(triton!, 'tritonserver')]);
}

/**
 * Where two JSON values differ in shape: keys and value types (arrays by their elements' shapes;
 * an empty array matches any array, since how many entries there are is a count), not values.
 */
function shapeDiff(w: unknown, t: unknown, path = '$'): string[] {
  const kind = (x: unknown) => (Array.isArray(x) ? 'array' : x === null ? 'null' : typeof x);
  if (kind(w) !== kind(t)) return [`${path}: ${kind(w)} in Warden, ${kind(t)} in tritonserver`];
  if (Array.isArray(w) && Array.isArray(t)) {
    const out: string[] = [];
    for (const a of w) for (const b of t) out.push(...shapeDiff(a, b, `${path}[]`));
    return [...new Set(out)];
  }
  if (kind(w) !== 'object') return [];
  const [wo, to] = [w as Record<string, unknown>, t as Record<string, unknown>];
  return [...new Set([...Object.keys(wo), ...Object.keys(to)])].flatMap((k) =>
    !(k in to) ? [`${path}.${k}: only in Warden`] : !(k in wo) ? [`${path}.${k}: only in tritonserver`] : shapeDiff(wo[k], to[k], `${path}.${k}`),
  );
}

/** Statistics without Warden's own `pending_count` (requests accepted and not yet answered). */
/**
 * Warden's statistics without its additions: `pending_count` (always there) and, once a version
 * has timed requests, `latency_percentiles_us` (its sliding window; docs/architecture.md
 * "Statistics and metrics").
 */
function withoutPendingCount(stats: { model_stats: Record<string, unknown>[] }): unknown {
  return {
    model_stats: stats.model_stats.map(({ pending_count, latency_percentiles_us, ...rest }) => {
      expect(typeof pending_count).toBe('number');
      if (latency_percentiles_us !== undefined) expect(typeof latency_percentiles_us).toBe('object');
      return rest;
    }),
  };
}

function skipUnlessWheel(ctx: { skip: (note?: string) => void }): void {
  if (!wheel.ok) ctx.skip(`tritonserver wheel unavailable: ${wheel.reason}`);
}

/** The value 0 of model_config.proto's enums (common protobuf/model_config.proto), as grpc-js decodes them: a default, like 0 or ''. */
const PROTO_ENUM_ZERO = new Set([
  'BATCH_ELEMENT_COUNT',
  'BATCH_SCATTER_WITH_INPUT_SHAPE',
  'CONTROL_SEQUENCE_START',
  'FORMAT_NONE',
  'KIND_AUTO',
  'KIND_NVDLA',
  'PRIORITY_DEFAULT',
  'REJECT',
  'TYPE_INVALID',
]);

const fp32 = (name: string, data: number[], shape = [data.length]) => ({ name, datatype: 'FP32', shape, data });
const addSub = { inputs: [fp32('INPUT0', [1, 2.5, -3, 4]), fp32('INPUT1', [0.5, 0.5, 10, -4])] };
const control = (op: string, model: string) => ({
  inputs: [
    { name: 'OP', datatype: 'BYTES', shape: [1], data: [op] },
    { name: 'MODEL', datatype: 'BYTES', shape: [1], data: [model] },
  ],
});

describe('Warden and the real tritonserver 2.51, same models, same backends', () => {
  beforeAll(async () => {
    requireNativeBuild();
    wheel = await ensureTritonWheel();
    if (!wheel.ok) return;
    work = mkdtempSync(join(tmpdir(), 'warden-differential-'));
    const repo = join(work, 'repo');
    for (const m of NATIVE_MODELS) cpSync(join(MODEL_REPOSITORY, m), join(repo, m), { recursive: true });
    // Not tp_bls: it calls the ONNX model `simple`, and the wheel has no ONNX Runtime backend.
    for (const m of readdirSync(PY_MODELS)) if (m !== 'tp_bls') cpSync(join(PY_MODELS, m), join(repo, m), { recursive: true });
    // tp_control's load / unload target: another add_sub, not loaded at start.
    cpSync(join(PY_MODELS, 'tp_add_sub'), join(repo, 'tp_target'), { recursive: true });
    // The sequence-override ensemble and its steps, loaded by their own test (the last one).
    for (const [m, config] of Object.entries(SEQUENCE_OVERRIDE_MODELS)) {
      mkdirSync(join(repo, m, '1'), { recursive: true });
      writeFileSync(join(repo, m, 'config.pbtxt'), config);
    }
    // The two layouts differ only in the library Triton's core name resolves to; under tritonserver,
    // `libtritonserver.so` (what Warden's native backends name, no RPATH) is the core it loaded.
    const { wardenBackends, tritonBackends, tritonLibraryPath } = sharedBackendLayout(wheel, work, BACKEND_DIR, NATIVE_BACKENDS);
    expect(readlinkSync(join(libsOf(wheel.wardenBackends), WHEEL_TRITONSERVER_LIB))).not.toBe(join(libsOf(wheel.tritonBackends), WHEEL_TRITONSERVER_LIB));
    const common = [
      `--model-repository=${repo}`,
      '--model-control-mode=explicit',
      ...LOADED.map((m) => `--load-model=${m}`),
      // Restricted APIs (the logging group only, so the rest of this file needs no header).
      '--http-restricted-api=logging:admin-key=secret',
    ];
    const ports = [await port(), await port(), await port(), await port()];
    [warden, triton] = await Promise.all([
      launch(
        'warden',
        process.execPath,
        [
          '--import',
          'tsx',
          join(PROJECT_ROOT, 'host/src/cli.ts'),
          ...common,
          `--backend-directory=${wardenBackends}`,
          `--backend-config=python,shm-region-prefix-name=warden_diff_${process.pid}_`,
        ],
        process.env,
        ports.slice(0, 2),
      ),
      launch(
        'tritonserver',
        wheel.tritonserver,
        [...common, `--backend-directory=${tritonBackends}`, `--backend-config=python,shm-region-prefix-name=triton_diff_${process.pid}_`],
        {
          ...process.env,
          LD_LIBRARY_PATH: tritonLibraryPath,
        },
        ports.slice(2),
      ),
    ]);
  }, 15 * 60_000);

  afterAll(async () => {
    await Promise.all([stopTritonServer(warden), stopTritonServer(triton)]);
    if (work) rmSync(work, { recursive: true, force: true });
    // A server that aborted leaves its Python backend's shared-memory regions behind.
    for (const f of existsSync('/dev/shm') ? readdirSync('/dev/shm') : []) {
      if (f.startsWith(`warden_diff_${process.pid}_`) || f.startsWith(`triton_diff_${process.pid}_`)) rmSync(join('/dev/shm', f), { force: true });
    }
  }, 60_000);

  it('/config: the same JSON text for every model', async (ctx) => {
    skipUnlessWheel(ctx);
    for (const m of LOADED) {
      const [w, t] = await both('GET', `/v2/models/${m}/config`);
      expect(t.status, `${m}: ${t.text}`).toBe(200);
      expect({ m, status: w.status, text: w.text }).toEqual({ m, status: t.status, text: t.text });
    }
  });

  it('model metadata: the same JSON text for every model, also by version', async (ctx) => {
    skipUnlessWheel(ctx);
    for (const path of [...LOADED.map((m) => `/v2/models/${m}`), '/v2/models/tp_add_sub/versions/1']) {
      const [w, t] = await both('GET', path);
      expect(t.status, `${path}: ${t.text}`).toBe(200);
      expect({ path, status: w.status, text: w.text }).toEqual({ path, status: t.status, text: t.text });
    }
  });

  it('the same answers for the Python backend and native examples', async (ctx) => {
    skipUnlessWheel(ctx);
    const identity = { inputs: [fp32('INPUT0', [1, -2.5, 3])] };
    for (const [path, body] of [
      ['/v2/models/tp_add_sub/infer', addSub],
      ['/v2/models/add_sub_native/infer', addSub],
      ['/v2/models/identity_native/infer', identity],
      ['/v2/models/tp_bls_add_sub/infer', addSub],
      ['/v2/models/tp_add_sub/generate', { INPUT0: [1, 2, 3, 4], INPUT1: [4, 3, 2, 1] }],
    ] as const) {
      const [w, t] = await both('POST', path, body);
      expect(t.status, `${path}: ${t.text}`).toBe(200);
      // Numbers are compared as JSON values (tritonserver prints 2.0 where Warden prints 2).
      expect({ path, status: w.status, json: JSON.parse(w.text) }).toEqual({ path, status: t.status, json: JSON.parse(t.text) });
    }
    // Decoupled: the same event streams.
    for (const [model, body] of [
      ['tp_repeat', { IN: [5, -6, 7, 0] }],
      ['repeat_native', { IN: [3, 1, 4], DELAY: [0, 0, 0], WAIT: [0] }],
    ] as const) {
      const [w, t] = await both('POST', `/v2/models/${model}/generate_stream`, body);
      expect(t.status, t.text).toBe(200);
      expect({ model, status: w.status, text: w.text }).toEqual({ model, status: t.status, text: t.text });
    }
  });

  it('statistics: the same keys and value types (Warden adds pending_count and latency_percentiles_us)', async (ctx) => {
    skipUnlessWheel(ctx);
    for (const path of ['/v2/models/stats', '/v2/models/tp_add_sub/stats', '/v2/models/tp_repeat/versions/1/stats', '/v2/models/identity_native/stats']) {
      const [w, t] = await both('GET', path);
      expect(t.status, t.text).toBe(200);
      expect(w.status, w.text).toBe(200);
      expect({ path, differences: shapeDiff(withoutPendingCount(JSON.parse(w.text)), JSON.parse(t.text)) }).toEqual({ path, differences: [] });
    }
  });

  it('statistics: batch statistics, execution_count and last_inference only where the backend reports a batch (HTTP and gRPC)', async (ctx) => {
    skipUnlessWheel(ctx);
    // Triton's core counts a batch (batch_stats, execution_count, last_inference) only in
    // InferenceStatsAggregator::UpdateInferBatchStats (infer_stats.cc), which a backend reaches
    // through TRITONBACKEND_ModelInstanceReportBatchStatistics (backend_model_instance.cc):
    // libtriton_python.so reports one per execution, decoupled or not (python_be.cc,
    // PbMetricReporter); warden_repeat reports none (per-request statistics only).
    const models = ['repeat_native', 'tp_repeat', 'tp_add_sub', 'identity_native', 'add_sub_native'];
    const requests: Record<string, [string, unknown]> = {
      repeat_native: ['generate_stream', { IN: [1, 2], DELAY: [0, 0], WAIT: [0] }],
      tp_repeat: ['generate_stream', { IN: [1, 2] }],
      tp_add_sub: ['infer', addSub],
      identity_native: ['infer', { inputs: [fp32('INPUT0', [1, 2, 3])] }],
      add_sub_native: ['infer', addSub],
    };
    interface Entry {
      name: string;
      last_inference: number | string;
      inference_count: number | string;
      execution_count: number | string;
      inference_stats: { success: { count: number | string } };
      batch_stats?: { batch_size: number | string; compute_infer: { count: number | string } }[];
    }
    const n = (x: number | string | undefined) => Number(x ?? 0);
    // HTTP's JSON and gRPC's message (uint64 as strings, empty fields left out) read alike.
    const http = async (s: Served, m: string) =>
      (JSON.parse((await call(s.url, 'GET', `/v2/models/${m}/stats`)).text) as { model_stats: Entry[] }).model_stats[0]!;
    const clients = new Map<Served, TritonGrpcClient>([
      [warden!, tritonGrpcClient(warden!.grpc)],
      [triton!, tritonGrpcClient(triton!.grpc)],
    ]);
    const grpc = async (s: Served, m: string) => {
      const r = await unaryCall(clients.get(s)!, 'ModelStatistics', { name: m });
      if (r.err) throw new Error(`ModelStatistics ${m}: ${r.err.details}`);
      return (r.res as { model_stats: Entry[] }).model_stats[0]!;
    };
    type Read = typeof http;
    const snapshot = async (s: Served, read: Read) => Object.fromEntries(await Promise.all(models.map(async (m) => [m, await read(s, m)] as const)));
    /** What three more requests per model changed: counts as deltas, batch_stats by batch size. */
    const summary = (before: Record<string, Entry>, after: Record<string, Entry>) =>
      Object.fromEntries(
        models.map((m) => {
          const [b, a] = [before[m]!, after[m]!];
          const batches = Object.fromEntries(
            (a.batch_stats ?? [])
              .map(
                (x) =>
                  [
                    String(x.batch_size),
                    n(x.compute_infer.count) - n(b.batch_stats?.find((y) => n(y.batch_size) === n(x.batch_size))?.compute_infer.count),
                  ] as const,
              )
              .filter(([, d]) => d !== 0),
          );
          return [
            m,
            {
              executions: n(a.execution_count) - n(b.execution_count),
              inferences: n(a.inference_count) - n(b.inference_count),
              successes: n(a.inference_stats.success.count) - n(b.inference_stats.success.count),
              batches,
              lastInferenceZero: n(a.last_inference) === 0,
            },
          ];
        }),
      );
    // What tritonserver 2.51 answers (measured): a reporting backend's three executions of batch
    // size 1; warden_repeat's none at all, so its last_inference stays 0.
    const expected = Object.fromEntries(
      models.map((m) => [
        m,
        m === 'repeat_native'
          ? { executions: 0, inferences: 3, successes: 3, batches: {}, lastInferenceZero: true }
          : { executions: 3, inferences: 3, successes: 3, batches: { '1': 3 }, lastInferenceZero: false },
      ]),
    );
    try {
      for (const read of [http, grpc] as Read[]) {
        const before = await Promise.all([snapshot(warden!, read), snapshot(triton!, read)]);
        // Three requests each, one after another: with one instance per model, the third answer
        // comes after the first two executions ended and were counted (by both servers).
        for (const m of models) {
          const [route, body] = requests[m]!;
          for (let i = 0; i < 3; i++) {
            const [w, t] = await both('POST', `/v2/models/${m}/${route}`, body);
            expect({ m, status: w.status }).toEqual({ m, status: 200 });
            expect({ m, status: t.status }).toEqual({ m, status: 200 });
          }
        }
        // The backends report after answering: wait until tritonserver shows all of it.
        const via = read === http ? 'HTTP' : 'gRPC';
        await expect.poll(async () => ({ via, ...summary(before[1], await snapshot(triton!, read)) }), { timeout: 10_000 }).toEqual({ via, ...expected });
        await expect.poll(async () => ({ via, ...summary(before[0], await snapshot(warden!, read)) }), { timeout: 10_000 }).toEqual({ via, ...expected });
      }
    } finally {
      for (const c of clients.values()) c.close();
    }
  });

  it('the same status and text for the same bad requests', async (ctx) => {
    skipUnlessWheel(ctx);
    const [in0, in1] = addSub.inputs as [ReturnType<typeof fp32>, ReturnType<typeof fp32>];
    const cases: [string, string, unknown?][] = [
      ['GET', '/v2/models/nosuch'],
      ['GET', '/v2/models/nosuch/config'],
      ['GET', '/v2/models/nosuch/ready'],
      ['GET', '/v2/models/tp_target/ready'], // in the repository, not loaded
      ['GET', '/v2/models/tp_target'],
      ['GET', '/v2/models/nosuch/stats'],
      ['GET', '/v2/models/tp_add_sub/versions/2'],
      ['GET', '/v2/models/tp_add_sub/versions/x'],
      ['POST', '/v2/models/nosuch/infer', addSub],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0, { ...in1, name: 'BOGUS' }] }],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0] }],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0, { ...in1, datatype: 'INT32' }] }],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0, { ...in1, datatype: 'FOO' }] }],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0, fp32('INPUT1', [1, 2])] }],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0, { ...in1, shape: [4], data: [1, 2] }] }],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0, in0] }],
      ['POST', '/v2/models/tp_add_sub/infer', { inputs: [in0, in1], outputs: [{ name: 'NOPE' }] }],
      ['POST', '/v2/models/tp_add_sub/infer', {}],
      ['POST', '/v2/models/identity_native/infer', { inputs: [fp32('INPUT0', [1, 2, 3, 4, 5, 6], [2, 3])] }],
      ['POST', '/v2/models/tp_add_sub/generate', { INPUT0: [1, 2, 3, 4] }],
      // The callee refuses the shape (one bad input: Triton checks them in no fixed order).
      ['POST', '/v2/models/tp_bls_add_sub/infer', { inputs: [in0, fp32('INPUT1', [3, 4])] }],
      ['POST', '/v2/models/tp_add_sub/generate', '{"INPUT0":[1,2,3,4],"INPUT0":[1,2,3,4],"INPUT1":[1,2,3,4]}'],
      ['POST', '/v2/models/tp_add_sub/generate', '{"id":"g1","INPUT0":[1,2,3,4],"INPUT1":[1,2,3,4],"parameters":{"INPUT1":[1,2,3,4]}}'],
      ['POST', '/v2/models/tp_add_sub/infer', { id: 'r7', inputs: [in0, fp32('INPUT1', [1, 2])] }],
      [
        'POST',
        '/v2/models/tp_add_sub/infer',
        '{"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 1e400]}, ' + JSON.stringify(in1) + ']}',
      ],
      ['POST', '/v2/repository/models/nosuch/unload', {}],
      ['POST', '/v2/models/tp_add_sub', {}],
      ['GET', '/v2/nope'],
    ];
    const differ: unknown[] = [];
    for (const [method, path, body] of cases) {
      const [w, t] = await both(method, path, body);
      if (w.status !== t.status || w.text !== t.text) differ.push({ method, path, body, warden: w, triton: t });
    }
    expect(differ).toEqual([]);
  });

  it("malformed JSON: the same status and text (rapidjson's message and byte offset)", async (ctx) => {
    skipUnlessWheel(ctx);
    const bodies = [
      '{"inputs": [',
      '   ',
      '{"a":1} x',
      '{"a":tru}',
      '{"a":"x',
      '{"a" 1}',
      '{"a":1 "b":2}',
      '[1 2]',
      '{1:2}',
      '{"a":"\\q"}',
      '{"a":-}',
      '{"a":1.}',
      '{"é":[1 2]}',
      '{"a":"\\u12G4"}',
      '{"a":1e}',
      '{"a":1e+}',
      '{"a":nul}',
      '{"a":01}',
      '{"a":[1,]}',
      '{"a":1,}',
      '{"a":x}',
      // Surrogate escapes: rapidjson refuses an unpaired high one (at the first escape's backslash).
      '{"a":"\\ud800"}',
      '{"\\uDBFF":1}',
      '{"a":"\\ud800\\u0041"}',
      '{"a":"\\ud800\\"}',
      '{"a":"\\ud800\\udc0"}',
      '{"a":"\\udc00\\ud800"}',
      '{"é":"\\ud800"}',
      '{"inputs":[{"name":"\\ud800","datatype":"FP32","shape":[4],"data":[1,2,3,4]}]}',
      '{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1],"data":["\\ud800"]}]}',
    ];
    // A lone low surrogate and a pair parse: /infer then answers for the missing 'inputs'.
    const inferOnly = ['{"a":"\\udc00"}', '{"a":"\\ud83d\\ude00"}', '{"a":"x\\uDFFF","b":"\\uDBFF\\uDFFF"}'];
    const differ: unknown[] = [];
    for (const body of [...bodies, ...inferOnly]) {
      for (const path of ['/v2/models/tp_add_sub/infer', ...(inferOnly.includes(body) ? [] : ['/v2/models/tp_add_sub/generate'])]) {
        const [w, t] = await both('POST', path, body);
        if (w.status !== t.status || w.text !== t.text) differ.push({ path, body, warden: w, triton: t });
      }
    }
    expect(differ).toEqual([]);
  });

  it('--http-restricted-api: the same status and text without the header, with a wrong value, and with the right one', async (ctx) => {
    skipUnlessWheel(ctx);
    const differ: unknown[] = [];
    for (const [method, headers] of [
      ['GET', {}],
      ['POST', {}],
      ['PUT', {}],
      ['GET', { 'admin-key': 'wrong' }],
      ['GET', { 'ADMIN-KEY': 'secret' }],
    ] as const) {
      const [w, t] = await both(method, '/v2/logging', method === 'GET' ? undefined : '{}', headers);
      // The settings themselves differ (log file, format): compare the status, and the text of refusals.
      if (w.status !== t.status || (t.status !== 200 && w.text !== t.text)) differ.push({ method, headers, warden: w, triton: t });
    }
    expect(differ).toEqual([]);
  });

  it('loading a model no repository has: the same status and text', async (ctx) => {
    skipUnlessWheel(ctx);
    const [w, t] = await both('POST', '/v2/repository/models/nosuch/load', {});
    expect({ status: w.status, text: w.text }).toEqual({ status: t.status, text: t.text });
  });

  it('gRPC: the same answers, status codes and texts (grpc-js client, the same service definition)', async (ctx) => {
    skipUnlessWheel(ctx);
    const clients: [TritonGrpcClient, TritonGrpcClient] = [tritonGrpcClient(warden!.grpc), tritonGrpcClient(triton!.grpc)];
    try {
      const fp32raw = (v: number[]) => Buffer.from(new Float32Array(v).buffer);
      const addSubGrpc = (extra: Record<string, unknown> = {}) => ({
        model_name: 'tp_add_sub',
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [4] },
          { name: 'INPUT1', datatype: 'FP32', shape: [4] },
        ],
        raw_input_contents: [fp32raw([1, 2, 3, 4]), fp32raw([4, 3, 2, 1])],
        ...extra,
      });
      const calls: [string, unknown][] = [
        ['ServerLive', {}],
        ['ServerReady', {}],
        ['ModelReady', { name: 'tp_add_sub' }],
        ['ModelReady', { name: 'nosuch' }],
        ['ModelReady', { name: 'tp_target' }],
        ...LOADED.map((m): [string, unknown] => ['ModelMetadata', { name: m }]),
        ...LOADED.map((m): [string, unknown] => ['ModelConfig', { name: m }]),
        ['ModelMetadata', { name: 'nosuch' }],
        ['ModelConfig', { name: 'tp_add_sub', version: '2' }],
        ['ModelStatistics', { name: 'nosuch' }],
        ['ModelInfer', addSubGrpc()],
        ['ModelInfer', addSubGrpc({ model_name: 'nosuch' })],
        [
          'ModelInfer',
          addSubGrpc({
            inputs: [
              { name: 'INPUT0', datatype: 'FP32', shape: [4] },
              { name: 'INPUT1', datatype: 'INT32', shape: [4] },
            ],
          }),
        ],
        [
          'ModelInfer',
          addSubGrpc({
            inputs: [
              { name: 'INPUT0', datatype: 'FP32', shape: [4] },
              { name: 'INPUT1', datatype: 'FP32', shape: [2, 2] },
            ],
          }),
        ],
        ['ModelInfer', addSubGrpc({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [4] }], raw_input_contents: [fp32raw([1, 2, 3, 4])] })],
        ['ModelInfer', addSubGrpc({ raw_input_contents: [fp32raw([1, 2, 3, 4])] })],
        [
          'ModelInfer',
          addSubGrpc({
            id: 'g-7',
            inputs: [
              { name: 'INPUT0', datatype: 'FP32', shape: [4] },
              { name: 'INPUT1', datatype: 'FP32', shape: [4] },
            ],
            raw_input_contents: [fp32raw([1, 2, 3, 4]), fp32raw([1, 2])],
          }),
        ],
        ['RepositoryModelUnload', { model_name: 'nosuch' }],
        ['RepositoryModelLoad', { model_name: 'nosuch' }],
      ];
      // Messages as a protobuf reader sees them: a field at its proto3 default (false, 0, '', empty)
      // is the same whether it was written or not (Warden writes some, tritonserver none).
      const meaning = (x: unknown): unknown => {
        if (Array.isArray(x)) return x.length === 0 ? undefined : x.map(meaning);
        if (Buffer.isBuffer(x)) return x.length === 0 ? undefined : x.toString('base64');
        if (x !== null && typeof x === 'object') {
          const kept = Object.entries(x)
            .map(([k, v]) => [k, meaning(v)] as const)
            .filter(([, v]) => v !== undefined);
          return kept.length === 0 ? undefined : Object.fromEntries(kept.sort(([a], [b]) => a.localeCompare(b)));
        }
        return x === false || x === 0 || x === '' || x === '0' || PROTO_ENUM_ZERO.has(x as string) ? undefined : x;
      };
      const differ: unknown[] = [];
      for (const [method, request] of calls) {
        const [w, t] = await Promise.all(clients.map((c) => unaryCall(c, method, request)));
        const view = (r: { res?: unknown; err?: { code: number; details: string } }) =>
          r.err ? { code: r.err.code, details: r.err.details } : { res: meaning(r.res) };
        const [wv, tv] = [view(w!), view(t!)];
        // grpc-js reads no details from tritonserver when its message ends in a space (the shape
        // error): then only the code is compared (HTTP compares that text above).
        if ('details' in tv && tv.details === '' && 'details' in wv) wv.details = '';
        if (JSON.stringify(wv) !== JSON.stringify(tv)) differ.push({ method, request: JSON.stringify(request).slice(0, 160), warden: wv, triton: tv });
      }
      expect(differ, `warden ${warden!.grpc}, tritonserver ${triton!.grpc}`).toEqual([]);
    } finally {
      for (const c of clients) c.close();
    }
  });

  it('model control from a Python model (pb_utils.load_model / is_model_ready / unload_model): the same answers and index', async (ctx) => {
    skipUnlessWheel(ctx);
    // Unload is asynchronous in both: wait until the index no longer shows tp_target UNLOADING.
    const index = async (base: string) => {
      let r: Answer | undefined;
      const settled = async () => {
        r = await call(base, 'POST', '/v2/repository/index', {});
        return (JSON.parse(r.text) as { name: string; state?: string }[]).find((e) => e.name === 'tp_target')?.state !== 'UNLOADING';
      };
      await until(settled, { within: 10_000, every: 100, what: `${base}: tp_target out of UNLOADING` });
      return r!;
    };
    const steps: [string, string][] = [
      ['ready', 'tp_target'],
      ['load', 'tp_target'],
      ['unload', 'tp_target'],
      // Not `load` of a model no repository has: Triton's own libtriton_python.so then often
      // aborts the whole server (`terminate called after throwing an instance of
      // 'boost::interprocess::lock_exception'`, in its model-control message handling) — under
      // the real tritonserver 2.51 as under Warden (docs/triton-compatibility.md, "Known issue").
    ];
    for (const [op, model] of steps) {
      const [w, t] = await both('POST', '/v2/models/tp_control/infer', control(op, model));
      expect({ op, model, status: w.status, json: JSON.parse(w.text) }).toEqual({ op, model, status: t.status, json: JSON.parse(t.text) });
      if (op === 'load' && model === 'tp_target') {
        const [wi, ti] = await both('POST', '/v2/models/tp_target/infer', addSub);
        expect(ti.status, ti.text).toBe(200);
        expect(JSON.parse(wi.text)).toEqual(JSON.parse(ti.text));
      }
      if (op === 'unload') await Promise.all([index(warden!.url), index(triton!.url)]);
    }
    const [w, t] = await Promise.all([index(warden!.url), index(triton!.url)]);
    expect({ status: w.status, text: w.text }).toEqual({ status: t.status, text: t.text });
  });

  // Last: it loads models the statistics and index comparisons above do not expect.
  it("ensemble: a step's response parameters sequence_id / sequence_start / sequence_end set the sequence downstream; the same answers and errors", async (ctx) => {
    skipUnlessWheel(ctx);
    for (const m of ['seq_echo', 'seq_acc', 'seq_override']) {
      const [w, t] = await both('POST', `/v2/repository/models/${m}/load`, {});
      expect({ m, w: w.status, t: t.status }, `${w.text} / ${t.text}`).toEqual({ m, w: 200, t: 200 });
    }
    // Not a STRING sequence_id: tritonserver 2.51 reads the string's bytes as a pointer
    // (ConsumeResponse) and crashes. Nor a sequence the step refuses (no START): 2.51 crashes on a
    // step the sequence batcher refuses inside an ensemble (docs/triton-compatibility.md).
    const cases: [Record<string, unknown>, number][] = [
      [{ sequence_id: 7, sequence_start: true, response_sequence_id: 42, response_sequence_start: true }, 5],
      [{ sequence_id: 7, response_sequence_id: 42 }, 3],
      [{ sequence_id: 7, response_sequence_id: 42, response_sequence_end: true }, 1],
      [{ sequence_id: 9, sequence_start: true, sequence_end: true, response_sequence_start: true }, 4],
      [{ sequence_id: 9, sequence_start: true, response_sequence_start: false }, 2],
      [{ sequence_id: 1, sequence_start: true, response_sequence_id: -1, response_sequence_start: true }, 1],
      [{ sequence_id: 'r', sequence_start: true, response_sequence_id: 44, response_sequence_start: true }, 2],
      [{ sequence_id: 21, sequence_start: true, response_sequence_id: true }, 1],
      [{ sequence_id: 21, sequence_start: true, response_sequence_id: 1.5 }, 1],
      [{ sequence_id: 21, sequence_start: true, response_sequence_start: 1 }, 1],
      [{ sequence_id: 21, sequence_start: true, response_sequence_end: 'yes' }, 1],
    ];
    const differ: unknown[] = [];
    for (const [parameters, x] of cases) {
      const [w, t] = await both('POST', '/v2/models/seq_override/infer', { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], data: [x] }], parameters });
      if (w.status !== t.status || w.text !== t.text) differ.push({ parameters, warden: w, triton: t });
    }
    expect(differ).toEqual([]);
  });
});
