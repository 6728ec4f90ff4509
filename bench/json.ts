/**
 * The request JSON parser's cost (host/src/frontend/http/json-text.ts) against V8's JSON.parse, in
 * the same run: parseRequestJson adds a byte scan (depth, members, long integers) and a walk of
 * the parsed value counting keys (so a duplicate key keeps its first value, as Triton reads it);
 * the exact parser runs only for 64-bit integers beyond 2^53 or duplicate keys. Cases: a small
 * `simple` request (2 × 16 INT32), a large FP32 request (1 Mi elements), an INT64 request with
 * integers beyond 2^53 (exact parser), and a request with a duplicate key (exact parser).
 * Reports ops/s of each and the ratio parseRequestJson ÷ JSON.parse (1.0 = no overhead).
 */
import type { BenchContext } from './ctx.js';
import { parseRequestJson } from '../host/src/frontend/http/json-text.js';

interface JsonCase {
  name: string;
  body: Buffer;
}

function cases(): JsonCase[] {
  const input = (name: string, datatype: string, data: string) =>
    `{"name":"${name}","datatype":"${datatype}","shape":[${data.split(',').length}],"data":[${data}]}`;
  const ints = Array.from({ length: 16 }, (_, i) => i).join(',');
  const floats = Array.from({ length: 1 << 20 }, (_, i) => ((i % 1000) / 7).toFixed(4)).join(',');
  const big = Array.from({ length: 1024 }, (_, i) => (9007199254740993n + BigInt(i)).toString()).join(',');
  return [
    { name: 'simple (2 x 16 INT32)', body: Buffer.from(`{"id":"1","inputs":[${input('INPUT0', 'INT32', ints)},${input('INPUT1', 'INT32', ints)}]}`) },
    { name: 'FP32, 1 Mi elements', body: Buffer.from(`{"inputs":[${input('INPUT0', 'FP32', floats)}]}`) },
    { name: 'INT64 beyond 2^53 (exact parser)', body: Buffer.from(`{"inputs":[${input('INPUT0', 'INT64', big)}]}`) },
    { name: 'duplicate key (exact parser)', body: Buffer.from(`{"id":"a","id":"b","inputs":[${input('INPUT0', 'INT32', ints)}]}`) },
  ];
}

/** Operations per second of `fn` over `seconds` (after one warm-up second). */
function opsPerSecond(fn: () => unknown, seconds: number): number {
  const run = (ms: number) => {
    const end = performance.now() + ms;
    let n = 0;
    while (performance.now() < end) {
      fn();
      n++;
    }
    return n;
  };
  run(1000);
  const t0 = performance.now();
  const n = run(seconds * 1000);
  return n / ((performance.now() - t0) / 1000);
}

export async function benchJson(ctx: BenchContext): Promise<unknown> {
  ctx.log('\n== request JSON parsing: parseRequestJson vs JSON.parse ==');
  const seconds = Math.max(1, Math.round(ctx.durationS / 2));
  const rows: (string | number)[][] = [];
  for (const c of cases()) {
    const baseline: number[] = [];
    const ours: number[] = [];
    for (let r = 0; r < ctx.rounds; r++) {
      // Interleaved: machine noise hits both alike.
      baseline.push(opsPerSecond(() => JSON.parse(c.body.toString('utf8')), seconds));
      ours.push(opsPerSecond(() => parseRequestJson(c.body), seconds));
    }
    const b = ctx.median(baseline);
    const o = ctx.median(ours);
    ctx.log(`${c.name}: JSON.parse ${b.toFixed(0)} ops/s, parseRequestJson ${o.toFixed(0)} ops/s, ratio ${(o / b).toFixed(2)}`);
    rows.push([c.name, `${(c.body.length / 1024).toFixed(1)} KiB`, b.toFixed(0), o.toFixed(0), (o / b).toFixed(2)]);
  }
  ctx.section('request JSON parsing', ctx.table(['request', 'size', 'JSON.parse ops/s', 'parseRequestJson ops/s', 'ratio'], rows));
  return rows;
}
