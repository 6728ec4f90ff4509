/**
 * Host capability `warden:backend/host.{read-file,list-files}`: read-only access to the model's
 * own version directory and nothing else. Paths are relative with `/` separators; absolute paths,
 * drive letters, backslashes, NULs, `..` and empty segments are refused before the filesystem is
 * touched, and the real path (symbolic links resolved) must stay inside the directory; the file
 * is then opened and checked on its descriptor by the rule every config-named file goes through
 * (`repository/model-files.ts`: regular file, still beneath the directory, size-capped while read).
 *
 * The guest never learns a host path: every error it gets is built from the path it asked for
 * (or a path relative to the version directory) and the error's code, never from Node's error
 * message (which names the absolute path), and no filesystem exception leaves these functions.
 */
import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { witErr } from './errors.js';
import { TritonError } from '../../../contract/errors.js';
import { ModelFileError, readModelFileSync } from '../../../repository/model-files.js';

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
 * The WIT error for a failed filesystem call on `rel` (a path relative to the version directory,
 * '.' for the directory itself), from the error's code only: Node's message names the absolute
 * host path, which the guest must never see.
 */
export function fileError(op: 'read-file' | 'list-files', rel: string, e: unknown): ReturnType<typeof witErr> {
  const raw = (e as { code?: unknown } | null)?.code;
  const code = typeof raw === 'string' && /^[A-Z0-9_]{1,32}$/.test(raw) ? raw : undefined;
  const what = rel === '.' ? "the model's version directory" : `'${rel}'`;
  switch (code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return witErr('not-found', `${op}: ${what} does not exist${rel === '.' ? '' : " in the model's version directory"}`);
    case 'EACCES':
    case 'EPERM':
      return witErr('unavailable', `${op}: ${what} cannot be read (permission denied)`);
    case 'EISDIR':
      return witErr('invalid-arg', `${op}: ${what} is not a regular file`);
    default:
      return witErr('internal', `${op}: ${what} cannot be read${code ? ` (${code})` : ''}`);
  }
}

/**
 * `read-file(path)`: the bytes of a regular file of the version directory.
 * @throws HostCallError as {@link resolveModelFile}; `invalid-arg` for something that is not a
 *   regular file, `unavailable` for a file larger than `maxFileBytes`; for a failing filesystem
 *   call, the error of {@link fileError}
 */
export function readFile(state: FilesState, path: string): Uint8Array {
  resolveModelFile(state, path);
  const root = state.root!;
  try {
    // Opened and checked on the descriptor by the one rule for config-named files
    // (repository/model-files.ts): beneath the version directory, regular, at most maxFileBytes.
    return readModelFileSync({ modelDir: root, name: path, field: 'read-file', maxBytes: state.maxFileBytes }, root);
  } catch (e) {
    if (e instanceof ModelFileError) {
      switch (e.reason) {
        case 'outside':
          throw witErr('invalid-arg', `read-file: '${path}' leads outside the model's version directory`);
        case 'not-regular':
          throw witErr('invalid-arg', `read-file: '${path}' is not a regular file`);
        case 'too-large':
          throw witErr('unavailable', `read-file: '${path}' is ${e.size} bytes, more than the instance's memory limit of ${state.maxFileBytes} bytes`);
        default:
          throw fileError('read-file', path, { code: e.errno });
      }
    }
    if (e instanceof TritonError) throw witErr('invalid-arg', `read-file: '${path}' is not a path inside the model's version directory`);
    throw fileError('read-file', path, e);
  }
}

/** Deepest directory level and most entries `list-files` walks. */
const MAX_DEPTH = 32;
const MAX_ENTRIES = 10_000;

/**
 * `list-files()`: regular files of the version directory, recursively (symbolic links only if
 * they lead to a regular file inside it), as sorted relative `/` paths; [] without a directory.
 * @throws HostCallError if a directory cannot be read: `not-found` if it is gone (e.g. the version
 *   directory was moved away under a running instance), else as {@link fileError}; the message
 *   names the directory relative to the version directory
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
  const rel = (p: string) => relative(root, p).split(sep).join('/') || '.';
  const walk = (dir: string, depth: number) => {
    if (depth > MAX_DEPTH || out.length > MAX_ENTRIES) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      throw fileError('list-files', rel(dir), e);
    }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (e.isFile() || (e.isSymbolicLink() && safeFile(p))) out.push(rel(p));
    }
  };
  walk(root, 0);
  return out.sort();
}
