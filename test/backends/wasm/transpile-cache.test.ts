/**
 * The V8 engine's transpile cache (host/src/backends/wasm/v8/transpile.ts): bounded by entries
 * and bytes with least-recently-used eviction, never evicting an entry a loaded model uses, and
 * cleaning what a crashed process left (temporary folders, entries without meta.json) at start —
 * only names of its own patterns, never foreign files. The last case goes through the resolver:
 * a loaded model keeps serving (new sandboxes load its glue from the cache) while other uploads
 * churn through a cache of one entry.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CACHE_LIMITS, TranspileCache } from '../../../host/src/backends/wasm/v8/transpile.js';
import { V8Engine } from '../../../host/src/backends/wasm/v8/engine.js';
import * as h from './helpers.js';
import { sleep } from '../../helpers/wait.js';

await h.ensureBuilt();
const jco = await import('@bytecodealliance/jco');

/** A tiny valid component (an empty backend instance) made distinct by a custom section. */
const base = await jco.parse('(component (instance $b) (export "warden:backend/backend@0.1.0" (instance $b)))');
function variant(bytes: Uint8Array, tag: string): Uint8Array {
  const name = Buffer.from('warden-test');
  const payload = Buffer.from(tag);
  const body = Buffer.concat([Buffer.from([name.length]), name, payload]);
  if (body.length > 127) throw new Error('tag too long');
  return Buffer.concat([bytes, Buffer.from([0x00, body.length]), body]);
}
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const HEX64 = /^[0-9a-f]{64}$/;
const entriesIn = (dir: string) => readdirSync(dir).filter((n) => HEX64.test(n));

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'warden-cache-test-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function freshDir(name: string): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  return d;
}

describe('transpile cache bounds', () => {
  it('defaults to 256 entries and 2 GiB; refuses bounds that are not positive integers', () => {
    expect(DEFAULT_CACHE_LIMITS).toEqual({ maxEntries: 256, maxBytes: 2 * 1024 ** 3 });
    expect(new TranspileCache(freshDir('d')).limits).toEqual(DEFAULT_CACHE_LIMITS);
    expect(() => new TranspileCache(freshDir('d'), { maxEntries: 0 })).toThrow(/maxEntries must be a positive integer/);
    expect(() => new TranspileCache(freshDir('d'), { maxBytes: 1.5 })).toThrow(RangeError);
  });

  it('keeps at most maxEntries, evicting the least recently used entry that no model uses', async () => {
    const dir = freshDir('lru');
    const cache = new TranspileCache(dir, { maxEntries: 3 });
    const comps = ['a', 'b', 'c', 'd', 'e'].map((t) => variant(base, t));
    const use = async (c: Uint8Array) => {
      const t = await cache.acquire(c, 'test', sha(c));
      cache.release(sha(c));
      await cache.idle();
      return t;
    };
    await use(comps[0]!);
    await sleep(5);
    await use(comps[1]!);
    await sleep(5);
    await use(comps[2]!);
    await sleep(5);
    const again = await use(comps[0]!); // a cache hit: a is now the most recent
    expect(existsSync(again.gluePath)).toBe(true);
    await sleep(5);
    await use(comps[3]!); // evicts b, the least recently used
    expect(entriesIn(dir).sort()).toEqual([comps[0]!, comps[2]!, comps[3]!].map(sha).sort());
    await sleep(5);
    await use(comps[4]!); // evicts c
    expect(entriesIn(dir).sort()).toEqual([comps[0]!, comps[3]!, comps[4]!].map(sha).sort());
    expect(cache.stats()).toMatchObject({ entries: 3, inUse: 0 });
  });

  it('never evicts an entry in use: it stays past the bounds until released, then goes', async () => {
    const dir = freshDir('inuse');
    const cache = new TranspileCache(dir, { maxEntries: 1 });
    const [a, b, c] = ['a', 'b', 'c'].map((t) => variant(base, t)) as [Uint8Array, Uint8Array, Uint8Array];
    const ta = await cache.acquire(a, 'a', sha(a)); // held, like a loaded model
    await cache.acquire(b, 'b', sha(b));
    cache.release(sha(b));
    await cache.acquire(c, 'c', sha(c)); // held too: the cache is over its bound, nothing evictable
    await cache.idle();
    expect(entriesIn(dir).sort()).toEqual([sha(a), sha(c)].sort());
    expect(existsSync(ta.gluePath)).toBe(true);
    cache.release(sha(a)); // unused and over the bound: evicted at once
    await cache.idle();
    expect(entriesIn(dir)).toEqual([sha(c)]);
    // a model loaded twice holds the entry twice
    const tc = await cache.acquire(c, 'c', sha(c));
    cache.release(sha(c));
    await cache.acquire(a, 'a', sha(a));
    await cache.idle();
    expect(existsSync(tc.gluePath)).toBe(true);
    expect(cache.stats().inUse).toBe(2);
  });

  it('keeps at most maxBytes', async () => {
    const dir = freshDir('bytes');
    const probe = new TranspileCache(freshDir('bytes-probe'));
    const one = variant(base, 'probe');
    await probe.acquire(one, 'probe', sha(one));
    const entryBytes = probe.stats().bytes;
    expect(entryBytes).toBeGreaterThan(0);
    const cache = new TranspileCache(dir, { maxBytes: Math.floor(entryBytes * 2.5) });
    for (const t of ['a', 'b', 'c', 'd']) {
      const c = variant(base, t);
      await cache.acquire(c, t, sha(c));
      cache.release(sha(c));
      await cache.idle();
      await sleep(5);
    }
    expect(entriesIn(dir)).toHaveLength(2);
    expect(cache.stats().bytes).toBeLessThanOrEqual(entryBytes * 2.5);
  });
});

