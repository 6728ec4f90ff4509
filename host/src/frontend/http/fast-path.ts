/**
 * The `/infer` fast path (DESIGN "Performance"): Node's HTTP `request` listener serves the common inference
 * request itself, ahead of Fastify, and hands every other request to Fastify's handler untouched.
 * Fastify's per-request machinery (router, content-type parser and its AsyncResource, the Request
 * and Reply objects, hook runners, onSend, the response's finish listeners) costs a `simple`
 * request more CPU than the inference; the fast path skips it and calls the same functions the
 * Fastify route calls, in the same order, so status, headers and body are the same
 * (test/frontend/http/fast-path.test.ts sends a matrix through both and compares):
 *   admission (../admission.ts: identify, then count against the one request rate) → readBody →
 *   inferAnswer (inferUnary: the target, decodeInferRequest / codec worker, renderInferResponse) →
 *   errorAnswer (publicError, the 429 tarpit) → `vary` and `content-length` as the onSend hook sets them.
 *
 * Claimed (spec §1.8–§1.13, §2): `POST /v2/models/{name}[/versions/{v}]/infer` with a plain name
 * (`[A-Za-z0-9_][A-Za-z0-9_.-]*`, ≤ 255 bytes: nothing to percent-decode), no query string, a
 * `Content-Length` under {@link OFFLOAD_BYTES}, no `Content-Encoding` or `Transfer-Encoding`, a
 * `Content-Type` that is absent, `application/json` or `application/octet-stream`, an
 * `Accept-Encoding` that chooses identity, the server not closing, client shared memory off, the
 * `inference` header when `--http-restricted-api` restricts that group (restricted.ts), and
 * (multi-tenant) credentials that authenticate. Anything else, including a failed authentication
 * (Fastify then authenticates again, audits and answers 401), goes to Fastify before a byte of the
 * body is read.
 */
import type { IncomingHttpHeaders, RequestListener, ServerResponse } from 'node:http';
import type { CancellationSignal, Principal } from '../../contract/types.js';
import { type Admission, type Caller, OPERATOR, overQuotaDelay } from '../admission.js';
import { readBody } from './body.js';
import { type InferRoute, matchInferUrl, plainRequest, writeAnswer } from './claim.js';
import { OFFLOAD_BYTES } from './codec/pool.js';
import type { FrontendContext } from './context.js';
import { connectionSignal, inferAnswer } from './infer.js';
import { type HttpAnswer, errorAnswer } from './routing.js';
import { requestSatisfies } from './restricted.js';

export { type InferRoute, matchInferUrl } from './claim.js';

/**
 * Requests this process's fast paths have claimed (served or answered with an error), for tests
 * and diagnostics: a request Fastify serves never counts. `threaded`: those of them a front-end
 * thread read and handed over its ring (threads/pool.ts), counted on the main thread.
 */
export const fastPathCounters = { claimed: 0, threaded: 0 };

export interface InferFastPathOptions {
  ctx: FrontendContext;
  /** The frontend's admission, shared with Fastify's tenancy hook (auth.ts). */
  admission: Admission;
  /** True once the server is closing: requests then go to Fastify, which answers 503 (return503OnClosing). */
  closing: () => boolean;
}

/**
 * The answer to `err` as Fastify's error handler gives it, after the tarpit for a 429.
 * @param bodyError the body could not be read: Fastify's content-type parser then adds
 *   `connection: close` first (the client may still be sending)
 * @returns the answer, or a promise of it when it is held back (429)
 */
export function failAnswer(ctx: FrontendContext, err: unknown, bodyError = false): HttpAnswer | Promise<HttpAnswer> {
  const build = (): HttpAnswer => {
    const a = errorAnswer(err, (e) => ctx.api.publicError(e), ctx.logger);
    if (bodyError) a.headers = { connection: 'close', ...a.headers };
    return a;
  };
  const delay = overQuotaDelay(err);
  return delay ? delay.then(build) : build();
}

/**
 * A claimed `/infer` request whose body has been read and whose caller is authenticated and
 * admitted: inferAnswer, every error answered by {@link failAnswer}. The one implementation
 * behind the main thread's fast path and the front-end threads' ring.
 * @param headers the request headers (`inference-header-content-length` is read)
 * @returns the answer; never rejects
 */
export async function serveClaimed(
  ctx: FrontendContext,
  route: InferRoute,
  principal: Principal,
  body: Buffer,
  headers: IncomingHttpHeaders,
  signal: CancellationSignal,
): Promise<HttpAnswer> {
  try {
    return await inferAnswer(ctx, principal, route.model, route.version, () => body, headers, signal);
  } catch (e) {
    return failAnswer(ctx, e);
  }
}

/**
 * Node's HTTP request listener with the fast path in front of `fallback` (Fastify's handler).
 * Never throws and never rejects: an error is answered as Fastify's error handler answers it.
 */
export function inferFastPath(opts: InferFastPathOptions, fallback: RequestListener): RequestListener {
  const { ctx, admission, closing } = opts;
  const inference = ctx.restricted?.inference;

  /** Write `a` (or, once held back, what it resolves to) unless the client went away meanwhile. */
  const answer = (res: ServerResponse, a: HttpAnswer | Promise<HttpAnswer>): void => {
    if (a instanceof Promise) {
      void a.then((v) => {
        if (!res.destroyed && !res.headersSent) answer(res, v);
      });
      return;
    }
    try {
      writeAnswer(res, a);
    } catch (e) {
      ctx.logger.error({ err: e }, 'HTTP fast path could not write its answer');
      res.destroy();
    }
  };

  const serve = (req: Parameters<RequestListener>[0], res: ServerResponse, route: InferRoute, caller: Caller): void => {
    fastPathCounters.claimed++;
    try {
      admission.count(caller);
    } catch (e) {
      return answer(res, failAnswer(ctx, e));
    }
    readBody(req, ctx.maxInputSize, (err, body) => {
      if (err) return answer(res, failAnswer(ctx, err, true));
      serveClaimed(ctx, route, caller.principal, body!, req.headers, connectionSignal(res)).then((a) => answer(res, a));
    });
  };

  return (req, res) => {
    const route = req.method === 'POST' && !closing() ? matchInferUrl(req.url) : undefined;
    // Without the `inference` header (--http-restricted-api), Fastify answers 403 (restricted.ts).
    if (!route || !plainRequest(req, OFFLOAD_BYTES) || (inference !== undefined && !requestSatisfies(req, inference))) return fallback(req, res);
    if (!admission.multiTenant) return serve(req, res, route, OPERATOR);
    // Credentials that do not authenticate go to Fastify, which counts the failure and answers 401.
    void admission.identify(req.headers.authorization).then((caller) => (caller && !closing() ? serve(req, res, route, caller) : fallback(req, res)));
  };
}
