/**
 * Warden against the real tritonserver (`benchVsTriton(ctx)`, `BENCH_ONLY=vs-triton` or
 * `npm run bench -- vs-triton`): tritonserver 2.51 from the pinned PyPI `nvidia-pytriton` wheel
 * (tools/triton-wheel.ts) and Warden serve the same repository with the very same backend files
 * (build/backends/warden_identity through one backend directory layout; Triton's own
 * `libtriton_python.so` from the wheel), driven by native load generators (wrk for HTTP/1.1,
 * ghz and h2load for gRPC) so the client is not the bottleneck.
 *
 * Servers run one at a time (the same CPU budget), in alternating rounds: Triton, Warden (as
 * `npm start` runs it), Warden with `--http-threads=2 --http-main-listener=false`, Warden hosting
 * Triton's Python backend, then the next round. Each start warms every case for 1 s, checks one
 * answer per case, then measures each case for BENCH_DURATION_S. Medians over BENCH_ROUNDS rounds;
 * Warden ÷ Triton per row, p99 where the tool reports one (wrk, ghz; h2load has none).
 *
 * Rows: identity (native C backend, FP32 [16]) over HTTP JSON, HTTP binary, gRPC (ghz and h2load) at
 * c=1, 16, 64; Python add_sub (FP32 [4], JSON) at c=1 and 16 on Warden's own Python backend and on
 * Triton's `libtriton_python.so` hosted by Warden, each against Triton's Python backend; a 16 MiB
 * FP32 identity over HTTP binary (MB/s of input tensor); ONNX `simple` (INT32 [1,16], JSON) on
 * Warden beside Triton's identity JSON figure (the wheel has no ONNX Runtime backend).
 * `BENCH_VS_TRITON_ROWS` (comma list of {@link ROW_GROUPS}; default all) keeps some rows: only the
 * cases they compare run, and a server with none left is not started (`python` alone runs
 * tritonserver, Warden and Warden hosting Triton's Python backend, add_sub only).
 * `BENCH_VS_TRITON_BASELINE=<checkout>` (its `dist/` built) adds that build's Warden to every
 * round, after Warden, with the Python add_sub rows: a before / after of the Python backend in
 * the same run, beside Triton.
 * Skips, with the reason, when the wheel cannot run here or a load generator is missing.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTritonService } from '../host/src/frontend/grpc/proto.js';
import { exec } from '../tools/pip.js';
import { ensureTritonWheel, sharedBackendLayout, startTritonServer, stopTritonServer, type TritonWheel } from '../tools/triton-wheel.js';
import { startNodeFlags, type BenchContext } from './ctx.js';
import type { ToolResult } from './load-output.js';
import { findTool, runGhz, runH2loadGrpc, runWrk, wrkScript, type WrkRequest } from './load-tools.js';
import { IDENTITY_INPUT, identityRequest, simpleRequest } from './requests.js';

type ServerKind = 'triton' | 'warden' | 'warden-baseline' | 'warden-threads' | 'warden-js' | 'warden-tp';
type Tool = 'wrk' | 'ghz' | 'h2load';

/** A server of one round: HTTP base URL, gRPC address (host:port, when it serves gRPC), stop. */
interface Served {
  url: string;
  grpc?: string;
  /** The tail of what the server printed (for errors). */
  output(): string;
  stop(): Promise<void>;
}

/** Why an answer is wrong, or undefined. */
type Check = (res: Buffer) => string | undefined;

/** One measured case on one server. */
interface Case {
  key: string;
  tool: Tool;
  connections: number;
  /** wrk: the request; gRPC: undefined. */
  http?: { path: string; headers: Record<string, string>; bodyFile: string; check: Check };
  on: ServerKind;
}

/** Row groups `BENCH_VS_TRITON_ROWS` selects from. */
export const ROW_GROUPS = ['identity', 'python', 'big', 'onnx', 'wasm'] as const;
type RowGroup = (typeof ROW_GROUPS)[number];

/** The row groups `BENCH_VS_TRITON_ROWS` asks for (all when unset). @throws Error naming an unknown group. */
function wantedRowGroups(env = process.env.BENCH_VS_TRITON_ROWS): Set<RowGroup> {
  const names = (env ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(ROW_GROUPS as readonly string[]).includes(n));
  if (unknown.length) throw new Error(`BENCH_VS_TRITON_ROWS: unknown row group(s) ${unknown.join(', ')} (known: ${ROW_GROUPS.join(', ')})`);
  return new Set((names.length ? names : ROW_GROUPS) as RowGroup[]);
}

