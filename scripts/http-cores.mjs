/**
 * HTTP front-end threads on a machine with spare cores (hand measurement behind docs/benchmarks.md
 * "HTTP front-end threads"; the GPU host lent to some sessions has 16): `simple` JSON over HTTP, Warden with 0 / N front-end threads against the bare
 * Fastify floor (dist/bench/floor.js, replaying Warden's own response bytes), driven by autocannon
 * with several worker threads so that the client is not the bound. Prints throughput, p50 / p99 and
 * server CPU per request for each shape, and Warden ÷ floor. On a 2-core machine the client shares
 * the cores and the figures mean little: use `npm run bench` there.
 * Usage, after `npx tsc -p tsconfig.json`:
 *   node scripts/http-cores.mjs [seconds=5] [connections=16,64] [threads=0,2x,4x] [clientWorkers=4]
 * A shape `native` runs Warden with `--http-data-path=native` (the native data path, DESIGN "The
 * native data path"); HTTP_CORES_MODEL=identity_native measures the native identity sample (FP32
 * [16]) instead of `simple`, the model that path serves without the JavaScript thread.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const seconds = Number(process.argv[2] ?? 5);
const conns = (process.argv[3] ?? '16,64').split(',').map(Number);
const threads = (process.argv[4] ?? '0,2x,4x').split(',');
const clientWorkers = Number(process.argv[5] ?? 4);
const model = process.env.HTTP_CORES_MODEL ?? 'simple';
const body =
  model === 'identity_native'
    ? JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [16], datatype: 'FP32', data: Array.from({ length: 16 }, (_, i) => i + 0.5) }] })
    : JSON.stringify({
        inputs: [
          { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
          { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array(16).fill(1) },
        ],
        outputs: [
          { name: 'OUTPUT0', parameters: { binary_data: false } },
          { name: 'OUTPUT1', parameters: { binary_data: false } },
        ],
      });
const headers = { 'content-type': 'application/json' };
const cpuMicros = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
};
async function start(args, portFlag) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const p = spawn(process.execPath, [...args, portFlag, String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/v2/health/ready`)).status === 200) return { p, url };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not ready: ${args.join(' ')}`);
}
async function stop(s) {
  s.p.kill('SIGTERM');
  await new Promise((r) => s.p.once('exit', r));
}
const load = (s, c, d) =>
  autocannon({ url: `${s.url}/v2/models/${model}/infer`, method: 'POST', body, headers, connections: c, duration: d, workers: Math.min(clientWorkers, c) });
async function measure(s, c) {
  await load(s, c, 2);
  const cpu0 = cpuMicros(s.p.pid);
  const r = await load(s, c, seconds);
  const cpu = cpuMicros(s.p.pid) - cpu0;
  const n = r.requests.total;
  return { rps: n / seconds, p50: r.latency.p50, p99: r.latency.p99, cpu: cpu / n, non2xx: r.non2xx + r.errors };
}
const wardenArgs = (t) => {
  const a = [
    '--min-semi-space-size=32',
    '--max-semi-space-size=32',
    'dist/host/src/cli.js',
    '--model-repository',
    'model_repository',
    '--model-control-mode=explicit',
    `--load-model=${model}`,
    '--allow-metrics=false',
    '--allow-grpc=false',
  ];
  if (t === 'native') return [...a, '--http-data-path=native'];
  a.push(`--http-threads=${t.replace('x', '')}`);
  if (t.endsWith('x')) a.push('--http-main-listener=false');
  return a;
};
// the floor answers with Warden's own bytes
const first = await start(wardenArgs('0'), '--http-port');
const res = await fetch(`${first.url}/v2/models/${model}/infer`, { method: 'POST', body, headers });
const canned = { json: { headers: { 'content-type': res.headers.get('content-type') }, bodyBase64: Buffer.from(await res.arrayBuffer()).toString('base64') } };
canned.binary = canned.json;
await stop(first);
const dir = mkdtempSync(join(tmpdir(), 'warden-cores-'));
writeFileSync(join(dir, 'canned.json'), JSON.stringify(canned));
const rows = [];
for (const c of conns) {
  const floor = await start(['dist/bench/floor.js', '--canned', join(dir, 'canned.json')], '--port');
  const f = await measure(floor, c);
  await stop(floor);
  rows.push({ shape: 'floor', c, ...f });
  for (const t of threads) {
    const w = await start(wardenArgs(t), '--http-port');
    const m = await measure(w, c);
    await stop(w);
    rows.push({ shape: t === 'native' ? 'warden --http-data-path=native' : `warden --http-threads=${t}`, c, ...m, ratio: m.rps / f.rps });
  }
}
console.log(`| shape | c | req/s | p50 ms | p99 ms | CPU µs/req | ÷ floor |\n|---|---|---|---|---|---|---|`);
for (const r of rows)
  console.log(
    `| ${r.shape} | ${r.c} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.cpu.toFixed(0)} | ${r.ratio ? (r.ratio * 100).toFixed(0) + ' %' : ''}${r.non2xx ? ` (${r.non2xx} errors)` : ''} |`,
  );
