/**
 * Request bodies: decompression per `Content-Encoding` (spec §1.14), bounded by
 * `--http-max-input-size`.
 */
import type { IncomingMessage } from 'node:http';
import { gunzipSync, inflateSync } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { TritonError } from '../../contract/errors.js';
import { parseRequestJson } from './json-text.js';
import * as httpErrors from './http.errors.js';

/** True for a JSON object (not null, not an array). */
export const isJsonObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Client shared memory is off (Triton's default since 2026-04, spec §3.3): UNSUPPORTED (501). */
export { clientShmDisabled } from '../../dataplane/shared-memory.js';

/**
 * Most non-empty chunks a chunked request body may arrive in, Triton's cap (server
 * `http_server.cc` kMaxChunkedChunks): each chunk costs a callback, so a body of a million
 * one-byte chunks is refused early. Counted as Node's HTTP parser delivers the body: one piece per
 * chunk, or more for a chunk split across socket reads, so every body Triton refuses is refused
 * and a body whose large chunks straddle reads may be refused a little before Triton would.
 */
export const MAX_BODY_CHUNKS = 1 << 16;

/** Triton's text for a chunked body over {@link MAX_BODY_CHUNKS} (INVALID_ARG, 400; the connection is closed). */
export function chunkLimitError(): TritonError {
  return httpErrors.bodyTooManyChunks(MAX_BODY_CHUNKS);
}

/**
 * Read a request body into one Buffer, at most `maxInputSize` bytes: chunks are copied into a
 * buffer preallocated from `Content-Length` (or grown by doubling, never past the limit), so a
 * body of many tiny chunks costs no more memory than its size; a chunked body of more than
 * {@link MAX_BODY_CHUNKS} chunks is refused. On an error the rest of the body is read and dropped.
 * `done` is called exactly once. Callback style (Fastify's content-type parser `done`), so a
 * request costs no promise and no microtask hop between its last chunk and its handler.
 * @param done `(null, body)`, or `(error)`: TritonError INVALID_ARG (size limit, chunk cap), or
 *   the stream's own error
 */
export function readBody(payload: IncomingMessage, maxInputSize: number, done: (err: Error | null, body?: Buffer) => void): void {
  const declared = Number(payload.headers['content-length']);
  const te = payload.headers['transfer-encoding'];
  const chunked = te !== undefined && /chunked/i.test(String(te));
  if (!chunked && Number.isFinite(declared) && declared > maxInputSize) {
    payload.resume();
    done(httpErrors.requestTooLarge(declared, maxInputSize));
    return;
  }
  let buf = Buffer.allocUnsafe(!chunked && Number.isFinite(declared) && declared >= 0 ? declared : Math.min(maxInputSize, 64 * 1024));
  let length = 0;
  let chunks = 0;
  let finished = false;
  const fail = (e: TritonError) => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    payload.on('error', () => undefined);
    payload.resume(); // drain and drop the rest
    finished = true;
    done(e);
  };
  const onData = (chunk: Buffer) => {
    if (chunked && chunk.length > 0 && ++chunks > MAX_BODY_CHUNKS) return fail(chunkLimitError());
    const need = length + chunk.length;
    if (need > maxInputSize) return fail(httpErrors.requestTooLarge(need, maxInputSize));
    if (need > buf.length) {
      const grown = Buffer.allocUnsafe(Math.min(maxInputSize, Math.max(need, buf.length * 2)));
      buf.copy(grown, 0, 0, length);
      buf = grown;
    }
    chunk.copy(buf, length);
    length = need;
  };
  const onEnd = () => {
    if (finished) return;
    finished = true;
    done(null, length === buf.length ? buf : buf.subarray(0, length));
  };
  const onError = (e: Error) => {
    if (finished) return;
    finished = true;
    done(e);
  };
  payload.on('data', onData);
  payload.once('end', onEnd);
  payload.once('error', onError);
}

/** The raw body as a Buffer, decompressed. @throws TritonError INVALID_ARG for unknown encodings or oversize bodies. */
export function requestBody(req: FastifyRequest, maxInputSize: number): Buffer {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const enc = String(req.headers['content-encoding'] ?? 'identity')
    .toLowerCase()
    .trim();
  try {
    if (enc === 'gzip') return gunzipSync(raw, { maxOutputLength: maxInputSize });
    if (enc === 'deflate') return inflateSync(raw, { maxOutputLength: maxInputSize });
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw httpErrors.requestTooLarge(`more than ${maxInputSize}`, maxInputSize);
    throw httpErrors.bodyDecompressFailed(enc, (e as Error).message);
  }
  if (enc !== 'identity' && enc !== '') throw httpErrors.bodyEncodingUnsupported(enc);
  return raw;
}

/** Parse an optional JSON body of a control endpoint; empty = undefined. */
export function optionalJson(req: FastifyRequest, maxInputSize: number): unknown {
  const body = requestBody(req, maxInputSize);
  if (body.length === 0) return undefined;
  return parseRequestJson(body);
}
