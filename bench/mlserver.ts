/**
 * Peer side by side: Seldon MLServer 1.7.1 (PyPI) with a custom runtime (bench/mlserver_runtime.py)
 * serving the same `simple` ONNX file through onnxruntime, against Warden, same JSON request, same
 * client (autocannon), same run. MLServer has no binary tensor extension, so only JSON is compared.
 *
 * MLServer runs with `parallel_workers: 0` (inference in the server process): with 1 (or more)
 * worker processes MLServer 1.7.1 fails to start on this machine's Python 3.11.
 *
 * The peer's virtual environment is made on first use in `.cache/bench-mlserver-venv` (pip install
 * of the pins below). If PyPI cannot be reached the suite is skipped with a message, never failed.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchContext } from './ctx.js';
import { jsonRequest } from './http.js';

export const MLSERVER_VERSION = '1.7.1';
const PIP_PACKAGES = [`mlserver==${MLSERVER_VERSION}`, 'onnxruntime', 'numpy'];
const CONNECTIONS = [1, 16, 64];

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-8192)));
    child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-8192)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, out: out + String(e) });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** The venv's python with MLServer importable, or a reason to skip. */
async function mlserverVenv(ctx: BenchContext): Promise<{ python: string } | { skip: string }> {
  const dir = join(ctx.root, '.cache', 'bench-mlserver-venv');
  const python = join(dir, 'bin', 'python');
  const probe = () => run(python, ['-c', 'import importlib.metadata as m, onnxruntime; print(m.version("mlserver"))'], 60_000);
  if (existsSync(python) && (await probe()).out.trim().endsWith(MLSERVER_VERSION)) return { python };
  ctx.log(`  creating ${dir} (pip install ${PIP_PACKAGES.join(' ')}; a few minutes, once)`);
  const venv = await run('python3', ['-m', 'venv', dir], 120_000);
  if (venv.code !== 0) return { skip: `python3 -m venv failed: ${venv.out.slice(-500)}` };
  const pip = await run(python, ['-m', 'pip', 'install', '-q', ...PIP_PACKAGES], 15 * 60_000);
  if (pip.code === 0 && (await probe()).code === 0) return { python };
  const reachable = await fetch('https://pypi.org/simple/mlserver/', { signal: AbortSignal.timeout(15_000) }).then(
    () => true,
    () => false,
  );
  if (!reachable) return { skip: 'PyPI cannot be reached, so MLServer cannot be installed' };
  throw new Error(`pip install ${PIP_PACKAGES.join(' ')} failed:\n${pip.out.slice(-2000)}`);
}

/** Run the MLServer side-by-side suite; prints and records its table. */
export async function benchMlserver(ctx: BenchContext): Promise<void> {
  ctx.log(`\n== Peer: MLServer ${MLSERVER_VERSION} (custom onnxruntime runtime, parallel_workers 0) vs Warden, simple JSON ==`);
  const env = await mlserverVenv(ctx);
  if ('skip' in env) {
    ctx.log(`  skipped: ${env.skip}`);
    ctx.section('MLServer side by side', `skipped: ${env.skip}`);
    return;
  }
  const repo = await ctx.makeRepository(['simple']);
  const home = await ctx.makeRepository([]); // MLServer's own folder, outside Warden's repository
  const modelDir = join(home, 'simple');
  await mkdir(modelDir, { recursive: true });
  await copyFile(join(ctx.root, 'bench', 'mlserver_runtime.py'), join(home, 'mlserver_runtime.py'));
  const [httpPort, grpcPort, metricsPort] = [await ctx.freePort(), await ctx.freePort(), await ctx.freePort()];
  await writeFile(
    join(home, 'settings.json'),
    JSON.stringify({ parallel_workers: 0, http_port: httpPort, grpc_port: grpcPort, metrics_port: metricsPort, debug: false }),
  );
  await writeFile(
    join(modelDir, 'model-settings.json'),
    JSON.stringify({ name: 'simple', implementation: 'mlserver_runtime.OnnxRuntimeModel', parameters: { uri: join(repo, 'simple', '1', 'model.onnx') } }),
  );
  const mlserver = await ctx.startChild('mlserver', join(env.python, '..', 'mlserver'), ['start', home], httpPort, '/v2/health/ready');
  const warden = await ctx.startWarden(repo);
  const request = jsonRequest();
  // both answer the same numbers
  for (const srv of [warden, mlserver]) {
    const res = await fetch(srv.url + request.path, { method: 'POST', headers: request.headers, body: request.body as string });
    const body = (await res.json()) as { outputs?: { name: string; data: number[] }[] };
    const out0 = body.outputs?.find((o) => o.name === 'OUTPUT0')?.data;
    if (res.status !== 200 || !out0 || out0[0] !== -7 + 100) throw new Error(`${srv.name} answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
  }
  const cases = CONNECTIONS.flatMap((connections) => [
    { label: `JSON c=${connections}`, target: 'warden', server: warden, request, connections },
    { label: `JSON c=${connections}`, target: 'mlserver', server: mlserver, request, connections },
  ]);
  const summaries = await ctx.measure(cases);
  await warden.stop();
  await mlserver.stop();
  const rows = CONNECTIONS.map((c) => {
    const w = summaries.find((s) => s.target === 'warden' && s.connections === c)!;
    const m = summaries.find((s) => s.target === 'mlserver' && s.connections === c)!;
    return [
      `JSON c=${c}`,
      w.rps.toFixed(0),
      w.p50Ms.toFixed(3),
      w.p99Ms.toFixed(3),
      m.rps.toFixed(0),
      m.p50Ms.toFixed(3),
      m.p99Ms.toFixed(3),
      `${(w.rps / m.rps).toFixed(1)} ×`,
    ];
  });
  const body =
    ctx.table(['case', 'Warden infer/s', 'p50 ms', 'p99 ms', 'MLServer infer/s', 'p50 ms', 'p99 ms', 'Warden ÷ MLServer'], rows) +
    `\n\nMLServer ${MLSERVER_VERSION}, parallel_workers 0 (1 fails to start on this Python), custom runtime bench/mlserver_runtime.py ` +
    `(onnxruntime CPU, 1 intra-op / 1 inter-op thread); medians over ${ctx.rounds} rounds of ${ctx.durationS} s.`;
  ctx.log('\n' + body);
  ctx.section('MLServer side by side', body);
}
