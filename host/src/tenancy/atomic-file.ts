/**
 * Crash-safe edits of a small file: a lock file (created with O_EXCL) serialises read-modify-write
 * cycles between processes, and the new content replaces the old by rename (temp file in the same
 * directory, fsync, rename, fsync of the directory), so a reader — the server's hot reload — sees
 * either the old file or the new one, never a torn write.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { TenancyConfigError } from './format.js';

export interface LockOptions {
  /** Give up after this long, ms (default 10000). */
  timeoutMs?: number;
}

/**
 * Runs `fn` holding `<path>.lock`. A lock left by a dead process on this host (its pid is in the
 * file) is broken; otherwise waits, retrying every 10–50 ms.
 * @throws TenancyConfigError when the lock is still held after `timeoutMs`.
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const lock = `${path}.lock`;
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const me = `${process.pid}@${hostname()}`;
  for (;;) {
    try {
      const fh = await open(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
      try {
        await fh.writeFile(`${me}\n`);
      } finally {
        await fh.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (await breakStaleLock(lock)) continue;
      if (Date.now() > deadline) {
        throw new TenancyConfigError(`${path} is locked by another 'warden tenants' command (${lock}); remove the lock file if none is running`);
      }
      await sleep(10 + Math.random() * 40);
    }
  }
  try {
    return await fn();
  } finally {
    await unlink(lock).catch(() => {});
  }
}

/** Removes `lock` when it names a process of this host that no longer exists. */
async function breakStaleLock(lock: string): Promise<boolean> {
  let owner: string;
  try {
    owner = (await readFile(lock, 'utf8')).trim();
  } catch {
    return false; // gone already (retry), or unreadable (wait)
  }
  const m = /^(\d+)@(.*)$/.exec(owner);
  if (!m || m[2] !== hostname()) return false;
  try {
    process.kill(Number(m[1]), 0);
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') return false;
  }
  await unlink(lock).catch(() => {});
  return true;
}

/**
 * Replaces `path`'s content with `text` atomically and durably. Keeps the file's permission bits
 * (a new file gets `mode`, default 0600).
 */
export async function writeFileAtomic(path: string, text: string, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const existingMode = await stat(path).then(
    (s) => s.mode & 0o777,
    () => undefined,
  );
  const fh = await open(tmp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, existingMode ?? mode);
  try {
    try {
      await fh.writeFile(text, 'utf8');
      if (existingMode !== undefined) await chmod(tmp, existingMode); // the umask may have narrowed it
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await fsyncDir(dir);
}

/** fsync a directory so a rename in it survives a crash (a no-op where directories cannot be opened, e.g. Windows). */
async function fsyncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, constants.O_RDONLY);
  } catch {
    return;
  }
  try {
    await fh.sync();
  } catch {
    // some file systems refuse fsync on directories; the rename is still atomic
  } finally {
    await fh.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
