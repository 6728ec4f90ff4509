/**
 * The instance owner's share of a request: `simple` through the data plane
 * in-process (`inferAndCollect`: validation, scheduler, ONNX Runtime, statistics and metrics), no
 * HTTP and no JSON. With N HTTP front-end threads handing requests to the thread that owns the
 * model instances, this is the work that stays on that thread (plus the hop, bench/hop.ts), so
 * its CPU per request bounds the design's throughput: 1e6 / (this + hop) requests per second per
 * owner thread. Compare it with the HTTP suite's server CPU per request in the same run.
 *
 * Closed loop with 1 and 16 requests in flight; process CPU (`process.cpuUsage()`, every thread:
 * the bench process runs nothing else meanwhile) per request, medians over BENCH_ROUNDS rounds of
 * BENCH_DURATION_S seconds. `BENCH_ONLY=owner`.
 */
import type { BenchContext } from './ctx.js';

/** Runs the suite; prints and records its table. */
export async function benchOwner(ctx: BenchContext): Promise<void> {
  ctx.log('\n== Instance owner alone: simple through the data plane in-process (no HTTP, no JSON) ==');
  const { startServer } = await import('../host/src/server.js');
  const { inferAndCollect } = await import('../host/src/dataplane/inference.js');
  const { SINGLE_USER } = await import('../host/src/contract/types.js');
  const repo = await ctx.makeRepository(['simple']);
  const s = await startServer({ modelRepositories: [repo], httpPort: 0, metricsPort: -1, logLevel: 'silent' });
  const in0 = new Int32Array(16).map((_, i) => i);
  const in1 = new Int32Array(16).fill(1);
  const one = async () => {
    const { responses } = await inferAndCollect(s.api, SINGLE_USER, 'simple', -1, {
      id: '',
      model: 'simple',
      version: -1,
      tenant: '',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(in0.buffer) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(in1.buffer) },
      ],
      requestedOutputs: ['OUTPUT0', 'OUTPUT1'],
      parameters: {},
      correlationId: 0,
      flags: 0,
      priority: 0,
      timeoutUs: 0,
    });
    const out = responses[0]?.outputs.find((t) => t.name === 'OUTPUT0');
    if (!out || new Int32Array(out.data.buffer, out.data.byteOffset, 16)[3] !== 4) throw new Error('simple: wrong OUTPUT0');
  };
  const run = async (inflight: number, seconds: number) => {
    const end = Date.now() + seconds * 1000;
    let n = 0;
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: inflight }, async () => {
        while (Date.now() < end) {
          await one();
          n++;
        }
      }),
    );
    const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(cpu0);
    return { rps: n / wallS, cpuUs: (c.user + c.system) / n };
  };
  const rows: string[][] = [];
  try {
    for (const inflight of [1, 16]) {
      await run(inflight, ctx.warmupS);
      const rs = [];
      for (let r = 0; r < ctx.rounds; r++) rs.push(await run(inflight, ctx.durationS));
      rows.push([
        String(inflight),
        ctx.median(rs.map((x) => x.rps)).toFixed(0),
        ctx.median(rs.map((x) => x.cpuUs)).toFixed(1),
        rs.map((x) => x.cpuUs.toFixed(1)).join(' '),
      ]);
    }
  } finally {
    await s.stop();
  }
  const table = ctx.table(['in flight', 'requests/s', 'CPU µs/req (median)', 'per round'], rows);
  ctx.log(table);
  ctx.section('Instance owner alone (simple, in-process data plane)', table);
}