/** A table row: a Warden case against a Triton case. */
interface Row {
  group: RowGroup;
  label: string;
  warden: string;
  triton: string;
  /** Show MB/s of `bytesPerRequest` instead of infer/s. */
  bytesPerRequest?: number;
}

const THREADS_FLAGS = ['--http-threads=2', '--http-main-listener=false'];
/**
 * The JavaScript HTTP path, beside the default native data path (frontend/http/data-path/, on which
 * identity's /infer never reaches the JavaScript thread).
 */
const JS_FLAGS = ['--http-data-path=js'];
/** How the summary names each server. */
const SERVER_NAMES: Record<ServerKind, string> = {
  triton: 'tritonserver',
  warden: 'Warden',
  'warden-baseline': 'the baseline build of Warden',
  'warden-threads': `Warden ${THREADS_FLAGS.join(' ')}`,
  'warden-js': `Warden ${JS_FLAGS.join(' ')}`,
  'warden-tp': "Warden hosting Triton's libtriton_python.so",
};
const BIG_ELEMENTS = 4 * 1024 * 1024; // 16 MiB of FP32
const CONCURRENCY = [1, 16, 64];

/** The sandboxed C identity of the `wasm` rows (wasmtime engine). */
const WASM_IDENTITY = 'identity_c_wasmtime';

/**
 * The sandbox's cost per request at c=1 on the native data path: the C guest on wasmtime against
 * the native identity, both JSON, as time per request (1 / rate at one connection).
 */
function sandboxCost(summary: (id: string) => { rps: number }): string {
  const wasm = summary('warden wasmtime C identity JSON c=1').rps;
  const native = summary('warden identity JSON c=1').rps;
  const us = 1e6 / wasm - 1e6 / native;
  return `Sandbox cost at c=1 (wasmtime C guest − native identity, both on the native data path): ${fmt(us, 1)} µs per request (target ≤ 15 µs).`;
}

/** An interpreter with pip for the wheel: the compat venv's (test/compat/venv.ts), else $WARDEN_PYTHON or python3. */
async function pipPython(root: string): Promise<{ ok: true; python: string } | { ok: false; reason: string }> {
  for (const python of [join(root, '.venv', 'bin', 'python'), process.env.WARDEN_PYTHON ?? 'python3']) {
    if (python.includes('/') && !existsSync(python)) continue;
    if ((await exec(python, ['-m', 'pip', '--version'], 60_000)).code === 0) return { ok: true, python };
  }
  return { ok: false, reason: 'no Python with pip (.venv/bin/python, $WARDEN_PYTHON or python3) to download the wheel' };
}

/** Binary tensor extension request: JSON header (its length in Inference-Header-Content-Length) + raw FP32 bytes. */
function binaryIdentity(values: Float32Array): { headers: Record<string, string>; body: Buffer } {
  const raw = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', shape: [values.length], datatype: 'FP32', parameters: { binary_data_size: raw.length } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  return {
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(header.length) },
    body: Buffer.concat([header, raw]),
  };
}

/** Why a binary identity answer is wrong (its tail must be the input's bytes), or undefined. */
function binaryAnswerCheck(raw: Buffer): Check {
  return (res) =>
    res.length > raw.length && res.subarray(res.length - raw.length).equals(raw) ? undefined : `binary answer of ${res.length} bytes lacks the input's bytes`;
}

/** Why a JSON answer's output `name` is not `want`, or undefined. */
function jsonOutputCheck(name: string, want: readonly number[]): Check {
  return (res) => {
    const out = (JSON.parse(res.toString()) as { outputs?: { name: string; data: number[] }[] }).outputs?.find((o) => o.name === name)?.data;
    return out && out.length === want.length && out.every((v, i) => v === want[i])
      ? undefined
      : `${name} is ${JSON.stringify(out)}, want ${JSON.stringify(want)}`;
  };
}

/** One gRPC ModelInfer call of the framed message `frame` over HTTP/2 (as h2load sends it); resolves to the grpc-status. */
function grpcStatusOf(address: string, frame: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = connect(`http://${address}`);
    session.on('error', reject);
    const req = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status: string | undefined;
    req.on('response', (h) => (status = (h['grpc-status'] as string | undefined) ?? status));
    req.on('trailers', (t) => (status = (t['grpc-status'] as string | undefined) ?? status));
    req.on('data', () => undefined);
    req.on('end', () => {
      session.close();
      resolve(status ?? 'none');
    });
    req.on('error', reject);
    req.end(frame);
  });
}