describe('transpile cache start-up clean-up', () => {
  it("removes a crashed process's temporary folders and incomplete entries, evicts old entries down to the bounds, and leaves foreign files alone", async () => {
    const dir = freshDir('startup');
    // two complete entries from an earlier run (the older one by meta.json mtime)
    const warm = new TranspileCache(dir);
    const [old, recent] = ['old', 'recent'].map((t) => variant(base, t)) as [Uint8Array, Uint8Array];
    await warm.acquire(old, 'old', sha(old));
    await warm.acquire(recent, 'recent', sha(recent));
    const past = new Date(Date.now() - 3600_000);
    utimesSync(join(dir, sha(old), 'meta.json'), past, past);

    const deadPid = spawnSync(process.execPath, ['-e', '0']).pid!;
    const h1 = 'a'.repeat(64);
    const h2 = 'b'.repeat(64);
    const h3 = 'c'.repeat(64);
    // leftovers of a crashed transpile: a temp folder of a process that is gone, half written
    mkdirSync(join(dir, `.tmp-${h1}-${deadPid}-1`));
    writeFileSync(join(dir, `.tmp-${h1}-${deadPid}-1`, 'component.js'), 'partial');
    // an entry folder without meta.json (incomplete)
    mkdirSync(join(dir, h2));
    writeFileSync(join(dir, h2, 'component.js'), 'partial');
    // a temp folder of a process that is still running (pid 1) is someone else's work in progress
    mkdirSync(join(dir, `.tmp-${h3}-1-7`));
    // foreign things: never touched, never counted
    writeFileSync(join(dir, 'README.txt'), 'operator notes');
    mkdirSync(join(dir, 'backups'));
    writeFileSync(join(dir, 'backups', 'x.bin'), 'x');
    mkdirSync(join(dir, '.tmp-not-ours'));
    writeFileSync(join(dir, 'd'.repeat(64)), 'a file with an entry-like name');
    mkdirSync(join(dir, 'f'.repeat(64))); // an entry-like folder with something not ours in it
    writeFileSync(join(dir, 'f'.repeat(64), 'photo.jpg'), 'x');
    mkdirSync(join(dir, 'E'.repeat(64))); // upper-case hex: not an entry name

    const cache = new TranspileCache(dir, { maxEntries: 1 });
    const report = await cache.prepare();
    expect(report).toMatchObject({ removedTemp: 1, removedIncomplete: 1, evicted: 1, entries: 1 });
    const left = readdirSync(dir).sort();
    expect(left).toEqual([sha(recent), `.tmp-${h3}-1-7`, 'README.txt', 'backups', '.tmp-not-ours', 'd'.repeat(64), 'f'.repeat(64), 'E'.repeat(64)].sort());
    expect(readFileSync(join(dir, 'README.txt'), 'utf8')).toBe('operator notes');
    expect(readFileSync(join(dir, 'backups', 'x.bin'), 'utf8')).toBe('x');
    // the surviving entry is served from the cache
    const t = await cache.acquire(recent, 'recent', sha(recent));
    expect(t.dir).toBe(join(dir, sha(recent)));
  });
});

