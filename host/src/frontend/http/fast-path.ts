/**
 * The `/infer` fast path (issue 14): Node's HTTP `request` listener serves the common inference
 * request itself, ahead of Fastify, and hands every other request to Fastify's handler untouched.
 * Fastify's per-request machinery (router, content-type parser and its AsyncResource, the Request
 * and Reply objects, hook runners, onSend, the response's finish listeners) costs a `simple`
 * request more CPU than the inference; the fast path skips it and calls the same functions the
 * Fastify route calls, in the same order, so status, headers and body are the same
 * (test/http/fast-path.test.ts sends a matrix through both and compares):
 *   tenancy (registry.authenticate, the shared TenantRequestRate) → readBody → inferTarget →
 *   inferAnswer (decodeInferRequest / codec worker, inferAndCollect, renderInferResponse) →
 *   errorAnswer (publicError, the 429 tarpit) → `vary` and `content-length` as the onSend hook sets them.
 *
 * Claimed (spec §1.8–§1.13, §2): `POST /v2/models/{name}[/versions/{v}]/infer` with a plain name
 * (`[A-Za-z0-9_][A-Za-z0-9_.-]*`, ≤ 255 bytes: nothing to percent-decode), no query string, a
 * `Content-Length` under {@link OFFLOAD_BYTES}, no `Content-Encoding` or `Transfer-Encoding`, a
 * `Content-Type` that is absent, `application/json` or `application/octet-stream`, an
 * `Accept-Encoding` that chooses identity, the server not closing, client shared memory off, and
 * (multi-tenant) credentials that authenticate. Anything else, including a failed authentication
 * (Fastify then authenticates again, audits and answers 401), goes to Fastify before a byte of the
 * body is read.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { SINGLE_USER, type Principal } from '../../core/types.js';
import type { TenantRequestRate } from '../../tenancy/request-rate.js';
import type { TenantConfig } from '../../tenancy/types.js';
import { readBody } from './body.js';
import { OFFLOAD_BYTES } from './codec/pool.js';
import { chooseEncoding } from './compression.js';
import type { FrontendContext } from './context.js';
import { connectionSignal, inferAnswer, inferTarget } from './infer.js';
import { type HttpAnswer, errorAnswer, overQuotaDelay } from './routing.js';

/** The infer URLs the fast path claims; find-my-way maps exactly these to the `/infer` routes with the same parameters. */
const INFER_URL = /^\/v2\/models\/([A-Za-z0-9_][A-Za-z0-9_.-]{0,254})(?:\/versions\/([0-9]{1,15}))?\/infer$/;

/** A claimed infer URL: the model name and the requested version (-1: the model's version policy). */
export interface InferRoute {
  model: string;
  version: number;
}

/** Match a request URL against {@link INFER_URL}. @returns undefined for every URL the fast path leaves to Fastify */
export function matchInferUrl(url: string | undefined): InferRoute | undefined {
  if (url === undefined || url.length > 320) return undefined;
  const m = INFER_URL.exec(url);
  if (!m) return undefined;
  return { model: m[1]!, version: m[2] === undefined ? -1 : Number(m[2]) };
}

/**
 * Requests this process's fast paths have claimed (served or answered with an error), for tests
 * and diagnostics: a request Fastify serves never counts.
 */
export const fastPathCounters = { claimed: 0 };

export interface InferFastPathOptions {
  ctx: FrontendContext;
  /** The request-rate windows Fastify's tenancy hook counts in (multi-tenant mode). */
  rate: TenantRequestRate;
  /** True once the server is closing: requests then go to Fastify, which answers 503 (return503OnClosing). */
  closing: () => boolean;
}

/**
 * Whether the fast path may serve `req` with Fastify's exact answer (headers only; the URL is
 * matched separately). Every condition is a header Fastify's path would act on differently.
 */
function plainRequest(req: IncomingMessage): boolean {
  const h = req.headers;
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined) return false;
  const length = h['content-length'];
  if (length === undefined || !(Number(length) < OFFLOAD_BYTES)) return false;
  const type = h['content-type'];
  if (type !== undefined && type !== 'application/json' && type !== 'application/octet-stream') return false;
  const accept = h['accept-encoding'];
  return accept === undefined || chooseEncoding(accept) === 'identity';
}

/** Write `answer` as the Fastify path does: its headers, then `vary` (compression's onSend) and `content-length`. */
function writeAnswer(res: ServerResponse, answer: HttpAnswer): void {
  const headers = answer.headers;
  headers.vary = 'Accept-Encoding';
  headers['content-length'] = String(Buffer.byteLength(answer.body));
  res.writeHead(answer.status, headers);
  res.end(answer.body);
}

/**
 * Node's HTTP request listener with the fast path in front of `fallback` (Fastify's handler).
 * Never throws and never rejects: an error is answered as Fastify's error handler answers it.
 */
export function inferFastPath(opts: InferFastPathOptions, fallback: RequestListener): RequestListener {
  const { ctx, rate, closing } = opts;
  const publicError = (e: unknown) => ctx.api.publicError(e);

  /**
   * Answer `err` as Fastify's error handler does (after the tarpit for a 429). `bodyError`: the
   * body could not be read, and Fastify's content-type parser then adds `connection: close`
   * first (the client may still be sending).
   */
  const fail = (res: ServerResponse, err: unknown, bodyError = false): void => {
    const build = (): HttpAnswer => {
      const a = errorAnswer(err, publicError, ctx.logger);
      if (bodyError) a.headers = { connection: 'close', ...a.headers };
      return a;
    };
    const delay = overQuotaDelay(err);
    if (delay) {
      void delay.then(() => {
        if (!res.destroyed && !res.headersSent) answer(res, build);
      });
      return;
    }
    answer(res, build);
  };

  const answer = (res: ServerResponse, build: () => HttpAnswer): void => {
    try {
      writeAnswer(res, build());
    } catch (e) {
      ctx.logger.error({ err: e }, 'HTTP fast path could not write its answer');
      res.destroy();
    }
  };

  const serve = (req: IncomingMessage, res: ServerResponse, route: InferRoute, principal: Principal, tenant: TenantConfig | undefined): void => {
    fastPathCounters.claimed++;
    try {
      if (tenant) rate.admit(tenant);
    } catch (e) {
      return fail(res, e);
    }
    readBody(req, ctx.maxInputSize, (err, body) => {
      if (err) return fail(res, err, true);
      let target;
      try {
        target = inferTarget(ctx, principal, route.model, route.version);
      } catch (e) {
        return fail(res, e);
      }
      inferAnswer(ctx, principal, route.model, target, body!, req.headers, connectionSignal(res)).then(
        (a) => answer(res, () => a),
        (e: unknown) => fail(res, e),
      );
    });
  };

  return (req, res) => {
    const route = req.method === 'POST' && !closing() ? matchInferUrl(req.url) : undefined;
    if (!route || !plainRequest(req)) return fallback(req, res);
    const tenants = ctx.tenants;
    if (!tenants) return serve(req, res, route, SINGLE_USER, undefined);
    tenants.authenticate(req.headers.authorization).then(
      (r) => (r.ok && !closing() ? serve(req, res, route, r.principal, r.tenant) : fallback(req, res)),
      () => fallback(req, res),
    );
  };
}
