/**
 * Where the first load of a cached component goes, stage by stage (target: under 20 ms,
 * docs/benchmarks.md). `node dist/bench/first-load.js [runs=7]` starts `runs` fresh processes one after
 * another; each loads identity_wasm (the TS guest) once through the wasm backend on the wasmtime
 * engine, exactly as bench/density.ts times its first load (resolve + loadModel + createInstance),
 * and reports the wall time (ms) of each stage inside that window:
 *
 * - `addon`: loading the native addon (dlopen, relocations, static initialisers);
 * - `engine`: the rest of `resolve` (the native engine: wasmtime `Engine`, pooling reservation,
 *   linker, epoch thread; the compile-cache and digest-memo folders and keys);
 * - `memo`: the digest memo's look-up of the component file (stat, read, HMAC);
 * - `cacheLookup`: finding the `.cwasm` entry; `loadCached`: opening, checking and mapping it
 *   (off the JS thread, awaited); `touch`: refreshing its LRU time;
 * - `loadModelRest`: the rest of `loadModel` (config, limits, surface check, awaits);
 * - `createInstance`: starting the sandbox thread until its READY (store, pooled instantiation,
 *   the guest's `create`s);
 * - `total`: the whole window (what density.ts prints as firstLoadMs), `cpu`: the process's CPU
 *   time in it (all threads).
 *
 * After the window each process also times the cache entry's MAC alone (`cwasmMac` over the file,
 * read into memory first; the fastest of 3), for how much of `loadCached` a full check is, and
 * reports `byStamp`: 1 if the entry's verified stamp vouched for it (no hash in the load).
 * The parent prints every run and the median of each stage as JSON. Needs a warm cache (run
 * density.js once). Figures are noise on a busy machine; compare stages, not single runs.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { nativeAddon } from '../host/src/platform/addon.js';
import { ComponentDigests } from '../host/src/backends/wasm/digests.js';
import { WasmBackendResolver } from '../host/src/backends/wasm/index.js';
import { CwasmCache } from '../host/src/backends/wasm/wasmtime/cache.js';
import type { WasmtimeNative } from '../host/src/backends/wasm/wasmtime/native.js';
import { backendResolveRequest, modelLoadContext } from '../host/src/contract/load-context.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CACHE = join(ROOT, '.cache', 'wasm');

/** Adds the wall time of every call of `obj[name]` (awaited when it returns a promise) to `stages[stage]`. */
function timed(obj: object, name: string, stages: Record<string, number>, stage: string): void {
  const o = obj as Record<string, (...a: unknown[]) => unknown>;
  const f = o[name]!;
  o[name] = function (this: unknown, ...args: unknown[]) {
    const t0 = performance.now();
    const add = () => (stages[stage] = (stages[stage] ?? 0) + performance.now() - t0);
    const r = f.apply(this, args);
    if (r instanceof Promise) return r.finally(add);
    add();
    return r;
  };
}

