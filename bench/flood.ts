/**
 * Large-request flood (DESIGN "Performance"): the throughput of a small-request client (`simple`, JSON,
 * concurrency 1) alone, and while another client sends 16 MB JSON requests to an identity model
 * (FP32 [N], outputs returned binary) on the same Warden. Target: the small client keeps >= 70 %
 * of its throughput alone. The small client is autocannon in this process; the flood is autocannon
 * in a child process, so that sending 16 MB bodies does not slow the small client's own event loop.
 */
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchContext, ChildServer, HttpRequestSpec, LoadResult } from './ctx.js';
import { jsonRequest } from './http.js';
import { identityConfig, identityModel } from './onnx-model.js';

/** Size of each flooding request's JSON body, bytes (BENCH_FLOOD_MB, default 16). */
const FLOOD_BYTES = Number(process.env.BENCH_FLOOD_MB ?? '16') * 1_000_000;
const FLOOD_CONNECTIONS = 2;
const TARGET = 0.7;

/** A JSON request of about {@link FLOOD_BYTES} for the identity model, binary output. */
export function floodRequest(): { spec: HttpRequestSpec; elements: number } {
  const perElement = 8; // "124.875," — values (i % 1000) / 8
  const elements = Math.floor(FLOOD_BYTES / perElement);
  const data = Array.from({ length: elements }, (_, i) => (i % 1000) / 8);
  const body = JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [elements], data }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  });
  return { spec: { path: '/v2/models/flood/infer', method: 'POST', headers: { 'content-type': 'application/json' }, body }, elements };
}

/** autocannon (CLI) in a child process: `connections` connections POSTing `bodyFile` for `durationS`. */
function floodProcess(ctx: BenchContext, server: ChildServer, path: string, bodyFile: string, connections: number, durationS: number): Promise<LoadResult> {
  const bin = join(ctx.root, 'node_modules', 'autocannon', 'autocannon.js');
  const args = [
    bin,
    '-c',
    String(connections),
    '-d',
    String(durationS),
    '-m',
    'POST',
    '-H',
    'content-type=application/json',
    '-i',
    bodyFile,
    '-j',
    '-t',
    '30',
    server.url + path,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', () => undefined);
    child.on('error', reject);
    child.on('close', () => {
      try {
        const r = JSON.parse(out) as {
          requests: { total: number };
          latency: { p50: number; p99: number };
          duration: number;
          errors: number;
          timeouts: number;
          non2xx: number;
          '2xx': number;
        };
        resolve({
          rps: r['2xx'] / r.duration,
          p50Ms: r.latency.p50,
          p99Ms: r.latency.p99,
          ok: r['2xx'],
          failures: r.errors + r.timeouts + r.non2xx,
          cpuUsPerReq: NaN,
        });
      } catch (e) {
        reject(new Error(`flood client output unreadable: ${(e as Error).message}: ${out.slice(0, 300)}`));
      }
    });
  });
}

/** Run the flood suite; prints and records its table. */
export async function benchFlood(ctx: BenchContext): Promise<void> {
  ctx.log(`\n== Flood: small JSON client (c=1) alone vs while ${FLOOD_CONNECTIONS} connections send ${FLOOD_BYTES / 1e6} MB JSON requests ==`);
  const repo = await ctx.makeRepository(['simple']);
  await mkdir(join(repo, 'flood', '1'), { recursive: true });
  await writeFile(join(repo, 'flood', '1', 'model.onnx'), identityModel());
  await writeFile(join(repo, 'flood', 'config.pbtxt'), identityConfig('flood'));
  const warden = await ctx.startWarden(repo);
  const small = jsonRequest();
  const { spec: big, elements } = floodRequest();
  const check = await fetch(warden.url + big.path, { method: 'POST', headers: big.headers, body: big.body as string });
  const answer = Buffer.from(await check.arrayBuffer());
  const jsonLen = Number(check.headers.get('inference-header-content-length'));
  if (check.status !== 200 || answer.length - jsonLen !== elements * 4) {
    throw new Error(`flood request answered ${check.status}: ${answer.subarray(0, 300).toString()}`);
  }
  ctx.log(
    `  flood request: ${(Buffer.byteLength(big.body as string) / 1e6).toFixed(1)} MB JSON, ${elements} FP32 elements, ${(answer.length / 1e6).toFixed(1)} MB binary answer`,
  );
  await ctx.load(warden, small, 1, ctx.warmupS);
  const bodyFile = join(repo, 'flood-body.json');
  await writeFile(bodyFile, big.body as string);

  const alone: LoadResult[] = [];
  const during: LoadResult[] = [];
  const flood: LoadResult[] = [];
  for (let r = 0; r < ctx.rounds; r++) {
    alone.push(await ctx.load(warden, small, 1, ctx.durationS));
    const flooding = floodProcess(ctx, warden, big.path, bodyFile, FLOOD_CONNECTIONS, ctx.durationS + 1);
    await new Promise((res) => setTimeout(res, 500)); // let the flood fill the server first
    during.push(await ctx.load(warden, small, 1, ctx.durationS));
    flood.push(await flooding);
    for (const x of [alone.at(-1)!, during.at(-1)!, flood.at(-1)!]) {
      if (x.failures > 0) throw new Error(`flood round ${r + 1}: ${x.failures} failed requests\n${warden.output().slice(-2000)}`);
    }
    ctx.log(
      `  round ${r + 1}/${ctx.rounds}: alone ${alone.at(-1)!.rps.toFixed(0)} infer/s, during flood ${during.at(-1)!.rps.toFixed(0)} infer/s ` +
        `(p99 ${during.at(-1)!.p99Ms.toFixed(2)} ms), flood ${flood.at(-1)!.rps.toFixed(1)} req/s`,
    );
  }
  await warden.stop();
  const med = (xs: LoadResult[], k: 'rps' | 'p50Ms' | 'p99Ms') => ctx.median(xs.map((x) => x[k]));
  const ratio = med(during, 'rps') / med(alone, 'rps');
  const rows = [
    ['small client alone', med(alone, 'rps').toFixed(0), med(alone, 'p50Ms').toFixed(3), med(alone, 'p99Ms').toFixed(3)],
    ['small client during flood', med(during, 'rps').toFixed(0), med(during, 'p50Ms').toFixed(3), med(during, 'p99Ms').toFixed(3)],
    [
      `flood (${FLOOD_CONNECTIONS} conns, ${FLOOD_BYTES / 1e6} MB JSON each)`,
      med(flood, 'rps').toFixed(1),
      med(flood, 'p50Ms').toFixed(1),
      med(flood, 'p99Ms').toFixed(1),
    ],
  ];
  const met = ratio >= TARGET;
  const body =
    ctx.table(['client', 'req/s', 'p50 ms', 'p99 ms'], rows) +
    `\n\nSmall client during flood ÷ alone: ${(ratio * 100).toFixed(0)} % — ${met ? 'MET' : 'MISSED'} (target >= ${TARGET * 100} %). ` +
    `Medians over ${ctx.rounds} rounds of ${ctx.durationS} s.`;
  ctx.log('\n' + body);
  ctx.section('Large-request flood', body);
}
