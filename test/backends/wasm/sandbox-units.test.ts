/**
 * Units of the sandbox that need no worker: the component import/export check and its allow-list
 * (kept equal to the `sandbox` world of wit/worlds.wit), the memory-maximum rewrite, the per-model
 * limits and default caps, the engine registry, and the generated host types being current with
 * the WIT.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALLOWED_IMPORTS, BACKEND_API_VERSION, checkComponent, componentSurface, SANDBOX_MEMBERS } from '../../../host/src/backends/wasm/component-check.js';
import { checkWasmLimits, DEFAULT_WASM_LIMITS, modelLimits } from '../../../host/src/backends/wasm/limits.js';
import { capMemories } from '../../../host/src/backends/wasm/v8/memory-cap.js';
import { checkEngineName, createEngine, DEFAULT_ENGINE, ENGINE_NAMES, WasmBackendResolver } from '../../../host/src/backends/wasm/index.js';
import * as h from './helpers.js';

type Build = {
  prepareWitDeps(): void;
  generateHostTypes(out?: string): Promise<string>;
  WIT_DIR: string;
};
const build: Build = await import('../../../scripts/build-wasm.mjs');
await h.ensureBuilt();
const jco = await import('@bytecodealliance/jco');

describe('component check', () => {
  it('reads the imports and exports of a real sample component', () => {
    const s = componentSurface(readFileSync(join(h.REPO, 'identity_wasm', '1', 'model.wasm')));
    expect(s.exports).toEqual([{ name: `warden:backend/backend@${BACKEND_API_VERSION}`, kind: 'instance' }]);
    expect(s.imports.map((i) => i.name)).toContain(`warden:backend/host@${BACKEND_API_VERSION}`);
    const c = componentSurface(readFileSync(join(h.REPO, 'preprocess_wasm', '1', 'model.wasm')));
    expect(c.imports.every((i) => i.name.startsWith('warden:backend/'))).toBe(true);
  });

  it('accepts allowed WASI at any 0.2.x version, refuses others naming the import', async () => {
    const comp = async (imports: string[], exp = true) =>
      jco.parse(
        `(component ${imports.map((i) => `(import "${i}" (instance))`).join(' ')} ${exp ? '(instance $b) (export "warden:backend/backend@0.1.0" (instance $b))' : ''})`,
      );
    expect(() => checkComponent(new Uint8Array(0))).toThrow(/not a WebAssembly component/);
    const ok = await comp(['wasi:clocks/monotonic-clock@0.2.0', 'wasi:cli/stdout@0.2.9', 'warden:backend/host@0.1.0']);
    expect(checkComponent(ok).imports).toHaveLength(3);
    for (const [imp, why] of [
      ['wasi:clocks/monotonic-clock@0.3.0', 'WASI 0.2.x'],
      ['warden:backend/host@0.2.0', 'warden:backend@0.1.0'],
      ['wasi:filesystem/preopens@0.2.0', 'not in the sandbox world'],
      ['wasi:sockets/udp@0.2.3', 'not in the sandbox world'],
      ['my:evil/thing', 'not in the sandbox world'],
    ]) {
      const c = await comp([imp!]);
      expect(() => checkComponent(c), imp).toThrow(`imports '${imp}' (`);
      expect(() => checkComponent(c), imp).toThrow(why);
    }
    // `inference` exists from 0.1.1 on: a component naming it at 0.1.0 names something that never was
    const early = await comp(['warden:backend/inference@0.1.0']);
    expect(() => checkComponent(early)).toThrow(/warden:backend\/inference is part of warden:backend from 0\.1\.1 on/);
    expect(checkComponent(await comp(['warden:backend/inference@0.1.1'])).imports).toHaveLength(1);
    const noExport = await comp([], false);
    expect(() => checkComponent(noExport)).toThrow(/does not export 'warden:backend\/backend@0.1.1'/);
  });

  it('the allow-list equals the imports of the sandbox world in wit/worlds.wit', async () => {
    build.prepareWitDeps();
    const { componentWitMetadataForWorld } = await import('@bytecodealliance/jco-transpile');
    const fs = await import('@bytecodealliance/preview2-shim/filesystem');
    (fs as unknown as { _setPreopens(p: Record<string, string>): void })._setPreopens({ '/': '/' });
    const meta = await componentWitMetadataForWorld({ tag: 'path', val: build.WIT_DIR } as never, 'sandbox');
    const world = meta.imports.map((i) => `${i.namespace}:${i.package}/${i.interface}`).sort();
    expect(world).toEqual([...ALLOWED_IMPORTS].sort());
  });
});

describe('imported members', () => {
  const backendExport = '(instance $b) (export "warden:backend/backend@0.1.0" (instance $b))';
  const importing = (iface: string, decls: string) =>
    jco.parse(`(component (type (instance ${decls})) (import "${iface}" (instance (type 0))) ${backendExport})`);

  it('SANDBOX_MEMBERS equals the members of every import of a component made from the sandbox world', async () => {
    build.prepareWitDeps();
    const fs = await import('@bytecodealliance/preview2-shim/filesystem');
    (fs as unknown as { _setPreopens(p: Record<string, string>): void })._setPreopens({ '/': '/' });
    // a dummy core module importing every function of the world, made a component by wit-component
    const embedded = await jco.componentEmbed({ dummy: true, witPath: build.WIT_DIR, world: 'sandbox' } as never);
    const component = await jco.componentNew(embedded);
    const surface = checkComponent(component);
    const members = Object.fromEntries(
      surface.imports.map((i) => [i.name.replace(/@.*$/, ''), Object.fromEntries((i.members ?? []).map((m) => [m.name, m.kind]))]),
    );
    expect(members).toEqual(JSON.parse(JSON.stringify(SANDBOX_MEMBERS)));
  });

  it('reads the members of real toolchain output (componentize-js, wit-bindgen C)', () => {
    for (const model of ['identity_wasm', 'repeat_wasm', 'preprocess_wasm']) {
      const s = checkComponent(readFileSync(join(h.REPO, model, '1', 'model.wasm')));
      const host = s.imports.find((i) => i.name === `warden:backend/host@${BACKEND_API_VERSION}`);
      expect(
        host?.members?.map((m) => m.name),
        model,
      ).toContain('log');
    }
    const repeat = checkComponent(readFileSync(join(h.REPO, 'repeat_wasm', '1', 'model.wasm')));
    expect(repeat.imports.find((i) => i.name.startsWith('wasi:io/poll@'))?.members).toEqual(
      expect.arrayContaining([
        { name: 'pollable', kind: 'resource' },
        { name: '[method]pollable.block', kind: 'func' },
      ]),
    );
  });

  it('refuses a member the world does not define, or one of another kind, naming member and interface', async () => {
    const ok = await importing(
      'wasi:io/error@0.2.3',
      '(export "error" (type (sub resource))) (type (borrow 0)) (type (func (param "self" 1) (result string))) (export "[method]error.to-debug-string" (func (type 2)))',
    );
    expect(checkComponent(ok).imports[0]!.members).toEqual([
      { name: 'error', kind: 'resource' },
      { name: '[method]error.to-debug-string', kind: 'func' },
    ]);
    for (const [iface, decls, member, why] of [
      [
        'wasi:io/error@0.2.12',
        '(export "error" (type (sub resource))) (type (func)) (export "[static]error.constructor" (func (type 1)))',
        '[static]error.constructor',
        'no such function or type',
      ],
      ['warden:backend/host@0.1.0', '(type (func (result string))) (export "to-string" (func (type 0)))', 'to-string', 'no such function or type'],
      [
        'wasi:io/poll@0.2.0',
        '(export "pollable" (type (sub resource))) (type (borrow 0)) (type (func (param "self" 1))) (export "[method]pollable.value-of" (func (type 2)))',
        '[method]pollable.value-of',
        'no such function or type',
      ],
      ['wasi:clocks/wall-clock@0.2.12', '(export "datetime" (type (sub resource)))', 'datetime', 'a resource here, a type in the sandbox world'],
      ['wasi:io/error@0.2.12', '(type u32) (export "error" (type (eq 0)))', 'error', 'a type here, a resource in the sandbox world'],
      ['warden:backend/host@0.1.0', '(type (func)) (export "log" (instance))', 'log', 'instance'],
    ] as const) {
      const c = await importing(iface, decls);
      expect(() => checkComponent(c), member).toThrow(`imports '${member}' from '${iface}' (`);
      expect(() => checkComponent(c), member).toThrow(why);
    }
  });

  it('refuses top-level type imports', async () => {
    const typeImport = await jco.parse(`(component (import "wasi:io/error@0.2.12" (type (sub resource))) ${backendExport})`);
    expect(() => checkComponent(typeImport)).toThrow(/imports 'wasi:io\/error@0.2.12' \(a resource import\)/);
  });

  it('malformed or truncated components are refused with INVALID_ARG, never another error', async () => {
    const bytes = readFileSync(join(h.REPO, 'identity_wasm', '1', 'model.wasm'));
    let refused = 0;
    for (let i = 0; i < 300; i++) {
      const cut = 8 + Math.floor(Math.random() * (bytes.length - 8));
      const damaged = new Uint8Array(bytes.subarray(0, cut));
      if (i % 2) damaged[Math.floor(Math.random() * damaged.length)] ^= 1 << Math.floor(Math.random() * 8);
      try {
        checkComponent(damaged);
      } catch (e) {
        expect(e, `cut at ${cut}`).toMatchObject({ code: 'INVALID_ARG' });
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(250);
    // deeply nested instance types end at the depth limit
    let nested = '';
    for (let i = 0; i < 40; i++) nested = `(export "n${i}" (instance ${nested}))`;
    const deep = await jco.parse(`(component (type (instance ${nested})) (import "wasi:io/poll@0.2.12" (instance (type 0))) ${backendExport})`);
    expect(() => checkComponent(deep)).toThrow(/nested deeper than 16/);
  });
});

describe('V8 worker realm', () => {
  it('closeCodeGeneration leaves no `.constructor` path to compiling source; everything else keeps working', async () => {
    const { Worker } = await import('node:worker_threads');
    const realm = new URL('../../../host/src/backends/wasm/v8/realm.ts', import.meta.url).href;
    const code = `
      const { parentPort } = await import('node:worker_threads');
      const m = await import('tsx/esm/api'); m.register();
      const { closeCodeGeneration } = await import(${JSON.stringify(realm)});
      closeCodeGeneration();
      const tryIt = (f) => { try { return 'compiled: ' + String(f()); } catch (e) { return e.name + ': ' + e.message; } };
      parentPort.postMessage([
        tryIt(() => (() => 1).constructor('return 1')),
        tryIt(() => Object.constructor('return 1')),
        tryIt(() => (async () => 1).constructor('return 1')),
        tryIt(() => (function* () {}).constructor('yield 1')),
        tryIt(() => (async function* () {}).constructor('yield 1')),
        tryIt(() => { Function.prototype.constructor = Function; return (() => 1).constructor('return 1'); }),
        [1, 2, 3].map((x) => x * 2).join(),
        await Promise.resolve('async ok'),
      ]);`;
    const w = new Worker(`(async () => { ${code} })()`, { eval: true });
    const got = await new Promise<string[]>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    await w.terminate();
    for (const r of got.slice(0, 6)) expect(r).toBe('EvalError: code generation from strings is disabled in the sandbox');
    expect(got.slice(6)).toEqual(['2,4,6', 'async ok']);
  });
});

describe('memory cap', () => {
  it('rewrites the memory maximum so that memory.grow fails past the cap', async () => {
    const core = await jco.parse('(module (memory (export "m") 1) (func (export "grow") (param i32) (result i32) local.get 0 memory.grow))');
    const capped = capMemories(core, 4, 'test');
    expect(capped.initialBytes).toEqual([65536]);
    const { instance } = await WebAssembly.instantiate(capped.bytes as Uint8Array<ArrayBuffer>);
    const grow = instance.exports.grow as (n: number) => number;
    expect(grow(3)).toBe(1);
    expect(grow(1)).toBe(-1);
    // an existing smaller maximum is kept; an initial size above the cap is refused
    const small = await jco.parse('(module (memory (export "m") 1 2))');
    const kept = await WebAssembly.instantiate(capMemories(small, 4, 't').bytes as Uint8Array<ArrayBuffer>);
    const mem = kept.instance.exports.m as WebAssembly.Memory;
    expect(mem.grow(1)).toBe(1);
    expect(() => mem.grow(1)).toThrow(RangeError);
    const big = await jco.parse('(module (memory 10))');
    expect(() => capMemories(big, 4, 'big')).toThrow(/needs 655360 bytes of linear memory at start, more than the model's memory limit of 262144 bytes/);
    const shared = await jco.parse('(module (memory 1 2 shared))');
    expect(() => capMemories(shared, 4, 'sh')).toThrow(/shared memories are not supported/);
  });
});

describe('model limits', () => {
  const caps = { maxMemoryBytes: 256 * 1024 * 1024, maxExecuteMs: 1000, maxLogBytes: 4096 };
  const cfg = (params: Record<string, string>) => h.wasmConfig('m', [], [], { params });
  it('defaults to the caps, clamps to them, rounds memory down to pages', () => {
    const logMessages = DEFAULT_WASM_LIMITS.maxLogMessages;
    expect(modelLimits(cfg({}), caps)).toEqual({ memoryBytes: caps.maxMemoryBytes, executeMs: 1000, logBytes: 4096, logMessages });
    expect(modelLimits(cfg({ memory_limit_bytes: '100000', execute_timeout_ms: '99999', log_limit_bytes: '10' }), caps)).toEqual({
      memoryBytes: 65536,
      executeMs: 1000,
      logBytes: 10,
      logMessages,
    });
    expect(modelLimits(cfg({}), { ...caps, maxLogMessages: 7 }).logMessages).toBe(7);
  });
  it('the default caps are the ones the server runs with: 256 MiB, 10 s, 64 KiB and 1024 messages of log per call, 4 GiB in all', () => {
    expect(DEFAULT_WASM_LIMITS).toEqual({
      maxMemoryBytes: 256 * 1024 * 1024,
      maxExecuteMs: 10_000,
      maxLogBytes: 64 * 1024,
      maxLogMessages: 1024,
      maxTotalMemoryBytes: 4 * 1024 ** 3,
    });
    expect(Object.isFrozen(DEFAULT_WASM_LIMITS)).toBe(true);
  });
  it('checkWasmLimits fills in the message and total memory budgets and refuses caps that are not positive integers', () => {
    expect(checkWasmLimits(caps)).toEqual({
      ...caps,
      maxLogMessages: DEFAULT_WASM_LIMITS.maxLogMessages,
      maxTotalMemoryBytes: DEFAULT_WASM_LIMITS.maxTotalMemoryBytes,
    });
    expect(checkWasmLimits({ ...caps, maxLogMessages: 3 }).maxLogMessages).toBe(3);
    expect(checkWasmLimits({ ...caps, maxTotalMemoryBytes: 1 << 20 }).maxTotalMemoryBytes).toBe(1 << 20);
    expect(() => checkWasmLimits({ ...caps, maxTotalMemoryBytes: -1 })).toThrow('WasmLimits.maxTotalMemoryBytes must be a positive integer, got -1');
    expect(() => checkWasmLimits({ ...caps, maxExecuteMs: 0 })).toThrow('WasmLimits.maxExecuteMs must be a positive integer, got 0');
    expect(() => checkWasmLimits({ ...caps, maxLogMessages: 1.5 })).toThrow(RangeError);
  });
  it('refuses malformed parameters with INVALID_ARG', () => {
    expect(() => modelLimits(cfg({ execute_timeout_ms: 'soon' }), caps)).toThrow(/parameter execute_timeout_ms must be a positive integer/);
    expect(() => modelLimits(cfg({ memory_limit_bytes: '-5' }), caps)).toThrow(/must be a positive integer/);
    expect(() => modelLimits(cfg({ memory_limit_bytes: '1000' }), caps)).toThrow(/at least 65536 bytes/);
  });
});

describe('sandbox engines', () => {
  it('v8 is available and the default; unknown engines are refused by name', () => {
    expect(ENGINE_NAMES).toContain('v8');
    expect(DEFAULT_ENGINE).toBe('v8');
    expect(h.ENGINES).toEqual(ENGINE_NAMES);
    const cacheDir = mkdtempSync(join(tmpdir(), 'warden-engine-cache-'));
    expect(createEngine('v8', { cacheDir }).name).toBe('v8');
    expect(() => checkEngineName('wasmtime2')).toThrow(/unknown sandbox engine 'wasmtime2' \(available: v8/);
    const make = (engine: string) => new WasmBackendResolver({ cacheDir, limits: DEFAULT_WASM_LIMITS, logger: h.silentLogger, engine: engine as never });
    expect(() => make('nope')).toThrow(RangeError);
    expect(make('v8')).toBeInstanceOf(WasmBackendResolver);
  });

  it('an engine runs only what it compiled', async () => {
    const engine = createEngine('v8', { cacheDir: mkdtempSync(join(tmpdir(), 'warden-engine-cache-')) });
    const limits = modelLimits(h.wasmConfig('m', [], []), DEFAULT_WASM_LIMITS);
    const host = { model: { name: 'm', version: 1, configJson: '{}', versionPath: tmpdir(), decoupled: false, maxBatchSize: 0 }, outputs: [], limits };
    await expect(engine.instantiate({ engine: 'other', hash: '', memories: 0 }, h.instanceSpec('m'), host, 1000, h.silentLogger)).rejects.toMatchObject({
      code: 'INTERNAL',
      message: 'engine v8 cannot run a component compiled by engine other',
    });
    expect(engine.liveSandboxes()).toBe(0);
  });
});

describe('generated host types', () => {
  it('host/src/backends/wasm/wit-types/ is what jco generates from wit/ today', async () => {
    const out = mkdtempSync(join(tmpdir(), 'warden-wit-types-'));
    await build.generateHostTypes(out);
    const committed = join(h.ROOT, 'host', 'src', 'backends', 'wasm', 'wit-types');
    const list = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? list(join(dir, f)) : [join(dir, f)]));
    const rel = (dir: string) =>
      list(dir)
        .map((f) => relative(dir, f))
        .sort();
    expect(rel(out)).toEqual(rel(committed));
    for (const f of rel(out)) expect(readFileSync(join(out, f), 'utf8'), f).toBe(readFileSync(join(committed, f), 'utf8'));
  });
});
