/**
 * What only the wasmtime engine has (DESIGN "Backend kinds"): the precompiled-component cache on disk (hit,
 * tampered, truncated and foreign files, bounds, verified stamps), compiled code shared between models with the
 * same component, the idle policy (release, cold start), and the per-model `engine` parameter.
 * Everything both engines share runs in the engine-parametrised suites (samples, hostile,
 * memory-budget, http).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { WasmModel } from '../../../host/src/backends/wasm/backend.js';
import { WasmBackendResolver } from '../../../host/src/backends/wasm/index.js';
import { addonPath } from '../../../host/src/platform/addon.js';
import { definedMemories } from '../../../host/src/backends/wasm/binary.js';
import { componentSurface } from '../../../host/src/backends/wasm/component-check.js';
import { WasmtimeEngine as WasmtimeEngineClass, type WasmtimeCompiled, type WasmtimeEngine } from '../../../host/src/backends/wasm/wasmtime/engine.js';
import type { WasmtimeInstance } from '../../../host/src/backends/wasm/wasmtime/instance.js';
import type { RemoteCompileCache } from '../../../host/src/backends/wasm/wasmtime/remote-cache.js';
import { sleep, until } from '../../helpers/wait.js';
import * as h from './helpers.js';

const BUILD = join(h.FIXTURES, 'build');
const io = { inputs: [['INPUT0', 'FP32', [-1]]] as h.IO[], outputs: [['OUTPUT0', 'FP32', [-1]]] as h.IO[] };

const ws = h.wasmWorkspace('warden-wasmtime-');

function resolver(
  cacheDir: string,
  opts: { engine?: 'v8' | 'wasmtime'; maxEntries?: number; idleMs?: number; fuel?: boolean; settleMs?: number } = {},
): WasmBackendResolver {
  const r = new WasmBackendResolver({
    cacheDir,
    limits: { maxMemoryBytes: 64 * 1024 * 1024, maxExecuteMs: 5_000, maxLogBytes: 16 * 1024 },
    logger: h.silentLogger,
    engine: opts.engine ?? 'wasmtime',
    cacheLimits: opts.maxEntries ? { maxEntries: opts.maxEntries } : undefined,
    idleMs: opts.idleMs,
    wasmtimePool: opts.fuel ? { fuel: true } : undefined,
    cacheSettleMs: opts.settleMs,
  });
  ws.keep(r);
  return r;
}

/** Puts fixture `fixture` at <work>/<model>/1/model.wasm and loads it. */
async function load(r: WasmBackendResolver, model: string, fixture = 'identity', params: Record<string, string> = {}): Promise<WasmModel> {
  const dir = join(ws.dir, model);
  mkdirSync(join(dir, '1'), { recursive: true });
  copyFileSync(join(BUILD, `${fixture}.wasm`), join(dir, '1', 'model.wasm'));
  return h.loadModel(r, h.wasmConfig(model, io.inputs, io.outputs, { params }), dir);
}

const sourceOf = (m: WasmModel) => (m as unknown as { compiled: WasmtimeCompiled }).compiled.source;

async function identityWorks(m: WasmModel): Promise<void> {
  const inst = await m.createInstance(h.instanceSpec('x'));
  const v = Float32Array.of(1, -2, 3.5);
  const rec = await h.infer(inst, h.request('x', [h.tensor('INPUT0', 'FP32', [3], v)], ['OUTPUT0']));
  expect(rec.errors).toEqual([]);
  expect([...h.f32(rec.responses[0]!.outputs[0]!)]).toEqual([...v]);
  await inst.finalize();
}

/** The identity fixture as an engine's compile input; `reads.n` counts how often its bytes were asked for. */
function identityInput(reads: { n: number }) {
  const bytes = readFileSync(join(BUILD, 'identity.wasm'));
  return {
    bytes: async () => {
      reads.n++;
      return bytes;
    },
    hash: createHash('sha256').update(bytes).digest('hex'),
    surface: componentSurface(bytes),
    memories: definedMemories(bytes),
    limits: { memoryBytes: 16 * 1024 * 1024, executeMs: 1000, logBytes: 4096, logMessages: 16 },
    what: 'identity',
  };
}

