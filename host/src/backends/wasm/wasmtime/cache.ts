/**
 * The wasmtime engine's compile cache: precompiled components (`.cwasm`) on disk, keyed by the
 * component's SHA-256 and the engine configuration (wasmtime's own compatibility hash plus
 * Warden's settings), so a model version is compiled once per content and engine, across loads
 * and restarts.
 *
 * File `<cacheDir>/<component sha256>-<config key, 16 hex>.cwasm`: a header line
 * `WARDEN-CWASM/1 <component sha256> <config key> <payload bytes> <payload sha256>\n`, then the
 * payload wasmtime serialized. A read is trusted only if the header names this component and
 * engine, the payload has the recorded length and SHA-256 (a truncated, tampered or foreign file
 * fails), and wasmtime itself recognises it as a precompiled component
 * (`Engine::detect_precompiled`, in the addon); anything else is deleted and compiled again.
 * Files are written under a temporary name (`.tmp-<pid>-<16 random hex>.cwasm`: threads of one process may share the folder) and renamed into place.
 *
 * Bounded like the V8 engine's transpile cache ({@link CacheLimits}: entries and bytes): past
 * either bound the least recently used files (modification time, refreshed on use) are removed,
 * except those of components a loaded model uses.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { processAlive, type CacheLimits } from '../v8/transpile.js';

const MAGIC = 'WARDEN-CWASM/1';
const ENTRY_NAME = /^([0-9a-f]{64})-([0-9a-f]{16})\.cwasm$/;
const TEMP_NAME = /^\.tmp-(\d+)-([0-9a-f]{16})\.cwasm$/;
/** Longest header line read (bytes). */
const MAX_HEADER = 512;

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Why a cache file was not used (for logs and tests). */
export type CacheMiss = 'absent' | 'header' | 'length' | 'hash' | 'unreadable';

/** The compile cache of one folder and one engine configuration. Use from one thread. */
export class CwasmCache {
  private readonly entries = new Map<string, { bytes: number; lastUsed: number }>();
  private readonly inUse = new Map<string, number>();
  private prepared?: Promise<void>;

  /**
   * @param configKey the engine's configuration key (hex, ≥ 16 characters)
   */
  constructor(
    readonly dir: string,
    readonly configKey: string,
    readonly limits: Readonly<CacheLimits>,
    private readonly logger?: Logger,
  ) {}

  private fileOf(hash: string): string {
    return join(this.dir, `${hash}-${this.configKey.slice(0, 16)}.cwasm`);
  }

  /** Scans the folder once: removes temporary files of dead processes, records entries. */
  prepare(): Promise<void> {
    this.prepared ??= (async () => {
      for (const e of await readdir(this.dir, { withFileTypes: true }).catch(() => [])) {
        if (!e.isFile()) continue;
        const temp = TEMP_NAME.exec(e.name);
        if (temp) {
          if (!processAlive(Number(temp[1]))) await rm(join(this.dir, e.name), { force: true });
          continue;
        }
        if (!ENTRY_NAME.test(e.name)) continue;
        const st = await stat(join(this.dir, e.name)).catch(() => undefined);
        if (st) this.entries.set(e.name, { bytes: st.size, lastUsed: st.mtimeMs });
      }
    })();
    return this.prepared;
  }

  /**
   * The cached payload for `hash`, checked (header, length, SHA-256), or why there is none; a
   * file that fails a check is deleted.
   */
  async read(hash: string): Promise<{ payload: Uint8Array } | { miss: CacheMiss }> {
    await this.prepare();
    const file = this.fileOf(hash);
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (e) {
      return { miss: (e as { code?: string }).code === 'ENOENT' ? 'absent' : 'unreadable' };
    }
    const nl = bytes.subarray(0, MAX_HEADER).indexOf(10);
    const fields = nl < 0 ? [] : bytes.toString('latin1', 0, nl).split(' ');
    let miss: CacheMiss | undefined;
    if (fields.length !== 5 || fields[0] !== MAGIC || fields[1] !== hash || fields[2] !== this.configKey) miss = 'header';
    else if (bytes.length - nl - 1 !== Number(fields[3])) miss = 'length';
    else if (sha256(bytes.subarray(nl + 1)) !== fields[4]) miss = 'hash';
    if (miss) {
      this.logger?.warn({ file: file.slice(this.dir.length + 1), reason: miss }, 'compile cache entry rejected; compiling again');
      await this.drop(hash);
      return { miss };
    }
    const now = new Date();
    await utimes(file, now, now).catch(() => {});
    this.entries.set(file.slice(this.dir.length + 1), { bytes: bytes.length, lastUsed: now.getTime() });
    return { payload: bytes.subarray(nl + 1) };
  }

  /** Writes `payload` for `hash` (atomically), then evicts past the bounds. Failures are logged only. */
  async write(hash: string, payload: Uint8Array): Promise<void> {
    await this.prepare();
    const header = Buffer.from(`${MAGIC} ${hash} ${this.configKey} ${payload.length} ${sha256(payload)}\n`, 'latin1');
    const tmp = join(this.dir, `.tmp-${process.pid}-${randomBytes(8).toString('hex')}.cwasm`);
    try {
      await writeFile(tmp, Buffer.concat([header, payload]));
      await rename(tmp, this.fileOf(hash));
      this.entries.set(this.fileOf(hash).slice(this.dir.length + 1), { bytes: header.length + payload.length, lastUsed: Date.now() });
    } catch (e) {
      await rm(tmp, { force: true });
      this.logger?.warn({ err: (e as Error).message }, 'compile cache entry could not be written');
      return;
    }
    await this.evict();
  }

  /** Deletes the entry of `hash`. */
  async drop(hash: string): Promise<void> {
    this.entries.delete(this.fileOf(hash).slice(this.dir.length + 1));
    await rm(this.fileOf(hash), { force: true });
  }

  /** A loaded model uses the entry of `hash`: never evicted until {@link release}d. */
  retain(hash: string): void {
    this.inUse.set(hash, (this.inUse.get(hash) ?? 0) + 1);
  }

  release(hash: string): void {
    const n = (this.inUse.get(hash) ?? 0) - 1;
    if (n > 0) this.inUse.set(hash, n);
    else this.inUse.delete(hash);
  }

  /** Entries and bytes held now. */
  size(): { entries: number; bytes: number } {
    let bytes = 0;
    for (const e of this.entries.values()) bytes += e.bytes;
    return { entries: this.entries.size, bytes };
  }

  private async evict(): Promise<void> {
    const { limits } = this;
    let { entries, bytes } = this.size();
    if (entries <= limits.maxEntries && bytes <= limits.maxBytes) return;
    const candidates = [...this.entries].filter(([name]) => !this.inUse.has(name.slice(0, 64))).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [name, e] of candidates) {
      if (entries <= limits.maxEntries && bytes <= limits.maxBytes) break;
      await rm(join(this.dir, name), { force: true });
      this.entries.delete(name);
      entries--;
      bytes -= e.bytes;
      this.logger?.info({ entry: name }, 'compile cache entry evicted');
    }
  }
}