describe.each(h.ENGINES.filter((e) => e === 'v8'))('%s engine: cache and loaded models', (engine) => {
  it('models of the same bytes and memory cap share one compiled component; its cache entry is in use until the last goes', async () => {
    const engine = new V8Engine({ cacheDir: freshDir('shared-compile'), logger: h.silentLogger });
    const bytes = readFileSync(join(h.FIXTURES, 'build', 'identity.wasm'));
    let reads = 0;
    const input = (memoryBytes: number, what: string) => ({
      bytes: async () => (reads++, bytes),
      hash: sha(bytes),
      surface: { imports: [], exports: [] },
      memories: 1,
      limits: { memoryBytes, executeMs: 1000, logBytes: 1024, logMessages: 16 },
      what,
    });
    const [a, b] = await Promise.all([engine.compile(input(16 << 20, 'a')), engine.compile(input(16 << 20, 'b'))]);
    expect(b).toBe(a); // one compile, one read
    expect(reads).toBe(1);
    const c = await engine.compile(input(32 << 20, 'c')); // another cap: its own modules
    expect(c).not.toBe(a);
    expect(c.modules).not.toBe(a.modules);
    expect(engine.cache.stats().inUse).toBe(1);
    engine.release(a);
    engine.release(c);
    expect(engine.cache.stats().inUse).toBe(1); // b still uses it
    engine.release(b);
    expect(engine.cache.stats().inUse).toBe(0);
    // released by all: the next compile of the same input compiles (and reads) again
    const d = await engine.compile(input(16 << 20, 'd'));
    expect(d).not.toBe(a);
    expect(reads).toBe(3);
    engine.release(d);
  });

  it('a loaded model keeps its cache entry while other uploads churn through a one-entry cache; new sandboxes still start', async () => {
    const work = mkdtempSync(join(tmpdir(), 'warden-cache-models-'));
    const resolver = new (await import('../../../host/src/backends/wasm/index.js')).WasmBackendResolver({
      cacheDir: join(work, 'cache'),
      limits: { maxMemoryBytes: 64 * 1024 * 1024, maxExecuteMs: 5000, maxLogBytes: 4096 },
      logger: h.silentLogger,
      engine,
      cacheLimits: { maxEntries: 1 },
    });
    const io = { inputs: [['INPUT0', 'FP32', [-1]]] as h.IO[], outputs: [['OUTPUT0', 'FP32', [-1]]] as h.IO[] };
    const place = (name: string, bytes: Uint8Array) => {
      mkdirSync(join(work, name, '1'), { recursive: true });
      writeFileSync(join(work, name, '1', 'model.wasm'), bytes);
      return join(work, name);
    };
    try {
      const identity = readFileSync(join(h.FIXTURES, 'build', 'identity.wasm'));
      const kept = await h.loadModel(resolver, h.wasmConfig('kept', io.inputs, io.outputs), place('kept', identity));
      const first = await kept.createInstance(h.instanceSpec('kept', 0));
      for (const t of ['u1', 'u2', 'u3']) {
        const m = await h.loadModel(resolver, h.wasmConfig(t, io.inputs, io.outputs), place(t, variant(identity, t)));
        const inst = await m.createInstance(h.instanceSpec(t));
        await m.finalize();
        expect(inst.isReady()).toBe(false);
      }
      const cache = (resolver.getBackend().engine as V8Engine).cache;
      await cache.idle();
      const entries = entriesIn(join(work, 'cache'));
      expect(entries).toContain(sha(identity));
      expect(entries.length).toBeLessThanOrEqual(2);
      // a second instance of the kept model boots from the cached glue
      const second = await kept.createInstance(h.instanceSpec('kept', 1));
      const rec = await h.infer(second, h.request('kept', [h.tensor('INPUT0', 'FP32', [2], Float32Array.of(1, 2))], ['OUTPUT0']));
      expect(Array.from(h.f32(rec.responses[0]!.outputs[0]!))).toEqual([1, 2]);
      expect(first.isReady()).toBe(true);
      await kept.finalize();
      await cache.idle();
      expect(entriesIn(join(work, 'cache')).length).toBeLessThanOrEqual(1);
    } finally {
      await resolver.finalizeAll();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
