/**
 * The HTTP frontend: Triton's HTTP/REST protocol on Fastify (spec §1–§3). Routes follow Triton's
 * dispatch table (spec §1.1); every error leaves as `{"error": ...}` with Triton's status.
 */
import { ERROR_CODES, TritonError } from '../../contract/errors.js';
import { type IncomingHttpHeaders, type IncomingMessage, type RequestListener, type Server, type ServerOptions, createServer } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { modelConfigToJson } from '../../config/index.js';
import { optionalJson, readBody } from './body.js';
import { installSharedMemoryRoutes } from './shared-memory.js';
import { compressReply } from './compression.js';
import { SINGLE_USER } from '../../contract/types.js';
import { installTenancy, requestPrincipal } from './auth.js';
import type { FrontendContext, HttpFrontendOptions, PrincipalOf } from './context.js';
import { handleGenerate, handleGenerateStream } from './generate.js';
import { handleInfer } from './infer.js';
import { connectionsCheckingInterval } from './limits.js';
import { CodecPool } from './codec/pool.js';
import { handleIndex, handleLoad, handleUnload } from './repository.js';
import { closeIfBodyPending, errorAnswer, parseVersion, route, sendAnswer } from './routing.js';
import { failAnswer, fastPathCounters, inferFastPath, serveClaimed } from './fast-path.js';
import type { FrontendThreadData, RingRequest } from './threads/messages.js';
import type { HttpAnswer } from './routing.js';
import type { CancellationSignal } from '../../contract/types.js';
import { Admission, overQuotaDelay } from '../admission.js';
import { answerClientError } from './claim.js';
import { installTraceRoutes } from './trace.js';
import { restrictRoutes } from './restricted.js';
import type { Restriction } from '../restricted.js';
import { repositoryNameUnsupported } from '../repository-request.errors.js';
import { installOpenAIRoutes, isOpenAIPath, openaiErrorAnswer, openaiErrorBody } from '../openai/routes.js';
import { logSince } from './model-log.js';
import { OPENAPI_PATH, describeRoutes, openapiHandler } from './openapi/document.js';
import { handleTenants } from './tenants.js';
import { installConsole, isConsolePath } from '../console/routes.js';

/** How long a 429 (rate or in-flight quota exceeded) is held before it is sent, ms (shared with gRPC). */
export { OVER_QUOTA_DELAY_MS } from '../../tenancy/request-rate.js';

type ModelParams = { model: string; version?: string };

/**
 * The HTTP/1.1 server Fastify would create for `options` (fastify/lib/server.js getServerInstance),
 * with `listener` as its request listener: Fastify's `serverFactory` hook, so the `/infer` fast
 * path sees each request first and the server's timeouts stay Fastify's.
 */
