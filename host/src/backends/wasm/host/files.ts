/**
 * Host capability `warden:backend/host.{read-file,list-files}`: read-only access to the model's
 * own version directory and nothing else. Paths are relative with `/` separators; absolute paths,
 * drive letters, backslashes, NULs, `..` and empty segments are refused before the filesystem is
 * touched, and the real path (symbolic links resolved) must stay inside the directory.
 */
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { witErr } from './errors.js';

/** Per-instance state of the files capability. */
export interface FilesState {
  /** Real path of the version directory; undefined if it does not exist. */
  readonly root: string | undefined;
  /** Largest file `read-file` returns (the instance's memory limit), bytes. */
  readonly maxFileBytes: number;
}

/** Longest path accepted, characters. */
const MAX_PATH = 4096;

/**
 * Files state for a version directory (resolved once, at instance start).
 * @param versionPath `<model>/<version>`
 * @param maxFileBytes largest file served, bytes
 */
export function createFilesState(versionPath: string, maxFileBytes: number): FilesState {
  let root: string | undefined;
  try {
    root = realpathSync(versionPath);
  } catch {
    root = undefined;
  }
  return { root, maxFileBytes };
}

/**
 * The real path of `path` inside the version directory.
 * @throws HostCallError `invalid-arg` for a refused path or one that leads outside the
 *   directory, `not-found` for a missing file or directory
 */
export function resolveModelFile(state: FilesState, path: string): string {
  if (typeof path !== 'string' || path === '' || path.length > MAX_PATH) throw witErr('invalid-arg', 'read-file: empty or overlong path');
  if (path.startsWith('/') || path.includes('\\') || path.includes('\0') || /^[A-Za-z]:/.test(path)) {
    throw witErr('invalid-arg', `read-file: '${path}' must be relative to the model's version directory`);
  }
  if (path.split('/').some((seg) => seg === '..' || seg === '')) throw witErr('invalid-arg', `read-file: '${path}' may not contain '..' or empty segments`);
  const root = state.root;
  if (!root) throw witErr('not-found', 'read-file: the model has no version directory');
  let real: string;
  try {
    real = realpathSync(join(root, ...path.split('/')));
  } catch {
    throw witErr('not-found', `read-file: '${path}' does not exist in the model's version directory`);
  }
  if (real !== root && !real.startsWith(root + sep)) {
    throw witErr('invalid-arg', `read-file: '${path}' leads outside the model's version directory`);
  }
  return real;
}

/**
 * `read-file(path)`: the bytes of a regular file of the version directory.
 * @throws HostCallError as {@link resolveModelFile}; `invalid-arg` for something that is not a
 *   regular file, `unavailable` for a file larger than `maxFileBytes`
 */
export function readFile(state: FilesState, path: string): Uint8Array {
  const real = resolveModelFile(state, path);
  const st = statSync(real);
  if (!st.isFile()) throw witErr('invalid-arg', `read-file: '${path}' is not a regular file`);
  if (st.size > state.maxFileBytes) {
    throw witErr('unavailable', `read-file: '${path}' is ${st.size} bytes, more than the instance's memory limit of ${state.maxFileBytes} bytes`);
  }
  return readFileSync(real);
}

/** Deepest directory level and most entries `list-files` walks. */
const MAX_DEPTH = 32;
const MAX_ENTRIES = 10_000;

/**
 * `list-files()`: regular files of the version directory, recursively (symbolic links only if
 * they lead to a regular file inside it), as sorted relative `/` paths; [] without a directory.
 * @throws HostCallError `internal` if the directory cannot be read
 */
export function listFiles(state: FilesState): string[] {
  const root = state.root;
  if (!root) return [];
  const out: string[] = [];
  const safeFile = (p: string) => {
    try {
      const real = realpathSync(p);
      return real.startsWith(root + sep) && lstatSync(real).isFile();
    } catch {
      return false;
    }
  };
  const walk = (dir: string, depth: number) => {
    if (depth > MAX_DEPTH || out.length > MAX_ENTRIES) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (e.isFile() || (e.isSymbolicLink() && safeFile(p))) out.push(relative(root, p).split(sep).join('/'));
    }
  };
  try {
    walk(root, 0);
  } catch (e) {
    throw witErr('internal', `list-files: ${(e as Error).message}`);
  }
  return out.sort();
}
