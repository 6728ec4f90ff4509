/**
 * Request bodies: decompression per `Content-Encoding` (spec §1.14), bounded by
 * `--http-max-input-size`.
 */
import { gunzipSync, inflateSync } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { TritonError, invalidArg } from '../../core/errors.js';

/** True for a JSON object (not null, not an array). */
export const isJsonObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Client shared memory is off (Triton's default since 2026-04, spec §3.3): UNSUPPORTED (501). */
export function clientShmDisabled(): TritonError {
  return new TritonError('UNSUPPORTED', "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.");
}

/** The raw body as a Buffer, decompressed. @throws TritonError INVALID_ARG for unknown encodings or oversize bodies. */
export function requestBody(req: FastifyRequest, maxInputSize: number): Buffer {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const enc = String(req.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
  try {
    if (enc === 'gzip') return gunzipSync(raw, { maxOutputLength: maxInputSize });
    if (enc === 'deflate') return inflateSync(raw, { maxOutputLength: maxInputSize });
  } catch (e) {
    throw invalidArg(`failed to decompress the request body (${enc}): ${(e as Error).message}`);
  }
  if (enc !== 'identity' && enc !== '') throw invalidArg(`unsupported Content-Encoding '${enc}', only 'gzip' and 'deflate' are supported`);
  return raw;
}

/** Parse an optional JSON body of a control endpoint; empty = undefined. */
export function optionalJson(req: FastifyRequest, maxInputSize: number): unknown {
  const body = requestBody(req, maxInputSize);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw invalidArg(`failed to parse the request JSON buffer: ${(e as Error).message}`);
  }
}