/** The one compiled entry (`.cwasm`) in compile cache `cache`. */
function entryOf(cache: string): string {
  const dir = join(cache, 'wasmtime');
  return join(
    dir,
    readdirSync(dir).find((f) => f.endsWith('.cwasm'))!,
  );
}

describe('wasmtime compile cache (.cwasm)', () => {
  it('compiles once, then loads from the cache in a new engine; the entry is the raw artifact, named by its keyed MAC, beside a 0600 key', async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    const m1 = await load(resolver(cache), 'c1');
    expect(sourceOf(m1)).toBe('compiled');
    const files = readdirSync(join(cache, 'wasmtime')).filter((f) => f.endsWith('.cwasm'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(new RegExp(`^${m1.componentHash}-[0-9a-f]{16}-[0-9a-f]{64}\\.cwasm$`));
    const file = join(cache, 'wasmtime', files[0]!);
    expect(readFileSync(file).subarray(0, 4).toString('latin1')).toBe('\x7fELF'); // mapped by wasmtime as is
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = join(cache, 'wasmtime', '.key');
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(statSync(key).size).toBe(32);
    const m2 = await load(resolver(cache), 'c2');
    expect(sourceOf(m2)).toBe('cache');
    await identityWorks(m2);
  });

  it.each([
    [
      'a flipped payload byte',
      (f: string) => {
        const b = readFileSync(f);
        b[b.length - 100]! ^= 0xff;
        writeFileSync(f, b);
      },
    ],
    [
      'a flipped byte in the ELF header',
      (f: string) => {
        const b = readFileSync(f);
        b[20]! ^= 0x01;
        writeFileSync(f, b);
      },
    ],
    ['a truncated file', (f: string) => writeFileSync(f, readFileSync(f).subarray(0, readFileSync(f).length - 4096))],
    ['an empty file', (f: string) => writeFileSync(f, '')],
    ['garbage', (f: string) => writeFileSync(f, 'not a cwasm at all\n')],
    ['a MAC in the name that does not match', (f: string) => renameSync(f, f.replace(/-[0-9a-f]{64}\.cwasm$/, `-${'ab'.repeat(32)}.cwasm`))],
    [
      'a symlink to a good copy',
      (f: string) => {
        renameSync(f, `${f}.real`);
        symlinkSync(`${f}.real`, f);
      },
    ],
    [
      'a FIFO (an open would block)',
      (f: string) => {
        rmSync(f);
        execFileSync('mkfifo', [f]);
      },
    ],
    ['an entry written under another cache key', (f: string) => writeFileSync(join(f, '..', '.key'), randomBytes(32), { mode: 0o600 })],
  ])('refuses %s: deletes it, compiles again, and serves correctly', async (_what, tamper) => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    await load(resolver(cache), 't1');
    tamper(entryOf(cache));
    const m = await load(resolver(cache), 't2');
    expect(sourceOf(m)).toBe('compiled');
    await identityWorks(m);
    // the rewritten entry is good again
    expect(sourceOf(await load(resolver(cache), 't3'))).toBe('cache');
  });

  it('a cache hit never asks for the component bytes; a miss asks once (the first load of a cached component maps only the .cwasm)', async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    const compileIn = async (reads: { n: number }) => {
      const engine = new WasmtimeEngineClass({ cacheDir: cache, logger: h.silentLogger });
      const c = await engine.compile(identityInput(reads));
      engine.release(c);
      await engine.dispose();
      return c.source;
    };
    const miss = { n: 0 };
    expect(await compileIn(miss)).toBe('compiled');
    expect(miss.n).toBe(1);
    const hit = { n: 0 };
    expect(await compileIn(hit)).toBe('cache');
    expect(hit.n).toBe(0);
  });

  it("an entry renamed to another component's hash is refused (the MAC binds the component hash)", async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    const a = await load(resolver(cache), 'ra', 'identity');
    const b = await load(resolver(cache), 'rb', 'trap_execute');
    const dir = join(cache, 'wasmtime');
    const nameOf = (hash: string) => readdirSync(dir).find((f) => f.startsWith(hash))!;
    // b's entry replaced by a's bytes under b's name: a load of b must not get a's code
    const bName = nameOf(b.componentHash);
    rmSync(join(dir, bName));
    copyFileSync(join(dir, nameOf(a.componentHash)), join(dir, bName));
    const b2 = await load(resolver(cache), 'rb2', 'trap_execute');
    expect(sourceOf(b2)).toBe('compiled');
  });

  it('a key file readable by others is replaced, and entries made under the old key are compiled again', async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    await load(resolver(cache), 'k1');
    const key = join(cache, 'wasmtime', '.key');
    const old = readFileSync(key);
    chmodSync(key, 0o644);
    const m = await load(resolver(cache), 'k2');
    expect(sourceOf(m)).toBe('compiled');
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(readFileSync(key).equals(old)).toBe(false);
  });

  it('a precompiled .cwasm uploaded as model.wasm is refused before wasmtime sees it (uploads never become native code)', async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    await load(resolver(cache), 'u1');
    const cwasm = readFileSync(entryOf(cache)); // exactly what wasmtime's deserialize would take
    expect(cwasm.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    const withHeader = Buffer.concat([Buffer.from('WARDEN-CWASM/1 x\n'), cwasm]);
    for (const [name, bytes] of [
      ['u_elf', cwasm],
      ['u_header', withHeader],
    ] as const) {
      mkdirSync(join(ws.dir, name, '1'), { recursive: true });
      writeFileSync(join(ws.dir, name, '1', 'model.wasm'), bytes);
      await expect(h.loadModel(resolver(cache), h.wasmConfig(name, io.inputs, io.outputs), join(ws.dir, name))).rejects.toMatchObject({ code: 'INVALID_ARG' });
    }
  });

  it('entries of the previous format (header + payload) are never loaded, count against the bounds and are evicted first', async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    mkdirSync(join(cache, 'wasmtime'));
    const legacy = join(cache, 'wasmtime', `${'ab'.repeat(32)}-${'cd'.repeat(8)}.cwasm`);
    writeFileSync(legacy, 'WARDEN-CWASM/1 old header\npayload');
    const r = resolver(cache, { maxEntries: 1 });
    await load(r, 'lg', 'identity');
    const left = readdirSync(join(cache, 'wasmtime')).filter((f) => f.endsWith('.cwasm'));
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(/-[0-9a-f]{64}\.cwasm$/);
  });

  it('is bounded: past maxEntries the least recently used entry no loaded model uses goes', async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    const r = resolver(cache, { maxEntries: 2 });
    const a = await load(r, 'ba', 'identity');
    const b = await load(r, 'bb', 'trap_execute');
    const entries = () =>
      readdirSync(join(cache, 'wasmtime'))
        .filter((f) => f.endsWith('.cwasm'))
        .map((f) => f.slice(0, 64))
        .sort();
    expect(entries()).toEqual([a.componentHash, b.componentHash].sort());
    await a.finalize(); // a is no longer in use
    const c = await load(r, 'bc', 'loop_execute');
    expect(entries()).toEqual([b.componentHash, c.componentHash].sort());
    // in use entries stay even past the bound
    const d = await load(r, 'bd', 'recurse');
    expect(entries()).toEqual([b.componentHash, c.componentHash, d.componentHash].sort());
  });
});

