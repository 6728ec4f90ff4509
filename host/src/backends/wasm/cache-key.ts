/**
 * A per-cache secret key (32 random bytes in `<dir>/.key`, mode 0600, owned by this user) for the
 * MACs that make a cache's entries trustworthy: an entry written by anyone without the key fails
 * its check. Used by the wasmtime compile cache (./wasmtime/cache.ts) and the component digest
 * memo (./digests.ts).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const KEY_FILE = '.key';
/** Bytes of a cache key. */
export const CACHE_KEY_BYTES = 32;

/**
 * The cache's secret key in `dir`: read if `.key` is a regular file of {@link CACHE_KEY_BYTES}
 * bytes, owned by this user, mode 0600 (no group / other bits); otherwise a fresh key replaces
 * it (entries made under the old one then fail their check and are compiled again). Two
 * processes creating it at once agree: it is created with `link` (fails if present), not rename.
 */
export function cacheKey(dir: string): Buffer {
  const file = join(dir, KEY_FILE);
  const usable = (): Buffer | undefined => {
    try {
      const st = lstatSync(file);
      const uid = process.getuid?.();
      if (!st.isFile() || st.size !== CACHE_KEY_BYTES || (st.mode & 0o077) !== 0 || (uid !== undefined && st.uid !== uid)) return undefined;
      const key = readFileSync(file);
      return key.length === CACHE_KEY_BYTES ? key : undefined;
    } catch {
      return undefined;
    }
  };
  const existing = usable();
  if (existing) return existing;
  const key = randomBytes(CACHE_KEY_BYTES);
  const tmp = join(dir, `.tmp-${process.pid}-${randomBytes(8).toString('hex')}.key`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, key);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
  } catch {
    // present: another process made it just now (use it), or an unusable one (replace it)
    const raced = usable();
    if (raced) {
      rmSync(tmp, { force: true });
      return raced;
    }
    renameSync(tmp, file);
    return key;
  }
  rmSync(tmp, { force: true });
  return key;
}
