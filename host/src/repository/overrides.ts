/**
 * File overrides of the load API (spec §3.1): `"file:<version>/<path>": "<base64>"` parameters
 * form an override model directory, written by the upload store (repository/upload-store.ts) under
 * a directory Warden owns. Warden's extension `"file_sha256:<version>/<path>": "<hex>"` names a
 * file by its SHA-256 instead of sending it (docs/tenancy.md "Uploads by digest").
 */
import * as err from './upload-store.errors.js';
import { checkRelativePath } from './upload-store.js';

/**
 * The load API's `config` parameter (spec §3.1): a JSON model config, as text.
 * @throws TritonError INVALID_ARG (Warden's text: Triton's core rejects it while parsing) for text that is not JSON
 */
export function parseConfigOverride(model: string, config: string): unknown {
  try {
    return JSON.parse(config);
  } catch (e) {
    throw err.configOverrideNotJson(model, (e as Error).message);
  }
}

/** Decoded file overrides: relative path (components separated by '/') → contents. */
export type FileOverrides = Map<string, Uint8Array>;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Validate one `file:` key and its base64 value. The path must be relative to the model directory
 * and made of plain file names (no absolute paths, '.', '..', '\\', empty components, NUL or other
 * control characters).
 * @throws TritonError INVALID_ARG for a bad path or non-base64 content.
 */
export function decodeFileOverride(key: string, value: unknown): [string, Uint8Array] {
  if (typeof value !== 'string') throw err.overrideNotString(key);
  const rel = fileOverridePath(key);
  // the common case without a regex over megabytes: canonical base64 is what encoding its own
  // decoding gives back (no whitespace, '=' only as padding, zero trailing bits), and passes the
  // checks below; anything else takes them
  const decoded = Buffer.from(value, 'base64');
  if (decoded.toString('base64') === value) {
    // a small one sits in Buffer's shared pool: copied out, as the bytes may be transferred
    const own = decoded.byteOffset === 0 && decoded.byteLength === decoded.buffer.byteLength;
    return [rel, own ? new Uint8Array(decoded.buffer, 0, decoded.byteLength) : new Uint8Array(decoded)];
  }
  const compact = value.replace(/\s+/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) {
    throw err.overrideNotBase64(rel);
  }
  return [rel, new Uint8Array(Buffer.from(compact, 'base64'))];
}

/** Key prefix of Warden's upload by digest: `"file_sha256:<version>/<path>": "<64 hex>"`. */
export const FILE_DIGEST_PREFIX = 'file_sha256:';

/** Files named by content (Warden's extension of spec §3.1): relative path → SHA-256, lowercase hex. */
export type FileDigests = Map<string, string>;

/** A stored blob a load links without reading it: its SHA-256 (lowercase hex) and size in bytes. */
export interface HeldBlob {
  readonly sha256: string;
  readonly size: number;
}

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/**
 * Validate one `file_sha256:<version>/<path>` key and its value: a plain relative path (the rules
 * of `file:`) and the file's SHA-256 as 64 hex digits (either case; returned lowercase). Whether
 * the caller holds those bytes is decided later (lifecycle/upload-source.ts).
 * @throws TritonError INVALID_ARG for a bad path, or a value that is not a SHA-256 digest
 */
export function decodeFileDigest(key: string, value: unknown): [string, string] {
  const rel = key.slice(FILE_DIGEST_PREFIX.length);
  checkRelativePath(rel);
  if (typeof value !== 'string' || !SHA256_HEX.test(value)) throw err.fileDigestInvalid(JSON.stringify(rel));
  return [rel, value.toLowerCase()];
}

/**
 * A load's files by digest, refusing a path also sent as bytes.
 * @throws TritonError INVALID_ARG for a path in both
 */
export function fileDigestsOf(entries: Iterable<[string, string]>, files: ReadonlyMap<string, unknown>): FileDigests {
  const out: FileDigests = new Map();
  for (const [rel, hex] of entries) {
    if (files.has(rel)) throw err.fileDigestAndBytes(JSON.stringify(rel));
    out.set(rel, hex);
  }
  return out;
}

/**
 * The relative path of a `file:<version>/<path>` key (gRPC sends the contents as raw `bytes_param`,
 * HTTP as base64: both check the path here).
 * @throws TritonError INVALID_ARG for a bad path (see {@link decodeFileOverride})
 */
export function fileOverridePath(key: string): string {
  const rel = key.slice('file:'.length);
  checkRelativePath(rel);
  return rel;
}