async function child(): Promise<void> {
  const stages: Record<string, number> = {};
  const logger = pino({ level: 'silent' });
  const io = (name: string) => ({
    name,
    data_type: 'TYPE_FP32',
    format: 'FORMAT_NONE',
    dims: [-1],
    is_shape_tensor: false,
    allow_ragged_batch: false,
    optional: false,
    is_non_linear_format_io: false,
    label_filename: '',
  });
  const config = {
    name: 'tenant_model_0',
    platform: '',
    backend: 'wasm',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: 0,
    input: [io('INPUT0')],
    output: [io('OUTPUT0')],
    batch_input: [],
    batch_output: [],
    optimization: {},
    instance_group: [],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    model_warmup: [],
    parameters: { idle_timeout_ms: { string_value: '1' } },
  };
  const dir = join(mkdtempSync(join(tmpdir(), 'warden-first-load-')), 'tenant_model_0');
  mkdirSync(join(dir, '1'), { recursive: true });
  symlinkSync(join(ROOT, 'model_repository', 'identity_wasm', '1', 'model.wasm'), join(dir, '1', 'model.wasm'));
  timed(ComponentDigests.prototype, 'lookup', stages, 'memo');
  timed(CwasmCache.prototype, 'lookup', stages, 'cacheLookup');
  timed(CwasmCache.prototype, 'touch', stages, 'touch');

  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const native = (nativeAddon() as unknown as { wasmtime: WasmtimeNative }).wasmtime;
  stages.addon = performance.now() - t0;
  timed(native, 'loadCached', stages, 'loadCached');
  const resolver = new WasmBackendResolver({
    cacheDir: CACHE,
    limits: { maxMemoryBytes: 64 * 1024 * 1024, maxExecuteMs: 10_000, maxLogBytes: 16 * 1024, maxTotalMemoryBytes: 2 ** 52 },
    logger,
    engine: 'wasmtime',
    wasmtimePool: { totalComponentInstances: 17, totalCoreInstances: 17 * 16, totalMemories: 17 * 2, totalTables: 17 * 4 },
  });
  const t1 = performance.now();
  const request = backendResolveRequest(config as never, dir, 1);
  const backend = (await resolver.resolve(request))!;
  const t2 = performance.now();
  stages.engine = t2 - t1;
  const model = await backend.loadModel(modelLoadContext(request, 1, { logger }));
  const t3 = performance.now();
  stages.loadModelRest = t3 - t2 - (stages.memo ?? 0) - (stages.cacheLookup ?? 0) - (stages.loadCached ?? 0) - (stages.touch ?? 0);
  await model.createInstance({ name: 'tenant_model_0_0', groupName: 'tenant_model_0', kind: 'KIND_CPU', deviceId: 0, hostPolicy: '', passive: false });
  const t4 = performance.now();
  const c = process.cpuUsage(c0);
  stages.createInstance = t4 - t3;
  stages.total = t4 - t0;
  stages.cpu = (c.user + c.system) / 1000;
  if (!stages.loadCached) throw new Error('the component did not come from the compile cache: run density.js once first');

  // the MAC alone, over the entry's bytes in memory
  const wdir = join(CACHE, 'wasmtime');
  const entry = readdirSync(wdir).find((n) => /^[0-9a-f]{64}-[0-9a-f]{16}-[0-9a-f]{64}\.cwasm$/.test(n))!;
  const bytes = readFileSync(join(wdir, entry));
  const engine = (backend as unknown as { engine: { shared: { handle: never }; cache: CwasmCache } }).engine;
  let mac = Infinity;
  for (let i = 0; i < 3; i++) {
    const h0 = performance.now();
    native.cwasmMac(engine.shared.handle, engine.cache.key, entry.slice(0, 64), bytes);
    mac = Math.min(mac, performance.now() - h0);
  }
  stages.macOnly = mac;
  // 1 when the entry's verified stamp vouched for it (no hash in the load), 0 when it was hashed
  stages.byStamp = engine.cache.counts.stamp;
  stages.cwasmMiB = bytes.length / 2 ** 20;
  writeFileSync(1, `${JSON.stringify(stages)}\n`);
  await resolver.finalizeAll();
  process.exit(0);
}

function parent(runs: number): void {
  const all: Record<string, number>[] = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(process.execPath, [import.meta.filename, '--child'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`run ${i} failed: ${r.stderr}`);
    const stages = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, number>;
    all.push(stages);
    process.stdout.write(`${JSON.stringify(Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, Math.round(v * 100) / 100])))}\n`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const keys = Object.keys(all[0]!);
  process.stdout.write(
    `${JSON.stringify({ runs, median: Object.fromEntries(keys.map((k) => [k, Math.round(median(all.map((s) => s[k] ?? 0)) * 100) / 100])) })}\n`,
  );
}

if (process.argv.includes('--child')) void child();
else parent(Number(process.argv[2] ?? 7));
