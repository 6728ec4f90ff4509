/**
 * Tenancy benchmark (DESIGN "Multi-tenancy": a tenant must not slow another).
 *
 * (1) Fairness under hostile floods. Tenant B sends a modest fixed rate ({@link B_RATE}/s, JSON) to
 * the operator's `simple` (ONNX Runtime) shared with it, open loop: each request leaves at its
 * scheduled time whether or not earlier ones were answered, and its latency counts from that time,
 * so a stall shows in full (see {@link measureB}). For each of tenant A's
 * floods below, on a fresh server, B's p99 is measured with A idle ("alone") and while A floods
 * ("during"), alternately, in the same run; the figure is median(p99 during) ÷ median(p99 alone),
 * target <= 2. A waits for the server to fall quiet (its CPU under 15 % of a core) before every
 * phase, so one phase's leftovers (a spinning execute running to its deadline, queued ensemble
 * steps) do not land in the next. A's outcome (answers by status, socket errors; what its uploads
 * got) is reported next to B's figures: a flood a bound refuses is a result, not a failure.
 *
 *   requests       A floods `simple` (shared) over 32 connections under a quota of 2,000 req/s.
 *   spin-<engine>  A uploads 4 models of test/fixtures/wasm `loop_execute` (execute spins until its
 *                  deadline, set to 2 s; the worker is then killed and respawned), 4 instances each
 *                  (its default per-model and total instance quotas), and keeps all 16 busy. One
 *                  flood per sandbox engine (BENCH_TENANCY_ENGINES, default `v8,wasmtime`).
 *   priority       A uploads the sample wasm identity model (model_repository/identity_wasm) with
 *                  `max_batch_size: 8, dynamic_batching.priority_levels: 2000000`
 *                  and sends at its quota (100 req/s). Where a config bound refuses the upload, A
 *                  keeps retrying it (2/s) while sending at its quota to the name.
 *   unauth         64 connections from another client address (127.0.0.2) send infer requests with
 *                  a token that is not valid, unpaced.
 *   idle-conns     Thousands of connections (BENCH_TENANCY_IDLE_CONNS, default 4096, capped by
 *                  `ulimit -n`; what was used is printed) from 127.0.0.2, each sending a partial
 *                  request line and nothing more (reopened 1 s after the server closes it). B's
 *                  own connections are opened after A's.
 *   upload-15mb    A repeatedly uploads (Triton's load API, base64 files in the JSON body) a wasm
 *                  identity model plus padding: 15 MB request bodies, 2 connections, unpaced.
 *   ensemble       A uploads an ensemble of 2,500 chained steps over `simple` (where a bound refuses
 *                  it: as many steps as the bound its refusal names), then ensembles of that
 *                  ensemble while the server accepts them (up to 5,000 inferences per request), and
 *                  sends to the deepest at its quota.
 *
 * A's requests come from child processes (bench/tenant-flood.ts), B's from this process (undici);
 * all of it shares the machine's cores with the server, and the figures include that contention. Phases
 * last BENCH_TENANCY_PHASE_S (default min(BENCH_DURATION_S, 2.5)) seconds, BENCH_ROUNDS rounds;
 * BENCH_TENANCY_FLOODS (comma list of the ids above) runs a subset; BENCH_TENANCY_A_ENTRY (a JSON
 * object, e.g. `{"config_bounds":{"max_priority_levels":2000000}}`; its `quotas` merge with the
 * flood's) is merged into A's tenants-file entry on every flood's server, and
 * BENCH_TENANCY_SERVER_ARGS (Warden flags, space-separated) is added to its command line, to
 * measure what raising a bound would cost. The whole suite takes about 4 minutes.
 *
 * (2) The cost of authentication: the same `simple` request at concurrency 1 on a single-user
 * Warden and on a multi-tenant one (bearer token checked, rate limit and in-flight accounting on),
 * as CPU µs/request and p50 difference.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { DEFAULT_TENANT_QUOTAS, type TenantQuotas } from '../host/src/tenancy/types.js';
import { hashToken } from '../host/src/tenancy/token.js';
import type { BenchContext, ChildServer, HttpRequestSpec } from './ctx.js';
import { jsonRequest } from './http.js';
import type { FloodWorkerResult, FloodWorkerSpec, IdleFloodSpec, RequestFloodSpec } from './tenant-flood.js';

const TOKEN_A = 'bench-tenant-a-0123456789abcdefghijklmnop';
const TOKEN_B = 'bench-tenant-b-0123456789abcdefghijklmnop';
/** Tenant B's fixed request rate, requests per second. */
const B_RATE = 200;
/** The fairness target: B's p99 during a flood ÷ B's p99 alone. */
const TARGET_RATIO = 2;
/** Client address of the floods that come before authentication (B connects from 127.0.0.1). */
const OTHER_ADDRESS = '127.0.0.2';
/** A's quota for the plain request flood on the shared model, requests per second. */
const A_QUOTA_RPS = 2000;
/** A's sending rate where a flood goes "at its quota": the default tenant rate. */
const A_RATE = DEFAULT_TENANT_QUOTAS.requests_per_second;
/** Execute deadline the spinning models ask for, ms (within the default `max_execute_ms`). */
const SPIN_DEADLINE_MS = 2000;
/** Priority levels of the priority flood's model (below the size that kills the server outright). */
const PRIORITY_LEVELS = 2_000_000;
/** Steps of the ensemble flood's ensemble (where a bound refuses it: the bound the refusal names). */
const ENSEMBLE_STEPS = 2500;
/** Nesting of the ensemble flood stops before one request would make more inferences than this. */
const ENSEMBLE_MAX_INFERENCES = 5000;
/** Request body of the upload flood, bytes (about). */
const UPLOAD_BODY_BYTES = 15_000_000;

