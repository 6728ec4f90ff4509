/**
 * Density of sandboxed models (DESIGN "Multi-tenancy": many tenants' models per host), one engine per process:
 * `node dist/bench/density.js <v8|wasmtime> <models> [live]` loads `models` copies of identity_wasm (the
 * TS guest, as uploads would be: one model each, one instance each) one after another through
 * the wasm backend, answers one request on each, and prints one JSON line: RSS and threads before
 * and after, per model, load time p50 / p90 (ms), and the first load's wall and CPU time (ms; from
 * the compile cache when it holds the component: the first load in a process). On wasmtime it then lets the idle policy release
 * every instance (idle_timeout_ms = 1) and reports RSS and threads after that and the cold start of
 * a released model (p50, ms); `live` keeps every instance's sandbox instead. Run by bench/wasm.ts; figures are noise on a busy machine.
 */
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { WasmBackendResolver, type EngineName } from '../host/src/backends/wasm/index.js';
import { backendResolveRequest, modelLoadContext } from '../host/src/contract/load-context.js';
import { request, tensor } from '../tools/backend-request.js';

const ROOT = join(import.meta.dirname, '..', '..');
const threads = () => Number(/Threads:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

async function main(): Promise<void> {
  const engine = (process.argv[2] ?? 'wasmtime') as EngineName;
  const n = Number(process.argv[3] ?? 100);
  // wasmtime: with the idle policy (released after 1 ms), unless a third argument says `live`
  const idle = engine === 'wasmtime' && process.argv[4] !== 'live';
  const resolver = new WasmBackendResolver({
    cacheDir: join(ROOT, '.cache', 'wasm'),
    limits: { maxMemoryBytes: 64 * 1024 * 1024, maxExecuteMs: 10_000, maxLogBytes: 16 * 1024, maxTotalMemoryBytes: 2 ** 52 },
    logger: pino({ level: 'silent' }),
    engine,
    wasmtimePool: { totalComponentInstances: n + 16, totalCoreInstances: (n + 16) * 16, totalMemories: (n + 16) * 2, totalTables: (n + 16) * 4 },
  });
  const logger = pino({ level: 'silent' });
  // identity_wasm's config, normalised (what the repository manager would hand the backend)
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
  };
  // Beside the component (one file system): each model's component is a hard link to it. A symbolic
  // link would leave the model directory, which the backend's confinement refuses.
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  const work = mkdtempSync(join(ROOT, '.cache', 'density-'));
  const component = join(ROOT, 'model_repository', 'identity_wasm', '1', 'model.wasm');
  const data = new Uint8Array(new Float32Array(16).buffer);
  const infer = async (inst: { execute: (r: never[], s: never[]) => Promise<unknown> }) => {
    let ok = false;
    const sender = { send: () => (ok = true), sendError: () => {} };
    const req = request('m', [tensor('INPUT0', 'FP32', [16], data)], ['OUTPUT0']);
    await inst.execute([req as never], [sender as never]);
    if (!ok) throw new Error('no response');
  };
  const rss0 = process.memoryUsage.rss();
  const threads0 = threads();
  const loadMs: number[] = [];
  let firstLoadCpuMs = 0;
  const instances = [];
  for (let i = 0; i < n; i++) {
    const name = `tenant_model_${i}`;
    const dir = join(work, name);
    mkdirSync(join(dir, '1'), { recursive: true });
    linkSync(component, join(dir, '1', 'model.wasm'));
    const cfg = { ...config, name, parameters: idle ? { idle_timeout_ms: { string_value: '1' } } : {} };
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const request = backendResolveRequest(cfg as never, dir, 1);
    const backend = (await resolver.resolve(request))!;
    const model = await backend.loadModel(modelLoadContext(request, 1, { logger }));
    const inst = await model.createInstance({ name: `${name}_0`, groupName: name, kind: 'KIND_CPU', deviceId: 0, hostPolicy: '', passive: false });
    loadMs.push(performance.now() - t0);
    if (i === 0) {
      const c = process.cpuUsage(c0);
      firstLoadCpuMs = (c.user + c.system) / 1000;
    }
    await infer(inst as never);
    instances.push(inst);
  }
  const out: Record<string, number> = {
    models: n,
    rssBeforeMiB: rss0 / 2 ** 20,
    rssAfterMiB: process.memoryUsage.rss() / 2 ** 20,
    rssPerModelMiB: (process.memoryUsage.rss() - rss0) / n / 2 ** 20,
    threadsBefore: threads0,
    threadsAfter: threads(),
    loadMsP50: pct(loadMs, 50),
    loadMsP90: pct(loadMs, 90),
    firstLoadMs: loadMs[0]!,
    // CPU time of the first load, all threads (survives a busy machine better than wall time)
    firstLoadCpuMs,
  };
  if (idle) {
    await new Promise((r) => setTimeout(r, 500));
    out.rssIdleMiB = process.memoryUsage.rss() / 2 ** 20;
    out.threadsIdle = threads();
    const cold: number[] = [];
    for (const inst of instances.slice(0, 50)) {
      const t0 = performance.now();
      await infer(inst as never);
      cold.push(performance.now() - t0);
    }
    out.coldStartMsP50 = pct(cold, 50);
    out.coldStartMsP90 = pct(cold, 90);
  }
  writeFileSync(1, `${JSON.stringify(out)}\n`);
  await resolver.finalizeAll();
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

void main();
