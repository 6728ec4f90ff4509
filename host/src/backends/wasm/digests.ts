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
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readdirSync, type BigIntStats } from 'node:fs';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheKey } from './cache-key.js';

/** How old a file's last change must be before its digest is recorded (ms). */
export const SETTLE_MS = 2000;
const ENTRY = /^(\d+)-(\d+)\.digest$/;

/** The stamps that change whenever the file does. */
function stamps(st: BigIntStats): string {
  return `${st.dev} ${st.ino} ${st.size} ${st.mtimeNs} ${st.ctimeNs}`;
}

/** A digest memo in one folder. */
export class ComponentDigests {
  private readonly key: Buffer;
  private entries: number;
  /** Digests served from the memo / computed, since creation (for tests and logs). */
  readonly counts = { memo: 0, hashed: 0 };

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
   * The SHA-256 (hex) of `bytes`, the content of `path` as read after `before` was taken: from
   * the memo if the file is unchanged since a digest was recorded, else computed (and recorded
   * when the file is settled).
   */
  async sha256(path: string, before: BigIntStats, bytes: Uint8Array): Promise<string> {
    const line = stamps(before);
    const file = this.fileOf(before);
    const memo = await readFile(file, 'latin1').catch(() => undefined);
    if (memo !== undefined) {
      const [stamped, hash, mac] = memo.split('\n');
      if (stamped === line && hash && /^[0-9a-f]{64}$/.test(hash) && mac && /^[0-9a-f]{64}$/.test(mac) && timingSafeEqual(Buffer.from(mac, 'hex'), this.mac(`${stamped}\n${hash}`))) {
        const now = await stat(path, { bigint: true }).catch(() => undefined);
        if (now && stamps(now) === line) {
          this.counts.memo++;
          return hash;
        }
      }
    }
    const hash = createHash('sha256').update(bytes).digest('hex');
    this.counts.hashed++;
    const after = await stat(path, { bigint: true }).catch(() => undefined);
    const settled = Number(before.ctimeNs / 1_000_000n) <= Date.now() - (this.opts.settleMs ?? SETTLE_MS);
    if (after && stamps(after) === line && settled && BigInt(bytes.length) === before.size) await this.record(file, line, hash, memo !== undefined);
    return hash;
  }

  private async record(file: string, line: string, hash: string, replacing: boolean): Promise<void> {
    if (!replacing && this.entries >= (this.opts.maxEntries ?? 100_000)) return;
    const tmp = join(this.dir, `.tmp-${process.pid}-${randomBytes(8).toString('hex')}.digest`);
    try {
      await writeFile(tmp, `${line}\n${hash}\n${this.mac(`${line}\n${hash}`).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      await rename(tmp, file);
      if (!replacing) this.entries++;
    } catch {
      await rm(tmp, { force: true });
    }
  }
}