interface Run {
  p50Ms: number;
  p99Ms: number;
  ok: number;
  limited: number;
  other: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Tenant B's load: `rate` requests per second for `durationS` on a fixed schedule (open loop:
 * a request is sent at its time whether or not earlier ones were answered, over up to 32
 * keep-alive connections opened as needed), each latency measured from the time it was due, so a
 * stalled server shows as the stall it is (no coordinated omission). Waits for every answer (10 s
 * timeout each: a timeout counts as a failure).
 */
async function measureB(server: ChildServer, req: HttpRequestSpec, durationS: number, rate: number): Promise<Run> {
  const pool = new Pool(server.url, { connections: 32, pipelining: 1, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const headers = { ...req.headers, authorization: `Bearer ${TOKEN_B}` };
  const latencies: number[] = [];
  let limited = 0;
  let other = 0;
  const n = Math.max(1, Math.round(durationS * rate));
  const t0 = performance.now() + 2;
  const answers: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait >= 1) await sleep(wait);
    answers.push(
      (async () => {
        try {
          const res = await pool.request({ path: req.path, method: 'POST', headers, body: req.body });
          await res.body.dump();
          if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(performance.now() - due);
          else if (res.statusCode === 429) limited++;
          else other++;
        } catch {
          other++; // refused connection, reset, timeout
        }
      })(),
    );
  }
  await Promise.all(answers);
  await pool.destroy();
  latencies.sort((a, b) => a - b);
  return { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), ok: latencies.length, limited, other };
}

/** Worker specs without their duration (the phase sets it). */
type WorkerPlan = Omit<RequestFloodSpec, 'durationMs'> | Omit<IdleFloodSpec, 'durationMs'>;

/** A's flood as prepared on a server: its client processes and what its uploads got. */
interface FloodPlan {
  workers: WorkerPlan[];
  /** What the set-up got (upload answers, sizes used), for the report. */
  note: string;
}

/** What a flood's set-up may use. */
interface FloodSetup {
  ctx: BenchContext;
  server: ChildServer;
  /** Temporary folder of this flood (request bodies go here). */
  dir: string;
  /** POST with tenant A's token; answers status and text (never throws on an HTTP status). */
  postA(path: string, body: string, timeoutMs?: number): Promise<{ status: number; text: string; ms: number }>;
}

interface FloodDef {
  id: string;
  label: string;
  /** A's quotas on this flood's server (default: the tenant defaults). */
  quotasA?: Partial<TenantQuotas>;
  /** Time between A's workers reporting ready and B's measurement starting, ms. */
  rampMs: number;
  prepare(s: FloodSetup): Promise<FloodPlan>;
}

/** `parameters.config` + base64 files: what `client.load_model(name, config=..., files=...)` sends. */
function uploadBody(config: object, files: Record<string, Buffer>): string {
  const parameters: Record<string, string> = { config: JSON.stringify(config) };
  for (const [path, data] of Object.entries(files)) parameters[`file:${path}`] = data.toString('base64');
  return JSON.stringify({ parameters });
}

/** The wasm identity/loop config of test/fixtures/wasm/hostile.c (INPUT0 FP32 [-1] -> OUTPUT0). */
function wasmConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    backend: 'wasm',
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    ...extra,
  };
}

