/**
 * Sandboxed-backend benchmark (`benchWasm(ctx)`, run by bench/run.ts):
 *  - per-request cost through the sandbox: `identity_wasm` (FP32 [16], JSON) at concurrency 1 and
 *    16, side by side with the ONNX `simple` path (INT32 [1,16] add/sub, JSON) and the bare
 *    Fastify floor, all in the same run; the sandbox's extra cost per request at concurrency 1 is
 *    1/rps(identity_wasm) − 1/rps(simple), in µs (target: < 150 µs);
 *  - `add_sub_wasm` on 1 MiB FP32 inputs (binary extension): MB/s of input processed;
 *  - the engine alone (no HTTP): one execute round trip host → worker → guest → host, in µs;
 *  - respawn time after a deadline kill (the `loop_execute` hostile fixture), in ms;
 *  - instantiation time and memory per idle instance; wasmtime: cold start of an idle-released
 *    instance;
 *  - density (bench/density.ts, one child process per engine): N uploaded copies of identity_wasm
 *    loaded one after another (BENCH_DENSITY_MODELS, default 100): RSS and threads per model,
 *    load time p50/p90.
 * Every case runs on both sandbox engines (`v8`, `wasmtime`) side by side in one server: the
 * wasmtime copies of the models pick their engine with `parameters { key: "engine" }`.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { backendResolveRequest, modelLoadContext } from '../host/src/contract/load-context.js';
import type { BenchCase, BenchContext, HttpRequestSpec } from './ctx.js';
import { IDENTITY_INPUT, identityRequest, simpleRequest } from './requests.js';
import { request, tensor } from '../tools/backend-request.js';

const MiB = 1024 * 1024;

/** add_sub_wasm on two FP32 inputs of `bytes` each, binary in and out. */
function addSubRequest(bytes: number): HttpRequestSpec {
  const n = bytes / 4;
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'INPUT0', shape: [n], datatype: 'FP32', parameters: { binary_data_size: bytes } },
        { name: 'INPUT1', shape: [n], datatype: 'FP32', parameters: { binary_data_size: bytes } },
      ],
      parameters: { binary_data_output: true },
    }),
  );
  const a = Float32Array.from({ length: n }, (_, i) => i);
  const b = Float32Array.from({ length: n }, () => 2);
  return {
    path: '/v2/models/add_sub_wasm/infer',
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
    body: Buffer.concat([header, Buffer.from(a.buffer), Buffer.from(b.buffer)]),
  };
}

async function send(url: string, req: HttpRequestSpec): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const body = typeof req.body === 'string' || req.body === undefined ? req.body : new Uint8Array(req.body);
  const r = await fetch(url + req.path, { method: req.method ?? 'POST', headers: req.headers, body });
  const headers: Record<string, string> = {};
  r.headers.forEach((v, k) => {
    if (k !== 'date' && k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding') headers[k] = v;
  });
  return { status: r.status, headers, body: Buffer.from(await r.arrayBuffer()) };
}

/** Engine-only numbers: execute round trip and respawn after a deadline kill, in this process. */
interface EngineNumbers {
  roundTripUs: number;
  respawnMs: number[];
  /** createInstance of the C-guest identity (ms, median of 20). */
  instantiateMs: number;
  /** RSS growth per idle C-guest identity instance (bytes; 20 instances). */
  idleInstanceBytes: number;
  /** wasmtime: cold start of an idle-released instance (ms, median of 10). */
  coldStartMs?: number;
}