describe('wasmtime compile cache: verified stamps (a first load trusts an unchanged, fully checked entry instead of hashing it)', () => {
  const stampOf = (cache: string) => entryOf(cache).replace(/\.cwasm$/, '.verified');
  const countsOf = (m: WasmModel) => (m as unknown as { engine: WasmtimeEngine }).engine.cache.counts;
  // settle 0: a just-written entry is stamped at once (the default waits until its last change is 2 s old)
  const quick = (cache: string) => resolver(cache, { settleMs: 0 });
  // past a ctime tick (coarse clock), so that a change after stamping shows in ctime
  const tick = () => sleep(30);
  // a whole second, now: a mtime a test can put back exactly (and recent: not refreshed on use)
  const NOW_S = Math.floor(Date.now() / 1000);

  /** A cache whose entry was compiled, then loaded once (checked in full, so stamped). */
  async function stamped(): Promise<string> {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    await load(quick(cache), 's0');
    utimesSync(entryOf(cache), NOW_S, NOW_S);
    await tick();
    const m = await load(quick(cache), 's1');
    expect(sourceOf(m)).toBe('cache');
    expect(countsOf(m)).toEqual({ mac: 1, stamp: 0 });
    expect(existsSync(stampOf(cache))).toBe(true);
    await tick();
    return cache;
  }

  it("after a full check the open file's stamps are recorded (0600, MAC'd); a new engine trusts them and does not hash", async () => {
    const cache = await stamped();
    const st = statSync(entryOf(cache), { bigint: true });
    expect(statSync(stampOf(cache)).mode & 0o777).toBe(0o600);
    expect(readFileSync(stampOf(cache), 'latin1')).toMatch(
      new RegExp(`^warden-cwasm-verified/1 ${st.dev} ${st.ino} ${st.size} ${st.mtimeNs} ${st.ctimeNs} [0-9a-f]{64}\\n$`),
    );
    const m = await load(quick(cache), 's2');
    expect(sourceOf(m)).toBe('cache');
    expect(countsOf(m)).toEqual({ mac: 0, stamp: 1 });
    await identityWorks(m);
  });

  it('an entry whose last change is younger than the settle time is checked in full and not stamped', async () => {
    const cache = mkdtempSync(join(ws.dir, 'cache-'));
    await load(resolver(cache), 'n0');
    const m = await load(resolver(cache), 'n1'); // default settle: 2 s
    expect(countsOf(m)).toEqual({ mac: 1, stamp: 0 });
    expect(existsSync(stampOf(cache))).toBe(false);
  });

  const flipInPlace = (f: string) => {
    const b = readFileSync(f);
    // inside .text (wasmtime's ELF puts it at 0x1000): machine code wasmtime itself would not notice
    b[0x1800]! ^= 0xff;
    writeFileSync(f, b); // same inode, same size
    utimesSync(f, NOW_S, NOW_S); // same mtime: only ctime tells
  };
  it.each([
    ['a byte flipped in place (same inode, size and mtime: only ctime moved)', flipInPlace],
    ['a truncated file', (f: string) => writeFileSync(f, readFileSync(f).subarray(0, readFileSync(f).length - 4096))],
    [
      'an entry replaced by a tampered copy under the same name',
      (f: string) => {
        const b = readFileSync(f);
        b[200]! ^= 1;
        rmSync(f);
        writeFileSync(f, b, { mode: 0o600 });
      },
    ],
  ])('after stamping, %s is checked in full: refused, deleted with its stamp, compiled again', async (_what, tamper) => {
    const cache = await stamped();
    const stamp = stampOf(cache);
    tamper(entryOf(cache));
    const m = await load(quick(cache), 't');
    expect(sourceOf(m)).toBe('compiled');
    expect(existsSync(stamp)).toBe(false);
    await identityWorks(m);
  });

  it.each([
    ['touched (utimes to the same mtime: content unchanged, ctime moved)', (f: string) => utimesSync(f, NOW_S, NOW_S)],
    [
      'chmod (metadata only)',
      (f: string) => {
        chmodSync(f, 0o400);
        chmodSync(f, 0o600);
      },
    ],
    [
      'replaced by an identical copy (another inode)',
      (f: string) => {
        const b = readFileSync(f);
        rmSync(f);
        writeFileSync(f, b, { mode: 0o600 });
        utimesSync(f, NOW_S, NOW_S);
      },
    ],
    [
      'a stamp forged without the key (right stamps, wrong MAC)',
      (f: string) => {
        const s = f.replace(/\.cwasm$/, '.verified');
        writeFileSync(s, readFileSync(s, 'latin1').replace(/[0-9a-f]{64}\n$/, `${'ab'.repeat(32)}\n`));
      },
    ],
    [
      'a stamp that is a symlink to a good one',
      (f: string) => {
        const s = f.replace(/\.cwasm$/, '.verified');
        renameSync(s, `${s}.real`);
        symlinkSync(`${s}.real`, s);
      },
    ],
    [
      'a FIFO as the stamp file (an open would block)',
      (f: string) => {
        const s = f.replace(/\.cwasm$/, '.verified');
        rmSync(s);
        execFileSync('mkfifo', [s]);
      },
    ],
    [
      'an oversized stamp file',
      (f: string) => {
        const s = f.replace(/\.cwasm$/, '.verified');
        writeFileSync(s, readFileSync(s, 'latin1') + 'x'.repeat(4096));
      },
    ],
  ])('after stamping, %s: the stamp is not trusted; the good entry is checked in full, kept and stamped again', async (_what, change) => {
    const cache = await stamped();
    change(entryOf(cache));
    const m = await load(quick(cache), 'h1');
    expect(sourceOf(m)).toBe('cache');
    expect(countsOf(m)).toEqual({ mac: 1, stamp: 0 });
    await identityWorks(m);
    const again = await load(quick(cache), 'h2');
    expect(countsOf(again)).toEqual({ mac: 0, stamp: 1 });
  });

  it('cacheSettleMs must be a non-negative integer', () => {
    for (const bad of [-1, 1.5, Number.NaN]) expect(() => resolver(ws.dir, { settleMs: bad })).toThrow(RangeError);
  });

  it('a stamp whose entry is gone is removed; an entry used within the hour keeps its mtime (and stamp), an older one is refreshed', async () => {
    const cache = await stamped();
    const orphan = join(cache, 'wasmtime', `${'ab'.repeat(32)}-${'cd'.repeat(8)}-${'ef'.repeat(32)}.verified`);
    writeFileSync(orphan, 'x');
    const entry = entryOf(cache);
    const m = await load(quick(cache), 'o1');
    expect(existsSync(orphan)).toBe(false);
    expect(countsOf(m)).toEqual({ mac: 0, stamp: 1 });
    expect(statSync(entry).mtimeMs).toBe(NOW_S * 1000);
    const old = NOW_S - 2 * 3600;
    utimesSync(entry, old, old);
    await load(quick(cache), 'o2');
    expect(statSync(entry).mtimeMs).toBeGreaterThan(NOW_S * 1000 - 60_000);
  });
});