function fixture(ctx: BenchContext, name: string): Buffer {
  const f = join(ctx.root, 'test', 'fixtures', 'wasm', 'build', `${name}.wasm`);
  if (!existsSync(f)) throw new Error(`test/fixtures/wasm/build/${name}.wasm missing: run \`node scripts/build-wasm.mjs --fixtures\``);
  return readFileSync(f);
}

/** First line of an error answer, shortened, for the report. */
function short(text: string): string {
  let msg = text;
  try {
    msg = (JSON.parse(text) as { error?: string }).error ?? text;
  } catch {
    /* not JSON */
  }
  msg = msg.split('\n')[0]!;
  return msg.length > 160 ? msg.slice(0, 157) + '...' : msg;
}

function inferBody(name: string, datatype: string, shape: number[], data: number[]): string {
  return JSON.stringify({ inputs: [{ name, datatype, shape, data }] });
}

const jsonHeaders = (token: string) => ({ 'content-type': 'application/json', authorization: `Bearer ${token}` });

/**
 * The flood where an upload was refused: A keeps retrying it (2/s) and sends at its quota to the
 * name (answered as an unknown model).
 */
function refusedFlood(s: FloodSetup, uploadPath: string, uploadFile: string, inferPath: string, inferFile: string): WorkerPlan[] {
  return [
    {
      kind: 'requests',
      origin: s.server.url,
      paths: [uploadPath],
      method: 'POST',
      headers: jsonHeaders(TOKEN_A),
      bodyFile: uploadFile,
      connections: 1,
      rate: 2,
      timeoutMs: 60_000,
    },
    {
      kind: 'requests',
      origin: s.server.url,
      paths: [inferPath],
      method: 'POST',
      headers: jsonHeaders(TOKEN_A),
      bodyFile: inferFile,
      connections: 8,
      rate: A_RATE,
      timeoutMs: 30_000,
    },
  ];
}

/** The number of file descriptors this process may open (`ulimit -n`, soft), or undefined. */
function nofileSoft(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? (m[1] === 'unlimited' ? Infinity : Number(m[1])) : undefined;
  } catch {
    return undefined;
  }
}

