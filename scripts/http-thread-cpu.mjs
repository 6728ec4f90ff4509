/**
 * Per-thread CPU of the server with and without HTTP front-end threads (hand measurement behind
 * docs/benchmarks.md "Where the CPU goes, per thread"). Starts
 * `dist/host/src/cli.js` with `simple`, runs autocannon (`simple` JSON, 2 s warm-up, 4 s measured)
 * at c=16 and 64 for each build, and prints the main thread's and the other threads' CPU µs per
 * request from /proc/<pid>/task/<tid>/stat (100 Hz ticks). Usage, after `npx tsc -p tsconfig.json`:
 *   node scripts/http-thread-cpu.mjs
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import autocannon from 'autocannon';
const body = JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array(16).fill(1) }] });
const ticks = (pid) => {
  const out = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    const comm = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
    out[tid] = { comm, t: Number(f[11]) + Number(f[12]) };
  }
  return out;
};
for (const args of [[], ['--http-threads=2'], ['--http-threads=2', '--http-main-listener=false']]) {
  for (const c of [16, 64]) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const p = spawn(process.execPath, ['--min-semi-space-size=32', '--max-semi-space-size=32', 'dist/host/src/cli.js', '--model-repository', 'model_repository', '--model-control-mode=explicit', '--load-model=simple', '--http-port', String(port), '--allow-metrics=false', '--allow-grpc=false', ...args], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) { try { if ((await fetch(`http://127.0.0.1:${port}/v2/health/ready`)).status === 200) break; } catch {} await new Promise((r) => setTimeout(r, 100)); }
    const run = (d) => autocannon({ url: `http://127.0.0.1:${port}/v2/models/simple/infer`, method: 'POST', body, headers: { 'content-type': 'application/json' }, connections: c, duration: d });
    await run(2);
    const a = ticks(p.pid);
    const r = await run(4);
    const b = ticks(p.pid);
    const n = r.requests.total;
    const us = (x) => ((x * 10000) / n).toFixed(1); // 100 Hz ticks → µs per request
    const main = b[p.pid].t - a[p.pid].t;
    let others = 0; const per = [];
    for (const tid of Object.keys(b)) { if (Number(tid) === p.pid) continue; const d = b[tid].t - (a[tid]?.t ?? 0); others += d; if (d > 20) per.push(`${b[tid].comm}:${us(d)}`); }
    console.log(`${args.join(' ') || 'threads=0'} c=${c}: ${(n / 4).toFixed(0)} infer/s; main thread ${us(main)} µs/req (${(main / 4).toFixed(0)} % of a core); other threads ${us(others)} µs/req [${per.join(' ')}]; load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`);
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
  }
}