const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');

export async function benchVsTriton(ctx: BenchContext): Promise<{ skipped?: string }> {
  ctx.log('\n== Warden vs tritonserver (same backends, same models, native load generators) ==');
  const wanted = wantedRowGroups();
  const baseline = process.env.BENCH_VS_TRITON_BASELINE || undefined;
  if (baseline && !existsSync(join(baseline, 'dist', 'host', 'src', 'cli.js'))) {
    throw new Error(`BENCH_VS_TRITON_BASELINE: ${baseline}/dist/host/src/cli.js is missing (build that checkout first)`);
  }
  const title = 'Warden vs tritonserver';
  const skip = (reason: string) => {
    ctx.log(`  skipped: ${reason}`);
    ctx.section(title, `Skipped: ${reason}`);
    return { skipped: reason };
  };
  const libtritonserver = join(ctx.root, 'native', 'build', 'Release', 'libtritonserver.so');
  const nativeDir = join(ctx.root, 'build', 'backends');
  if (!existsSync(libtritonserver) || !existsSync(join(nativeDir, 'warden_identity')))
    return skip('the native build is missing (node scripts/build-native.mjs)');
  const wrk = findTool('wrk');
  const h2load = findTool('h2load');
  const ghz = process.env.BENCH_GHZ ?? findTool('ghz', [join(ctx.root, '.cache', 'go-bin', 'ghz')]);
  if (!wrk) return skip('wrk is not installed (apt-get install -y wrk)');
  const toolSkips: string[] = [];
  if (!h2load) toolSkips.push('gRPC (h2load) rows: h2load is not installed (apt-get install -y nghttp2-client)');
  if (!ghz) toolSkips.push('gRPC (ghz) rows: ghz is not installed (go install github.com/bojand/ghz/cmd/ghz@v0.120.0)');

  ctx.log('  preparing the nvidia-pytriton wheel (first run downloads 55 MB)...');
  const wheel: TritonWheel = await ensureTritonWheel({ pip: () => pipPython(ctx.root), libtritonserver });
  if (!wheel.ok) return skip(`the tritonserver wheel cannot run here: ${wheel.reason}`);

  const work = await mkdtemp(join(tmpdir(), 'warden-bench-vs-triton-'));
  const servers: Served[] = [];
  try {
    const repo = await ctx.makeRepository(['identity_native', 'simple', 'add_sub_python']);
    // identity as a sandboxed C guest on wasmtime (test/fixtures/wasm/hostile.c, mode IDENTITY)
    mkdirSync(join(repo, WASM_IDENTITY, '1'), { recursive: true });
    copyFileSync(join(ctx.root, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm'), join(repo, WASM_IDENTITY, '1', 'model.wasm'));
    writeFileSync(
      join(repo, WASM_IDENTITY, 'config.pbtxt'),
      readFileSync(join(ctx.root, 'model_repository', 'identity_wasm', 'config.pbtxt'), 'utf8').replace('name: "identity_wasm"', `name: "${WASM_IDENTITY}"`) +
        '\nparameters { key: "engine" value: { string_value: "wasmtime" } }\n',
    );
    const layout = sharedBackendLayout(wheel, join(work, 'layout'), nativeDir, ['warden_identity']);
    const file = (name: string, body: string | Buffer) => {
      const p = join(work, name);
      writeFileSync(p, body);
      return p;
    };
    mkdirSync(join(work, 'bodies'), { recursive: true });

    // Request bodies (every server gets the same bytes).
    const idJson = identityRequest('identity_native');
    const idBin = binaryIdentity(new Float32Array(IDENTITY_INPUT));
    const bigValues = new Float32Array(BIG_ELEMENTS).map((_, i) => (i % 1024) * 0.25);
    const big = binaryIdentity(bigValues);
    const a = [1, 2.5, -3, 4];
    const b = [0.5, 0.5, 10, -4];
    const addSub = {
      path: '/v2/models/add_sub_python/infer',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        inputs: [
          { name: 'INPUT0', shape: [4], datatype: 'FP32', data: a },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: b },
        ],
        outputs: [
          { name: 'OUTPUT0', parameters: { binary_data: false } },
          { name: 'OUTPUT1', parameters: { binary_data: false } },
        ],
      }),
    };
    const simple = simpleRequest();
    const json = { 'Content-Type': 'application/json' };
    const idRaw = Buffer.from(new Float32Array(IDENTITY_INPUT).buffer);
    const service = loadTritonService(join(ctx.root, 'third_party', 'triton-grpc-protos', 'grpc_service.protoset')) as unknown as Record<
      string,
      { requestSerialize(v: unknown): Buffer }
    >;
    const grpcMessage = { model_name: 'identity_native', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['16'] }], raw_input_contents: [idRaw] };
    const pb = service.ModelInfer!.requestSerialize(grpcMessage);
    const frame = Buffer.concat([Buffer.from([0, (pb.length >>> 24) & 255, (pb.length >>> 16) & 255, (pb.length >>> 8) & 255, pb.length & 255]), pb]);
    const grpcFrameFile = file('bodies/grpc.bin', frame);
    const ghzData = file('bodies/ghz.json', JSON.stringify({ ...grpcMessage, raw_input_contents: [idRaw.toString('base64')] }));
    const protoset = join(ctx.root, 'third_party', 'triton-grpc-protos', 'grpc_service.protoset');

    const httpCase = (on: ServerKind, key: string, c: number, path: string, headers: Record<string, string>, body: string | Buffer, check: Check): Case => ({
      key: `${key} c=${c}`,
      tool: 'wrk',
      connections: c,
      on,
      http: { path, headers, bodyFile: file(`bodies/${on}-${key.replace(/\W+/g, '_')}-${c}`, body), check },
    });
    const idJsonCheck = jsonOutputCheck('OUTPUT0', IDENTITY_INPUT);
    const idBinCheck = binaryAnswerCheck(idRaw);
    let cases: Case[] = [];
    let rows: Row[] = [];
    for (const c of CONCURRENCY) {
      for (const on of ['triton', 'warden'] as const) cases.push(httpCase(on, 'identity JSON', c, idJson.path, json, idJson.body as string, idJsonCheck));
      rows.push({ group: 'identity', label: `identity, HTTP JSON, c=${c}`, triton: `triton identity JSON c=${c}`, warden: `warden identity JSON c=${c}` });
      cases.push(httpCase('warden-js', 'identity JSON', c, idJson.path, json, idJson.body as string, idJsonCheck));
      rows.push({
        group: 'identity',
        label: `same, ${JS_FLAGS.join(' ')}`,
        triton: `triton identity JSON c=${c}`,
        warden: `warden-js identity JSON c=${c}`,
      });
      if (c > 1) {
        cases.push(httpCase('warden-threads', 'identity JSON', c, idJson.path, json, idJson.body as string, idJsonCheck));
        rows.push({
          group: 'identity',
          label: `same, ${THREADS_FLAGS.join(' ')}`,
          triton: `triton identity JSON c=${c}`,
          warden: `warden-threads identity JSON c=${c}`,
        });
      }
    }
    for (const c of CONCURRENCY) {
      for (const on of ['triton', 'warden'] as const) cases.push(httpCase(on, 'identity binary', c, idJson.path, idBin.headers, idBin.body, idBinCheck));
      rows.push({
        group: 'identity',
        label: `identity, HTTP binary, c=${c}`,
        triton: `triton identity binary c=${c}`,
        warden: `warden identity binary c=${c}`,
      });
      cases.push(httpCase('warden-js', 'identity binary', c, idJson.path, idBin.headers, idBin.body, idBinCheck));
      rows.push({
        group: 'identity',
        label: `same, ${JS_FLAGS.join(' ')}`,
        triton: `triton identity binary c=${c}`,
        warden: `warden-js identity binary c=${c}`,
      });
    }
    for (const [tool, present] of [
      ['ghz', ghz],
      ['h2load', h2load],
    ] as const) {
      if (!present) continue;
      for (const c of CONCURRENCY) {
        for (const on of ['triton', 'warden'] as const) cases.push({ key: `identity gRPC ${tool} c=${c}`, tool, connections: c, on });
        rows.push({
          group: 'identity',
          label: `identity, gRPC (${tool}), c=${c}`,
          triton: `triton identity gRPC ${tool} c=${c}`,
          warden: `warden identity gRPC ${tool} c=${c}`,
        });
        cases.push({ key: `identity gRPC ${tool} c=${c}`, tool, connections: c, on: 'warden-js' });
        rows.push({
          group: 'identity',
          label: `same, ${JS_FLAGS.join(' ')}`,
          triton: `triton identity gRPC ${tool} c=${c}`,
          warden: `warden-js identity gRPC ${tool} c=${c}`,
        });
      }
    }
    const addSubCheck = jsonOutputCheck(
      'OUTPUT0',
      a.map((x, i) => x + b[i]!),
    );
    for (const c of [1, 16]) {
      for (const on of ['triton', 'warden', 'warden-tp'] as const) cases.push(httpCase(on, 'add_sub', c, addSub.path, json, addSub.body, addSubCheck));
      rows.push({
        group: 'python',
        label: `Python add_sub (Warden's Python backend), c=${c}`,
        triton: `triton add_sub c=${c}`,
        warden: `warden add_sub c=${c}`,
      });
      cases.push(httpCase('warden-js', 'add_sub', c, addSub.path, json, addSub.body, addSubCheck));
      rows.push({ group: 'python', label: `same, ${JS_FLAGS.join(' ')}`, triton: `triton add_sub c=${c}`, warden: `warden-js add_sub c=${c}` });
      if (baseline) {
        cases.push(httpCase('warden-baseline', 'add_sub', c, addSub.path, json, addSub.body, addSubCheck));
        rows.push({ group: 'python', label: `same, baseline build (${baseline})`, triton: `triton add_sub c=${c}`, warden: `warden-baseline add_sub c=${c}` });
      }
      rows.push({
        group: 'python',
        label: `Python add_sub (Triton's libtriton_python.so in Warden), c=${c}`,
        triton: `triton add_sub c=${c}`,
        warden: `warden-tp add_sub c=${c}`,
      });
    }
    for (const on of ['triton', 'warden'] as const)
      cases.push(httpCase(on, 'identity 16 MiB', 1, idJson.path, big.headers, big.body, binaryAnswerCheck(Buffer.from(bigValues.buffer))));
    rows.push({
      group: 'big',
      label: 'identity 16 MiB FP32, HTTP binary, c=1 (MB/s)',
      triton: 'triton identity 16 MiB c=1',
      warden: 'warden identity 16 MiB c=1',
      bytesPerRequest: BIG_ELEMENTS * 4,
    });
    cases.push(httpCase('warden-js', 'identity 16 MiB', 1, idJson.path, big.headers, big.body, binaryAnswerCheck(Buffer.from(bigValues.buffer))));
    rows.push({
      group: 'big',
      label: `same, ${JS_FLAGS.join(' ')}`,
      triton: 'triton identity 16 MiB c=1',
      warden: 'warden-js identity 16 MiB c=1',
      bytesPerRequest: BIG_ELEMENTS * 4,
    });
    const simpleCheck = jsonOutputCheck(
      'OUTPUT0',
      Array.from({ length: 16 }, (_, i) => i + 1),
    );
    for (const c of CONCURRENCY) {
      cases.push(httpCase('warden', 'simple (ONNX)', c, simple.path, json, simple.body as string, simpleCheck));
      rows.push({
        group: 'onnx',
        label: `ONNX simple on Warden vs Triton's identity JSON, c=${c}`,
        triton: `triton identity JSON c=${c}`,
        warden: `warden simple (ONNX) c=${c}`,
      });
      cases.push(httpCase('warden-js', 'simple (ONNX)', c, simple.path, json, simple.body as string, simpleCheck));
      rows.push({
        group: 'onnx',
        label: `same, ${JS_FLAGS.join(' ')}`,
        triton: `triton identity JSON c=${c}`,
        warden: `warden-js simple (ONNX) c=${c}`,
      });
    }

    // the sandboxed C guest on wasmtime, served by the native data path without the JavaScript thread
    const wasmJson = identityRequest(WASM_IDENTITY);
    for (const c of CONCURRENCY) {
      cases.push(httpCase('warden', 'wasmtime C identity JSON', c, wasmJson.path, json, wasmJson.body as string, idJsonCheck));
      rows.push({
        group: 'wasm',
        label: `identity as a C guest on wasmtime, HTTP JSON, c=${c}`,
        triton: `triton identity JSON c=${c}`,
        warden: `warden wasmtime C identity JSON c=${c}`,
      });
    }
    rows.push({ group: 'wasm', label: `native identity, c=1`, triton: 'triton identity JSON c=1', warden: 'warden identity JSON c=1' });

    rows = rows.filter((row) => wanted.has(row.group));
    const compared = new Set(rows.flatMap((row) => [row.triton, row.warden]));
    cases = cases.filter((k) => compared.has(`${k.on} ${k.key}`));

    const start = async (on: ServerKind): Promise<Served> => {
      const grpcPort = await ctx.freePort();
      if (on === 'triton') {
        const t = await startTritonServer(wheel, repo, ['identity_native', 'add_sub_python'], `triton_bench_${process.pid}_`, {
          grpcPort,
          backendDirectory: layout.tritonBackends,
          env: { LD_LIBRARY_PATH: layout.tritonLibraryPath },
        });
        return { url: t.url, grpc: `127.0.0.1:${grpcPort}`, output: () => t.log.join('').slice(-3000), stop: () => stopTritonServer(t) };
      }
      if (on === 'warden-baseline') {
        const port = await ctx.freePort();
        const cli = join(baseline!, 'dist', 'host', 'src', 'cli.js');
        const w = await ctx.startChild(
          'warden-baseline',
          process.execPath,
          [
            ...startNodeFlags(baseline),
            cli,
            '--model-repository',
            repo,
            '--http-port',
            String(port),
            '--metrics-port',
            String(await ctx.freePort()),
            '--allow-grpc=false',
            '--backend-directory',
            nativeDir,
          ],
          port,
          '/v2/health/ready',
        );
        return { url: w.url, output: () => w.output().slice(-3000), stop: () => w.stop() };
      }
      const args =
        on === 'warden-tp'
          ? [
              '--backend-directory',
              layout.wardenBackends,
              '--model-control-mode=explicit',
              '--load-model=add_sub_python',
              `--backend-config=python,shm-region-prefix-name=warden_bench_${process.pid}_`,
            ]
          : [
              '--backend-directory',
              nativeDir,
              `--grpc-port=${grpcPort}`,
              ...(on === 'warden-threads' ? THREADS_FLAGS : []),
              ...(on === 'warden-js' ? JS_FLAGS : []),
            ];
      const w = await ctx.startWarden(repo, args);
      return { url: w.url, grpc: `127.0.0.1:${grpcPort}`, output: () => w.output().slice(-3000), stop: () => w.stop() };
    };
    const scripts = new Map<Case, { req: WrkRequest; script: string }>();
    const measureOnce = async (s: Served, k: Case, seconds: number): Promise<ToolResult> => {
      if (k.tool === 'wrk') {
        const req = { url: s.url + k.http!.path, headers: k.http!.headers, bodyFile: k.http!.bodyFile };
        const script = scripts.get(k)?.script ?? wrkScript(req);
        scripts.set(k, { req, script });
        return runWrk(wrk, req, script, k.connections, seconds);
      }
      if (k.tool === 'ghz') return runGhz(ghz!, protoset, s.grpc!, ghzData, k.connections, seconds);
      return runH2loadGrpc(h2load!, s.grpc!, grpcFrameFile, k.connections, seconds);
    };
    const check = async (s: Served, k: Case): Promise<void> => {
      if (k.http) {
        const res = await fetch(s.url + k.http.path, { method: 'POST', headers: k.http.headers, body: readFileSync(k.http.bodyFile) as unknown as string });
        const body = Buffer.from(await res.arrayBuffer());
        const wrong = res.status !== 200 ? `HTTP ${res.status}: ${body.subarray(0, 300).toString()}` : k.http.check(body);
        if (wrong) throw new Error(`${k.on} ${k.key}: ${wrong}`);
      } else {
        const status = await grpcStatusOf(s.grpc!, frame);
        if (status !== '0') throw new Error(`${k.on} ${k.key}: grpc-status ${status}`);
      }
    };

    const results = new Map<string, ToolResult[]>();
    const failedRounds: string[] = [];
    const order: ServerKind[] = ['triton', 'warden', 'warden-baseline', 'warden-threads', 'warden-js', 'warden-tp'];
    for (let r = 0; r < ctx.rounds; r++) {
      for (const on of order) {
        const mine = cases.filter((k) => k.on === on);
        if (mine.length === 0) continue;
        ctx.log(`  round ${r + 1}/${ctx.rounds}: ${on} (${mine.length} cases)`);
        const s = await start(on);
        servers.push(s);
        const why = (e: unknown) => {
          const cause = e instanceof Error ? (e.cause as { code?: string; message?: string } | undefined) : undefined;
          return `${e instanceof Error ? e.message : String(e)}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
        };
        const named = (e: unknown) => new Error(`${on}: ${why(e)}\n${on} printed:\n${s.output()}`, { cause: e });
        try {
          const unchecked = await (async () => {
            for (const k of mine) await check(s, k);
          })().then(
            () => undefined,
            (e: unknown) => why(e),
          );
          if (unchecked !== undefined) {
            // a server whose answers are wrong this round measures nothing this round
            failedRounds.push(`${on} in round ${r + 1}: ${unchecked}`);
            ctx.log(`    left out: ${on} in round ${r + 1}: ${unchecked}\n${s.output().slice(-1500)}`);
            continue;
          }
          for (const k of mine) await measureOnce(s, k, 1).catch((e: unknown) => Promise.reject(named(e))); // warm-up
          for (const k of mine) {
            const res = await measureOnce(s, k, ctx.durationS).catch((e: unknown) => Promise.reject(named(e)));
            const id = `${on} ${k.key}`;
            if (res.failures > 0 || res.ok === 0 || (res.cancelledAtEnd ?? 0) > k.connections) {
              // a round with failed requests is no measurement of that case: it is left out of the
              // medians and named in the report (a case no round measured shows –)
              const what = `${id}: ${res.failures} failures, ${res.cancelledAtEnd ?? 0} cancelled, ${res.ok} ok in round ${r + 1} ${JSON.stringify(res.errors ?? {})}`;
              failedRounds.push(what);
              ctx.log(`    left out: ${what}`);
              continue;
            }
            results.set(id, [...(results.get(id) ?? []), res]);
            ctx.log(`    ${id.padEnd(40)} ${fmt(res.rps).padStart(9)} /s  p99 ${fmt(res.p99Ms, 2)} ms`);
          }
        } finally {
          await s.stop();
          servers.splice(servers.indexOf(s), 1);
        }
      }
    }

    const summary = (id: string) => {
      const rs = results.get(id) ?? [];
      return {
        rps: ctx.median(rs.map((x) => x.rps)),
        min: Math.min(...rs.map((x) => x.rps)),
        max: Math.max(...rs.map((x) => x.rps)),
        p99: ctx.median(rs.map((x) => x.p99Ms)),
      };
    };
    const cell = (id: string, bytes?: number) => {
      const s = summary(id);
      const k = bytes ? bytes / 1e6 : 1;
      return `${fmt(s.rps * k)} (${fmt(s.min * k)}–${fmt(s.max * k)})${bytes ? ' MB/s' : ''}`;
    };
    const table = ctx.table(
      ['case', 'tritonserver 2.51 infer/s (min–max)', 'p99 ms', 'Warden infer/s (min–max)', 'p99 ms', 'Warden ÷ Triton', 'p99 Warden ÷ Triton'],
      rows.map((row) => {
        const [t, w] = [summary(row.triton), summary(row.warden)];
        return [
          row.label,
          cell(row.triton, row.bytesPerRequest),
          fmt(t.p99, 2),
          cell(row.warden, row.bytesPerRequest),
          fmt(w.p99, 2),
          fmt(w.rps / t.rps, 2),
          fmt(w.p99 / t.p99, 1),
        ];
      }),
    );
    const body =
      `${table}\n\nMedians over ${ctx.rounds} alternating rounds (servers one at a time: ${order
        .filter((on) => cases.some((k) => k.on === on))
        .map((on) => SERVER_NAMES[on])
        .join(', ')}) ` +
      `of ${ctx.durationS} s per case after a 1 s warm-up per start. HTTP: wrk -t1 (keep-alive, --latency); ` +
      `gRPC: ghz (one connection, c workers) and h2load (one HTTP/2 connection, c streams, one prepared framed ModelInferRequest; no percentiles). ` +
      `Same backend file (build/backends/warden_identity) for both servers; Python add_sub is the same model.py on each server's Python backend. ` +
      `MB/s counts the request's input tensor (16 MiB) per second.` +
      (wanted.has('wasm') ? `\n${sandboxCost(summary)}` : '') +
      (toolSkips.length ? `\nSkipped: ${toolSkips.join('; ')}.` : '') +
      (failedRounds.length ? `\nRounds left out (requests failed): ${failedRounds.join('; ')}.` : '');
    ctx.log('\n' + body);
    ctx.section(title, body);
    return {};
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}
