/**
 * The component digest memo (host/src/backends/wasm/digests.ts): an unchanged component file's
 * SHA-256 comes from the memo in a new process; any change (even with size and mtime restored), a
 * change racing the read, a file changed too recently, a forged or foreign memo entry, and the
 * entry bound all lead to hashing the bytes again.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComponentDigests, SETTLE_MS } from '../../../host/src/backends/wasm/digests.js';
import { WasmBackendResolver } from '../../../host/src/backends/wasm/index.js';
import { sleep } from '../../helpers/wait.js';
import * as h from './helpers.js';

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'warden-digests-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const SETTLE = 50;

/** A file whose last change is older than SETTLE. */
async function settledFile(name: string, content: string): Promise<string> {
  const f = join(work, name);
  writeFileSync(f, content);
  await sleep(SETTLE + 20);
  return f;
}

async function digestOf(d: ComponentDigests, f: string): Promise<string> {
  const st = await stat(f, { bigint: true });
  return d.sha256(f, st, readFileSync(f));
}

describe('component digest memo', () => {
  it('serves an unchanged file from the memo in a new instance (a new process), and the memo entry is 0600', async () => {
    const dir = join(work, 'm1');
    const f = await settledFile('a.wasm', 'component bytes A');
    const d1 = new ComponentDigests(dir, { settleMs: SETTLE });
    expect(await digestOf(d1, f)).toBe(sha(readFileSync(f)));
    expect(d1.counts).toEqual({ memo: 0, hashed: 1 });
    const entry = readdirSync(dir).find((n) => n.endsWith('.digest'))!;
    expect(statSync(join(dir, entry)).mode & 0o777).toBe(0o600);
    const d2 = new ComponentDigests(dir, { settleMs: SETTLE });
    expect(await digestOf(d2, f)).toBe(sha(readFileSync(f)));
    expect(d2.counts).toEqual({ memo: 1, hashed: 0 });
  });

  it('a file rewritten in place with the same size and its mtime restored is hashed again (ctime moved)', async () => {
    const dir = join(work, 'm2');
    const f = await settledFile('b.wasm', 'component bytes B');
    await digestOf(new ComponentDigests(dir, { settleMs: SETTLE }), f);
    const { atime, mtime } = statSync(f);
    await sleep(20);
    writeFileSync(f, 'component bytes C'); // same length
    utimesSync(f, atime, mtime);
    const d = new ComponentDigests(dir, { settleMs: SETTLE });
    expect(await digestOf(d, f)).toBe(sha(Buffer.from('component bytes C')));
    expect(d.counts.hashed).toBe(1);
  });

  it('a change between the stat and the read is never recorded', async () => {
    const dir = join(work, 'm3');
    const f = await settledFile('c.wasm', 'before the change');
    const st = await stat(f, { bigint: true });
    writeFileSync(f, 'after the change!');
    const d = new ComponentDigests(dir, { settleMs: SETTLE });
    await d.sha256(f, st, Buffer.from('before the change'));
    expect(readdirSync(dir).filter((n) => n.endsWith('.digest'))).toEqual([]);
  });

  it('a file changed too recently is hashed but not recorded (coarse timestamps)', async () => {
    const dir = join(work, 'm4');
    const f = join(work, 'd.wasm');
    writeFileSync(f, 'fresh');
    const d = new ComponentDigests(dir); // default settle window: 2 s
    expect(await digestOf(d, f)).toBe(sha(Buffer.from('fresh')));
    expect(readdirSync(dir).filter((n) => n.endsWith('.digest'))).toEqual([]);
  });

  it('a forged memo entry (no key) and one under another key are ignored', async () => {
    const dir = join(work, 'm5');
    const f = await settledFile('e.wasm', 'the real content');
    await digestOf(new ComponentDigests(dir, { settleMs: SETTLE }), f);
    const entry = join(
      dir,
      readdirSync(dir).find((n) => n.endsWith('.digest'))!,
    );
    const [stamps, , facts, mac] = readFileSync(entry, 'latin1').split('\n');
    writeFileSync(entry, `${stamps}\n${'0'.repeat(64)}\n${facts}\n${mac}\n`); // another digest, the old MAC
    let d = new ComponentDigests(dir, { settleMs: SETTLE });
    expect(await digestOf(d, f)).toBe(sha(Buffer.from('the real content')));
    expect(d.counts.hashed).toBe(1);
    // recorded again; now the key changes (e.g. it was found readable by others and replaced)
    writeFileSync(join(dir, '.key'), Buffer.alloc(32, 7), { mode: 0o600 });
    d = new ComponentDigests(dir, { settleMs: SETTLE });
    expect(await digestOf(d, f)).toBe(sha(Buffer.from('the real content')));
    expect(d.counts.hashed).toBe(1);
  });

  it('keeps at most maxEntries memo files', async () => {
    const dir = join(work, 'm6');
    const f1 = await settledFile('f1.wasm', 'one');
    const f2 = await settledFile('f2.wasm', 'two');
    const d = new ComponentDigests(dir, { settleMs: SETTLE, maxEntries: 1 });
    await digestOf(d, f1);
    await digestOf(d, f2);
    expect(readdirSync(dir).filter((n) => n.endsWith('.digest'))).toHaveLength(1);
  });

  it('the wasm backend uses it: a second resolver on the same cache folder takes the repository component digest from the memo', async () => {
    await h.ensureBuilt();
    // the shared wasmtime cache folder: the component is compiled once per machine, not per test
    const cacheDir = h.SHARED_WASMTIME_CACHE;
    const config = h.wasmConfig('identity_wasm', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]);
    const counts = (r: WasmBackendResolver) => (r.getBackend() as unknown as { digests: ComponentDigests }).digests.counts;
    const make = () =>
      new WasmBackendResolver({
        cacheDir,
        limits: { maxMemoryBytes: 256 * 1024 * 1024, maxExecuteMs: 5_000, maxLogBytes: 16 * 1024 },
        logger: h.silentLogger,
        engine: 'wasmtime',
      });
    // a component rebuilt moments ago is not recorded until it settles
    const age = Date.now() - statSync(join(h.REPO, 'identity_wasm', '1', 'model.wasm')).ctimeMs;
    if (age < SETTLE_MS + 100) await sleep(SETTLE_MS + 100 - age);
    const r1 = make();
    const m1 = await h.loadModel(r1, config, join(h.REPO, 'identity_wasm'));
    const r2 = make();
    const m2 = await h.loadModel(r2, config, join(h.REPO, 'identity_wasm'));
    expect(m2.componentHash).toBe(m1.componentHash);
    expect(m1.componentHash).toBe(sha(readFileSync(join(h.REPO, 'identity_wasm', '1', 'model.wasm'))));
    expect(counts(r2)).toEqual({ memo: 1, hashed: 0 });
    await r1.finalizeAll();
    await r2.finalizeAll();
  });
});
