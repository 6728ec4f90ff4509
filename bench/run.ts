/**
 * `npm run bench`: Warden's benchmarks (never run as tests). Runs the HTTP suite (bench/http.ts),
 * then the optional suites other parts contribute, if present in the build:
 *   bench/wasm.ts   exporting `benchWasm(ctx: BenchContext): Promise<unknown>`
 *   bench/native.ts exporting `benchNative(ctx: BenchContext): Promise<unknown>`
 *   bench/tenancy.ts exporting `benchTenancy(ctx: BenchContext): Promise<unknown>`
 *   bench/json.ts   exporting `benchJson(ctx: BenchContext): Promise<unknown>` (no server: the request JSON parser)
 *   bench/grpc.ts   exporting `benchGrpc(ctx: BenchContext): Promise<unknown>`
 *   bench/python.ts exporting `benchPython(ctx: BenchContext): Promise<unknown>`
 *   bench/python-gpu.ts exporting `benchPythonGpu(ctx: BenchContext): Promise<unknown>` (skips without torch)
 *   bench/openai.ts exporting `benchOpenai(ctx: BenchContext): Promise<unknown>` (the OpenAI API vs generate_stream, Python toy generator)
 *   bench/fleet.ts  exporting `benchFleet(ctx: BenchContext): Promise<unknown>` (object store, shared uploads, replicas; skips without moto)
 *   bench/vs-triton.ts exporting `benchVsTriton(ctx: BenchContext): Promise<unknown>` (the real tritonserver of the pinned wheel; skips where it cannot run)
 * Each suite prints its own lines and records its tables with `ctx.section(title, body)`; the
 * summary at the end repeats every section. Environment: BENCH_DURATION_S (5), BENCH_WARMUP_S (2),
 * BENCH_ROUNDS (3), BENCH_ONLY (comma list of suite names: http, flood, alloc, hop, owner, mlserver, wasm, bls, native, tenancy, json, grpc, python, python-gpu, openai, fleet, density, vs-triton;
 * names given as arguments, `npm run bench -- vs-triton`, count the same).
 *
 * Exit status: 0 when every suite ran (targets missed are reported, not fatal), 1 when one failed.
 */
import { loadavg } from 'node:os';
import { createContext, type BenchContext } from './ctx.js';
import { benchAlloc } from './alloc.js';
import { benchFlood } from './flood.js';
import { benchHop } from './hop.js';
import { benchHttp } from './http.js';
import { benchMlserver } from './mlserver.js';
import { benchOwner } from './owner.js';

type Suite = (ctx: BenchContext) => Promise<unknown>;

/**
 * Load an optional suite compiled next to this file. Returns undefined when the module does not
 * exist; a module that exists but fails to load is an error.
 */
async function optionalSuite(file: string, exportName: string): Promise<Suite | undefined> {
  const url = new URL(file, import.meta.url);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url.href)) as Record<string, unknown>;
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { url?: string };
    const missingSelf = err.code === 'ERR_MODULE_NOT_FOUND' && (err.url === url.href || String(err.message).includes(url.pathname));
    if (missingSelf) return undefined;
    throw e;
  }
  const fn = mod[exportName];
  if (typeof fn !== 'function') throw new Error(`${file} does not export ${exportName}(ctx)`);
  return fn as Suite;
}

async function main(): Promise<number> {
  const ctx = createContext();
  // `npm run bench -- vs-triton grpc`: suite names as arguments, like BENCH_ONLY.
  const only = [...(process.env.BENCH_ONLY ?? '').split(','), ...process.argv.slice(2)].filter(Boolean);
  const wanted = (name: string) => only.length === 0 || only.includes(name);
  const started = Date.now();
  ctx.log(`Warden benchmarks — ${ctx.machine()}`);
  ctx.log(`rounds ${ctx.rounds} × ${ctx.durationS} s per case, warm-up ${ctx.warmupS} s`);
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  const loadBefore = load();
  ctx.log(`load average before: ${loadBefore}`);
  let failed = false;
  const suites: [string, () => Promise<Suite | undefined>][] = [
    ['http', async () => benchHttp],
    ['flood', async () => benchFlood],
    ['alloc', async () => benchAlloc],
    ['hop', async () => benchHop],
    ['owner', async () => benchOwner],
    ['mlserver', async () => benchMlserver],
    ['wasm', () => optionalSuite('./wasm.js', 'benchWasm')],
    ['bls', () => optionalSuite('./bls.js', 'benchBls')],
    ['native', () => optionalSuite('./native.js', 'benchNative')],
    ['tenancy', () => optionalSuite('./tenancy.js', 'benchTenancy')],
    ['json', () => optionalSuite('./json.js', 'benchJson')],
    ['grpc', () => optionalSuite('./grpc.js', 'benchGrpc')],
    ['python', () => optionalSuite('./python.js', 'benchPython')],
    ['python-gpu', () => optionalSuite('./python-gpu.js', 'benchPythonGpu')],
    ['openai', () => optionalSuite('./openai.js', 'benchOpenai')],
    ['fleet', () => optionalSuite('./fleet.js', 'benchFleet')],
    ['density', () => optionalSuite('./upload-density.js', 'benchDensity')],
    ['vs-triton', () => optionalSuite('./vs-triton.js', 'benchVsTriton')],
  ];
  try {
    for (const [name, get] of suites) {
      if (!wanted(name)) continue;
      let suite: Suite | undefined;
      try {
        suite = await get();
        if (!suite) {
          ctx.log(`\n(${name} suite not present in this build: skipped)`);
          continue;
        }
        await suite(ctx);
      } catch (e) {
        failed = true;
        ctx.log(`\n${name} suite FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
        ctx.section(`${name} suite`, `FAILED: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  } finally {
    await ctx.cleanup();
  }
  ctx.log(`\n==================== summary (${((Date.now() - started) / 1000).toFixed(0)} s) ====================`);
  ctx.log(ctx.machine());
  ctx.log(`load average before ${loadBefore}, after ${load()} (other work on the machine skews results)`);
  for (const s of ctx.sections) ctx.log(`\n### ${s.title}\n\n${s.body}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(1);
  },
);
