/**
 * The SHA-256 of a component file without hashing it again: a memo of digests keyed by the file's
 * identity and change stamps (device, inode, size, mtime and ctime in ns), kept in
 * `<cacheDir>/digests/` across restarts, so that the first load of an unchanged component in a new
 * process — the common case for thousands of tenant models — skips reading it through SHA-256.
 *
 * Why this is sound: the kernel sets ctime on every change of a file's content or metadata and no
 * user can set it back, so a file whose (dev, ino, size, mtime, ctime) equal a memo entry's has
 * not been written since. A digest is recorded only if the stamps were the same before the bytes
 * were read and after they were hashed, and the file's ctime is at least {@link SETTLE_MS} in the
 * past then (timestamps are coarse: a change within the same tick as the read could otherwise
 * leave the stamps equal). Entries are HMAC-SHA256'd under the per-cache key (./cache-key.ts): a
 * memo file written by anyone without the key is ignored. At most `maxEntries` memo files are
 * kept (past that, new digests are just not recorded).
 *
 * An entry is `<stamps>\n<sha256 hex>\n<facts>\n<MAC hex>\n`: the facts (one line, the caller's)
 * let a load skip reading the file at all (the wasm backend keeps the component's checked surface
 * and memory count there: ./component-source.ts). Entries of the earlier three-line format are
 * ignored (the file is hashed once more and the entry rewritten).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readdirSync, type BigIntStats } from 'node:fs';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheKey } from './cache-key.js';

/** How old a file's last change must be before its digest is recorded (ms). */
export const SETTLE_MS = 2000;
const ENTRY = /^(\d+)-(\d+)\.digest$/;

/** The stamps that change whenever the file does: equal stamps at two times mean no change between. */
export function stamps(st: BigIntStats): string {
  return `${st.dev} ${st.ino} ${st.size} ${st.mtimeNs} ${st.ctimeNs}`;
}

/** A digest memo in one folder. */
export class ComponentDigests {
  private readonly key: Buffer;
  private entries: number;
  /** Digests served from the memo / computed, since creation (for tests and logs). */
  readonly counts = { memo: 0, hashed: 0 };
  /**
   * Facts by content digest, in this process: those recorded with a digest computed here or read
   * from a MAC-checked entry. A load that knows a file's digest without the memo (an upload: the
   * upload store hashed the bytes it stored) takes them from here ({@link factsOf}).
   */
  private readonly factsByHash = new Map<string, string>();

  /**
   * @param dir the memo's folder (created)
   * @param opts `settleMs`: see {@link SETTLE_MS}; `maxEntries`: memo files kept at most
   * @throws Error if the folder or its key cannot be created
   */
  constructor(
    readonly dir: string,
    private readonly opts: { settleMs?: number; maxEntries?: number } = {},
  ) {
    mkdirSync(dir, { recursive: true });
    this.key = cacheKey(dir);
    this.entries = readdirSync(dir).filter((n) => ENTRY.test(n)).length;
  }

  private fileOf(st: BigIntStats): string {
    return join(this.dir, `${st.dev}-${st.ino}.digest`);
  }

  private mac(line: string): Buffer {
    return createHmac('sha256', this.key).update(line).digest();
  }

  /**
   * The memo's entry for the file `before` describes, if it is unchanged since it was recorded:
   * its SHA-256 (hex) and the facts recorded with it (`''` if none), without reading the file.
   * A forged entry (MAC under another key or none), a stale one (any stamp differs) or a file
   * that changed since `before` gives undefined.
   */
  async lookup(path: string, before: BigIntStats): Promise<{ hash: string; facts: string } | undefined> {
    const { hit } = await this.find(path, before);
    if (hit) {
      this.counts.memo++;
      this.remember(hit.hash, hit.facts);
    }
    return hit;
  }

  /** The facts last recorded in this process with the digest `hash` (hex), if any. */
  factsOf(hash: string): string | undefined {
    return this.factsByHash.get(hash);
  }

