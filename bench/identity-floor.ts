/**
 * Shared by the Python and native backend benchmarks: a Fastify floor that replays a recorded
 * identity answer, and the measured table (c=1 / c=16 per target) over Warden and that floor.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchCase, BenchContext, CaseSummary, ChildServer } from './ctx.js';

export const CONNECTIONS = [1, 16];

/** Start dist/bench/floor.js replaying `canned` for JSON and binary requests. */
export async function startCannedFloor(ctx: BenchContext, canned: { headers: Record<string, string>; body: Buffer }, tmpPrefix: string): Promise<ChildServer> {
  const cannedDir = mkdtempSync(join(tmpdir(), tmpPrefix));
  const cannedFile = join(cannedDir, 'canned.json');
  const c = { headers: canned.headers, bodyBase64: canned.body.toString('base64') };
  writeFileSync(cannedFile, JSON.stringify({ json: c, binary: c }));
  const floorPort = await ctx.freePort();
  return ctx.startChild(
    'floor',
    process.execPath,
    [join(ctx.root, 'dist', 'bench', 'floor.js'), '--port', String(floorPort), '--canned', cannedFile],
    floorPort,
    '/v2/health/ready',
  );
}

/**
 * Measure `cases`, then stop both servers; one table row per connection count and target (in
 * `targets` order), and `get` for a target's summary.
 */
export async function measureTargets(
  ctx: BenchContext,
  cases: BenchCase[],
  targets: string[],
  servers: ChildServer[],
): Promise<{ rows: (string | number)[][]; get: (target: string, connections: number) => CaseSummary }> {
  let summaries: CaseSummary[];
  try {
    summaries = await ctx.measure(cases);
  } finally {
    for (const s of servers) await s.stop();
  }
  const get = (target: string, connections: number) => summaries.find((s) => s.target === target && s.connections === connections)!;
  const rows: (string | number)[][] = [];
  for (const connections of CONNECTIONS) {
    for (const target of targets) {
      const s = get(target, connections);
      rows.push([
        `c=${connections}`,
        target,
        `${s.rps.toFixed(0)} (${s.rpsMin.toFixed(0)}–${s.rpsMax.toFixed(0)})`,
        s.p50Ms.toFixed(3),
        s.p99Ms.toFixed(3),
        s.cpuUsPerReq.toFixed(0),
        ((1 / s.rps) * 1e6).toFixed(1),
      ]);
    }
  }
  return { rows, get };
}
