/**
 * The bounded local cache of models fetched from object-store repositories (Triton's
 * `LocalizePath`, which copies a cloud model to a temporary directory for each load; here the
 * copy is kept, keyed by the listing's stamp, so that a reload of unchanged files and a restart
 * fetch nothing).
 *
 * Layout, all created by this cache under its directory:
 *   <directory>/<scope>/<stamp>/<model>/...            a complete copy (a rename publishes it)
 *   <directory>/<scope>/.partial-<stamp>-<random>/...  a fetch in progress (removed at start-up)
 * `<scope>` is a hash of the repository's location; `<stamp>` a hash of the model's listing (every
 * object's path, size and ETag), so a changed object makes a new copy and the old one is evicted
 * once no loaded version uses it.
 *
 * Bounds: the bytes of all copies never exceed `maxBytes` (copies in use are never evicted; a
 * fetch that does not fit after evicting the unused ones fails with UNAVAILABLE); each object is
 * written with its listed size as a hard limit (a store that sends more, or less, fails the fetch).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { TritonError } from '../../contract/errors.js';
import * as err from './object-store.errors.js';

/** One object of a model, as listed: its path relative to the model directory (validated, `/`-separated). */
export interface ListedObject {
  readonly path: string;
  /** Bytes. */
  readonly size: number;
  /** The store's entity tag (or any token that changes when the object does). */
  readonly tag: string;
}

/** A model's listing: its files and the directories that exist only as markers (`key/`). */
export interface ModelListing {
  readonly objects: readonly ListedObject[];
  readonly directories: readonly string[];
}

/** Fetch one object's bytes (`path` as in {@link ListedObject.path}). */
export type FetchObject = (path: string) => Promise<Readable>;

/** A copy in use: release it once no version built from it serves. */
export interface CachedModel {
  /** `<directory>/<scope>/<stamp>/<model>`. */
  readonly modelPath: string;
  readonly stamp: string;
  /** Idempotent. */
  release(): void;
}

/** Options of {@link ModelCache}. */
export interface ModelCacheOptions {
  /** Created when missing. */
  directory: string;
  /** Bytes of all copies together. */
  maxBytes: number;
  /** Objects fetched at once per model (default 4). */
  fetchConcurrency?: number;
  logger: Logger;
}

interface Copy {
  readonly dir: string;
  readonly bytes: number;
  users: number;
  lastUsed: number;
}

/** The stamp of a listing: equal listings (paths, sizes, tags, marker directories) give equal stamps. */
export function listingStamp(listing: ModelListing): string {
  const h = createHash('sha256');
  for (const o of [...listing.objects].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) h.update(`f\0${o.path}\0${o.size}\0${o.tag}\n`);
  for (const d of [...listing.directories].sort()) h.update(`d\0${d}\n`);
  return h.digest('hex').slice(0, 32);
}

const STAMP_DIR = /^[0-9a-f]{32}$/;
const PARTIAL_DIR = /^\.partial-[0-9a-f]{32}-[0-9a-f]{12}$/;

export class ModelCache {
  private readonly copies = new Map<string, Copy>();
  /** Fetches in progress, by copy directory: a second load of the same files waits for the first. */
  private readonly fetching = new Map<string, Promise<Copy>>();
  /** Bytes of the copies plus the fetches in progress. */
  private used = 0;
  private ready: Promise<void> | undefined;

  constructor(private readonly opts: ModelCacheOptions) {}

  /** The cache's directory of one repository (`scope`: the repository's location). */
  scopeDir(scope: string): string {
    return join(this.opts.directory, createHash('sha256').update(scope).digest('hex').slice(0, 16));
  }

  /**
   * The model's files on local disk, fetched unless an identical copy is cached. The copy is held
   * (never evicted) until {@link CachedModel.release}.
   * @param scope the repository's location (copies of two repositories never mix)
   * @throws TritonError UNAVAILABLE when the model does not fit the cache; INTERNAL when an object
   *   cannot be fetched or written (the partial copy is removed)
   */
  async acquire(scope: string, model: string, listing: ModelListing, fetch: FetchObject): Promise<CachedModel> {
    await (this.ready ??= this.recover());
    const stamp = listingStamp(listing);
    const dir = join(this.scopeDir(scope), stamp);
    let copy = this.copies.get(dir);
    if (!copy) {
      let pending = this.fetching.get(dir);
      if (!pending) {
        pending = this.fetch(dir, model, listing, fetch).finally(() => this.fetching.delete(dir));
        this.fetching.set(dir, pending);
      }
      copy = await pending;
    }
    copy.users++;
    copy.lastUsed = Date.now();
    let released = false;
    return {
      modelPath: join(dir, model),
      stamp,
      release: () => {
        if (released) return;
        released = true;
        copy.users--;
        copy.lastUsed = Date.now();
      },
    };
  }

