/**
 * Triton's routing rules on Fastify (spec §1.1): exact paths, 405 `{"error":"Method Not Allowed"}`
 * for a wrong method on a known path, 404 `{"error":"Not Found"}` for anything else, errors as
 * `{"error": "<message>"}` with the status of their Triton error code (spec §1.2).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { AccessError, TritonError } from '../../contract/errors.js';
import { redactAbsolutePaths } from '../../contract/public-errors.js';
import { requestSatisfies, restrictedError, routeRestriction } from './restricted.js';
import { accessHttpStatus, httpStatusOf } from './status.js';
import { routeDoc } from './openapi/catalogue.js';
import { OPENAPI_CONFIG_KEY } from './openapi/types.js';

export type Handler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown> | unknown;

const ALL_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;

/**
 * Register `url` for every method; methods without a handler answer 405. A path whose parameter
 * segment is empty (`/v2/models//infer`) is not one of Triton's paths (each of its captures is
 * `[^/]+`): 404 `{"error":"Not Found"}`, whatever the method. The route carries its OpenAPI
 * description (openapi/catalogue.ts) in its config, for openapi/document.ts only.
 * @throws Error for a route no description covers, or whose described methods are not its handled ones
 */
export function route(app: FastifyInstance, url: string, handlers: { GET?: Handler; POST?: Handler }): void {
  const doc = routeDoc(url);
  if (!doc) throw new Error(`route ${url} has no OpenAPI description (frontend/http/openapi/catalogue.ts)`);
  for (const m of ['GET', 'POST'] as const)
    if ((handlers[m] === undefined) !== (doc[m] === undefined))
      throw new Error(`route ${url}: ${m} is ${handlers[m] ? 'handled but not described' : 'described but not handled'}`);
  // `--http-restricted-api` (restricted.ts): checked after authentication, before the method
  // check and before the body is read, as Triton checks it first in each handler. A path that is
  // not one of Triton's (empty segment, non-digit version) is left to the handler's 404.
  const restriction = routeRestriction(app, url);
  app.route({
    method: [...ALL_METHODS],
    url,
    config: { [OPENAPI_CONFIG_KEY]: doc },
    ...(restriction && {
      onRequest: (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
        if (hasEmptyParam(req.params) || parseVersion((req.params as { version?: string }).version) === undefined || requestSatisfies(req.raw, restriction))
          return done();
        done(restrictedError(restriction));
      },
    }),
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

/**
 * An HTTP answer built without a reply object, so Fastify's routes and the `/infer` fast path
 * (fast-path.ts) write the same status, headers (lower-case names, in order) and body.
 */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

/**
 * The answer to a Triton error: `{"error": message}` with its HTTP status (spec §1.2), `Retry-After`
 * on a 429, `WWW-Authenticate` on a 401. The message's absolute paths are redacted here, the last
 * step before it leaves (contract/public-errors.ts).
 */
/**
 * The HTTP status of an error and the headers that go with it (`retry-after` on a rate or quota
 * refusal, `www-authenticate` on a 401, a JSON content type): what every error answer shares.
 */
export function errorStatus(e: TritonError): { status: number; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  let status: number;
  if (e instanceof AccessError) {
    status = accessHttpStatus(e.kind);
    if (e.retryAfterS !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(e.retryAfterS)));
    if (status === 401) headers['www-authenticate'] = 'Bearer realm="warden"';
  } else {
    status = httpStatusOf(e.code);
  }
  headers['content-type'] = 'application/json';
  return { status, headers };
}

export function tritonErrorAnswer(e: TritonError): HttpAnswer {
  const { status, headers } = errorStatus(e);
  return { status, headers, body: JSON.stringify({ error: redactAbsolutePaths(e.message) }) };
}

/**
 * What the frontend answers for anything a handler threw (Fastify's error handler and the fast
 * path): a Triton error through `publicError` (host paths scrubbed); a framework 4xx (a `statusCode`
 * in 400–499) with its message; anything else is logged and answered as `publicError` makes it (500).
 */
export function errorAnswer(err: unknown, publicError: (e: unknown) => TritonError, logger: Pick<Logger, 'error'>): HttpAnswer {
  if (err instanceof TritonError) return tritonErrorAnswer(publicError(err));
  const fe = err as { statusCode?: number; message?: string };
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return {
      status: fe.statusCode,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: redactAbsolutePaths(fe.message ?? 'Bad Request') }),
    };
  }
  logger.error({ err }, 'unhandled error in HTTP handler');
  return tritonErrorAnswer(publicError(err));
}

/** Write `answer` through Fastify (its onSend hook adds `vary` and the body's `content-length`). */
export function sendAnswer(reply: FastifyReply, answer: HttpAnswer): FastifyReply {
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

/** Send a Triton error as `{"error": message}` with its HTTP status. */
/**
 * A request refused before its body was read (authentication, a rate or upload quota): the answer
 * closes the connection, so the client cannot keep pushing the rest of a large body for the server
 * to read and discard (a refused 15 MB upload then costs the server its headers, not its body).
 */
export function closeIfBodyPending(req: FastifyRequest, reply: FastifyReply): void {
  if (!req.raw.complete) reply.header('connection', 'close');
}

export function sendError(reply: FastifyReply, e: TritonError): FastifyReply {
  return sendAnswer(reply, tritonErrorAnswer(e));
}

/** Parse the `versions/{v}` path segment: digits only (else the path is unknown, 404). */
export function parseVersion(v: string | undefined): number | undefined {
  if (v === undefined) return -1;
  return /^[0-9]+$/.test(v) ? Number(v) : undefined;
}
