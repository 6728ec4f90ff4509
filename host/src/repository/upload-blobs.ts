/**
 * Content-addressed file bodies of the upload store (./upload-store.ts; DESIGN "Multi-tenancy"):
 * every uploaded file is stored once per distinct content, as `<root>/.blobs/sha256/<hex>`, and
 * each generation's file is a hard link to its blob. A thousand uploads of the same component
 * hold its bytes once on disk, and an upload of known bytes writes (and fsyncs) nothing but links.
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
import { sha256Of } from '../contract/content-digest.js';
import { link, lstat, mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** The blobs' folder under the store root, and its algorithm subfolder. */
export const BLOBS_DIR = '.blobs';
export const BLOB_ALGORITHM_DIR = 'sha256';

const BLOB = /^[0-9a-f]{64}$/;
const BLOB_TMP = /^\.tmp-[0-9a-f]{16}$/;

/** The blob folder of one store (`<root>/.blobs/sha256`), given as an absolute, checked path. */
export class UploadBlobs {
  private ready: Promise<void> | undefined;

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
   * @returns the content's SHA-256 and whether its blob was written now
   * @throws the file system's error (ENOSPC, EEXIST for an existing `dest`, ...)
   */
  async place(dest: string, data: Uint8Array): Promise<{ hash: string; written: boolean }> {
    await this.ensure();
    const hash = await sha256Of(data);
    const blob = join(this.dir, hash);
    // a blob swept away between the check and the link is written again
    for (let attempt = 0; ; attempt++) {
      const known = await holds(blob, data);
      if (!known) await this.write(blob, data);
      try {
        await link(blob, dest);
        return { hash, written: !known };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt > 2) throw e;
      }
    }
  }

  /**
   * Removes blobs no generation links (link count 1) and temp files left by a crash.
   * @returns the names removed
   */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    for (const e of await readdir(this.dir, { withFileTypes: true }).catch(() => [])) {
      if (!e.isFile()) continue;
      const p = join(this.dir, e.name);
      if (BLOB_TMP.test(e.name)) {
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
    const tmp = join(this.dir, `.tmp-${randomBytes(8).toString('hex')}`);
    const fh = await open(tmp, 'wx', 0o444);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } catch (e) {
      await fh.close();
      await unlink(tmp).catch(() => undefined);
      throw e;
    }
    await fh.close();
    try {
      await rename(tmp, blob);
    } catch (e) {
      await unlink(tmp).catch(() => undefined);
      throw e;
    }
    await this.fsyncDir(this.dir);
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
