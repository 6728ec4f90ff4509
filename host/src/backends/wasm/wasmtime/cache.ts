/**
 * The wasmtime engine's compile cache: precompiled components (`.cwasm`) on disk, keyed by the
 * component's SHA-256 and the engine configuration (wasmtime's own compatibility hash plus
 * Warden's settings), so a model version is compiled once per content and engine, across loads
 * and restarts.
 *
 * File `<cacheDir>/<component sha256>-<config key, 16 hex>-<MAC, 64 hex>.cwasm` holds exactly
 * what wasmtime serialized, so that a load maps it (`Component::deserialize_file`) instead of
 * reading and copying tens of MiB. The MAC is a keyed BLAKE3 (native/rust/wasmtime-engine/src/cwasm.rs) of
 * the component hash, the engine's full configuration key and the payload, under a per-cache
 * secret key (`.key`: 32 random bytes, mode 0600, owned by this user; replaced if it is not). A
 * file is loaded only if that MAC, recomputed over the very file wasmtime then maps, matches its
 * name: a truncated, tampered, renamed or foreign file (anyone without the key) fails, is deleted
 * and compiled again. wasmtime then still checks the artifact's own engine header.
 * Files are written with mode 0600 under a temporary name (`.tmp-<pid>-<16 random hex>.cwasm`:
 * threads of one process may share the folder) and renamed into place; so are stamps
 * (`.tmp-<pid>-<16 random hex>.verified`, by the addon).
 *
 * Verified stamps: hashing a large entry is most of a first load (BLAKE3 over 35 MiB ≈ 8 ms of
 * ~24), so after a full check the addon records the open file's stamps (device, inode, size,
 * mtime and ctime in ns) in `<entry name>.verified`, under a keyed MAC that binds them to the
 * entry's MAC, the component hash and the engine configuration, if they did not change during
 * the check and the file's last change is at least `settleMs` old. A later load whose open file
 * has exactly those stamps skips the hash (native/rust/wasmtime-engine/src/cwasm.rs). Any write, truncation,
 * replacement, `utimes`, `chmod` or rename moves ctime, so the file is then checked in full again
 * (and re-stamped). Not caught any more on such a load: a change of the bytes that leaves every
 * stamp alone — bit rot on the medium, raw block-device writes, root with the clock set back.
 * Because `utimes` moves ctime, the LRU time of an entry (its mtime) is refreshed only when it is
 * more than {@link TOUCH_INTERVAL_MS} old: LRU order is exact to that interval.
 *
 * Bounded like the V8 engine's transpile cache ({@link CacheLimits}: entries and bytes): past
 * either bound the least recently used files (modification time, refreshed on use at most hourly) are removed,
 * except those of components a loaded model uses. Entries of the previous format
 * (`<sha256>-<config 16>.cwasm` with a header line) count against the bounds and go first; they
 * are not deleted on sight, since processes of an older Warden may share the folder.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { cacheKey } from '../cache-key.js';
import { SETTLE_MS } from '../digests.js';
import { processAlive, type CacheLimits } from '../v8/transpile.js';

const ENTRY_NAME = /^([0-9a-f]{64})-([0-9a-f]{16})-([0-9a-f]{64})\.cwasm$/;
/** Entries of the previous format (a header line before the payload): never loaded, evicted first. */
const LEGACY_NAME = /^[0-9a-f]{64}-[0-9a-f]{16}\.cwasm$/;
const TEMP_NAME = /^\.tmp-(\d+)-([0-9a-f]{16})\.(cwasm|key|verified)$/;
/** An entry's verified stamp (written by the addon): `<entry name without .cwasm>.verified`. */
const STAMP_NAME = /^[0-9a-f]{64}-[0-9a-f]{16}-[0-9a-f]{64}\.verified$/;
const stampOf = (entryName: string) => entryName.replace(/\.cwasm$/, '.verified');

/** An entry's LRU time (mtime) is refreshed on use only when older than this (ms): `utimes` voids its verified stamp. */
export const TOUCH_INTERVAL_MS = 3_600_000;

