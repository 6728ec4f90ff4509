/**
 * Triton's routing rules on Fastify (spec §1.1): exact paths, 405 `{"error":"Method Not Allowed"}`
 * for a wrong method on a known path, 404 `{"error":"Not Found"}` for anything else, errors as
 * `{"error": "<message>"}` with the status of their Triton error code (spec §1.2).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AccessError, TritonError, httpStatusOf } from '../../core/errors.js';

export type Handler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown> | unknown;

const ALL_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;

/**
 * Register `url` for every method; methods without a handler answer 405. A path whose parameter
 * segment is empty (`/v2/models//infer`) is not one of Triton's paths (each of its captures is
 * `[^/]+`): 404 `{"error":"Not Found"}`, whatever the method.
 */
export function route(app: FastifyInstance, url: string, handlers: { GET?: Handler; POST?: Handler }): void {
  app.route({
    method: [...ALL_METHODS],
    url,
    // Not async: the handler's own promise (if any) is what Fastify waits on, and a synchronous
    // answer costs no promise at all. A synchronous throw reaches Fastify's error handler as a
    // rejection would.
    handler: (req, reply) => {
      if (hasEmptyParam(req.params)) return reply.code(404).type('application/json').send('{"error":"Not Found"}');
      const h = handlers[req.method as 'GET' | 'POST'];
      if (!h) return reply.code(405).send({ error: 'Method Not Allowed' });
      return h(req, reply);
    },
  });
}

/** Whether a route's parameters hold an empty segment (no array allocated per request). */
function hasEmptyParam(params: unknown): boolean {
  if (params === null || typeof params !== 'object') return false;
  for (const k in params) if ((params as Record<string, unknown>)[k] === '') return true;
  return false;
}

/** Send a Triton error as `{"error": message}` with its HTTP status. */
export function sendError(reply: FastifyReply, e: TritonError): FastifyReply {
  if (e instanceof AccessError) {
    reply.code(e.httpStatus);
    if (e.retryAfterS !== undefined) reply.header('Retry-After', String(Math.max(1, Math.ceil(e.retryAfterS))));
    if (e.httpStatus === 401) reply.header('WWW-Authenticate', 'Bearer realm="warden"');
  } else {
    reply.code(httpStatusOf(e.code));
  }
  return reply.type('application/json').send(JSON.stringify({ error: e.message }));
}

/** Parse the `versions/{v}` path segment: digits only (else the path is unknown, 404). */
export function parseVersion(v: string | undefined): number | undefined {
  if (v === undefined) return -1;
  return /^[0-9]+$/.test(v) ? Number(v) : undefined;
}