function floods(engines: string[]): FloodDef[] {
  const simpleJson = jsonRequest();
  const spin: FloodDef[] = engines.map((engine) => ({
    id: `spin-${engine}`,
    label: `spinning sandboxes (${engine})`,
    rampMs: 500,
    async prepare(s) {
      const perModel = DEFAULT_TENANT_QUOTAS.max_instances_per_model;
      const models = Math.max(1, Math.floor(DEFAULT_TENANT_QUOTAS.max_instances_total / perModel));
      const memory = Math.floor(DEFAULT_TENANT_QUOTAS.max_memory_total_bytes / (models * perModel) / 65536 / 2) * 65536;
      const wasm = fixture(s.ctx, 'loop_execute');
      const config = wasmConfig({
        instance_group: [{ kind: 'KIND_CPU', count: perModel }],
        parameters: {
          engine: { string_value: engine },
          execute_timeout_ms: { string_value: String(SPIN_DEADLINE_MS) },
          memory_limit_bytes: { string_value: String(memory) },
        },
      });
      const upload = writeBody(s.dir, 'spin-upload.json', uploadBody(config, { '1/model.wasm': wasm }));
      const paths: string[] = [];
      const answers: string[] = [];
      for (let i = 0; i < models; i++) {
        const r = await s.postA(`/v2/repository/models/spin${i}/load`, readFileSync(upload, 'utf8'), 120_000);
        answers.push(r.status === 200 ? '200' : `${r.status} (${short(r.text)})`);
        if (r.status === 200) paths.push(`/v2/models/spin${i}/infer`);
      }
      const body = join(s.dir, 'spin.json');
      writeFileSync(body, inferBody('INPUT0', 'FP32', [4], [1, 2, 3, 4]));
      const instances = paths.length * perModel;
      const note = `uploads of ${models}×${perModel} instances: ${answers.join(', ')}; ${instances} connections keep them busy`;
      if (paths.length === 0)
        return {
          workers: refusedFlood(s, '/v2/repository/models/spin0/load', upload, '/v2/models/spin0/infer', body),
          note: `${note}; A retries 2/s and sends ${A_RATE}/s`,
        };
      return {
        workers: [
          {
            kind: 'requests',
            origin: s.server.url,
            paths,
            method: 'POST',
            headers: jsonHeaders(TOKEN_A),
            bodyFile: body,
            connections: instances,
            timeoutMs: 60_000,
          },
        ],
        note,
      };
    },
  }));

  return [
    {
      id: 'requests',
      label: `requests on the shared model (quota ${A_QUOTA_RPS}/s)`,
      quotasA: { requests_per_second: A_QUOTA_RPS, burst: A_QUOTA_RPS, max_inflight: 1000 },
      rampMs: 300,
      async prepare(s) {
        const body = writeBody(s.dir, 'simple.json', simpleJson.body as string);
        return {
          workers: [
            {
              kind: 'requests',
              origin: s.server.url,
              paths: [simpleJson.path],
              method: 'POST',
              headers: jsonHeaders(TOKEN_A),
              bodyFile: body,
              connections: 32,
              timeoutMs: 10_000,
            },
          ],
          note: '32 connections, unpaced',
        };
      },
    },
    ...spin,
    {
      id: 'priority',
      label: `priority_levels ${PRIORITY_LEVELS}`,
      rampMs: 300,
      async prepare(s) {
        const config = wasmConfig({ max_batch_size: 8, dynamic_batching: { priority_levels: PRIORITY_LEVELS, default_priority_level: 1 } });
        // The sample identity component (model_repository/identity_wasm): it answers batched shapes.
        const wasm = readFileSync(join(s.ctx.root, 'model_repository', 'identity_wasm', '1', 'model.wasm'));
        const upload = writeBody(s.dir, 'prio-upload.json', uploadBody(config, { '1/model.wasm': wasm }));
        const infer = writeBody(s.dir, 'prio.json', inferBody('INPUT0', 'FP32', [1, 4], [1, 2, 3, 4]));
        const r = await s.postA('/v2/repository/models/prio/load', readFileSync(upload, 'utf8'), 180_000);
        if (r.status !== 200) {
          // Retries carry the same config with the small C identity fixture: the config is what is
          // refused, and 16 MB bodies twice a second would be the upload flood instead.
          const retry = writeBody(s.dir, 'prio-retry.json', uploadBody(config, { '1/model.wasm': fixture(s.ctx, 'identity') }));
          return {
            workers: refusedFlood(s, '/v2/repository/models/prio/load', retry, '/v2/models/prio/infer', infer),
            note: `upload refused: ${r.status} ${short(r.text)}; A retries it 2/s and sends ${A_RATE}/s`,
          };
        }
        return {
          workers: [
            {
              kind: 'requests',
              origin: s.server.url,
              paths: ['/v2/models/prio/infer'],
              method: 'POST',
              headers: jsonHeaders(TOKEN_A),
              bodyFile: infer,
              connections: 8,
              rate: A_RATE,
              timeoutMs: 30_000,
            },
          ],
          note: `upload accepted in ${(r.ms / 1000).toFixed(1)} s; A sends ${A_RATE}/s`,
        };
      },
    },
    {
      id: 'unauth',
      label: 'unauthenticated flood',
      rampMs: 300,
      async prepare(s) {
        const body = writeBody(s.dir, 'simple.json', simpleJson.body as string);
        const headers = { 'content-type': 'application/json', authorization: 'Bearer not-a-token-of-this-server-0123456789abcdef' };
        return {
          workers: [
            {
              kind: 'requests',
              origin: s.server.url,
              paths: [simpleJson.path],
              method: 'POST',
              headers,
              bodyFile: body,
              connections: 64,
              localAddress: OTHER_ADDRESS,
              timeoutMs: 10_000,
            },
          ],
          note: `64 connections from ${OTHER_ADDRESS}, unpaced`,
        };
      },
    },
    {
      id: 'idle-conns',
      label: 'idle connections before auth',
      rampMs: 300,
      async prepare(s) {
        const wanted = Number(process.env.BENCH_TENANCY_IDLE_CONNS ?? '4096');
        const limit = nofileSoft();
        // This process holds B's sockets and the bench's files; the flood runs in a child with the same limit.
        const n = limit === undefined ? wanted : Math.max(1, Math.min(wanted, limit - 256));
        const note = `${n} connections from ${OTHER_ADDRESS} (asked ${wanted}; ulimit -n ${limit ?? 'unknown'}), each reopened 1 s after the server closes it`;
        const partial = `POST ${simpleJson.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
        return {
          workers: [{ kind: 'idle', host: '127.0.0.1', port: s.server.port, connections: n, partial, reopenMs: 1000, localAddress: OTHER_ADDRESS }],
          note,
        };
      },
    },
    {
      id: 'upload-15mb',
      label: '15 MB uploads',
      rampMs: 500,
      async prepare(s) {
        const wasm = fixture(s.ctx, 'identity');
        const padBytes = Math.floor(((UPLOAD_BODY_BYTES - 4 * wasm.length) * 3) / 4);
        const body = writeBody(s.dir, 'upload.json', uploadBody(wasmConfig(), { '1/model.wasm': wasm, '1/padding.bin': randomBytes(padBytes) }));
        const size = Buffer.byteLength(readFileSync(body, 'utf8'));
        const r = await s.postA('/v2/repository/models/big/load', readFileSync(body, 'utf8'), 120_000);
        const note = `${(size / 1e6).toFixed(1)} MB bodies, 2 connections; first upload ${r.status === 200 ? `200 in ${r.ms.toFixed(0)} ms` : `${r.status} ${short(r.text)}`}`;
        return {
          workers: [
            {
              kind: 'requests',
              origin: s.server.url,
              paths: ['/v2/repository/models/big/load'],
              method: 'POST',
              headers: jsonHeaders(TOKEN_A),
              bodyFile: body,
              connections: 2,
              timeoutMs: 120_000,
            },
          ],
          note,
        };
      },
    },
    {
      id: 'ensemble',
      label: 'ensemble fan-out',
      rampMs: 500,
      async prepare(s) {
        const infer = writeBody(
          s.dir,
          'ens.json',
          JSON.stringify({
            inputs: ['X0', 'X1'].map((name, k) => ({ name, datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => (k ? 1 : i)) })),
          }),
        );
        const load = async (name: string, steps: number, over: string) => {
          const file = writeBody(s.dir, `${name}-upload.json`, uploadBody(ensembleConfig(steps, over), { '1/README': Buffer.from('ensemble') }));
          const r = await s.postA(`/v2/repository/models/${name}/load`, readFileSync(file, 'utf8'), 120_000);
          return { ...r, file };
        };
        // Level 1: the most steps the server accepts (the attack's size, else the bound its refusal names).
        const notes: string[] = [];
        let steps = ENSEMBLE_STEPS;
        let first = await load('fan1', steps, 'simple');
        if (first.status !== 200) {
          notes.push(`${steps} steps: ${first.status} ${short(first.text)}`);
          const bound = Number(/bound (?:of )?(\d+)/.exec(first.text)?.[1] ?? NaN);
          if (!(bound > 0 && bound < steps)) {
            return {
              workers: refusedFlood(s, '/v2/repository/models/fan1/load', first.file, '/v2/models/fan1/infer', infer),
              note: `${notes.join('; ')}; A retries 2/s and sends ${A_RATE}/s`,
            };
          }
          steps = bound;
          first = await load('fan1', steps, 'simple');
          if (first.status !== 200) {
            notes.push(`${steps} steps: ${first.status} ${short(first.text)}`);
            return {
              workers: refusedFlood(s, '/v2/repository/models/fan1/load', first.file, '/v2/models/fan1/infer', infer),
              note: `${notes.join('; ')}; A retries 2/s and sends ${A_RATE}/s`,
            };
          }
        }
        // Deeper levels: ensembles of ensembles, while the server accepts them and one request
        // stays within ENSEMBLE_MAX_INFERENCES.
        let depth = 1;
        while (steps ** (depth + 1) <= ENSEMBLE_MAX_INFERENCES) {
          const r = await load(`fan${depth + 1}`, steps, `fan${depth}`);
          if (r.status !== 200) {
            notes.push(`depth ${depth + 1}: ${r.status} ${short(r.text)}`);
            break;
          }
          depth++;
        }
        notes.push(`${steps} steps × depth ${depth} accepted = ${steps ** depth} inferences of simple per request; A sends ${A_RATE}/s`);
        return {
          workers: [
            {
              kind: 'requests',
              origin: s.server.url,
              paths: [`/v2/models/fan${depth}/infer`],
              method: 'POST',
              headers: jsonHeaders(TOKEN_A),
              bodyFile: infer,
              connections: 16,
              rate: A_RATE,
              timeoutMs: 60_000,
            },
          ],
          note: notes.join('; '),
        };
      },
    },
  ];
}

/**
 * An ensemble of `steps` chained steps of model `over`, X0/X1 -> Y0/Y1: over `simple` each step is
 * (a, b) -> (a + b, a - b) (INPUT0/1 -> OUTPUT0/1); over another of these ensembles, X0/X1 -> Y0/Y1.
 */
function ensembleConfig(steps: number, over: string): object {
  const [in0, in1, out0, out1] = over === 'simple' ? ['INPUT0', 'INPUT1', 'OUTPUT0', 'OUTPUT1'] : ['X0', 'X1', 'Y0', 'Y1'];
  const t = (k: number, j: number) => (k === 0 ? `X${j}` : k === steps ? `Y${j}` : `t${k}_${j}`);
  return {
    platform: 'ensemble',
    max_batch_size: 8,
    input: [0, 1].map((j) => ({ name: `X${j}`, data_type: 'TYPE_INT32', dims: [16] })),
    output: [0, 1].map((j) => ({ name: `Y${j}`, data_type: 'TYPE_INT32', dims: [16] })),
    ensemble_scheduling: {
      step: Array.from({ length: steps }, (_, i) => ({
        model_name: over,
        model_version: -1,
        input_map: { [in0!]: t(i, 0), [in1!]: t(i, 1) },
        output_map: { [out0!]: t(i + 1, 0), [out1!]: t(i + 1, 1) },
      })),
    },
  };
}

function writeBody(dir: string, name: string, body: string): string {
  const f = join(dir, name);
  writeFileSync(f, body);
  return f;
}

/** A flood client running in a child process. */
interface Worker {
  ready: Promise<void>;
  result: Promise<FloodWorkerResult>;
}

function startWorker(ctx: BenchContext, spec: FloodWorkerSpec): Worker {
  const script = join(ctx.root, 'dist', 'bench', 'tenant-flood.js');
  const child = spawn(process.execPath, [script, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('"ready":true')) onReady();
  });
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const result = new Promise<FloodWorkerResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      onReady();
      const line = out.split('\n').find((l) => l.startsWith('{"result"'));
      if (!line) return reject(new Error(`flood client exited ${code} without a result: ${err.slice(-500)}`));
      resolve((JSON.parse(line) as { result: FloodWorkerResult }).result);
    });
  });
  return { ready, result };
}

/**
 * Wait until the server's CPU use (its process and descendants) over 250 ms falls below 15 % of a
 * core, at most `maxMs`. Returns false when it did not (or the server is gone: true).
 */
async function quiet(server: ChildServer, maxMs = 20_000): Promise<boolean> {
  const end = Date.now() + maxMs;
  while (Date.now() < end) {
    const c0 = server.cpuMicros();
    await sleep(250);
    const c1 = server.cpuMicros();
    if (c0 === undefined || c1 === undefined) return true;
    if ((c1 - c0) / 250_000 < 0.15) return true;
  }
  return false;
}

/** A's outcome summed over rounds. */
function addResults(into: FloodWorkerResult, r: FloodWorkerResult): void {
  for (const [k, v] of Object.entries(r.byStatus)) into.byStatus[k] = (into.byStatus[k] ?? 0) + v;
  into.errors += r.errors;
  into.unanswered = (into.unanswered ?? 0) + (r.unanswered ?? 0);
  into.firstError ??= r.firstError;
  if (r.opened !== undefined) {
    into.opened = (into.opened ?? 0) + r.opened;
    into.closedByServer = (into.closedByServer ?? 0) + (r.closedByServer ?? 0);
    into.maxOpen = Math.max(into.maxOpen ?? 0, r.maxOpen ?? 0);
  }
}

function outcome(r: FloodWorkerResult): string {
  const parts = Object.entries(r.byStatus)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([status, n]) => `${status}: ${n}`);
  if (r.opened !== undefined) parts.push(`opened ${r.opened}, closed by server ${r.closedByServer}, most open ${r.maxOpen}`);
  if (r.unanswered) parts.push(`unanswered at the end ${r.unanswered}`);
  if (r.errors) parts.push(`socket errors ${r.errors}${r.firstError ? ` (${r.firstError})` : ''}`);
  return parts.join(', ') || 'nothing answered';
}

interface FloodRow {
  def: FloodDef;
  note: string;
  alone: Run[];
  during: Run[];
  a: FloodWorkerResult;
  notQuiet: number;
  failed?: string;
}

/** Run one flood on a fresh server: rounds of (B alone, B while A floods). */
async function runFlood(ctx: BenchContext, def: FloodDef, phaseS: number): Promise<FloodRow> {
  const row: FloodRow = { def, note: '', alone: [], during: [], a: { byStatus: {}, errors: 0 }, notQuiet: 0 };
  const repo = await ctx.makeRepository(['simple']);
  const dir = mkdtempSync(join(tmpdir(), `warden-bench-${def.id}-`));
  const tenantsFile = join(dir, 'tenants.json');
  const extra = process.env.BENCH_TENANCY_A_ENTRY ? (JSON.parse(process.env.BENCH_TENANCY_A_ENTRY) as { quotas?: Record<string, number> }) : {};
  const serverArgs = (process.env.BENCH_TENANCY_SERVER_ARGS ?? '').split(/\s+/).filter(Boolean);
  const quotasA = def.quotasA || extra.quotas ? { ...extra.quotas, ...def.quotasA } : undefined;
  writeFileSync(
    tenantsFile,
    JSON.stringify({
      tenants: [
        { id: 'a', role: 'tenant', tokens: [hashToken(TOKEN_A)], shared_models: ['simple'], ...extra, ...(quotasA ? { quotas: quotasA } : {}) },
        {
          id: 'b',
          role: 'tenant',
          tokens: [hashToken(TOKEN_B)],
          shared_models: ['simple'],
          quotas: { requests_per_second: 100_000, burst: 100_000, max_inflight: 1000 },
        },
      ],
    }),
  );
  const server = await ctx.startWarden(repo, [
    `--tenants=${tenantsFile}`,
    '--model-control-mode=explicit',
    '--load-model=simple',
    `--upload-directory=${join(dir, 'uploads')}`,
    ...serverArgs,
  ]);
  const postA = async (path: string, body: string, timeoutMs = 60_000) => {
    const t0 = performance.now();
    try {
      const res = await fetch(server.url + path, { method: 'POST', headers: jsonHeaders(TOKEN_A), body, signal: AbortSignal.timeout(timeoutMs) });
      return { status: res.status, text: await res.text(), ms: performance.now() - t0 };
    } catch (e) {
      return { status: 0, text: `request failed: ${(e as Error).message}`, ms: performance.now() - t0 };
    }
  };
  const req = jsonRequest();
  try {
    const plan = await def.prepare({ ctx, server, dir, postA });
    row.note = plan.note;
    ctx.log(`  [${def.id}] ${plan.note}`);
    await measureB(server, req, Math.min(ctx.warmupS, 1), B_RATE);
    for (let r = 0; r < ctx.rounds; r++) {
      if (!(await quiet(server))) row.notQuiet++;
      const alone = await measureB(server, req, phaseS, B_RATE);
      if (!(await quiet(server))) row.notQuiet++;
      const durationMs = def.rampMs + phaseS * 1000 + 300;
      const workers = plan.workers.map((w) => startWorker(ctx, { ...w, durationMs } as FloodWorkerSpec));
      await Promise.race([Promise.all(workers.map((w) => w.ready)), sleep(15_000)]);
      await sleep(def.rampMs);
      const during = await measureB(server, req, phaseS, B_RATE);
      for (const w of workers) addResults(row.a, await w.result);
      row.alone.push(alone);
      row.during.push(during);
      ctx.log(
        `  [${def.id}] round ${r + 1}/${ctx.rounds}: B alone p50 ${alone.p50Ms.toFixed(2)} p99 ${alone.p99Ms.toFixed(2)} ms (${alone.other} errors); ` +
          `during p50 ${during.p50Ms.toFixed(2)} p99 ${during.p99Ms.toFixed(2)} ms (${during.ok} ok, ${during.other} errors)`,
      );
    }
    ctx.log(`  [${def.id}] A: ${outcome(row.a)}`);
  } catch (e) {
    row.failed = e instanceof Error ? e.message.split('\n')[0]! : String(e);
    ctx.log(`  [${def.id}] FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  } finally {
    await server.stop();
  }
  return row;
}

/** Run the tenancy suite; prints and records its table. */
export async function benchTenancy(ctx: BenchContext): Promise<void> {
  const phaseS = Number(process.env.BENCH_TENANCY_PHASE_S ?? '') || Math.min(ctx.durationS, 2.5);
  const engines = (process.env.BENCH_TENANCY_ENGINES ?? 'v8,wasmtime').split(',').filter(Boolean);
  const only = (process.env.BENCH_TENANCY_FLOODS ?? '').split(',').filter(Boolean);
  const defs = floods(engines).filter((d) => only.length === 0 || only.includes(d.id));
  ctx.log(
    `\n== Tenancy: B's p99 alone vs during each of A's floods (B ${B_RATE}/s on shared simple; ${ctx.rounds} rounds × ${phaseS} s phases), and the cost of authentication ==`,
  );

  const rows: FloodRow[] = [];
  for (const def of defs) {
    ctx.log(` flood ${def.id}: ${def.label}`);
    rows.push(await runFlood(ctx, def, phaseS));
  }
  const med = (xs: Run[], f: (x: Run) => number) => ctx.median(xs.map(f));
  const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
  const tableRows: (string | number)[][] = [];
  const verdicts: string[] = [];
  for (const r of rows) {
    if (r.failed) {
      tableRows.push([r.def.label, `FAILED: ${r.failed}`, '', '', '', '', '', '']);
      verdicts.push(`- ${r.def.label}: FAILED (${r.failed})`);
      continue;
    }
    const aloneP99 = med(r.alone, (x) => x.p99Ms);
    const duringP99 = med(r.during, (x) => x.p99Ms);
    const ratio = duringP99 / aloneP99;
    const errors = r.during.reduce((n, x) => n + x.other + x.limited, 0);
    const met = Number.isFinite(ratio) && ratio <= TARGET_RATIO && errors === 0;
    tableRows.push([
      r.def.label,
      fmt(med(r.alone, (x) => x.p50Ms)),
      fmt(aloneP99),
      fmt(med(r.during, (x) => x.p50Ms)),
      fmt(duringP99),
      errors,
      Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : 'n/a',
      met ? 'MET' : 'MISSED',
    ]);
    verdicts.push(`- ${r.def.label}: ${r.note}. A's answers: ${outcome(r.a)}.${r.notQuiet ? ` (server not quiet before ${r.notQuiet} phase(s))` : ''}`);
  }
  const fairness =
    ctx.table(
      ['A floods with', 'B p50 alone', 'B p99 alone', 'B p50 during', 'B p99 during', 'B failed during', 'p99 during ÷ alone', `target <= ${TARGET_RATIO}×`],
      tableRows,
    ) +
    `\n\nB: ${B_RATE} req/s open loop (latency from each request's due time) to shared \`simple\` (JSON); latencies in ms, medians over ${ctx.rounds} rounds of ${phaseS} s; ` +
    `"B failed" counts B's non-2xx answers and socket errors during the floods (any fails the target).\n\nA's floods:\n${verdicts.join('\n')}`;
  ctx.log('\n' + fairness);
  ctx.section('Tenancy: fairness under floods', fairness);

  ctx.log('\n  authentication cost: simple JSON c=1, single-user vs multi-tenant (tenant B)');
  const repo = await ctx.makeRepository(['simple']);
  const dir = mkdtempSync(join(tmpdir(), 'warden-bench-tenants-'));
  const tenantsFile = join(dir, 'tenants.json');
  writeFileSync(
    tenantsFile,
    JSON.stringify({
      tenants: [
        {
          id: 'b',
          role: 'tenant',
          tokens: [hashToken(TOKEN_B)],
          shared_models: ['simple'],
          quotas: { requests_per_second: 100_000, burst: 100_000, max_inflight: 1000 },
        },
      ],
    }),
  );
  const multi = await ctx.startWarden(repo, [`--tenants=${tenantsFile}`]);
  const single = await ctx.startWarden(repo);
  try {
    const req = jsonRequest();
    const auth = await ctx.measure([
      { label: 'JSON c=1', target: 'single-user', server: single, request: req, connections: 1 },
      {
        label: 'JSON c=1',
        target: 'multi-tenant',
        server: multi,
        request: { ...req, headers: { ...req.headers, authorization: `Bearer ${TOKEN_B}` } },
        connections: 1,
      },
    ]);
    const s = auth.find((x) => x.target === 'single-user')!;
    const m = auth.find((x) => x.target === 'multi-tenant')!;
    const authTable =
      ctx.table(
        ['server', 'infer/s', 'p50 ms', 'p99 ms', 'CPU µs/req'],
        [
          ['single-user', s.rps.toFixed(0), s.p50Ms.toFixed(3), s.p99Ms.toFixed(3), s.cpuUsPerReq.toFixed(0)],
          ['multi-tenant (bearer token)', m.rps.toFixed(0), m.p50Ms.toFixed(3), m.p99Ms.toFixed(3), m.cpuUsPerReq.toFixed(0)],
        ],
      ) +
      `\n\nAuthentication and tenant accounting cost: ${(m.cpuUsPerReq - s.cpuUsPerReq).toFixed(1)} CPU µs/request, ` +
      `${((m.p50Ms - s.p50Ms) * 1000).toFixed(0)} µs of p50. Medians over ${ctx.rounds} rounds of ${ctx.durationS} s.`;
    ctx.log('\n' + authTable);
    ctx.section('Tenancy: cost of authentication', authTable);
  } finally {
    await multi.stop();
    await single.stop();
  }
  const failed = rows.filter((r) => r.failed);
  if (failed.length) throw new Error(`tenancy floods that could not run: ${failed.map((r) => r.def.id).join(', ')}`);
}