describe("wasmtime compile cache: the fleet's shared tier (remote-cache.ts)", () => {
  /** A shared tier in memory: entry name → bytes. */
  const memoryTier = (entries = new Map<string, Uint8Array>()): RemoteCompileCache & { entries: Map<string, Uint8Array> } => ({
    entries,
    fetch: async (prefix, maxBytes) => {
      const name = [...entries.keys()].find((n) => n.startsWith(prefix));
      return name && entries.get(name)!.length <= maxBytes ? { name, bytes: entries.get(name)! } : undefined;
    },
    store: async (e) => void entries.set(e.name, e.bytes),
  });
  const compileWith = async (cacheKey: Buffer, remoteCache: RemoteCompileCache, reads: { n: number }) => {
    const engine = new WasmtimeEngineClass({ cacheDir: mkdtempSync(join(ws.dir, 'fleet-')), logger: h.silentLogger, cacheKey, remoteCache });
    const c = await engine.compile(identityInput(reads));
    engine.release(c);
    await engine.dispose();
    return c.source;
  };

  it('what one replica compiled, another with the same key loads without reading the component; one with another key compiles', async () => {
    const key = randomBytes(32);
    const tier = memoryTier();
    const first = { n: 0 };
    expect(await compileWith(key, tier, first)).toBe('compiled');
    await until(() => tier.entries.size === 1, { what: 'entry stored in the shared tier' });
    expect([...tier.entries.keys()][0]).toMatch(/^[0-9a-f]{64}-[0-9a-f]{16}-[0-9a-f]{64}\.cwasm$/);
    const second = { n: 0 };
    expect(await compileWith(key, tier, second)).toBe('shared-cache');
    expect(second.n).toBe(0);
    // Without the fleet's key the entry fails its MAC: compiled locally, never loaded.
    const stranger = { n: 0 };
    expect(await compileWith(randomBytes(32), tier, stranger)).toBe('compiled');
    expect(stranger.n).toBe(1);
  });

  it("a tampered shared entry (one bit) is refused and compiled again, even under the fleet's key", async () => {
    const key = randomBytes(32);
    const tier = memoryTier();
    await compileWith(key, tier, { n: 0 });
    await until(() => tier.entries.size === 1, { what: 'entry stored' });
    const [name, good] = [...tier.entries][0]!;
    const bad = Uint8Array.from(good);
    bad[bad.length >> 1] ^= 1;
    tier.entries.set(name, bad);
    expect(await compileWith(key, tier, { n: 0 })).toBe('compiled');
  });
});

