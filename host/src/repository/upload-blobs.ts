/**
 * Content-addressed file bodies of the upload store (./upload-store.ts; DESIGN "Multi-tenancy"):
 * every uploaded file is stored once per distinct content, as `<root>/.blobs/sha256/<hex>`, and
 * each generation's file is a hard link to its blob. A thousand uploads of the same component
 * hold its bytes once on disk, and an upload of bytes its own namespace already holds writes (and
 * fsyncs) nothing but links; bytes only another namespace holds cost a write like new ones
 * ({@link UploadBlobs.place}).
 *
 * Crash safety: a blob is written to `.blobs/sha256/.tmp-<16 hex>`, fsynced, then renamed to its
 * name (a blob name always holds a complete content) and the folder fsynced before a generation
 * links it. A known blob is compared with the uploaded bytes before it is linked (a read, no
 * write): one changed in place since (all its links see the change) is replaced by a fresh copy. A blob no generation links any
 * more has a link count of 1 and is removed by {@link UploadBlobs.sweep} (the store's prune,
 * discard and start-up clean-up), as are temp files a crash left. Only names of this scheme are
 * ever removed.
 */
import { randomBytes } from 'node:crypto';
import type { HeldBlob } from './overrides.js';
import { sha256Of } from '../contract/content-digest.js';
import { link, lstat, mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';

/** The blobs' folder under the store root, and its algorithm subfolder. */
export const BLOBS_DIR = '.blobs';
export const BLOB_ALGORITHM_DIR = 'sha256';

const BLOB = /^[0-9a-f]{64}$/;
/** How old a blob's mtime must be before its verification is remembered (ms; timestamps are coarse). */
export const SETTLE_MS = 2000;
/** Most verifications remembered. */
const MAX_VERIFIED = 100_000;
const BLOB_TMP = /^\.tmp-[0-9a-f]{16}$/;

/** The blob folder of one store (`<root>/.blobs/sha256`), given as an absolute, checked path. */
export class UploadBlobs {
  private ready: Promise<void> | undefined;
  /** Blobs verified by hashing, by digest: the (dev, ino, size, mtime) they had then ({@link verify}). */
  private readonly verified = new Map<string, string>();
  /** Temp files this process is writing now: not a crash's leftovers, so {@link sweep} leaves them. */
  private readonly writing = new Set<string>();

  /**
   * @param dir `<root>/.blobs/sha256`
   * @param fsyncDir makes a folder's entries durable (the store's)
   */
  constructor(
    readonly dir: string,
    private readonly fsyncDir: (p: string) => Promise<void>,
  ) {}

  /**
   * Makes `dest` (a path that must not exist) a hard link to the blob of `data`, writing and
   * fsyncing the blob first when it is new. The caller fsyncs `dest`'s folder.
   *
   * `own`: the uploading namespace itself links this blob already (UploadStore.holdsBlob); only
   * then is a known blob linked without writing. Otherwise the bytes are written and fsynced to a
   * temp file and read back whether or not the blob exists, and the temp file is dropped for a
   * blob that holds the same bytes: another tenant's uploads share the disk but never make this
   * upload measurably faster (docs/tenancy.md "Uploads by digest").
   * @returns the content's SHA-256 and whether its blob was written now
   * @throws the file system's error (ENOSPC, EEXIST for an existing `dest`, ...)
   */
  async place(dest: string, data: Uint8Array, own = false): Promise<{ hash: string; written: boolean }> {
    await this.ensure();
    const hash = await sha256Of(data);
    const blob = join(this.dir, hash);
    // a blob swept away between the check and the link is written again
    for (let attempt = 0; ; attempt++) {
      let known: boolean;
      if (own) {
        known = await holds(blob, data);
        if (!known) await this.write(blob, data);
      } else {
        known = await this.writeBeside(blob, data);
      }
      try {
        await link(blob, dest);
        return { hash, written: !known };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt > 2) throw e;
      }
    }
  }

  /**
   * The same work whether `blob` exists or not: `data` written and fsynced to a temp file, then
   * compared with the existing blob (kept, the temp file removed) or read back from the temp file
   * (renamed to `blob`), and the folder fsynced.
   * @returns whether the blob already held `data`
   */
  private async writeBeside(blob: string, data: Uint8Array): Promise<boolean> {
    const tmp = await this.writeTemp(data);
    try {
      const known = await holds(blob, data);
      if (known) await unlink(tmp);
      else if (await holds(tmp, data)) await rename(tmp, blob);
      else throw Object.assign(new Error('a blob read back differs from what was written'), { code: 'EIO' });
      await this.fsyncDir(this.dir);
      return known;
    } catch (e) {
      await unlink(tmp).catch(() => undefined);
      throw e;
    } finally {
      this.writing.delete(basename(tmp));
    }
  }

  /**
   * The blob of `sha256` as a {@link HeldBlob} when its bytes still hash to its name (a blob
   * changed in place counts as gone). Verified by reading and hashing it, once per change: a blob
   * whose (dev, ino, size, mtime) equal those of its last verification, taken when its mtime was
   * at least {@link SETTLE_MS} old, is not read again (its content cannot have changed without
   * moving the mtime, short of someone with the server's own rights setting it back). Its ctime
   * is no use here: each hard link an upload adds moves it.
   */
  async verify(sha256: string): Promise<HeldBlob | undefined> {
    const found = await this.find(sha256);
    if (!found) return undefined;
    const before = await lstat(found.path, { bigint: true }).catch(() => undefined);
    if (!before?.isFile()) return undefined;
    const stamp = `${before.dev} ${before.ino} ${before.size} ${before.mtimeNs}`;
    const held = { sha256, size: Number(before.size) };
    if (this.verified.get(sha256) === stamp) return held;
    const data = await readFile(found.path).catch(() => undefined);
    if (!data || data.byteLength !== held.size) return undefined;
    if ((await sha256Of(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))) !== sha256) return undefined;
    const after = await lstat(found.path, { bigint: true }).catch(() => undefined);
    const settled = Number(before.mtimeNs / 1_000_000n) <= Date.now() - SETTLE_MS;
    if (after && `${after.dev} ${after.ino} ${after.size} ${after.mtimeNs}` === stamp && settled) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
      this.verified.set(sha256, stamp);
    }
    return held;
  }

  /**
   * Makes `dest` (a path that must not exist) a hard link to the blob `held` names, checked by
   * {@link verify} (a blob gone or changed since gives undefined and links nothing).
   * @throws the file system's error (EEXIST for an existing `dest`, ...)
   */
  async linkHeld(dest: string, held: HeldBlob): Promise<boolean> {
    const now = await this.verify(held.sha256);
    if (!now || now.size !== held.size) return false;
    try {
      await link(join(this.dir, held.sha256), dest);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
    return true;
  }

  /**
   * The path of the blob of `sha256` (64 lowercase hex) if it exists as a regular file, with its
   * identity (dev, ino) for {@link UploadStore.holdsBlob}.
   */
  async find(sha256: string): Promise<{ path: string; dev: number; ino: number; size: number } | undefined> {
    if (!BLOB.test(sha256)) return undefined;
    const path = join(this.dir, sha256);
    const st = await lstat(path).catch(() => undefined);
    return st?.isFile() ? { path, dev: st.dev, ino: st.ino, size: st.size } : undefined;
  }

  /**
   * Removes blobs no generation links (link count 1) and temp files left by a crash — not those a
   * write in progress holds: a sweep after one model's unload may run while another model's
   * upload writes its blobs.
   * @returns the names removed
   */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    for (const e of await readdir(this.dir, { withFileTypes: true }).catch(() => [])) {
      if (!e.isFile()) continue;
      const p = join(this.dir, e.name);
      if (BLOB_TMP.test(e.name)) {
        if (this.writing.has(e.name)) continue;
        await unlink(p).catch(() => undefined);
        removed.push(e.name);
      } else if (BLOB.test(e.name)) {
        const st = await lstat(p).catch(() => undefined);
        if (st?.isFile() && st.nlink === 1) {
          await unlink(p).catch(() => undefined);
          removed.push(e.name);
        }
      }
    }
    if (removed.length > 0) await this.fsyncDir(this.dir).catch(() => undefined);
    return removed;
  }

  /** Writes `data` as `blob` through a fsynced temp file renamed over it (generations linking an older copy keep theirs). */
  private async write(blob: string, data: Uint8Array): Promise<void> {
    const tmp = await this.writeTemp(data);
    try {
      await rename(tmp, blob);
    } catch (e) {
      await unlink(tmp).catch(() => undefined);
      throw e;
    } finally {
      this.writing.delete(basename(tmp));
    }
    await this.fsyncDir(this.dir);
  }

  /** Writes `data` to a new temp file of the blob folder, fsynced; @returns its path */
  private async writeTemp(data: Uint8Array): Promise<string> {
    const name = `.tmp-${randomBytes(8).toString('hex')}`;
    const tmp = join(this.dir, name);
    this.writing.add(name);
    let fh;
    try {
      fh = await open(tmp, 'wx', 0o444);
    } catch (e) {
      this.writing.delete(name);
      throw e;
    }
    try {
      await fh.writeFile(data);
      await fh.sync();
    } catch (e) {
      await fh.close();
      await unlink(tmp).catch(() => undefined);
      this.writing.delete(name);
      throw e;
    }
    await fh.close();
    return tmp;
  }

  /** Makes the blob folder (and its parents' entries durable). */
  private ensure(): Promise<void> {
    this.ready ??= (async () => {
      const first = await mkdir(this.dir, { recursive: true });
      if (first !== undefined) {
        await this.fsyncDir(join(this.dir, '..'));
        await this.fsyncDir(join(this.dir, '..', '..'));
      }
    })();
    const p = this.ready;
    p.catch(() => {
      if (this.ready === p) this.ready = undefined;
    });
    return p;
  }
}

/** True when `blob` is a regular file holding exactly `data`. */
async function holds(blob: string, data: Uint8Array): Promise<boolean> {
  const st = await lstat(blob).catch(() => undefined);
  if (!st?.isFile() || st.size !== data.byteLength) return false;
  const have = await readFile(blob).catch(() => undefined);
  return have !== undefined && Buffer.compare(have, data) === 0;
}
