/**
 * Response compression (spec §1.14): a reply is gzip- or deflate-compressed when the request's
 * `Accept-Encoding` prefers one of them (q-values honoured, `identity` and `*` included), with
 * `Content-Encoding` set. `Inference-Header-Content-Length` keeps the uncompressed JSON length.
 */
import { promisify } from 'node:util';
import { deflate, gzip } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';

const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);

export type ResponseEncoding = 'gzip' | 'deflate' | 'identity';

/**
 * The encoding to answer with for an `Accept-Encoding` value: the supported coding (gzip,
 * deflate) with the highest q > 0, the first listed on a tie, unless `identity` is given a higher
 * q; `*` stands for codings not named. Absent or nothing acceptable: identity.
 */
export function chooseEncoding(header: string | string[] | undefined): ResponseEncoding {
  if (header === undefined) return 'identity';
  const q = new Map<string, number>();
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [name, ...params] = part.trim().split(';');
    const coding = name!.trim().toLowerCase();
    if (!coding) continue;
    let weight = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m) weight = Number(m[1]);
    }
    if (!Number.isFinite(weight)) weight = 0;
    if (!q.has(coding)) q.set(coding, weight);
  }
  const star = q.get('*');
  const weightOf = (c: string) => q.get(c) ?? star;
  let best: ResponseEncoding = 'identity';
  let bestQ = 0;
  // Listed order breaks ties: walk the header's codings first, then the ones `*` covers.
  const order = [...q.keys(), 'gzip', 'deflate'];
  for (const c of order) {
    if (c !== 'gzip' && c !== 'deflate') continue;
    const w = weightOf(c);
    if (w !== undefined && w > bestQ) {
      best = c;
      bestQ = w;
    }
  }
  if (best === 'identity') return 'identity';
  const identityQ = q.get('identity');
  return identityQ !== undefined && identityQ > bestQ ? 'identity' : best;
}

/**
 * Routes whose successful answers are compressed: inference and generate, as Triton's
 * `http_server.cc` does (spec §1.14). Everything else — metadata, config, statistics, health, the
 * repository index, every error — goes out uncompressed whatever `Accept-Encoding` says.
 */
const COMPRESSED_ROUTE = /\/(infer|generate)$/;

/**
 * onSend step: compress `payload` (string or Buffer) of a successful infer or generate answer
 * ({@link COMPRESSED_ROUTE}) when the client asked for it. Returns the
 * payload itself, synchronously, when nothing is to be compressed (every `simple`-sized reply
 * without `Accept-Encoding`), so the hook adds no promise and no tick to the hot path; a promise
 * of the compressed bytes otherwise.
 */
export function compressReply(req: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
  if (reply.statusCode >= 400 || !COMPRESSED_ROUTE.test(req.routeOptions?.url ?? '')) return payload;
  const enc = chooseEncoding(req.headers['accept-encoding']);
  reply.header('vary', 'Accept-Encoding');
  if (enc === 'identity' || reply.hasHeader('content-encoding')) return payload;
  return (enc === 'gzip' ? gzipAsync(payload) : deflateAsync(payload)).then((out) => {
    reply.header('content-encoding', enc);
    reply.removeHeader('content-length');
    return out;
  });
}