describe('wasmtime engine: sharing, idle policy, engine parameter', () => {
  it('models with the same component share its compiled code', async () => {
    const r = resolver(mkdtempSync(join(ws.dir, 'cache-')));
    const m1 = await load(r, 's1');
    const m2 = await load(r, 's2');
    expect(sourceOf(m1)).toBe('compiled');
    expect(sourceOf(m2)).toBe('shared');
    await m1.finalize();
    await identityWorks(m2); // still usable after the first model let go
  });

  it('an idle instance releases its sandbox (no thread) and starts a new one on the next request', async () => {
    const r = resolver(mkdtempSync(join(ws.dir, 'cache-')));
    const m = await load(r, 'idle', 'identity', { idle_timeout_ms: '50' });
    const engine = m.engine as WasmtimeEngine;
    const inst = (await m.createInstance(h.instanceSpec('idle'))) as WasmtimeInstance;
    const req = () => h.request('idle', [h.tensor('INPUT0', 'FP32', [1], Float32Array.of(7))], ['OUTPUT0']);
    expect((await h.infer(inst, req())).errors).toEqual([]);
    expect(engine.liveSandboxes()).toBe(1);
    await until(() => engine.liveSandboxes() === 0, { within: 2_000, every: 20 });
    expect(inst.live).toBe(false);
    expect(engine.liveSandboxes()).toBe(0);
    expect(inst.idle.releases).toBe(1);
    expect(m.memoryBudget.usedBytes).toBe(0); // the reservation went with the sandbox
    const rec = await h.infer(inst, req());
    expect(rec.errors).toEqual([]);
    expect(m.memoryBudget.usedBytes).toBe(m.instanceMemoryBytes); // the cold start reserved it again
    expect(h.f32(rec.responses[0]!.outputs[0]!)[0]).toBe(7);
    expect(inst.idle.coldStarts).toBe(1);
    expect(inst.idle.lastColdStartMs).toBeGreaterThan(0);
    await m.finalize();
    expect(m.memoryBudget.usedBytes).toBe(0);
  });

  it('the epoch ticker parks once no guest call has run for its grace period (an idle server wakes no CPU), and ticks again for the next call', async () => {
    const tickers = () =>
      readdirSync('/proc/self/task')
        .filter((tid) => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === 'warden-wasmtime') // 'warden-wasmtime-epoch', cut to 15 bytes by the kernel
        .map((tid) => `/proc/self/task/${tid}/status`);
    const switches = () => tickers().reduce((sum, f) => sum + Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(f, 'utf8'))?.[1] ?? 0), 0);
    const r = resolver(mkdtempSync(join(ws.dir, 'cache-')));
    const m = await load(r, 'ticker');
    const inst = (await m.createInstance(h.instanceSpec('ticker'))) as WasmtimeInstance;
    const req = () => h.request('ticker', [h.tensor('INPUT0', 'FP32', [1], Float32Array.of(3))], ['OUTPUT0']);
    expect((await h.infer(inst, req())).errors).toEqual([]);
    expect(tickers().length).toBeGreaterThan(0);
    // After its grace (250 ms) it parks: a 400 ms window passes with fewer than 20 switches, where
    // one that ticks makes one per 1 ms tick (~400). Windows are tried until one is quiet, so a
    // loaded machine only makes the park later; a ticker that never parks fails after 15 s.
    await until(
      async () => {
        const before = switches();
        await sleep(400);
        return switches() - before < 20;
      },
      { within: 15_000, every: 0, what: 'a parked ticker' },
    );
    // the next call wakes it: the deadline still works after a park (a runaway guest is the hostile suite's)
    expect((await h.infer(inst, req())).errors).toEqual([]);
    const woken = switches();
    // ticking through the grace period (~250 switches in it), however the machine schedules it
    await until(() => switches() - woken > 10, { within: 5_000, every: 5, what: 'a ticking ticker' });
    await m.finalize();
  });

  it("a worker thread that exits holding an engine (its JS-thread wake-up still open and ref'd once) ends cleanly", async () => {
    // Node aborts a worker whose loop still has an open handle at teardown: the wake-up
    // (native/src/addon/js_wake.h) must close itself from its environment cleanup hook.
    const code = `
      const addon = require(process.env.WARDEN_TEST_ADDON);
      const e = addon.wasmtime.engineNew('{}', () => {});
      addon.wasmtime.engineRef(e, true);
      addon.wasmtime.engineRef(e, false);
      require('node:worker_threads').parentPort.postMessage('made');`;
    const w = new Worker(code, { eval: true, env: { ...process.env, WARDEN_TEST_ADDON: addonPath() } });
    const said: unknown[] = [];
    w.on('message', (m) => said.push(m));
    const exitCode = await new Promise<number>((res, rej) => {
      w.on('exit', res);
      w.on('error', rej);
    });
    expect(said).toEqual(['made']);
    expect(exitCode).toBe(0);
  });

  it('fuel metering reports a deterministic figure per execute that grows with the work', async () => {
    const r = resolver(mkdtempSync(join(ws.dir, 'cache-')), { fuel: true });
    const m = await load(r, 'fuel');
    const inst = await m.createInstance(h.instanceSpec('fuel'));
    const fuelOf = async (n: number) => {
      const rec = await h.infer(inst, h.request('fuel', [h.tensor('INPUT0', 'FP32', [n], new Float32Array(n).fill(1))], ['OUTPUT0']));
      expect(rec.errors).toEqual([]);
      return inst.stats.lastFuel!;
    };
    const small = await fuelOf(16);
    expect(small).toBeGreaterThan(0);
    expect(await fuelOf(16)).toBe(small);
    expect(await fuelOf(65536)).toBeGreaterThan(small);
    // without fuel metering there is no figure
    const plain = await load(resolver(mkdtempSync(join(ws.dir, 'cache-'))), 'nofuel');
    const pi = await plain.createInstance(h.instanceSpec('nofuel'));
    await h.infer(pi, h.request('nofuel', [h.tensor('INPUT0', 'FP32', [1], Float32Array.of(1))], ['OUTPUT0']));
    expect(pi.stats.lastFuel).toBeUndefined();
  });

  it('idle_timeout_ms must be a non-negative integer', async () => {
    const r = resolver(mkdtempSync(join(ws.dir, 'cache-')));
    await expect(load(r, 'idle_bad', 'identity', { idle_timeout_ms: '-5' })).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: expect.stringMatching(/idle_timeout_ms/),
    });
  });

  it('parameters { key: "engine" } picks the engine per model; an unknown engine is refused', async () => {
    const r = resolver(mkdtempSync(join(ws.dir, 'cache-')), { engine: 'v8' });
    const onV8 = await load(r, 'e_default');
    const onWasmtime = await load(r, 'e_wasmtime', 'identity', { engine: 'wasmtime' });
    expect(onV8.engine.name).toBe('v8');
    expect(onWasmtime.engine.name).toBe('wasmtime');
    await identityWorks(onWasmtime);
    await expect(load(r, 'e_bad', 'identity', { engine: '../../bin/sh' })).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: expect.stringMatching(/parameter engine must be one of v8, wasmtime, got '\.\.\/\.\.\/bin\/sh'/),
    });
  });
});