function createHttp1Server(options: Record<string, unknown>, listener: RequestListener): Server {
  const o = options as { http?: ServerOptions; keepAliveTimeout: number; requestTimeout: number; connectionTimeout: number; maxRequestsPerSocket: number };
  const server = createServer(o.http ?? {}, listener);
  server.keepAliveTimeout = o.keepAliveTimeout;
  server.requestTimeout = o.requestTimeout;
  server.setTimeout(o.connectionTimeout);
  if (o.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = o.maxRequestsPerSocket;
  return server;
}

/** The HTTP frontend: the Fastify app and what front-end threads (threads/pool.ts) need from it. */
export interface HttpFrontend {
  app: FastifyInstance;
  /** Whether plain `/infer` requests may be claimed ahead of Fastify (the fast path is on). */
  claims: boolean;
  /** `--http-restricted-api`'s `inference` restriction: only requests holding it may be claimed (restricted.ts). */
  claimRestriction: Restriction | undefined;
  /**
   * A claimed `/infer` request a front-end thread read: authenticated (multi-tenant), admitted,
   * then fast-path.ts#serveClaimed. @returns undefined when Fastify must answer it (closing,
   * failed authentication: it audits and answers 401); never rejects
   */
  serveRing(r: RingRequest, signal: CancellationSignal): Promise<HttpAnswer | undefined>;
  /** The public server's request listener (the fast path ahead of Fastify's handler), once ready. */
  listener(): RequestListener;
  /** The public server's settings, for the front-end threads' own servers. */
  serverSettings(): FrontendThreadData['server'];
  /**
   * The answer to an error the native data path met in a backend (`code`: TRITONSERVER_Error_Code):
   * the same answer the TypeScript path writes for it (status, public text).
   */
  nativeErrorAnswer(code: number, message: string): HttpAnswer;
}

/** Build the Fastify app (not listening). */
export async function buildHttpApp(opts: HttpFrontendOptions): Promise<FastifyInstance> {
  return (await buildHttpFrontend(opts)).app;
}

/** Build the HTTP frontend (not listening). */
export async function buildHttpFrontend(opts: HttpFrontendOptions): Promise<HttpFrontend> {
  const { api } = opts;
  const who: PrincipalOf = opts.tenants ? requestPrincipal : () => SINGLE_USER;
  const ctx: FrontendContext = { ...opts, principalOf: who, codec: new CodecPool() };
  // One admission for every entry into this frontend (the hook, the fast path, the ring), counting
  // each tenant's requests in the data plane's one request rate, which gRPC shares.
  const admission = new Admission({ tenants: ctx.tenants, rate: api.requestRate, logger: ctx.logger.child({ component: 'auth' }), protocol: 'http' });
  // The `/infer` fast path (fast-path.ts) claims plain inference requests on Node's request event
  // and hands every other one to Fastify's handler. Not with client shared memory on.
  let closing = false;
  const fastPath = opts.fastPath !== false && !ctx.shm.enabled;
  const app: FastifyInstance = Fastify({
    serverFactory: fastPath
      ? (handler: RequestListener, options: Record<string, unknown>) =>
          createHttp1Server(options, inferFastPath({ ctx, admission, closing: () => closing }, handler))
      : undefined,
    // Per-request access logs are info-level: keep Fastify's own logger at warn.
    loggerInstance: ctx.logger.child({ component: 'http' }, { level: ctx.logger.level === 'silent' ? 'silent' : 'warn' }) as FastifyBaseLogger,
    // Fastify's default makes a pino child (request id bound) for every request: ~2 µs and ~1 KiB
    // per request in a c=1 CPU profile. Warden writes no request-scoped lines through it and keeps
    // it at warn, so every request shares this logger.
    childLoggerFactory: (logger) => logger,

    exposeHeadRoutes: false,
    bodyLimit: ctx.maxInputSize,
    // A model name may be 255 bytes (contract/names.ts), up to 765 characters percent-encoded; longer
    // segments are answered by the data plane's name check, not by Fastify's 414.
    routerOptions: { maxParamLength: 1024 },
    // Slow clients cannot hold a connection: headers, then the whole request, must arrive in time.
    requestTimeout: ctx.limits.requestTimeoutMs,
    // Node enforces requestTimeout only when it is >= headersTimeout (measured): clamp.
    http: {
      headersTimeout: Math.min(ctx.limits.headerTimeoutMs, ctx.limits.requestTimeoutMs),
      connectionsCheckingInterval: connectionsCheckingInterval(ctx.limits),
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Requests Node's HTTP parser refuses (e.g. both `Transfer-Encoding: chunked` and
    // `Content-Length`, a request-smuggling shape) are answered as Triton answers errors.
    clientErrorHandler: answerClientError,
  });
  app.server.maxConnections = ctx.limits.maxConnections;
  // Every route registered below is classified and, when its group is restricted, checked.
  restrictRoutes(app, ctx.restricted);
  // Every route registered below carries its OpenAPI description, served at GET /v2/openapi.json.
  describeRoutes(app);
  // Fastify sets its own closing flag (503 to new requests) just before the preClose hooks run.
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onClose', async () => ctx.codec.close());
  app.removeAllContentTypeParsers();
  // Every body goes through readBody, which enforces --http-max-input-size itself (Fastify's
  // bodyLimit applies only to its own raw-body reader, which is not used). The callback form
  // (`done`): no promise and no microtask per request. The same parser is also registered under
  // the two content types clients send: Fastify caches a parser found by name, while the
  // catch-all is looked up afresh (a ContentType parsed and printed) on every request.
  const parser = (_req: FastifyRequest, payload: IncomingMessage, done: (err: Error | null, body?: Buffer) => void) =>
    readBody(payload, ctx.maxInputSize, done);
  for (const type of ['*', 'application/json', 'application/octet-stream']) app.addContentTypeParser(type, parser);
  // Every reply leaves through here: JSON is `application/json` exactly (Fastify would add
  // `; charset=utf-8`), and the body is compressed as `Accept-Encoding` prefers (spec §1.14).
  // A callback hook, not an async one: an uncompressed reply then leaves within reply.send() (no
  // promise, no tick), so `reply.sent` is already true when a handler returns the reply and
  // Fastify's Reply.then never has to wait on the stream (end-of-stream listeners per request).
  app.addHook('onSend', (req, reply, payload, done) => {
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    let out: unknown;
    try {
      out = compressReply(req, reply, payload);
    } catch (e) {
      return done(e as Error);
    }
    if (out instanceof Promise)
      out.then(
        (p: unknown) => done(null, p),
        (e: Error) => done(e),
      );
    else done(null, out);
  });

  app.setErrorHandler(async (err: unknown, req, reply) => {
    const delay = overQuotaDelay(err);
    if (delay) {
      await delay;
      if (reply.sent || reply.raw.destroyed) return reply;
    }
    closeIfBodyPending(req, reply);
    // The OpenAI-compatible API answers every error in OpenAI's shape (frontend/openai/error-shape.ts).
    const answer = isOpenAIPath(req.url) ? openaiErrorAnswer : errorAnswer;
    return sendAnswer(
      reply,
      answer(err, (e) => api.publicError(e), ctx.logger),
    );
  });
  // The web console's static files (frontend/console/) need no credentials: the page then calls the API with the user's token.
  const consolePath = ctx.console?.path;
  if (ctx.tenants) await installTenancy(app, admission, api.uploadRate, consolePath === undefined ? undefined : (path) => isConsolePath(consolePath, path));
  // An unknown `/v1/...` path (an OpenAI route Warden does not serve) answers in OpenAI's shape.
  const notFound = (method: string, url: string) =>
    isOpenAIPath(url) ? openaiErrorBody(`Unknown request URL: ${method} ${url.split('?', 1)[0]}.`, 404, null, 'unknown_url') : '{"error":"Not Found"}';
  app.setNotFoundHandler((req, reply) => reply.code(404).type('application/json').send(notFound(req.method, req.url)));

  // Triton's status codes (spec §1.3: 200, or 400) with the Open Inference Protocol's body
  // (`{"live": bool}` / `{"ready": bool}`, which KServe's clients read; tritonclient reads the status).
  const health = (reply: FastifyReply, key: 'live' | 'ready', ok: boolean) =>
    reply
      .code(ok ? 200 : 400)
      .type('application/json')
      .send(`{"${key}":${ok}}`);
  route(app, '/v2/health/live', { GET: (_q, r) => health(r, 'live', api.isLive()) });
  route(app, '/v2/health/ready', { GET: (_q, r) => health(r, 'ready', api.isReady()) });
  route(app, '/v2', { GET: (_q, r) => r.send(api.serverMetadata()) });
  route(app, '/v2/models/stats', { GET: (q, r) => r.send(api.modelStatistics(who(q))) });
  route(app, '/v2/logging', {
    GET: (q, r) => r.send(api.logSettings(who(q))),
    POST: (q, r) => r.send(api.updateLogSettings(who(q), optionalJson(q, ctx.maxInputSize) ?? {})),
  });

  // Per-model endpoints, with and without /versions/{v}.
  const modelRoute = (
    suffix: string,
    handlers: Record<'GET' | 'POST', ((q: FastifyRequest, r: FastifyReply, model: string, version: number) => unknown) | undefined>,
  ) => {
    for (const prefix of ['/v2/models/:model', '/v2/models/:model/versions/:version']) {
      const wrap = (h?: (q: FastifyRequest, r: FastifyReply, model: string, version: number) => unknown) =>
        h &&
        ((q: FastifyRequest, r: FastifyReply) => {
          const p = q.params as ModelParams;
          const version = parseVersion(p.version);
          if (version === undefined) return r.code(404).type('application/json').send('{"error":"Not Found"}');
          return h(q, r, p.model, version);
        });
      route(app, prefix + suffix, { GET: wrap(handlers.GET), POST: wrap(handlers.POST) });
    }
  };
  modelRoute('', { GET: (q, r, m, v) => r.send(api.modelMetadata(who(q), m, v)), POST: undefined });
  modelRoute('/ready', {
    GET: async (q, r, m, v) =>
      (await api.isModelReady(who(q), m, v)) ? r.code(200).send() : r.code(400).type('application/json').send('{"error":"Model version not ready"}'),
    POST: undefined,
  });
  modelRoute('/config', { GET: (q, r, m, v) => r.type('application/json').send(modelConfigToJson(api.modelConfig(who(q), m, v))), POST: undefined });
  modelRoute('/stats', { GET: (q, r, m, v) => r.send(api.modelStatistics(who(q), m, v)), POST: undefined });
  // Warden's: the model's own log (docs/tenant-guide.md "Your model's log"); Triton has no route here.
  modelRoute('/log', { GET: (q, r, m, v) => r.send(api.modelLog(who(q), m, v, logSince(q))), POST: undefined });
  modelRoute('/infer', { GET: undefined, POST: (q, r, m, v) => handleInfer(ctx, q, r, m, v) });
  modelRoute('/generate', { GET: undefined, POST: (q, r, m, v) => handleGenerate(ctx, q, r, m, v) });
  modelRoute('/generate_stream', { GET: undefined, POST: (q, r, m, v) => handleGenerateStream(ctx, q, r, m, v) });

  installTraceRoutes(app, ctx);
  route(app, '/v2/repository/index', { POST: (q, r) => handleIndex(ctx, q, r) });
  route(app, '/v2/repository/models/:model/load', { POST: (q, r) => handleLoad(ctx, q, r, (q.params as ModelParams).model) });
  route(app, '/v2/repository/models/:model/unload', { POST: (q, r) => handleUnload(ctx, q, r, (q.params as ModelParams).model) });
  const namedRepo = () => {
    throw repositoryNameUnsupported();
  };
  route(app, '/v2/repository/:repo/index', { POST: namedRepo });
  route(app, '/v2/repository/:repo/models/:model/load', { POST: namedRepo });
  route(app, '/v2/repository/:repo/models/:model/unload', { POST: namedRepo });

  installSharedMemoryRoutes(app, ctx);
  installOpenAIRoutes(app, ctx, ctx.onTokenUsage);
  route(app, OPENAPI_PATH, { GET: openapiHandler(app) });
  // Warden's: tenants, quotas and usage (tenants.ts), in multi-tenant mode only.
  if (ctx.tenants) route(app, '/v2/tenants', { GET: (q, r) => handleTenants(ctx, q, r) });
  if (consolePath !== undefined) installConsole(app, consolePath);

  const serveRing = async (r: RingRequest, signal: CancellationSignal): Promise<HttpAnswer | undefined> => {
    if (closing) return undefined;
    const headers: IncomingHttpHeaders = r.headerLength === undefined ? {} : { 'inference-header-content-length': r.headerLength };
    // Credentials that do not authenticate: Fastify answers (it counts the failure and answers 401).
    const caller = await admission.identify(r.authorization);
    if (!caller || closing) return undefined;
    fastPathCounters.claimed++;
    fastPathCounters.threaded++;
    try {
      admission.count(caller);
    } catch (e) {
      return failAnswer(ctx, e);
    }
    return serveClaimed(ctx, { model: r.model, version: r.version }, caller.principal, r.body, headers, signal);
  };
  return {
    app,
    claims: fastPath,
    claimRestriction: ctx.restricted?.inference,
    serveRing,
    listener: () => app.server.listeners('request')[0] as RequestListener,
    serverSettings: () => ({
      keepAliveTimeout: app.server.keepAliveTimeout,
      requestTimeout: app.server.requestTimeout,
      headersTimeout: app.server.headersTimeout,
      connectionsCheckingInterval: connectionsCheckingInterval(ctx.limits),
      maxConnections: app.server.maxConnections,
    }),
    nativeErrorAnswer: (code, message) => errorAnswer(new TritonError(ERROR_CODES[code] ?? 'UNKNOWN', message), (e) => api.publicError(e), ctx.logger),
  };
}
