/**
 * Turns a validated component into jco glue + core modules (`jco transpile`, async
 * instantiation), cached on disk by the component's SHA-256 so a model version is transpiled once
 * per content, across loads and restarts.
 *
 * Cache layout: `<cacheDir>/<sha256>/` holding `component.js` (the glue), `*.core*.wasm`,
 * a `package.json` marking the folder as ESM, and `meta.json` (written last: a folder without it
 * is incomplete and is rebuilt). Folders are built under a temporary name
 * (`.tmp-<sha256>-<pid>-<n>`) and renamed into place.
 *
 * The cache is bounded ({@link CacheLimits}: entries and bytes): past either bound the least
 * recently used entries are removed, except those a loaded model still uses (the glue is loaded
 * from disk by every new sandbox of the model). Last use survives restarts as `meta.json`'s
 * modification time. At start the cache removes what a crashed process left behind: temporary
 * folders of processes that are gone, and entry folders without `meta.json` that hold only entry
 * files. It only ever touches names of its own two patterns; anything else in the folder is left
 * alone and not counted.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import * as err from '../sandbox.errors.js';

/** What the cache holds for one component. */
export interface TranspiledComponent {
  /** SHA-256 of the component bytes (hex). */
  hash: string;
  /** Folder with the glue and the core modules. */
  dir: string;
  /** Absolute path of the glue ES module. */
  gluePath: string;
  /** Core module file names, as the glue asks for them via `getCoreModule(name)`. */
  coreModules: string[];
}

/** Bounds of the transpile cache. */
export interface CacheLimits {
  /** Most entries (transpiled components) kept. */
  maxEntries: number;
  /** Most bytes kept (all files of all entries). */
  maxBytes: number;
}

/** 256 entries, 2 GiB. */
export const DEFAULT_CACHE_LIMITS: Readonly<CacheLimits> = Object.freeze({ maxEntries: 256, maxBytes: 2 * 1024 * 1024 * 1024 });

interface Meta {
  jco: string;
  coreModules: string[];
}

/** Bumped when the transpile options change, so old cache entries are not reused. */
const CACHE_FORMAT = 'jco-transpile-0.15/async/v1';

/** Name of an entry folder. */
const ENTRY_NAME = /^[0-9a-f]{64}$/;
/** Name of a temporary folder: `.tmp-<sha256>-<pid>-<n>`. */
const TEMP_NAME = /^\.tmp-([0-9a-f]{64})-(\d+)-(\d+)$/;

/** True if process `pid` exists (possibly another user's). */
export function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === 'EPERM';
  }
}

/** Names of the files an entry holds: the glue, core modules, package.json, meta.json. */
const ENTRY_FILE = /^(component\.js|package\.json|meta\.json|[A-Za-z0-9_.-]+\.wasm)$/;

/** True if `dir` holds nothing but regular files named like an entry's. */
async function holdsOnlyEntryFiles(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir, { withFileTypes: true })).every((e) => e.isFile() && ENTRY_FILE.test(e.name));
  } catch {
    return false;
  }
}

/** Total size of the regular files directly in `dir` (entries are flat). */
async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isFile()) total += (await stat(join(dir, e.name))).size;
  }
  return total;
}

interface Entry {
  bytes: number;
  /** ms since the epoch. */
  lastUsed: number;
}

/** What {@link TranspileCache.prepare} found and removed at start. */
export interface CacheStartReport {
  entries: number;
  bytes: number;
  removedTemp: number;
  removedIncomplete: number;
  evicted: number;
}

/**
 * The transpile cache of one folder. Use from one thread; other processes may share the folder
 * (entries are renamed into place atomically), but each bounds only what it sees.
 */
export class TranspileCache {
  readonly limits: Readonly<CacheLimits>;
  private readonly entries = new Map<string, Entry>();
  /** Entries a loaded model uses, with their use counts: never evicted. */
  private readonly inUse = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<TranspiledComponent>>();
  /** Entries being removed by eviction: a lookup of the same hash waits for the removal. */
  private readonly removing = new Map<string, Promise<unknown>>();
  private evicting: Promise<unknown> = Promise.resolve();
  private started?: Promise<CacheStartReport>;
  private tmpSeq = 0;
  private warnedFull = false;

