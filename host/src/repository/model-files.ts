/**
 * The one rule for every file a model config names (DESIGN "Multi-tenancy": "every file a config
 * names is opened through one confinement rule beneath the model's own directory"): label files,
 * sequence initial states, default model file names, ONNX external data, component files — for
 * tenants' uploads and operator models alike (Triton keeps these files in the model directory too).
 *
 * A name from a config is:
 *
 * 1. checked by syntax before any filesystem call: relative, `/`-separated, no `..`, `.` or empty
 *    segment, no backslash, NUL or control character, at most {@link MAX_NAME_LENGTH} characters;
 * 2. resolved (`realpath`) beneath the real path of the model directory: a name that does not
 *    exist and one whose symbolic links lead outside get the same answer, so an error never tells
 *    whether a file outside exists;
 * 3. opened with `O_PATH | O_NOFOLLOW` (opens nothing for reading: no device is ever opened, a FIFO
 *    never blocks), and the DESCRIPTOR is checked — `fstat` says regular file, and its path from
 *    `readlink(/proc/self/fd/N)` lies beneath the model directory — so a symbolic link swapped in
 *    after step 2 is refused, not followed;
 * 4. only then re-opened for reading through `/proc/self/fd/N` (the same inode, no path lookup),
 *    with the size cap checked on `fstat` and again while reading (a file that grows is refused).
 *
 * The asynchronous functions do every filesystem call on libuv's thread pool, off the event loop.
 * Errors are TritonError INVALID_ARG naming the config field and the name as the config gave it,
 * never an absolute path.
 *
 * Linux only (`O_PATH`, `/proc/self/fd`); elsewhere every open is refused (fails closed).
 */
import { constants, fstatSync, openSync, closeSync, readSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { TritonError } from '../contract/errors.js';
import * as err from './model-files.errors.js';

/** `O_PATH` (Linux, asm-generic value: x86-64, arm64, riscv64, arm). Not in `fs.constants`. */
const O_PATH = 0o10000000;
/** `O_CLOEXEC` (Linux). Not in `fs.constants`. */
const O_CLOEXEC = 0o2000000;
const PATH_FLAGS = O_PATH | constants.O_NOFOLLOW | O_CLOEXEC;
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | O_CLOEXEC;

/** Longest name accepted from a config, characters. */
export const MAX_NAME_LENGTH = 1024;
/** Bytes read per read call. */
const CHUNK = 1 << 20;

/** Default cap on a label file (`label_filename`), bytes: 16 MiB. */
export const DEFAULT_LABEL_FILE_MAX_BYTES = 16 * 1024 * 1024;
/** Default cap on a sequence initial-state file (`initial_state.data_file`), bytes: 64 MiB. */
export const DEFAULT_INITIAL_STATE_MAX_BYTES = 64 * 1024 * 1024;

/** A file a config names, and how much of it may be read. */
export interface ModelFileSpec {
  /** The model's own directory (`<repository>/<model>`, or its upload generation): the root nothing may leave. */
  modelDir: string;
  /** The name as the config gives it, relative to `under`. */
  name: string;
  /** The config field (or parameter) that names the file, for errors: e.g. `output 'OUT' label_filename`. */
  field: string;
  /** Folder beneath `modelDir` the name is relative to (`'1'`, `'initial_state'`, `'1/model'`); `''` = the model directory. Checked like a name. */
  under?: string;
  /** Largest file accepted, bytes (checked on fstat and while reading). */
  maxBytes: number;
}

/** A config-named file opened for reading beneath its model directory. */
export interface OpenedModelFile {
  readonly handle: FileHandle;
  /** Size at open, bytes (≤ the spec's `maxBytes`). */
  readonly size: number;
  /** The descriptor's real path (beneath the model directory's real path): for libraries that take a path. */
  readonly realPath: string;
  /** The real path of the model directory the file was checked against. */
  readonly root: string;
}

/** Printable form of a config's name: JSON-quoted when it holds anything unusual, and shortened. */
function shown(name: string): string {
  const s = name.length > 200 ? `${name.slice(0, 200)}…` : name;
  return /^[\x20-\x7e]*$/.test(s) && !s.includes("'") ? `'${s}'` : JSON.stringify(s);
}

/**
 * The segments of a config's relative name; no filesystem call.
 * @throws TritonError INVALID_ARG naming `field` for an absolute name, `..`, `.` or empty
 *   segments, backslashes, NUL or control characters, or a name over {@link MAX_NAME_LENGTH}
 *   (an absolute name is not echoed)
 */
export function relativeSegments(name: string, field: string): string[] {
  if (typeof name !== 'string' || name === '') throw err.fileNameEmpty(field);
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) {
    throw err.fileNameAbsolute(field);
  }
  if (name.length > MAX_NAME_LENGTH) throw err.fileNameTooLong(field, MAX_NAME_LENGTH);
  // eslint-disable-next-line no-control-regex
  if (/[\\\x00-\x1f\x7f]/.test(name)) throw err.fileNameBadCharacters(field, shown(name));
  const segs = name.split('/');
  if (segs.some((s) => s === '..' || s === '.' || s === '')) {
    throw err.fileNameEscapes(field, shown(name));
  }
  return segs;
}