  /** Bytes held by copies and fetches in progress. */
  get bytesUsed(): number {
    return this.used;
  }

  /**
   * Start-up: remove fetches a crash interrupted; index complete copies (reused while their stamp
   * matches, evicted first otherwise). Only names this cache makes are touched.
   */
  private async recover(): Promise<void> {
    await mkdir(this.opts.directory, { recursive: true });
    for (const scope of await readdir(this.opts.directory, { withFileTypes: true })) {
      if (!scope.isDirectory() || !/^[0-9a-f]{16}$/.test(scope.name)) continue;
      const scopeDir = join(this.opts.directory, scope.name);
      for (const e of await readdir(scopeDir, { withFileTypes: true })) {
        const path = join(scopeDir, e.name);
        if (e.isDirectory() && PARTIAL_DIR.test(e.name)) await rm(path, { recursive: true, force: true });
        else if (e.isDirectory() && STAMP_DIR.test(e.name)) {
          const bytes = await treeBytes(path);
          this.copies.set(path, { dir: path, bytes, users: 0, lastUsed: 0 });
          this.used += bytes;
        }
      }
    }
  }

  private async fetch(dir: string, model: string, listing: ModelListing, fetch: FetchObject): Promise<Copy> {
    const bytes = listing.objects.reduce((n, o) => n + o.size, 0);
    if (bytes > this.opts.maxBytes) throw err.modelLargerThanCache(model, bytes, this.opts.maxBytes);
    await this.makeRoom(bytes, model);
    this.used += bytes;
    const partial = join(dirname(dir), `.partial-${dir.slice(-32)}-${randomBytes(6).toString('hex')}`);
    try {
      const root = join(partial, model);
      await mkdir(root, { recursive: true });
      for (const d of listing.directories) await mkdir(join(root, d), { recursive: true });
      const queue = [...listing.objects];
      const worker = async (): Promise<void> => {
        for (let o = queue.shift(); o; o = queue.shift()) await this.fetchObject(model, root, o, fetch);
      };
      await Promise.all(Array.from({ length: Math.min(this.opts.fetchConcurrency ?? 4, Math.max(1, queue.length)) }, worker));
      await rename(partial, dir);
    } catch (e) {
      this.used -= bytes;
      await rm(partial, { recursive: true, force: true });
      throw e;
    }
    const copy = { dir, bytes, users: 0, lastUsed: Date.now() };
    this.copies.set(dir, copy);
    this.opts.logger.info({ model, bytes, objects: listing.objects.length }, `fetched model '${model}' from its object-store repository`);
    return copy;
  }

  private async fetchObject(model: string, root: string, o: ListedObject, fetch: FetchObject): Promise<void> {
    const file = join(root, o.path);
    await mkdir(dirname(file), { recursive: true });
    let got = 0;
    const limit = new Transform({
      transform(chunk: Buffer, _enc, done) {
        got += chunk.length;
        done(got > o.size ? err.objectSizeChanged(model, o.path, o.size) : null, chunk);
      },
    });
    try {
      await pipeline(await fetch(o.path), limit, createWriteStream(file, { flags: 'wx' }));
    } catch (e) {
      if (e instanceof TritonError) throw e;
      const code = (e as NodeJS.ErrnoException).code;
      throw err.objectFetchFailed(model, o.path, typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : (e as Error).name);
    }
    if (got !== o.size) throw err.objectSizeChanged(model, o.path, o.size);
  }

  /** Evict unused copies, least recently used first, until `bytes` more fit. @throws TritonError UNAVAILABLE when they cannot */
  private async makeRoom(bytes: number, model: string): Promise<void> {
    if (this.used + bytes <= this.opts.maxBytes) return;
    const idle = [...this.copies.values()].filter((c) => c.users === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const c of idle) {
      if (this.used + bytes <= this.opts.maxBytes) break;
      this.copies.delete(c.dir);
      this.used -= c.bytes;
      await rm(c.dir, { recursive: true, force: true });
    }
    if (this.used + bytes > this.opts.maxBytes) throw err.cacheFull(model, bytes, this.opts.maxBytes);
  }
}

/** Bytes of the regular files under `dir`. */
async function treeBytes(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += (await stat(join(e.parentPath, e.name))).size;
  }
  return n;
}
