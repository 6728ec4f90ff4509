/**
 * File overrides of the load API (spec §3.1): `"file:<version>/<path>": "<base64>"` parameters
 * form an override model directory, written by the upload store (repository/upload-store.ts) under
 * a directory Warden owns.
 */
import { invalidArg } from '../core/errors.js';
import { checkRelativePath } from './upload-store.js';

/**
 * The load API's `config` parameter (spec §3.1): a JSON model config, as text.
 * @throws TritonError INVALID_ARG (Warden's text: Triton's core rejects it while parsing) for text that is not JSON
 */
export function parseConfigOverride(model: string, config: string): unknown {
  try {
    return JSON.parse(config);
  } catch (e) {
    throw invalidArg(`failed to load '${model}': invalid 'config' parameter, not JSON: ${(e as Error).message}`);
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
  if (typeof value !== 'string') throw invalidArg(`parameter '${key}' must be a base64 string`);
  const rel = fileOverridePath(key);
  const compact = value.replace(/\s+/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) {
    throw invalidArg(`file override '${rel}' is not valid base64`);
  }
  return [rel, new Uint8Array(Buffer.from(compact, 'base64'))];
}

/** Characters of base64 text checked and decoded per turn of the event loop by {@link decodeFileOverrideAsync}. */
export const DECODE_CHUNK_CHARS = 256 * 1024;

const BASE64_BODY = /^[A-Za-z0-9+/]*$/;
const WHITESPACE = /\s/;

/**
 * {@link decodeFileOverride} in bounded steps (DESIGN "Multi-tenancy": an upload must not stall
 * other requests): the text is checked and decoded {@link DECODE_CHUNK_CHARS} characters at a
 * time, yielding to the event loop between chunks, so a 15 MB file costs other requests a few
 * milliseconds at a time instead of its whole decode at once. Same result and errors.
 * @throws TritonError INVALID_ARG for a bad path or non-base64 content.
 */
export async function decodeFileOverrideAsync(key: string, value: unknown): Promise<[string, Uint8Array]> {
  if (typeof value !== 'string') throw invalidArg(`parameter '${key}' must be a base64 string`);
  const rel = fileOverridePath(key);
  const bad = () => invalidArg(`file override '${rel}' is not valid base64`);
  const out = Buffer.allocUnsafe(Math.ceil(value.length / 4) * 3);
  let written = 0;
  let carry = '';
  let padded = false;
  let compactLength = 0;
  for (let at = 0; at < value.length; at += DECODE_CHUNK_CHARS) {
    if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    let chunk = value.slice(at, at + DECODE_CHUNK_CHARS);
    if (WHITESPACE.test(chunk)) chunk = chunk.replace(/\s+/g, '');
    if (chunk.length === 0) continue;
    if (padded) throw bad(); // text after the padding
    compactLength += chunk.length;
    const pad = chunk.search(/=/);
    if (pad >= 0) {
      if (!/^={1,2}$/.test(chunk.slice(pad))) throw bad();
      padded = true;
    }
    if (!BASE64_BODY.test(pad >= 0 ? chunk.slice(0, pad) : chunk)) throw bad();
    const text = carry + chunk;
    const whole = padded ? text.length : text.length - (text.length % 4);
    written += out.write(text.slice(0, whole), written, 'base64');
    carry = text.slice(whole);
  }
  if (compactLength % 4 === 1) throw bad();
  if (carry.length > 0) written += out.write(carry, written, 'base64');
  return [rel, new Uint8Array(out.buffer, out.byteOffset, written)];
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