  /** Keeps `facts` for `hash` in memory (at most `maxEntries` digests; past that the oldest go). */
  private remember(hash: string, facts: string): void {
    if (facts === '') return;
    this.factsByHash.delete(hash);
    this.factsByHash.set(hash, facts);
    if (this.factsByHash.size > (this.opts.maxEntries ?? 100_000)) this.factsByHash.delete(this.factsByHash.keys().next().value!);
  }

  /**
   * Records `facts` for content whose digest the caller computed, or was given by a part of the
   * server that did (in memory only: there is no file stamp to key a memo entry by).
   * @throws RangeError for `facts` with a line break
   */
  recordFacts(hash: string, facts: string): void {
    if (facts.includes('\n')) throw new RangeError('digest memo facts must be one line');
    this.remember(hash, facts);
  }

  /**
   * `present`: a memo file exists for the file's (dev, ino); `hit`: its MAC-checked entry, if its
   * stamps equal `before`'s and the file's stamps still do.
   */
  private async find(path: string, before: BigIntStats): Promise<{ present: boolean; hit?: { hash: string; facts: string } }> {
    const memo = await readFile(this.fileOf(before), 'latin1').catch(() => undefined);
    if (memo === undefined) return { present: false };
    const [stamped, hash, facts, mac] = memo.split('\n');
    if (stamped !== stamps(before) || !hash || !/^[0-9a-f]{64}$/.test(hash) || facts === undefined || !mac || !/^[0-9a-f]{64}$/.test(mac))
      return { present: true };
    if (!timingSafeEqual(Buffer.from(mac, 'hex'), this.mac(`${stamped}\n${hash}\n${facts}`))) return { present: true };
    const now = await stat(path, { bigint: true }).catch(() => undefined);
    if (!now || stamps(now) !== stamped) return { present: true };
    return { present: true, hit: { hash, facts } };
  }

  /**
   * The SHA-256 (hex) of `bytes`, the content of `path` as read after `before` was taken: from
   * the memo if the file is unchanged since a digest was recorded, else computed (and recorded
   * when the file is settled). `facts` (one line, no `\n`; e.g. what checking the bytes found)
   * is recorded with the digest, under the same MAC, and returned by {@link lookup}; an entry
   * without them gets them when next seen with them.
   * @throws RangeError for `facts` with a line break
   */
  async sha256(path: string, before: BigIntStats, bytes: Uint8Array, facts = ''): Promise<string> {
    if (facts.includes('\n')) throw new RangeError('digest memo facts must be one line');
    const line = stamps(before);
    const file = this.fileOf(before);
    const { present, hit } = await this.find(path, before);
    if (hit && (hit.facts === facts || facts === '')) {
      this.counts.memo++;
      this.remember(hit.hash, hit.facts);
      return hit.hash;
    }
    // no entry, or one without these facts: hashed, to record the facts with a digest of these bytes
    const hash = createHash('sha256').update(bytes).digest('hex');
    this.counts.hashed++;
    this.remember(hash, facts);
    const after = await stat(path, { bigint: true }).catch(() => undefined);
    const settled = Number(before.ctimeNs / 1_000_000n) <= Date.now() - (this.opts.settleMs ?? SETTLE_MS);
    if (after && stamps(after) === line && settled && BigInt(bytes.length) === before.size) await this.record(file, `${line}\n${hash}\n${facts}`, present);
    return hash;
  }

  /** Writes `body` (stamps, digest, facts lines) and its MAC as the memo entry `file`, atomically. */
  private async record(file: string, body: string, replacing: boolean): Promise<void> {
    if (!replacing && this.entries >= (this.opts.maxEntries ?? 100_000)) return;
    const tmp = join(this.dir, `.tmp-${process.pid}-${randomBytes(8).toString('hex')}.digest`);
    try {
      await writeFile(tmp, `${body}\n${this.mac(body).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      await rename(tmp, file);
      if (!replacing) this.entries++;
    } catch {
      await rm(tmp, { force: true });
    }
  }
}