  /**
   * @param dir the cache folder (created if missing)
   * @param limits bounds (default {@link DEFAULT_CACHE_LIMITS})
   * @throws RangeError for a bound that is not a positive safe integer
   */
  constructor(
    readonly dir: string,
    limits: Partial<CacheLimits> = {},
    private readonly logger?: Logger,
  ) {
    const l = { ...DEFAULT_CACHE_LIMITS, ...limits };
    for (const [k, v] of Object.entries(l)) {
      if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`transpile cache ${k} must be a positive integer, got ${v}`);
    }
    this.limits = Object.freeze(l);
  }

  /**
   * Scans the folder once (later calls return the first result): removes temporary folders of
   * processes that no longer run and entry folders without `meta.json`, indexes the entries with
   * their size and last use, and evicts down to the bounds.
   */
  prepare(): Promise<CacheStartReport> {
    this.started ??= this.scan();
    return this.started;
  }

  private async scan(): Promise<CacheStartReport> {
    await mkdir(this.dir, { recursive: true });
    const report: CacheStartReport = { entries: 0, bytes: 0, removedTemp: 0, removedIncomplete: 0, evicted: 0 };
    for (const e of await readdir(this.dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const path = join(this.dir, e.name);
      const temp = TEMP_NAME.exec(e.name);
      if (temp) {
        const pid = Number(temp[2]);
        if (pid === process.pid || !processAlive(pid)) {
          await rm(path, { recursive: true, force: true });
          report.removedTemp++;
        }
        continue;
      }
      if (!ENTRY_NAME.test(e.name)) continue;
      let lastUsed: number;
      try {
        lastUsed = (await stat(join(path, 'meta.json'))).mtimeMs;
      } catch {
        // incomplete (e.g. a removal cut short by a crash): removed if it holds only our files
        if (await holdsOnlyEntryFiles(path)) {
          await rm(path, { recursive: true, force: true });
          report.removedIncomplete++;
        }
        continue;
      }
      if (!this.entries.has(e.name)) this.entries.set(e.name, { bytes: await folderBytes(path), lastUsed });
    }
    report.evicted = await this.evictNow();
    report.entries = this.entries.size;
    report.bytes = this.totalBytes();
    if (report.removedTemp || report.removedIncomplete || report.evicted)
      this.logger?.info({ cacheDir: this.dir, ...report }, 'transpile cache cleaned at start');
    return report;
  }

  /** Entries and bytes indexed now. */
  stats(): { entries: number; bytes: number; inUse: number } {
    return { entries: this.entries.size, bytes: this.totalBytes(), inUse: this.inUse.size };
  }

  private totalBytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.bytes;
    return n;
  }

  /**
   * Returns the transpiled form of a component, from the cache or by running jco, and marks the
   * entry used by one more model: {@link release} it when that model is unloaded. Call only with
   * a component that passed `checkComponent`.
   * @param hash SHA-256 of `component` (hex): the cache key
   * @throws TritonError INVALID_ARG if jco cannot transpile it (the component is malformed or
   *   uses something jco does not support), INTERNAL if the cache cannot be written.
   */
  async acquire(component: Uint8Array, what: string, hash: string): Promise<TranspiledComponent> {
    if (!ENTRY_NAME.test(hash)) throw err.transpileBroken(what, 'bad component hash');
    // marked in use before anything is awaited: never evicted between being written and used
    this.inUse.set(hash, (this.inUse.get(hash) ?? 0) + 1);
    try {
      await this.prepare();
      let p = this.inFlight.get(hash);
      if (!p) {
        p = this.lookupOrTranspile(component, what, hash).finally(() => this.inFlight.delete(hash));
        this.inFlight.set(hash, p);
      }
      const t = await p;
      await this.evict();
      return t;
    } catch (e) {
      this.release(hash);
      throw e;
    }
  }

  /**
   * A model that {@link acquire}d `hash` was unloaded. Once no model uses the entry it may be
   * evicted: at once if the cache is above its bounds, else when a later entry needs the room.
   */
  release(hash: string): void {
    const n = this.inUse.get(hash);
    if (n === undefined) return;
    if (n > 1) {
      this.inUse.set(hash, n - 1);
      return;
    }
    this.inUse.delete(hash);
    if (this.entries.size > this.limits.maxEntries || this.totalBytes() > this.limits.maxBytes) void this.evict();
  }

  /** Resolves when no eviction is running (for tests and orderly shutdown). */
  async idle(): Promise<void> {
    await this.evicting;
  }

  private async lookupOrTranspile(component: Uint8Array, what: string, hash: string): Promise<TranspiledComponent> {
    const dir = join(this.dir, hash);
    await this.removing.get(hash);
    const cached = await readCached(dir, hash);
    if (cached) {
      const now = new Date();
      await utimes(join(dir, 'meta.json'), now, now).catch(() => undefined);
      const e = this.entries.get(hash);
      if (e) e.lastUsed = now.getTime();
      else this.entries.set(hash, { bytes: await folderBytes(dir).catch(() => 0), lastUsed: now.getTime() });
      return cached;
    }
    const t = await this.transpile(component, what, hash);
    this.entries.set(hash, { bytes: await folderBytes(dir).catch(() => 0), lastUsed: Date.now() });
    return t;
  }

  /**
   * Removes least recently used entries, never one in use or being written, until both bounds
   * hold (or only such entries are left). Runs one at a time. Returns how many were removed.
   */
  private evict(): Promise<number> {
    const run = this.evicting.then(() => this.evictNow());
    this.evicting = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async evictNow(): Promise<number> {
    let removed = 0;
    const over = () => this.entries.size > this.limits.maxEntries || this.totalBytes() > this.limits.maxBytes;
    if (!over()) {
      this.warnedFull = false;
      return 0;
    }
    const byAge = [...this.entries].sort((a, b) => a[1].lastUsed - b[1].lastUsed).map(([h]) => h);
    for (const hash of byAge) {
      if (!over()) break;
      // checked right before removing: a model may have taken the entry meanwhile
      if (this.inUse.has(hash) || this.inFlight.has(hash) || !this.entries.has(hash)) continue;
      this.entries.delete(hash);
      const gone = rm(join(this.dir, hash), { recursive: true, force: true }).catch((e: unknown) =>
        this.logger?.warn({ err: e, cacheDir: this.dir }, 'transpile cache entry could not be removed'),
      );
      this.removing.set(hash, gone);
      await gone;
      this.removing.delete(hash);
      removed++;
    }
    if (over()) {
      if (!this.warnedFull) {
        this.warnedFull = true;
        this.logger?.warn(
          { cacheDir: this.dir, entries: this.entries.size, bytes: this.totalBytes(), ...this.limits },
          'transpile cache above its bounds: every remaining entry is used by a loaded model',
        );
      }
    } else {
      this.warnedFull = false;
    }
    if (removed) this.logger?.debug({ cacheDir: this.dir, removed, entries: this.entries.size, bytes: this.totalBytes() }, 'transpile cache entries evicted');
    return removed;
  }

  private async transpile(component: Uint8Array, what: string, hash: string): Promise<TranspiledComponent> {
    const dir = join(this.dir, hash);
    const { transpileBytes } = await import('@bytecodealliance/jco-transpile');
    let files: Record<string, Uint8Array>;
    try {
      ({ files } = await transpileBytes(component, {
        name: 'component',
        instantiation: 'async',
        nodejsCompat: false,
        tlaCompat: false,
        base64Cutoff: 0,
        emitTypescriptDeclarations: false,
        minify: false,
        optimize: false,
        validLiftingOptimization: false,
        outDir: '',
      }));
    } catch (e) {
      throw err.transpileFailed(what, `${(e as Error).message ?? e}`);
    }
    const glue = files['component.js'];
    if (!glue) throw err.transpileBroken(what, 'jco produced no component.js');
    // With async instantiation every import comes through the `imports` argument; glue that
    // imports modules by itself would reach outside the sandbox's import object.
    if (/^\s*import\s[^(]/m.test(new TextDecoder().decode(glue))) {
      throw err.transpileBroken(what, 'transpiled glue contains static imports; refusing to run it');
    }
    const coreModules = Object.keys(files)
      .filter((f) => f.endsWith('.wasm'))
      .sort();

    const tmp = join(this.dir, `.tmp-${hash}-${process.pid}-${++this.tmpSeq}`);
    try {
      await mkdir(tmp, { recursive: true });
      for (const [name, bytes] of Object.entries(files)) {
        if (name.includes('/') || name.includes('\\') || name.startsWith('.')) throw err.transpileBroken(what, `unexpected transpiled file name '${name}'`);
        await writeFile(join(tmp, name), bytes);
      }
      await writeFile(join(tmp, 'package.json'), '{"type":"module"}\n');
      await writeFile(join(tmp, 'meta.json'), JSON.stringify({ jco: CACHE_FORMAT, coreModules } satisfies Meta));
      await rm(dir, { recursive: true, force: true });
      try {
        await rename(tmp, dir);
      } catch (e) {
        // another process renamed the same content into place first
        const other = await readCached(dir, hash);
        if (other) {
          await rm(tmp, { recursive: true, force: true });
          return other;
        }
        throw e;
      }
    } catch (e) {
      await rm(tmp, { recursive: true, force: true });
      const code = (e as { code?: string }).code;
      if (!code) throw e;
      this.logger?.error({ err: e, cacheDir: this.dir }, 'cannot write the transpile cache');
      throw err.transpileBroken(what, `cannot write the transpile cache (${code})`);
    }
    return { hash, dir, gluePath: join(dir, 'component.js'), coreModules };
  }
}

async function readCached(dir: string, hash: string): Promise<TranspiledComponent | undefined> {
  try {
    const meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as Meta;
    if (meta.jco !== CACHE_FORMAT || !Array.isArray(meta.coreModules)) return undefined;
    if (!meta.coreModules.every((m) => typeof m === 'string' && !m.includes('/') && existsSync(join(dir, m)))) return undefined;
    return { hash, dir, gluePath: join(dir, 'component.js'), coreModules: meta.coreModules };
  } catch {
    return undefined;
  }
}