async function engineNumbers(ctx: BenchContext, engineName: 'v8' | 'wasmtime'): Promise<EngineNumbers> {
  const { WasmBackendResolver } = await import('../host/src/backends/wasm/index.js');
  const resolver = new WasmBackendResolver({
    cacheDir: join(ctx.root, '.cache', 'wasm'),
    limits: { maxMemoryBytes: 256 * MiB, maxExecuteMs: 200, maxLogBytes: 16 * 1024, maxTotalMemoryBytes: 2 ** 40 },
    logger: pino({ level: 'silent' }),
    engine: engineName,
  });
  const logger = pino({ level: 'silent' });
  const cfg = (name: string) =>
    ({
      name,
      platform: '',
      backend: 'wasm',
      runtime: '',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 0,
      input: [
        {
          name: 'INPUT0',
          data_type: 'TYPE_FP32',
          format: 'FORMAT_NONE',
          dims: [-1],
          is_shape_tensor: false,
          allow_ragged_batch: false,
          optional: false,
          is_non_linear_format_io: false,
        },
      ],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1], label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false }],
      batch_input: [],
      batch_output: [],
      optimization: {},
      instance_group: [],
      default_model_filename: '',
      cc_model_filenames: {},
      metric_tags: {},
      parameters: {},
      model_warmup: [],
    }) as never;
  const loadModel = async (name: string, dir: string, params: Record<string, string> = {}) => {
    const c = cfg(name) as { parameters: Record<string, { string_value: string }> };
    for (const [k, v] of Object.entries(params)) c.parameters[k] = { string_value: v };
    const request = backendResolveRequest(c as never, dir, 1);
    const backend = (await resolver.resolve(request))!;
    return backend.loadModel(modelLoadContext(request, 1, { logger }));
  };
  const spec = (name: string, k = 0) => ({ name: `${name}_${k}`, groupName: name, kind: 'KIND_CPU' as const, deviceId: 0, hostPolicy: '', passive: false });
  const load = async (name: string, dir: string) => (await loadModel(name, dir)).createInstance(spec(name));
  const data = new Uint8Array(new Float32Array(16).buffer);
  const run = async (inst: Awaited<ReturnType<typeof load>>) => {
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const sender = { send: (_r: unknown, final: boolean) => final && done(), sendError: (_e: unknown, final: boolean) => final && done() };
    const req = request('m', [tensor('INPUT0', 'FP32', [16], data)], ['OUTPUT0']);
    await inst.execute([req], [sender]);
    await finished;
  };
  const identity = await load('identity_wasm', join(ctx.root, 'model_repository', 'identity_wasm'));
  for (let i = 0; i < 500; i++) await run(identity);
  const samples: number[] = [];
  for (let r = 0; r < ctx.rounds; r++) {
    const n = 3000;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await run(identity);
    samples.push(((performance.now() - t0) * 1000) / n);
  }
  const respawnMs: number[] = [];
  const fixture = join(ctx.root, 'test', 'fixtures', 'wasm', 'build', 'loop_execute.wasm');
  try {
    const dir = mkdtempSync(join(tmpdir(), 'warden-bench-loop-'));
    mkdirSync(join(dir, '1'));
    copyFileSync(fixture, join(dir, '1', 'model.wasm'));
    const loop = (await load('loop_execute', dir)) as unknown as { stats: { lastRespawnMs?: number }; execute: (typeof identity)['execute'] };
    for (let i = 0; i < 5; i++) {
      await run(loop as never); // killed at the 200 ms deadline
      await run(loop as never); // waits for the respawn, then killed again
      if (loop.stats.lastRespawnMs !== undefined) respawnMs.push(loop.stats.lastRespawnMs);
    }
  } catch (e) {
    ctx.log(`respawn measurement skipped: ${(e as Error).message} (build the fixtures: node scripts/build-wasm.mjs --fixtures)`);
  }
  const cDir = join(ctx.root, 'test', 'fixtures', 'wasm', 'build');
  const work = mkdtempSync(join(tmpdir(), 'warden-bench-engine-'));
  const put = (name: string, fixture: string) => {
    mkdirSync(join(work, name, '1'), { recursive: true });
    copyFileSync(join(cDir, `${fixture}.wasm`), join(work, name, '1', 'model.wasm'));
    return join(work, name);
  };
  // instantiation time and RSS per idle instance (C guest)
  const cModel = await loadModel('id_c', put('id_c', 'identity'));
  const insts = [];
  const inst0 = await cModel.createInstance(spec('id_c', 0));
  await run(inst0);
  insts.push(inst0);
  const rss0 = process.memoryUsage.rss();
  const instMs: number[] = [];
  for (let k = 1; k <= 20; k++) {
    const t0 = performance.now();
    const inst = await cModel.createInstance(spec('id_c', k));
    instMs.push(performance.now() - t0);
    await run(inst);
    insts.push(inst);
  }
  const idleInstanceBytes = (process.memoryUsage.rss() - rss0) / 20;
  await Promise.all(insts.map((i) => i.finalize()));
  let coldStartMs: number | undefined;
  if (engineName === 'wasmtime') {
    const idleModel = await loadModel('id_idle', put('id_idle', 'identity'), { idle_timeout_ms: '1' });
    const inst = (await idleModel.createInstance(spec('id_idle'))) as unknown as { idle: { lastColdStartMs: number } } & typeof inst0;
    const cold: number[] = [];
    await run(inst);
    for (let k = 0; k < 10; k++) {
      await new Promise((r) => setTimeout(r, 20)); // released after 1 ms idle
      await run(inst);
      cold.push(inst.idle.lastColdStartMs);
    }
    coldStartMs = ctx.median(cold);
  }
  await resolver.finalizeAll();
  return { roundTripUs: ctx.median(samples), respawnMs, instantiateMs: ctx.median(instMs), idleInstanceBytes, coldStartMs };
}

