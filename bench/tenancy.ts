/**
 * Tenancy benchmark: (1) isolation — tenant A floods an operator model shared with it while tenant
 * B sends at a modest fixed rate; B's p99 with A flooding is compared with B's p99 with A idle,
 * both measured in this run (target: within 2×). (2) The cost of authentication: the same `simple`
 * request at concurrency 1 on a single-user Warden and on a multi-tenant one (bearer token
 * checked, rate limit and in-flight accounting on), as a CPU µs/request and p50 difference.
 *
 * A's quota (requests_per_second) is what bounds its flood; requests over it are answered 429
 * cheaply. Both load generators run in this process (autocannon), on the same 2 cores as the
 * server: the figures include that contention.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { hashToken } from '../host/src/tenancy/token.js';
import type { BenchContext, ChildServer, HttpRequestSpec } from './ctx.js';
import { jsonRequest } from './http.js';

const TOKEN_A = 'bench-tenant-a-0123456789abcdefghijklmnop';
const TOKEN_B = 'bench-tenant-b-0123456789abcdefghijklmnop';
/** Tenant B's fixed request rate, requests per second. */
const B_RATE = 200;
/** Tenant A's flood: connections, and its quota of requests per second. */
const A_CONNECTIONS = 32;
const A_QUOTA_RPS = 2000;

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

/** One autocannon run, counting 2xx latencies, 429s and other failures. */
async function run(server: ChildServer, req: HttpRequestSpec, token: string | undefined, connections: number, durationS: number, overallRate?: number): Promise<Run> {
  const latencies: number[] = [];
  let limited = 0;
  let other = 0;
  const headers = { ...req.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const instance = autocannon({
    url: server.url + req.path,
    method: 'POST',
    headers,
    body: req.body,
    connections,
    pipelining: 1,
    duration: durationS,
    timeout: 10,
    ...(overallRate ? { overallRate } : {}),
  });
  instance.on('response', (_c: unknown, status: number, _b: number, ms: number) => {
    if (status >= 200 && status < 300) latencies.push(ms);
    else if (status === 429) limited++;
    else other++;
  });
  const result = await instance;
  latencies.sort((a, b) => a - b);
  return { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), ok: latencies.length, limited, other: other + result.errors + result.timeouts };
}

/** Run the tenancy suite; prints and records its table. */
export async function benchTenancy(ctx: BenchContext): Promise<void> {
  ctx.log('\n== Tenancy: isolation under a flood, and the cost of authentication ==');
  const repo = await ctx.makeRepository(['simple']);
  const dir = mkdtempSync(join(tmpdir(), 'warden-bench-tenants-'));
  const tenantsFile = join(dir, 'tenants.json');
  const quotas = (rps: number) => ({ requests_per_second: rps, burst: rps, max_inflight: 1000 });
  writeFileSync(
    tenantsFile,
    JSON.stringify({
      tenants: [
        { id: 'a', role: 'tenant', tokens: [hashToken(TOKEN_A)], shared_models: ['simple'], quotas: quotas(A_QUOTA_RPS) },
        { id: 'b', role: 'tenant', tokens: [hashToken(TOKEN_B)], shared_models: ['simple'], quotas: quotas(100_000) },
      ],
    }),
  );
  const req = jsonRequest();
  const multi = await ctx.startWarden(repo, [`--tenants=${tenantsFile}`]);
  const single = await ctx.startWarden(repo);
  const rows: (string | number)[][] = [];
  try {
    ctx.log(`  warm-up (${ctx.warmupS} s each)`);
    await run(multi, req, TOKEN_B, 4, ctx.warmupS);
    await run(single, req, undefined, 4, ctx.warmupS);

    const idle: Run[] = [];
    const flooded: Run[] = [];
    const floods: Run[] = [];
    for (let r = 0; r < ctx.rounds; r++) {
      ctx.log(`  round ${r + 1}/${ctx.rounds}: B alone at ${B_RATE}/s, then B at ${B_RATE}/s with A flooding (c=${A_CONNECTIONS})`);
      idle.push(await run(multi, req, TOKEN_B, 2, ctx.durationS, B_RATE));
      const [b, a] = await Promise.all([run(multi, req, TOKEN_B, 2, ctx.durationS, B_RATE), run(multi, req, TOKEN_A, A_CONNECTIONS, ctx.durationS)]);
      flooded.push(b);
      floods.push(a);
    }
    const med = (xs: Run[], f: (x: Run) => number) => ctx.median(xs.map(f));
    const bIdleP99 = med(idle, (x) => x.p99Ms);
    const bFloodP99 = med(flooded, (x) => x.p99Ms);
    const ratio = bFloodP99 / bIdleP99;
    rows.push(['B alone', `${B_RATE}/s`, med(idle, (x) => x.p50Ms).toFixed(3), bIdleP99.toFixed(3), med(idle, (x) => x.other), '']);
    rows.push(['B while A floods', `${B_RATE}/s`, med(flooded, (x) => x.p50Ms).toFixed(3), bFloodP99.toFixed(3), med(flooded, (x) => x.other), '']);
    rows.push([
      `A flooding (c=${A_CONNECTIONS}, quota ${A_QUOTA_RPS}/s)`,
      `${(med(floods, (x) => x.ok) / ctx.durationS).toFixed(0)} ok/s, ${(med(floods, (x) => x.limited) / ctx.durationS).toFixed(0)} 429/s`,
      med(floods, (x) => x.p50Ms).toFixed(3),
      med(floods, (x) => x.p99Ms).toFixed(3),
      med(floods, (x) => x.other),
      '',
    ]);
    const verdict = `B's p99 with A flooding ÷ B's p99 alone = ${ratio.toFixed(2)} (target <= 2): ${ratio <= 2 ? 'MET' : 'MISSED'}`;

    ctx.log('  authentication cost: simple JSON c=1, single-user vs multi-tenant (tenant B)');
    const auth = await ctx.measure([
      { label: 'JSON c=1', target: 'single-user', server: single, request: req, connections: 1 },
      { label: 'JSON c=1', target: 'multi-tenant', server: multi, request: { ...req, headers: { ...req.headers, authorization: `Bearer ${TOKEN_B}` } }, connections: 1 },
    ]);
    const s = auth.find((x) => x.target === 'single-user')!;
    const m = auth.find((x) => x.target === 'multi-tenant')!;
    const table =
      ctx.table(['tenant', 'rate', 'p50 ms', 'p99 ms', 'errors (non-2xx, non-429)', ''], rows) +
      `\n\n${verdict}\n\n` +
      ctx.table(
        ['server', 'infer/s', 'p50 ms', 'p99 ms', 'CPU µs/req'],
        [
          ['single-user', s.rps.toFixed(0), s.p50Ms.toFixed(3), s.p99Ms.toFixed(3), s.cpuUsPerReq.toFixed(0)],
          ['multi-tenant (bearer token)', m.rps.toFixed(0), m.p50Ms.toFixed(3), m.p99Ms.toFixed(3), m.cpuUsPerReq.toFixed(0)],
        ],
      ) +
      `\n\nAuthentication and tenant accounting cost: ${(m.cpuUsPerReq - s.cpuUsPerReq).toFixed(1)} CPU µs/request, ` +
      `${((m.p50Ms - s.p50Ms) * 1000).toFixed(0)} µs of p50. Medians over ${ctx.rounds} rounds of ${ctx.durationS} s.`;
    ctx.log('\n' + table);
    ctx.section('Tenancy', table);
  } finally {
    await multi.stop();
    await single.stop();
  }
}
