/**
 * The bounded local cache of object-store models (repository/object-store/model-cache.ts), with
 * objects served from memory: the byte bound, eviction of unused copies only, one fetch for
 * concurrent loads of the same files, an object whose length differs from its listing, and
 * recovery from a fetch a crash interrupted.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listingStamp, ModelCache, type ModelListing } from '../../host/src/repository/object-store/model-cache.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'warden-model-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const logger = pino({ level: 'silent' });
const files = (entries: Record<string, string>, tag = 'v1'): { listing: ModelListing; fetched: string[]; fetch: (p: string) => Promise<Readable> } => {
  const fetched: string[] = [];
  return {
    listing: { objects: Object.entries(entries).map(([path, body]) => ({ path, size: Buffer.byteLength(body), tag })), directories: ['2'] },
    fetched,
    fetch: async (p) => {
      fetched.push(p);
      return Readable.from([Buffer.from(entries[p]!)]);
    },
  };
};

describe('ModelCache', () => {
  it('fetches a model once into <scope>/<stamp>/<model>, with marker directories; concurrent loads share the fetch', async () => {
    const cache = new ModelCache({ directory: dir, maxBytes: 1000, logger });
    const m = files({ 'config.pbtxt': 'name: "m"', '1/model.bin': 'abcdef' });
    const [a, b] = await Promise.all([cache.acquire('s3://b/r', 'm', m.listing, m.fetch), cache.acquire('s3://b/r', 'm', m.listing, m.fetch)]);
    expect(a.modelPath).toBe(b.modelPath);
    expect(a.modelPath).toBe(join(cache.scopeDir('s3://b/r'), listingStamp(m.listing), 'm'));
    expect(m.fetched.sort()).toEqual(['1/model.bin', 'config.pbtxt']);
    expect(readFileSync(join(a.modelPath, '1/model.bin'), 'utf8')).toBe('abcdef');
    expect(existsSync(join(a.modelPath, '2'))).toBe(true);
    expect(cache.bytesUsed).toBe(15);
  });

  it('a changed object (new tag) is a new copy; the unused old copy is evicted when room is needed, a copy in use never is', async () => {
    const cache = new ModelCache({ directory: dir, maxBytes: 20, logger });
    const v1 = files({ f: '0123456789' }, 'v1');
    const v2 = files({ f: '0123456789' }, 'v2');
    const first = await cache.acquire('r', 'm', v1.listing, v1.fetch);
    const second = await cache.acquire('r', 'm', v2.listing, v2.fetch);
    const g = files({ g: 'abcdefghij' });
    await expect(cache.acquire('r', 'other', g.listing, g.fetch)).rejects.toThrow(
      "failed to load 'other': the repository cache (20 bytes, --repository-cache-bytes) is held by loaded models; 10 more bytes do not fit",
    );
    expect(second.modelPath).not.toBe(first.modelPath);
    first.release();
    first.release(); // idempotent
    await cache.acquire('r', 'other', g.listing, g.fetch);
    expect(existsSync(first.modelPath)).toBe(false);
    expect(existsSync(second.modelPath)).toBe(true);
    expect(cache.bytesUsed).toBe(20);
  });

  it('refuses a model larger than the whole cache before fetching anything', async () => {
    const cache = new ModelCache({ directory: dir, maxBytes: 4, logger });
    const m = files({ f: 'too long' });
    await expect(cache.acquire('r', 'm', m.listing, m.fetch)).rejects.toThrow("failed to load 'm': its 8 bytes exceed the repository cache of 4 bytes");
    expect(m.fetched).toEqual([]);
  });

  it.each([
    ['more bytes than listed', 'abcdefgh'],
    ['fewer bytes than listed', 'ab'],
  ])('an object that arrives with %s fails the load and leaves no partial copy', async (_what, body) => {
    const cache = new ModelCache({ directory: dir, maxBytes: 1000, logger });
    const listing = { objects: [{ path: 'f', size: 4, tag: 't' }], directories: [] };
    await expect(cache.acquire('r', 'm', listing, async () => Readable.from([Buffer.from(body)]))).rejects.toThrow(
      "failed to load 'm': object 'm/f' changed while it was fetched (listed as 4 bytes)",
    );
    expect(readdirSync(cache.scopeDir('r'))).toEqual([]);
    expect(cache.bytesUsed).toBe(0);
  });

  it('a failing fetch is named by the model-relative path and an error code, never a local path', async () => {
    const cache = new ModelCache({ directory: dir, maxBytes: 1000, logger });
    const listing = { objects: [{ path: '1/w', size: 4, tag: 't' }], directories: [] };
    const broken = new Readable({ read: () => broken.destroy(Object.assign(new Error(`read ${dir}/x failed`), { code: 'ECONNRESET' })) });
    await expect(cache.acquire('r', 'm', listing, async () => broken)).rejects.toThrow(
      "failed to load 'm': fetching 'm/1/w' from the object store failed: ECONNRESET",
    );
  });

  it('start-up removes fetches a crash interrupted and reuses complete copies; other names are left alone', async () => {
    const m = files({ f: 'abc' });
    const first = new ModelCache({ directory: dir, maxBytes: 100, logger });
    const copy = await first.acquire('r', 'm', m.listing, m.fetch);
    const scope = first.scopeDir('r');
    const partial = join(scope, `.partial-${'0'.repeat(32)}-${'a'.repeat(12)}`);
    mkdirSync(join(partial, 'm'), { recursive: true });
    writeFileSync(join(scope, 'operator-notes.txt'), 'keep');

    const again = new ModelCache({ directory: dir, maxBytes: 100, logger });
    const m2 = files({ f: 'abc' });
    const reused = await again.acquire('r', 'm', m2.listing, m2.fetch);
    expect(reused.modelPath).toBe(copy.modelPath);
    expect(m2.fetched).toEqual([]);
    expect(again.bytesUsed).toBe(3);
    expect(existsSync(partial)).toBe(false);
    expect(readFileSync(join(scope, 'operator-notes.txt'), 'utf8')).toBe('keep');
  });
});
