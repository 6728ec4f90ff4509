/**
 * Sandboxed BLS benchmark (`benchBls(ctx)`, run by bench/run.ts as `bls`): the cost of one call a
 * sandboxed backend makes on another model (`warden:backend/inference`, wit/inference.wit) over
 * the same call made by the client directly, at concurrency 1, on both engines.
 *
 * Cases, all in one server and measured in alternating rounds: the client calls `simple` (ONNX,
 * INT32 [1,16] add/sub, JSON) directly; the client calls `bls_wasm` (sample-backends/wasm/c/bls.c),
 * which calls `simple` with the same inputs and post-processes its answer, on V8 and on wasmtime;
 * and `bls_wasm` making two calls per request (`calls: 2`, both started before the first `next`).
 * Figures: the BLS cost = 1/rps(via bls_wasm) − 1/rps(direct), in µs (target on wasmtime: ≤ 20 µs);
 * one more call from the same execute = 1/rps(2 calls) − 1/rps(1 call).
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchCase, BenchContext, HttpRequestSpec } from './ctx.js';
import { simpleRequest } from './requests.js';

const ENGINES = ['v8', 'wasmtime'] as const;
const callerOn = (engine: string) => (engine === 'v8' ? 'bls_wasm' : `bls_wasm__${engine}`);

/** `simple`'s request sent to `model` instead, with request parameters. */
function via(model: string, parameters: Record<string, unknown> = {}): HttpRequestSpec {
  const direct = simpleRequest();
  const body = JSON.parse(String(direct.body)) as Record<string, unknown>;
  return { ...direct, path: `/v2/models/${model}/infer`, body: JSON.stringify({ ...body, parameters }) };
}

export async function benchBls(ctx: BenchContext): Promise<unknown> {
  ctx.log('\n== Sandboxed BLS (a wasm backend calling simple), v8 and wasmtime ==');
  const repo = await ctx.makeRepository(['bls_wasm', 'simple']);
  const wasmtime = callerOn('wasmtime');
  cpSync(join(repo, 'bls_wasm'), join(repo, wasmtime), { recursive: true });
  const pbtxt = readFileSync(join(repo, 'bls_wasm', 'config.pbtxt'), 'utf8').replace('name: "bls_wasm"', `name: "${wasmtime}"`);
  writeFileSync(join(repo, wasmtime, 'config.pbtxt'), `${pbtxt}\nparameters { key: "engine" value: { string_value: "wasmtime" } }\n`);
  const warden = await ctx.startWarden(repo);
  try {
    // check the answers before timing them
    for (const engine of ENGINES) {
      const r = await fetch(warden.url + via(callerOn(engine)).path, { method: 'POST', body: String(via(callerOn(engine)).body) });
      const out = (await r.json()) as { outputs?: { data: number[] }[] };
      if (r.status !== 200 || out.outputs?.[0]?.data[3] !== 6)
        throw new Error(`${callerOn(engine)} answered ${r.status}: ${JSON.stringify(out).slice(0, 300)}`);
    }
    const DIRECT = 'client → simple';
    const cases: BenchCase[] = [{ label: DIRECT, target: 'direct', server: warden, request: simpleRequest(), connections: 1 }];
    for (const engine of ENGINES) {
      cases.push({ label: `${engine}: client → bls_wasm → simple`, target: `bls ${engine}`, server: warden, request: via(callerOn(engine)), connections: 1 });
      cases.push({
        label: `${engine}: client → bls_wasm → 2 × simple`,
        target: `bls ${engine}`,
        server: warden,
        request: via(callerOn(engine), { calls: 2 }),
        connections: 1,
      });
    }
    const res = await ctx.measure(cases);
    const by = (label: string) => res.find((r) => r.label === label)!;
    const us = (rps: number) => 1e6 / rps;
    const rows = res.map((r) => [r.target, r.label, r.rps.toFixed(0), `${r.rpsMin.toFixed(0)}–${r.rpsMax.toFixed(0)}`, r.p50Ms.toFixed(3), r.p99Ms.toFixed(3)]);
    const lines = [ctx.table(['target', 'case', 'infer/s (median)', 'range', 'p50 ms', 'p99 ms'], rows), ''];
    const figures: Record<string, number> = {};
    for (const engine of ENGINES) {
      const one = by(`${engine}: client → bls_wasm → simple`).rps;
      const two = by(`${engine}: client → bls_wasm → 2 × simple`).rps;
      figures[`${engine}_bls_cost_us`] = us(one) - us(by(DIRECT).rps);
      figures[`${engine}_extra_call_us`] = us(two) - us(one);
      lines.push(
        `${engine}: a BLS call costs ${figures[`${engine}_bls_cost_us`]!.toFixed(1)} µs over the direct call (1/rps via bls_wasm − 1/rps direct, c=1)` +
          `${engine === 'wasmtime' ? ' — target ≤ 20 µs' : ''}; one more call from the same execute: ${figures[`${engine}_extra_call_us`]!.toFixed(1)} µs`,
      );
    }
    const body = lines.join('\n');
    ctx.log(body);
    ctx.section('Sandboxed BLS', body);
    return { cases: res, figures };
  } finally {
    await warden.stop();
  }
}