/** How a loaded entry was checked: the MAC over all its bytes, or its verified stamp. */
export type CacheCheck = 'mac' | 'stamp';

/** Why a cache file was not used (for logs and tests): no entry, not a readable regular file of a bounded size, a MAC mismatch, or refused by wasmtime. */
export type CacheMiss = 'absent' | 'unreadable' | 'mac' | 'refused';

/** A cache entry to load: its path and the MAC its name records. */
export interface CacheEntry {
  file: string;
  mac: Uint8Array;
}

/** The compile cache of one folder and one engine configuration. Use from one thread. */
export class CwasmCache {
  private readonly entries = new Map<string, { bytes: number; lastUsed: number; legacy?: boolean }>();
  private readonly inUse = new Map<string, number>();
  private prepared?: Promise<void>;
  /** The per-cache secret key of the MACs. */
  readonly key: Buffer;
  /** Entries loaded since creation, by how they were checked (for tests and logs). */
  readonly counts: Record<CacheCheck, number> = { mac: 0, stamp: 0 };

  /**
   * @param configKey the engine's configuration key (hex, ≥ 16 characters)
   * @param settleMs how long ago (ms) an entry must have last changed before its verified stamp
   *   is recorded (default {@link SETTLE_MS}: timestamps are coarse)
   * @param sharedKey the fleet's key (`--wasm-cache-key-file`): entries other replicas wrote under
   *   it load here; default the folder's own `.key`
   * @throws Error if the key file cannot be read or created
   */
  constructor(
    readonly dir: string,
    readonly configKey: string,
    readonly limits: Readonly<CacheLimits>,
    private readonly logger?: Logger,
    readonly settleMs = SETTLE_MS,
    sharedKey?: Buffer,
  ) {
    this.key = sharedKey ?? cacheKey(dir);
  }

  /** `<hash>-<config key 16>-` (every entry of `hash` under this configuration starts so). */
  prefixOf(hash: string): string {
    return `${hash}-${this.configKey.slice(0, 16)}-`;
  }

  /** Scans the folder once: removes temporary files of dead processes, records entries. */
  prepare(): Promise<void> {
    this.prepared ??= this.scan();
    return this.prepared;
  }

  private async scan(): Promise<void> {
    const all = await readdir(this.dir, { withFileTypes: true }).catch(() => []);
    const names = new Set(all.map((e) => e.name));
    for (const e of all) {
      if (!e.isFile()) continue;
      const temp = TEMP_NAME.exec(e.name);
      if (temp) {
        if (!processAlive(Number(temp[1]))) await rm(join(this.dir, e.name), { force: true });
        continue;
      }
      if (STAMP_NAME.test(e.name)) {
        // the stamp of an entry that is gone
        if (!names.has(e.name.replace(/\.verified$/, '.cwasm'))) await rm(join(this.dir, e.name), { force: true });
        continue;
      }
      const legacy = LEGACY_NAME.test(e.name);
      if ((!legacy && !ENTRY_NAME.test(e.name)) || this.entries.has(e.name)) continue;
      const st = await stat(join(this.dir, e.name)).catch(() => undefined);
      if (st) this.entries.set(e.name, legacy ? { bytes: st.size, lastUsed: st.mtimeMs, legacy } : { bytes: st.size, lastUsed: st.mtimeMs });
    }
  }

  /** The recorded entry name of `hash`, if any (looking at the folder again if none is known: another process may have written it). */
  private async nameOf(hash: string): Promise<string | undefined> {
    await this.prepare();
    const prefix = this.prefixOf(hash);
    const known = () => [...this.entries.keys()].find((n) => n.startsWith(prefix));
    const name = known();
    if (name) return name;
    await this.scan();
    return known();
  }

  /**
   * The entry to load for `hash` (its path and the MAC its name records), or undefined; the
   * check itself happens as it is loaded (`loadCached` in the addon).
   */
  async lookup(hash: string): Promise<CacheEntry | undefined> {
    const name = await this.nameOf(hash);
    const m = name ? ENTRY_NAME.exec(name) : null;
    if (!name || !m) return undefined;
    return { file: join(this.dir, name), mac: Buffer.from(m[3]!, 'hex') };
  }

