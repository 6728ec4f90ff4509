/**
 * HTTP inference benchmark on Triton's `simple` example (INT32 [1,16] add/sub): concurrency 1, 16
 * and 64, JSON and binary-extension requests, Warden vs the bare Fastify floor (bench/floor.ts)
 * answering with a response of exactly the same bytes. Both servers run in child processes;
 * autocannon runs here.
 *
 * Targets (this 2-core machine): Warden at concurrency 1 >= 2,000 infer/s with p99 <= 3 × p50; at
 * concurrency 16 and 64 >= 40 % of the floor.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchContext, CaseSummary, HttpRequestSpec } from './ctx.js';
import type { CannedResponse, CannedSet } from './floor.js';

const PATH = '/v2/models/simple/infer';
const IN0 = Array.from({ length: 16 }, (_, i) => i * 3 - 7);
const IN1 = Array.from({ length: 16 }, (_, i) => 100 - i);
const OUT0 = IN0.map((v, i) => v + IN1[i]);
const OUT1 = IN0.map((v, i) => v - IN1[i]);

/** The JSON request tritonclient sends with `binary_data=False` inputs and outputs. */
export function jsonRequest(): HttpRequestSpec {
  const body = JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: IN0 },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: IN1 },
    ],
    outputs: [
      { name: 'OUTPUT0', parameters: { binary_data: false } },
      { name: 'OUTPUT1', parameters: { binary_data: false } },
    ],
  });
  return { path: PATH, method: 'POST', headers: { 'content-type': 'application/json' }, body };
}

/** The binary-extension request tritonclient sends by default (binary inputs and outputs). */
export function binaryRequest(): HttpRequestSpec {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
      ],
      parameters: { binary_data_output: true },
    }),
  );
  const data = Buffer.alloc(128);
  IN0.forEach((v, i) => data.writeInt32LE(v, i * 4));
  IN1.forEach((v, i) => data.writeInt32LE(v, 64 + i * 4));
  return {
    path: PATH,
    method: 'POST',
    headers: {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': String(header.length),
    },
    body: Buffer.concat([header, data]),
  };
}

function eq(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * Send one request to Warden, check the numbers are right (a benchmark of wrong answers is
 * worthless) and return the response as the floor must replay it.
 */
async function recordAndCheck(url: string, req: HttpRequestSpec, binary: boolean): Promise<CannedResponse> {
  const body0 = typeof req.body === 'string' || req.body === undefined ? req.body : new Uint8Array(req.body);
  const res = await fetch(url + req.path, { method: 'POST', headers: req.headers, body: body0 });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`Warden answered ${res.status}: ${body.toString()}`);
  const headers: Record<string, string> = {};
  const ct = res.headers.get('content-type');
  if (ct) headers['content-type'] = ct;
  const ihcl = res.headers.get('inference-header-content-length');
  if (ihcl) headers['inference-header-content-length'] = ihcl;
  const jsonLen = ihcl ? Number(ihcl) : body.length;
  const parsed = JSON.parse(body.subarray(0, jsonLen).toString()) as {
    outputs: { name: string; data?: number[]; parameters?: { binary_data_size?: number } }[];
  };
  let offset = jsonLen;
  const got: Record<string, number[]> = {};
  for (const o of parsed.outputs) {
    const size = o.parameters?.binary_data_size;
    if (size !== undefined) {
      const vals: number[] = [];
      for (let i = 0; i < size; i += 4) vals.push(body.readInt32LE(offset + i));
      offset += size;
      got[o.name] = vals;
    } else {
      got[o.name] = o.data ?? [];
    }
  }
  if (!eq(got.OUTPUT0 ?? [], OUT0) || !eq(got.OUTPUT1 ?? [], OUT1)) {
    throw new Error(`Warden returned wrong results for simple: ${JSON.stringify(got)}`);
  }
  if (binary !== (ihcl !== null)) {
    throw new Error(`expected a ${binary ? 'binary' : 'JSON'} response, got headers ${JSON.stringify(headers)}`);
  }
  return { headers, bodyBase64: body.toString('base64') };
}

/** Concurrency levels measured (`BENCH_HTTP_CONNECTIONS`, comma list, overrides). */
const CONNECTIONS = (process.env.BENCH_HTTP_CONNECTIONS ?? '1,16,64')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);

/**
 * Warden builds measured side by side (`BENCH_HTTP_THREADS`, comma list of `--http-threads`
 * values, default `0`; `Nx` = N threads with `--http-main-listener=false`): one Warden process
 * per value, interleaved with the floor in every round.
 */
const THREADS = (process.env.BENCH_HTTP_THREADS ?? '0').split(',').filter((x) => /^[0-9]{1,2}x?$/.test(x));

/** The tail target: at concurrency 1, p99 at most this many times p50. */
const P99_OVER_P50_MAX = 3;

export interface HttpBenchResult {
  summaries: CaseSummary[];
  targetsMet: boolean;
}

