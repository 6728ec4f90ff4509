/**
 * Request bodies: decompression per `Content-Encoding` (spec §1.14), bounded by
 * `--http-max-input-size`.
 */
import { gunzipSync, inflateSync } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { invalidArg } from '../../core/errors.js';

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