  /**
   * The entry is used (called before it is loaded): refreshes its place in the LRU order — in this process always, on disk
   * (its mtime) only when that is more than {@link TOUCH_INTERVAL_MS} old, since `utimes` also
   * moves its ctime and so voids its verified stamp.
   */
  async touch(entry: CacheEntry): Promise<void> {
    const now = Date.now();
    const e = this.entries.get(entry.file.slice(this.dir.length + 1));
    if (!e || now - e.lastUsed > TOUCH_INTERVAL_MS) {
      const t = new Date(now);
      await utimes(entry.file, t, t).catch(() => {});
    }
    if (e) e.lastUsed = now;
  }

  /** The entry of `hash` failed its check (`reason`): logged and deleted. */
  async reject(hash: string, reason: CacheMiss): Promise<void> {
    this.logger?.warn({ entry: `${this.prefixOf(hash)}*.cwasm`, reason }, 'compile cache entry rejected; compiling again');
    await this.drop(hash);
  }

  /** The file name of `hash`'s entry under `mac`. */
  entryName(hash: string, mac: Uint8Array): string {
    return `${this.prefixOf(hash)}${Buffer.from(mac).toString('hex')}.cwasm`;
  }

  /**
   * Takes an entry another replica stored (./remote-cache.ts) as `hash`'s: written like one of
   * this cache's own; its MAC is checked when it is loaded, like any entry's.
   * @returns false (nothing written) when `name` is not an entry name of `hash` under this configuration
   */
  async adopt(hash: string, name: string, payload: Uint8Array): Promise<boolean> {
    const m = ENTRY_NAME.exec(name);
    if (!m || !name.startsWith(this.prefixOf(hash))) return false;
    await this.write(hash, payload, Buffer.from(m[3]!, 'hex'));
    return true;
  }

  /** Writes `payload` for `hash` under its `mac` (atomically, mode 0600), then evicts past the bounds. Failures are logged only. */
  async write(hash: string, payload: Uint8Array, mac: Uint8Array): Promise<void> {
    await this.prepare();
    const name = this.entryName(hash, mac);
    const tmp = join(this.dir, `.tmp-${process.pid}-${randomBytes(8).toString('hex')}.cwasm`);
    try {
      await writeFile(tmp, payload, { mode: 0o600, flag: 'wx' });
      await this.drop(hash);
      await rename(tmp, join(this.dir, name));
      this.entries.set(name, { bytes: payload.length, lastUsed: Date.now() });
    } catch (e) {
      await rm(tmp, { force: true });
      this.logger?.warn({ err: (e as Error).message }, 'compile cache entry could not be written');
      return;
    }
    await this.evict();
  }

  /** Deletes every entry of `hash` under this configuration (and their verified stamps). */
  async drop(hash: string): Promise<void> {
    const prefix = this.prefixOf(hash);
    for (const name of [...this.entries.keys()]) {
      if (!name.startsWith(prefix)) continue;
      this.entries.delete(name);
      await this.remove(name);
    }
  }

  /** Removes the entry file `name` and its verified stamp. */
  private async remove(name: string): Promise<void> {
    await rm(join(this.dir, name), { force: true });
    if (!LEGACY_NAME.test(name)) await rm(join(this.dir, stampOf(name)), { force: true });
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
    // entries of the previous format first (never loaded), then the least recently used
    const candidates = [...this.entries]
      .filter(([name, e]) => e.legacy || !this.inUse.has(name.slice(0, 64)))
      .sort((a, b) => Number(!a[1].legacy) - Number(!b[1].legacy) || a[1].lastUsed - b[1].lastUsed);
    for (const [name, e] of candidates) {
      if (entries <= limits.maxEntries && bytes <= limits.maxBytes) break;
      await this.remove(name);
      this.entries.delete(name);
      entries--;
      bytes -= e.bytes;
      this.logger?.info({ entry: name }, 'compile cache entry evicted');
    }
  }
}
