/**
 * Per-request allocation and garbage collection on the hot path (what sets the tail latency): Warden
 * runs with `node --trace-gc`; over one c=1 run each of `simple` JSON and binary, the suite sums
 * what every collection freed and how long it paused the server's main thread, per request.
 * A scavenge pauses the event loop for about 0.3-2 ms, so one every K requests puts roughly 1/K of
 * the requests behind it: with K < 100 it is what p99 measures.
 */
import type { BenchContext, ChildServer, HttpRequestSpec } from './ctx.js';
import { binaryRequest, jsonRequest } from './http.js';

/** One `--trace-gc` line: `[pid:0x..]   1234 ms: Scavenge 5.1 (6.2) -> 4.3 (7.0) MB, 0.8 / 0.0 ms ...`. */
const GC_LINE =
  /\]\s+(\d+) ms: (Scavenge|Mark-Compact|Mark-Compact \(reduce\)|Minor Mark-Compact)[^\d]*([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ ([\d.]+) ms/;

interface GcEvent {
  atMs: number;
  kind: string;
  freedMb: number;
  pauseMs: number;
}

function gcEvents(output: string): GcEvent[] {
  const out: GcEvent[] = [];
  for (const line of output.split('\n')) {
    const m = GC_LINE.exec(line);
    if (!m) continue;
    out.push({ atMs: Number(m[1]), kind: m[2]!, freedMb: Number(m[3]) - Number(m[5]), pauseMs: Number(m[7]) });
  }
  return out;
}

async function measureCase(ctx: BenchContext, warden: ChildServer, request: HttpRequestSpec) {
  await ctx.load(warden, request, 1, ctx.warmupS);
  const before = gcEvents(warden.output()).at(-1)?.atMs ?? -1;
  const r = await ctx.load(warden, request, 1, ctx.durationS);
  await new Promise((res) => setTimeout(res, 200)); // let the last lines arrive
  const events = gcEvents(warden.output()).filter((e) => e.atMs > before);
  const scavenges = events.filter((e) => e.kind === 'Scavenge');
  const perK = (n: number) => (n / r.ok) * 1000;
  return {
    requests: r.ok,
    rps: r.rps,
    p50: r.p50Ms,
    p99: r.p99Ms,
    kbPerReq: (events.reduce((n, e) => n + e.freedMb, 0) * 1024) / r.ok,
    scavengesPerK: perK(scavenges.length),
    majorPerK: perK(events.length - scavenges.length),
    pauseMsPerK: perK(events.reduce((n, e) => n + e.pauseMs, 0)),
    requestsPerScavenge: scavenges.length ? r.ok / scavenges.length : Infinity,
  };
}

/** Run the allocation suite; prints and records its table. */
export async function benchAlloc(ctx: BenchContext): Promise<void> {
  ctx.log('\n== Allocation and GC per request (Warden with --trace-gc, simple, c=1) ==');
  const repo = await ctx.makeRepository(['simple']);
  const warden = await ctx.startWarden(repo, [], ['--trace-gc']);
  const rows: string[][] = [];
  for (const [label, request] of [
    ['JSON', jsonRequest()],
    ['binary', binaryRequest()],
  ] as const) {
    const m = await measureCase(ctx, warden, request);
    rows.push([
      `${label} c=1`,
      m.rps.toFixed(0),
      m.p50.toFixed(3),
      m.p99.toFixed(3),
      m.kbPerReq.toFixed(1),
      m.requestsPerScavenge === Infinity ? '–' : m.requestsPerScavenge.toFixed(0),
      m.scavengesPerK.toFixed(2),
      m.majorPerK.toFixed(3),
      m.pauseMsPerK.toFixed(2),
    ]);
  }
  await warden.stop();
  const body =
    ctx.table(
      ['case', 'infer/s', 'p50 ms', 'p99 ms', 'KiB freed / req', 'req / scavenge', 'scavenges / 1k req', 'major GCs / 1k req', 'GC pause ms / 1k req'],
      rows,
    ) +
    `\n\nOne run of ${ctx.durationS} s per case; KiB freed / req = heap freed by every collection during the run ÷ requests ` +
    `(what the hot path allocates and drops); pauses are the main thread's (V8 --trace-gc).`;
  ctx.log('\n' + body);
  ctx.section('Allocation and GC per request', body);
}