/** Runs bench/density.js in a child per engine: N uploads of identity_wasm loaded one after another. */
async function density(ctx: BenchContext, engineName: string, models: number, live = false): Promise<Record<string, number>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(ctx.root, 'dist', 'bench', 'density.js'), engineName, String(models), ...(live ? ['live'] : [])],
    { cwd: ctx.root, maxBuffer: 1 << 20, timeout: 1_800_000 },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, number>;
}

const ENGINES = ['v8', 'wasmtime'] as const;
/** The model names of `base` on `engine` in the bench repository. */
const onEngine = (base: string, engine: string) => (engine === 'v8' ? base : `${base}__${engine}`);

export async function benchWasm(ctx: BenchContext): Promise<unknown> {
  ctx.log('\n== Sandboxed backends (wasm, v8 and wasmtime engines) ==');
  const repo = await ctx.makeRepository(['identity_wasm', 'add_sub_wasm', 'simple']);
  // the same identity as a C guest (test/fixtures/wasm/hostile.c, mode IDENTITY): separates the
  // engine's cost from the JS guest runtime's (StarlingMonkey runs the TS samples interpreted)
  const cIdentity = join(ctx.root, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm');
  mkdirSync(join(repo, 'identity_c_wasm', '1'), { recursive: true });
  copyFileSync(cIdentity, join(repo, 'identity_c_wasm', '1', 'model.wasm'));
  writeFileSync(
    join(repo, 'identity_c_wasm', 'config.pbtxt'),
    readFileSync(join(ctx.root, 'model_repository', 'identity_wasm', 'config.pbtxt'), 'utf8').replace('name: "identity_wasm"', 'name: "identity_c_wasm"'),
  );
  // a wasmtime copy of each sandboxed model, picking its engine by parameter
  for (const base of ['identity_wasm', 'identity_c_wasm', 'add_sub_wasm']) {
    const name = onEngine(base, 'wasmtime');
    cpSync(join(repo, base), join(repo, name), { recursive: true });
    const pbtxt = readFileSync(join(repo, base, 'config.pbtxt'), 'utf8').replace(`name: "${base}"`, `name: "${name}"`);
    writeFileSync(join(repo, name, 'config.pbtxt'), `${pbtxt}\nparameters { key: "engine" value: { string_value: "wasmtime" } }\n`);
  }
  const warden = await ctx.startWarden(repo);
  try {
    // check answers before timing them
    const idReq = identityRequest('identity_wasm');
    const idC = await send(warden.url, { ...idReq, path: '/v2/models/identity_c_wasm/infer' });
    if (idC.status !== 200 || JSON.stringify(JSON.parse(idC.body.toString()).outputs?.[0]?.data) !== JSON.stringify(IDENTITY_INPUT))
      throw new Error(`identity_c_wasm answered ${idC.status}: ${idC.body.toString().slice(0, 300)}`);
    const id = await send(warden.url, idReq);
    const idOut = JSON.parse(id.body.toString()).outputs?.[0]?.data as number[] | undefined;
    if (id.status !== 200 || JSON.stringify(idOut) !== JSON.stringify(IDENTITY_INPUT))
      throw new Error(`identity_wasm answered ${id.status}: ${id.body.toString().slice(0, 300)}`);
    const simple = await send(warden.url, simpleRequest());
    if (simple.status !== 200) throw new Error(`simple answered ${simple.status}: ${simple.body.toString().slice(0, 300)}`);
    const big = addSubRequest(MiB);
    for (const engine of ENGINES) {
      const path = `/v2/models/${onEngine('add_sub_wasm', engine)}/infer`;
      const bigRes = await send(warden.url, { ...big, path });
      if (bigRes.status !== 200) throw new Error(`${path} answered ${bigRes.status}: ${bigRes.body.toString().slice(0, 300)}`);
      const hlen = Number(bigRes.headers['inference-header-content-length']);
      const sum = new Float32Array(bigRes.body.buffer.slice(bigRes.body.byteOffset + hlen, bigRes.body.byteOffset + hlen + MiB));
      if (sum[1000] !== 1002) throw new Error(`${path} returned a wrong sum: ${sum[1000]}`);
      for (const base of ['identity_wasm', 'identity_c_wasm']) {
        const r = await send(warden.url, { ...idReq, path: `/v2/models/${onEngine(base, engine)}/infer` });
        if (r.status !== 200 || JSON.stringify(JSON.parse(r.body.toString()).outputs?.[0]?.data) !== JSON.stringify(IDENTITY_INPUT))
          throw new Error(`${base} on ${engine} answered ${r.status}: ${r.body.toString().slice(0, 300)}`);
      }
    }

    // the bare Fastify floor replays Warden's identity response byte for byte
    const cannedFile = join(mkdtempSync(join(tmpdir(), 'warden-bench-canned-')), 'canned.json');
    const canned = { headers: id.headers, bodyBase64: id.body.toString('base64') };
    writeFileSync(cannedFile, JSON.stringify({ json: canned, binary: canned }));
    const floorPort = await ctx.freePort();
    const floor = await ctx.startChild(
      'floor',
      process.execPath,
      [join(ctx.root, 'dist', 'bench', 'floor.js'), '--port', String(floorPort), '--canned', cannedFile],
      floorPort,
      '/v2/health/ready',
    );
    // The same repository without wake affinity (native/src/core/wake.cc), to show what it saves.
    const wardenOff = await ctx.startWarden(repo, ['--wake-affinity=false']);
    try {
      const cases: BenchCase[] = [];
      for (const c of [1, 16]) {
        for (const engine of ENGINES) {
          cases.push({
            label: `${engine}: identity (TS guest) FP32[16] JSON c=${c}`,
            target: `wasm ${engine}`,
            server: warden,
            request: { ...idReq, path: `/v2/models/${onEngine('identity_wasm', engine)}/infer` },
            connections: c,
          });
          cases.push({
            label: `${engine}: identity (C guest) FP32[16] JSON c=${c}`,
            target: `wasm ${engine}`,
            server: warden,
            request: { ...idReq, path: `/v2/models/${onEngine('identity_c_wasm', engine)}/infer` },
            connections: c,
          });
        }
        cases.push({ label: `simple INT32[1,16] JSON c=${c}`, target: 'onnx simple', server: warden, request: simpleRequest(), connections: c });
        cases.push({
          label: `floor c=${c}`,
          target: 'fastify floor',
          server: floor,
          request: { ...idReq, path: '/v2/models/identity_wasm/infer' },
          connections: c,
        });
      }
      const OFF = 'wasmtime: identity (C guest) FP32[16] JSON c=1, wake affinity off';
      cases.push({
        label: OFF,
        target: 'wasm wasmtime',
        server: wardenOff,
        request: { ...idReq, path: `/v2/models/${onEngine('identity_c_wasm', 'wasmtime')}/infer` },
        connections: 1,
      });
      for (const engine of ENGINES) {
        cases.push({
          label: `${engine}: add_sub 2×1 MiB FP32 binary c=1`,
          target: `wasm ${engine}`,
          server: warden,
          request: { ...big, path: `/v2/models/${onEngine('add_sub_wasm', engine)}/infer` },
          connections: 1,
        });
      }
      const res = await ctx.measure(cases);
      const by = (label: string) => res.find((r) => r.label === label)!;
      const us = (rps: number) => 1e6 / rps;
      const rows = res.map((r) => [
        r.target,
        r.label,
        r.rps.toFixed(0),
        `${r.rpsMin.toFixed(0)}–${r.rpsMax.toFixed(0)}`,
        r.p50Ms.toFixed(3),
        r.p99Ms.toFixed(3),
        Number.isFinite(r.cpuUsPerReq) ? r.cpuUsPerReq.toFixed(0) : '-',
      ]);
      const lines: string[] = [ctx.table(['target', 'case', 'infer/s (median)', 'range', 'p50 ms', 'p99 ms', 'server CPU µs/req'], rows), ''];
      const out: Record<string, unknown> = { cases: res };
      const densityModels = Number(process.env.BENCH_DENSITY_MODELS ?? 100);
      for (const engine of ENGINES) {
        const over = (guest: string, c: number) =>
          us(by(`${engine}: identity (${guest} guest) FP32[16] JSON c=${c}`).rps) - us(by(`simple INT32[1,16] JSON c=${c}`).rps);
        const addSub = by(`${engine}: add_sub 2×1 MiB FP32 binary c=1`);
        const mbps = (addSub.rps * 2 * MiB) / 1e6;
        const e = await engineNumbers(ctx, engine);
        const d = await density(ctx, engine, densityModels).catch((err: Error) => ({ error: err.message }) as unknown as Record<string, number>);
        const dLive =
          engine === 'wasmtime'
            ? await density(ctx, engine, densityModels, true).catch((err: Error) => ({ error: err.message }) as unknown as Record<string, number>)
            : undefined;
        const med = (xs: number[]) => (xs.length ? ctx.median(xs) : NaN);
        const met = engine === 'wasmtime' ? ` ${over('C', 1) < 30 ? 'MET' : 'MISSED'}` : '';
        lines.push(
          `[${engine}] sandbox cost over the ONNX path at c=1: TS guest ${over('TS', 1).toFixed(0)} µs, C guest ${over('C', 1).toFixed(0)} µs per request (1/rps difference; target for wasmtime C guest: < 30 µs${met})`,
          ...(engine === 'wasmtime'
            ? [
                `[wasmtime] wake affinity (--wake-affinity, on by default) saves ${(us(by(OFF).rps) - us(by(`wasmtime: identity (C guest) FP32[16] JSON c=1`).rps)).toFixed(1)} µs per request of the C guest at c=1`,
              ]
            : []),
          `[${engine}] at c=16: TS guest ${over('TS', 16).toFixed(1)} µs, C guest ${over('C', 16).toFixed(1)} µs per request of throughput`,
          `[${engine}] add_sub_wasm (TS guest) on 2 × 1 MiB FP32: ${mbps.toFixed(1)} MB/s of input (${addSub.rps.toFixed(1)} infer/s, p50 ${addSub.p50Ms.toFixed(1)} ms)`,
          `[${engine}] engine only (no HTTP), TS identity execute round trip: ${e.roundTripUs.toFixed(1)} µs`,
          `[${engine}] respawn after a deadline kill (kill → fresh sandbox ready to serve; C guest loop_execute): median ${med(e.respawnMs).toFixed(2)} ms (${e.respawnMs.map((x) => x.toFixed(1)).join(', ')}; target < 5 ms)`,
          `[${engine}] instantiation (C guest): ${e.instantiateMs.toFixed(2)} ms; RSS per idle instance: ${(e.idleInstanceBytes / MiB).toFixed(2)} MiB` +
            (e.coldStartMs !== undefined ? `; cold start of an idle-released instance: ${e.coldStartMs.toFixed(2)} ms (target < 5 ms)` : ''),
          `[${engine}] density, ${densityModels} uploaded identity_wasm models one after another${engine === 'wasmtime' ? ' (idle policy 1 ms)' : ''}: ${JSON.stringify(d)}`,
          ...(dLive ? [`[${engine}] density, same, every sandbox kept live: ${JSON.stringify(dLive)}`] : []),
          '',
        );
        out[engine] = {
          overheadUsC1: over('TS', 1),
          overheadUsC1CGuest: over('C', 1),
          overheadUsC16: over('TS', 16),
          addSubMBps: mbps,
          ...e,
          density: d,
          densityLive: dLive,
        };
      }
      const body = lines.join('\n');
      ctx.log(body);
      ctx.section('Sandboxed backends (wasm, v8 and wasmtime engines)', body);
      return out;
    } finally {
      await floor.stop();
      await wardenOff.stop();
    }
  } finally {
    await warden.stop();
  }
}