/** Run the HTTP suite; prints and records (ctx.section) its table. */
export async function benchHttp(ctx: BenchContext): Promise<HttpBenchResult> {
  ctx.log('\n== HTTP inference on `simple` (Warden vs bare Fastify floor) ==');
  const repo = await ctx.makeRepository(['simple']);
  const wardens = new Map<string, Awaited<ReturnType<typeof ctx.startWarden>>>();
  const flagsOf = (t: string) =>
    parseInt(t, 10) === 0 ? [] : [`--http-threads=${parseInt(t, 10)}`, ...(t.endsWith('x') ? ['--http-main-listener=false'] : [])];
  for (const t of THREADS.length ? THREADS : ['0']) wardens.set(t, await ctx.startWarden(repo, flagsOf(t)));
  const targetOf = (t: string) => (THREADS.length > 1 ? `warden threads=${t}` : 'warden');
  const warden = wardens.values().next().value!;
  const requests = { JSON: jsonRequest(), binary: binaryRequest() };
  const canned: CannedSet = {
    json: await recordAndCheck(warden.url, requests.JSON, false),
    binary: await recordAndCheck(warden.url, requests.binary, true),
  };
  const cannedFile = join(repo, 'floor-canned.json');
  await writeFile(cannedFile, JSON.stringify(canned));
  const floorPort = await ctx.freePort();
  const floor = await ctx.startChild(
    'floor',
    process.execPath,
    [join(ctx.root, 'dist', 'bench', 'floor.js'), '--port', String(floorPort), '--canned', cannedFile],
    floorPort,
    '/v2/health/ready',
  );
  const sizes = {
    JSON: Buffer.from(canned.json.bodyBase64, 'base64').length,
    binary: Buffer.from(canned.binary.bodyBase64, 'base64').length,
  };
  ctx.log(`  response bytes: JSON ${sizes.JSON}, binary ${sizes.binary} (floor replays the same bytes)`);

  const cases = [];
  for (const connections of CONNECTIONS) {
    for (const enc of ['JSON', 'binary'] as const) {
      const label = `${enc} c=${connections}`;
      for (const [t, w] of wardens) cases.push({ label, target: targetOf(t), server: w, request: requests[enc], connections });
      cases.push({ label, target: 'floor', server: floor, request: requests[enc], connections });
    }
  }
  const summaries = await ctx.measure(cases);
  for (const w of wardens.values()) await w.stop();
  await floor.stop();

  const rows: (string | number)[][] = [];
  let targetsMet = true;
  const verdicts: string[] = [];
  const range = (x: CaseSummary) => `${x.rps.toFixed(0)} (${x.rpsMin.toFixed(0)}–${x.rpsMax.toFixed(0)})`;
  for (const [label, t] of [...new Set(summaries.map((s) => s.label))].flatMap((l) => [...wardens.keys()].map((t) => [l, t] as const))) {
    const w = summaries.find((s) => s.label === label && s.target === targetOf(t))!;
    const f = summaries.find((s) => s.label === label && s.target === 'floor')!;
    const ratio = w.rps / f.rps;
    const tail = w.p99Ms / w.p50Ms;
    rows.push([
      label,
      t,
      range(w),
      w.p50Ms.toFixed(3),
      w.p99Ms.toFixed(3),
      tail.toFixed(1),
      w.cpuUsPerReq.toFixed(0),
      range(f),
      f.p50Ms.toFixed(3),
      f.p99Ms.toFixed(3),
      f.cpuUsPerReq.toFixed(0),
      `${(ratio * 100).toFixed(0)} %`,
      (w.cpuUsPerReq - f.cpuUsPerReq).toFixed(0),
    ]);
    const name = wardens.size > 1 ? `${label}, ${flagsOf(t).join(' ') || '--http-threads=0'}` : label;
    if (w.connections === 1) {
      const rateMet = w.rps >= 2000;
      const tailMet = tail <= P99_OVER_P50_MAX;
      targetsMet &&= rateMet && tailMet;
      verdicts.push(`${name}: ${rateMet ? 'MET' : 'MISSED'} — ${w.rps.toFixed(0)} infer/s (target >= 2000)`);
      verdicts.push(`${name}: ${tailMet ? 'MET' : 'MISSED'} — p99 ${tail.toFixed(1)} × p50 (target <= ${P99_OVER_P50_MAX})`);
    } else {
      const met = ratio >= 0.4;
      targetsMet &&= met;
      verdicts.push(`${name}: ${met ? 'MET' : 'MISSED'} — ${(ratio * 100).toFixed(0)} % of floor (target >= 40 %)`);
    }
  }
  const table = ctx.table(
    [
      'case',
      '--http-threads (x: no main listener)',
      'Warden infer/s (min–max)',
      'p50 ms',
      'p99 ms',
      'p99 ÷ p50',
      'CPU µs/req',
      'floor req/s (min–max)',
      'p50 ms',
      'p99 ms',
      'CPU µs/req',
      'Warden ÷ floor',
      'Warden CPU overhead µs/req',
    ],
    rows,
  );
  const body =
    `${table}\n\nMedians over ${ctx.rounds} rounds of ${ctx.durationS} s (after ${ctx.warmupS} s warm-up per case); ` +
    `response bytes JSON ${sizes.JSON}, binary ${sizes.binary}. CPU µs/req = server process CPU time ` +
    `(user + system, all threads, /proc) ÷ responses; overhead = Warden's minus the floor's.\nTargets:\n` +
    verdicts.map((v) => `- ${v}`).join('\n');
  ctx.log('\n' + body);
  ctx.section('HTTP inference on `simple`', body);
  return { summaries, targetsMet };
}