/** True if `p` is `root` itself or lies beneath it. */
const beneath = (p: string, root: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

/** Why a config-named file was refused (after its name passed the syntax check). */
export type ModelFileRefusal = 'outside' | 'not-regular' | 'too-large' | 'unreadable';

/**
 * A refused config-named file: INVALID_ARG with a path-free message, plus the reason for callers
 * that answer in their own terms (the sandbox's `read-file`).
 */
export class ModelFileError extends TritonError {
  constructor(
    message: string,
    readonly reason: ModelFileRefusal,
    /** For `too-large`: the size seen (fstat, or the bytes read so far), bytes. */
    readonly size?: number,
    /** For `unreadable`: the errno code (`EACCES`, ...), if any. */
    readonly errno?: string,
  ) {
    super('INVALID_ARG', message);
  }
}

const notInside = (spec: ModelFileSpec) => new ModelFileError(`${spec.field} ${shown(spec.name)} does not name a file inside the model directory`, 'outside');
const notRegular = (spec: ModelFileSpec) => new ModelFileError(`${spec.field} ${shown(spec.name)} is not a regular file`, 'not-regular');
const tooLarge = (spec: ModelFileSpec, size: number) =>
  new ModelFileError(`${spec.field} ${shown(spec.name)} is larger than ${spec.maxBytes} bytes`, 'too-large', size);
const unreadable = (spec: ModelFileSpec, e: unknown) => {
  const raw = (e as { code?: unknown } | null)?.code;
  const code = typeof raw === 'string' && /^E[A-Z0-9]{1,31}$/.test(raw) ? raw : undefined;
  return new ModelFileError(`${spec.field} ${shown(spec.name)} cannot be read${code ? ` (${code})` : ''}`, 'unreadable', undefined, code);
};

/** The path to resolve: the model directory's real path joined with the checked segments. */
function candidate(root: string, spec: ModelFileSpec): string {
  const under = spec.under ? relativeSegments(spec.under, `${spec.field} (folder)`) : [];
  return join(root, ...under, ...relativeSegments(spec.name, spec.field));
}

/** The checks on the O_PATH descriptor (step 3), given its fstat and /proc path. */
function checkDescriptor(spec: ModelFileSpec, root: string, st: Stats, fdPath: string): void {
  if (!beneath(fdPath, root) || fdPath === root) throw notInside(spec);
  if (!st.isFile()) throw notRegular(spec);
  if (st.size > spec.maxBytes) throw tooLarge(spec, st.size);
}

/**
 * Steps 2 and 3's open: the name resolved beneath `root` (the model directory's real path) and
 * opened `O_PATH | O_NOFOLLOW`; the caller checks the descriptor and closes it.
 * @throws TritonError INVALID_ARG: a refused name, or one that does not exist or leads outside
 */
async function openPathBeneath(root: string, spec: ModelFileSpec): Promise<FileHandle> {
  let target: string;
  try {
    target = await realpath(candidate(root, spec));
  } catch (e) {
    if (e instanceof TritonError) throw e;
    throw notInside(spec);
  }
  if (!beneath(target, root)) throw notInside(spec);
  try {
    return await open(target, PATH_FLAGS);
  } catch {
    throw notInside(spec);
  }
}

function checkPlatform(spec: ModelFileSpec): void {
  if (process.platform !== 'linux') throw err.fileNeedsLinux(spec.field, shown(spec.name));
}

/**
 * The rule's first steps, giving an `O_PATH` handle the caller closes: Linux, a name
 * {@link relativeSegments} accepts, the model directory's real path, the entry resolved beneath it.
 * @param dirError the error for a model directory whose real path cannot be had
 * @throws TritonError INVALID_ARG as {@link openModelFile} for a refused name, a missing entry or
 *   one that leads outside; `dirError`'s
 */
async function pathBeneathModelDir(spec: ModelFileSpec, dirError: (e: unknown) => TritonError): Promise<{ root: string; pathHandle: FileHandle }> {
  checkPlatform(spec);
  relativeSegments(spec.name, spec.field);
  let root: string;
  try {
    root = await realpath(spec.modelDir);
  } catch (e) {
    throw dirError(e);
  }
  return { root, pathHandle: await openPathBeneath(root, spec) };
}

/**
 * Opens a config-named file for reading beneath its model directory (the module's rule).
 * The caller closes `handle`.
 * @throws TritonError INVALID_ARG naming `spec.field` and `spec.name`: a refused name, a file
 *   that does not exist or leads outside, a non-regular file, one over `spec.maxBytes`
 */
export async function openModelFile(spec: ModelFileSpec): Promise<OpenedModelFile> {
  const { root, pathHandle } = await pathBeneathModelDir(spec, (e) => err.modelDirUnreadable(spec.field, shown(spec.name), (e as { code?: string }).code));
  let handle: FileHandle | undefined;
  try {
    const st = await pathHandle.stat();
    const fdPath = await readlink(`/proc/self/fd/${pathHandle.fd}`);
    checkDescriptor(spec, root, st, fdPath);
    handle = await open(`/proc/self/fd/${pathHandle.fd}`, READ_FLAGS);
    const st2 = await handle.stat();
    if (st2.ino !== st.ino || st2.dev !== st.dev || !st2.isFile()) throw notInside(spec);
    if (st2.size > spec.maxBytes) throw tooLarge(spec, st2.size);
    return { handle, size: st2.size, realPath: fdPath, root };
  } catch (e) {
    await handle?.close().catch(() => undefined);
    throw e instanceof TritonError ? e : unreadable(spec, e);
  } finally {
    await pathHandle.close().catch(() => undefined);
  }
}

/**
 * The chunks of one read of a whole file, in order from offset 0, that stops one byte past
 * `spec.maxBytes` (so a file that grew past the cap is seen, and no more is read).
 */
class CappedRead {
  private readonly chunks: Buffer[] = [];
  /** Bytes read so far: the file position of the next read. */
  total = 0;
  constructor(private readonly spec: ModelFileSpec) {}

  /** A buffer for the next read: at most {@link CHUNK} bytes, and no more than the cap leaves plus one. */
  buffer(): Buffer {
    return Buffer.allocUnsafe(Math.min(CHUNK, this.spec.maxBytes + 1 - this.total));
  }

  /**
   * Records `n` bytes read into `buf`; false when `n` is 0 (the end of the file).
   * @throws TritonError INVALID_ARG (too large) once more than `spec.maxBytes` were read
   */
  took(buf: Buffer, n: number): boolean {
    if (n === 0) return false;
    this.total += n;
    if (this.total > this.spec.maxBytes) throw tooLarge(this.spec, this.total);
    this.chunks.push(n === buf.length ? buf : buf.subarray(0, n));
    return true;
  }

  /** The file's bytes. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.total);
  }
}

/**
 * Reads a config-named file whole, through {@link openModelFile}, off the event loop; at most
 * `spec.maxBytes` bytes are ever read (a file that grows past the cap while read is refused).
 * @throws TritonError INVALID_ARG as {@link openModelFile}, or for a read failure
 */
export async function readModelFile(spec: ModelFileSpec): Promise<Buffer> {
  return readOpenedModelFile(await openModelFile(spec), spec);
}

/**
 * Reads a file {@link openModelFile} opened, whole, and closes it; at most `spec.maxBytes` bytes
 * are ever read (a file that grows past the cap while read is refused).
 * @throws TritonError INVALID_ARG as {@link openModelFile}, or for a read failure
 */
export async function readOpenedModelFile(f: OpenedModelFile, spec: ModelFileSpec): Promise<Buffer> {
  try {
    const read = new CappedRead(spec);
    for (;;) {
      const buf = read.buffer();
      const { bytesRead } = await f.handle.read(buf, 0, buf.length, read.total);
      if (!read.took(buf, bytesRead)) return read.bytes();
    }
  } catch (e) {
    throw e instanceof TritonError ? e : unreadable(spec, e);
  } finally {
    await f.handle.close().catch(() => undefined);
  }
}

/**
 * The checked real path of a config-named file, for a library that opens files by path itself
 * (ONNX Runtime): {@link openModelFile}'s checks, then the descriptor is closed.
 * @throws TritonError INVALID_ARG as {@link openModelFile}
 */
export async function checkedModelFilePath(spec: ModelFileSpec): Promise<{ realPath: string; size: number; root: string }> {
  const f = await openModelFile(spec);
  await f.handle.close().catch(() => undefined);
  return { realPath: f.realPath, size: f.size, root: f.root };
}

/**
 * Whether a config-named entry beneath the model directory is a directory (Triton lets an ONNX
 * `default_model_filename` name a folder holding `model.onnx`); the same confinement as
 * {@link openModelFile}, on an `O_PATH` descriptor (nothing is opened for reading).
 * @throws TritonError INVALID_ARG as {@link openModelFile} for a refused name, a missing entry or
 *   one that leads outside
 */
export async function isModelDirectory(spec: ModelFileSpec): Promise<boolean> {
  const { root, pathHandle: h } = await pathBeneathModelDir(spec, () => notInside(spec));
  try {
    const st = await h.stat();
    const fdPath = await readlink(`/proc/self/fd/${h.fd}`);
    if (!beneath(fdPath, root) || fdPath === root) throw notInside(spec);
    return st.isDirectory();
  } catch (e) {
    throw e instanceof TritonError ? e : unreadable(spec, e);
  } finally {
    await h.close().catch(() => undefined);
  }
}

/**
 * {@link readModelFile}, synchronously: for callers that must answer at once and are not on the
 * main event loop (a sandbox's `read-file` host call on the v8 engine runs on the instance's
 * worker thread). Same rule, same errors.
 * @param root the model directory's real path, if the caller resolved it already
 */
export function readModelFileSync(spec: ModelFileSpec, root?: string): Buffer {
  checkPlatform(spec);
  relativeSegments(spec.name, spec.field);
  if (root === undefined) {
    try {
      root = realpathSync(spec.modelDir);
    } catch {
      throw err.modelDirUnreadable(spec.field, shown(spec.name));
    }
  }
  let target: string;
  try {
    target = realpathSync(candidate(root, spec));
  } catch (e) {
    if (e instanceof TritonError) throw e;
    throw notInside(spec);
  }
  if (!beneath(target, root)) throw notInside(spec);
  let pfd: number;
  try {
    pfd = openSync(target, PATH_FLAGS);
  } catch {
    throw notInside(spec);
  }
  let fd: number | undefined;
  try {
    const st = fstatSync(pfd);
    checkDescriptor(spec, root, st, readlinkSync(`/proc/self/fd/${pfd}`));
    fd = openSync(`/proc/self/fd/${pfd}`, READ_FLAGS);
    const st2 = fstatSync(fd);
    if (st2.ino !== st.ino || st2.dev !== st.dev || !st2.isFile()) throw notInside(spec);
    if (st2.size > spec.maxBytes) throw tooLarge(spec, st2.size);
    const read = new CappedRead(spec);
    for (;;) {
      const buf = read.buffer();
      if (!read.took(buf, readSync(fd, buf, 0, buf.length, read.total))) return read.bytes();
    }
  } catch (e) {
    throw e instanceof TritonError ? e : unreadable(spec, e);
  } finally {
    if (fd !== undefined) closeSync(fd);
    closeSync(pfd);
  }
}

/**
 * A byte cap from a config parameter (`parameters { key: <key> value { string_value: "<bytes>" } }`),
 * else `dflt`.
 * @throws TritonError INVALID_ARG for a value that is not an integer in [1, ceiling]
 */
export function byteCapParameter(
  parameters: Readonly<Record<string, { string_value: string } | undefined>>,
  key: string,
  dflt: number,
  ceiling: number,
): number {
  const v = parameters[key]?.string_value;
  if (v === undefined || v === '') return dflt;
  const n = /^[0-9]{1,16}$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > ceiling) throw err.byteCapInvalid(key, ceiling, shown(v));
  return n;
}
