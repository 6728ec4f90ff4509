/**
 * Multi-tenant mode on the HTTP frontend (DESIGN "Multi-tenancy"): every request except the
 * health probes carries `Authorization: Bearer <token>`; the frontend's admission
 * (../admission.ts, the one path of every entry) turns it into the request's {@link Principal},
 * counts failures per client address (past the address's failure rate the 401 is held back by the
 * tarpit, audit lines are aggregated) and counts the request against its tenant's rate. Here the
 * outcome becomes HTTP: 401 with `WWW-Authenticate` (RFC 6750, tenancy/http-auth.ts) for unknown
 * or missing credentials; an over-rate request is 429 with `Retry-After`, answered through the
 * error handler's tarpit. Tokens are never logged. Administrators are not rate limited.
 */
import { clientAddressOf } from './client-address.js';
import { closeIfBodyPending } from './routing.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../../contract/types.js';
import { authFailure } from '../../tenancy/http-auth.js';
import type { TenantUploadRate } from '../../tenancy/request-rate.js';
import { AuthenticationError, type Admission } from '../admission.js';

/** The load route (spec §3.1), as requests spell it. */
const LOAD_PATH = /^\/v2\/repository\/models\/[^/]+\/load$/;
import type { TenantConfig } from '../../tenancy/types.js';
import { authenticationRequired } from './http.errors.js';
import { isOpenAIPath, openaiErrorBody } from '../openai/error-shape.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook (multi-tenant mode); null on the health probes. */
    principal: Principal | null;
    /** The authenticated tenant entry (multi-tenant mode). */
    tenant: TenantConfig | null;
  }
}

/** Probes an orchestrator sends without credentials. */
const UNAUTHENTICATED = new Set(['/v2/health/live', '/v2/health/ready']);

/** The principal of an authenticated request. @throws AccessError `unauthenticated` if the hook did not run (a bug) */
export function requestPrincipal(req: FastifyRequest): Principal {
  if (!req.principal) throw authenticationRequired();
  return req.principal;
}

/**
 * Install authentication and per-tenant rate limits on `app` (before its routes are added): an
 * `onRequest` hook admits every request but the health probes through `admission` (401 on failed
 * authentication, after the tarpit of the address's failures; AccessError 429 with `Retry-After`
 * over the tenant's rate, answered through the error handler's tarpit).
 * @param admission the frontend's admission (multi-tenant), shared with the `/infer` fast path and
 *   the front-end threads (fast-path.ts, app.ts) so a tenant's requests are counted once whichever
 *   path serves them, and with gRPC through the data plane's one request rate
 * @param uploads the upload-rate windows (`upload_bytes_per_minute`), shared with gRPC
 * @param open paths besides the health probes that carry no data and need no credentials (the
 *   web console's static files, frontend/console/)
 */
export async function installTenancy(app: FastifyInstance, admission: Admission, uploads: TenantUploadRate, open?: (path: string) => boolean): Promise<void> {
  app.decorateRequest('principal', null);
  app.decorateRequest('tenant', null);
  app.addHook('onClose', async () => admission.close());
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?', 1)[0]!;
    if (UNAUTHENTICATED.has(path) || open?.(path)) return;
    let caller;
    try {
      caller = await admission.authenticate(req.headers.authorization, clientAddressOf(req));
    } catch (e) {
      if (!(e instanceof AuthenticationError)) throw e;
      const f = authFailure(e.failure);
      closeIfBodyPending(req, reply);
      // The OpenAI-compatible API's 401 is in OpenAI's error shape (frontend/openai/error-shape.ts).
      const body = isOpenAIPath(path) ? openaiErrorBody(f.message, f.status) : JSON.stringify({ error: f.message });
      return reply.code(f.status).header('WWW-Authenticate', f.wwwAuthenticate).type('application/json').send(body);
    }
    req.principal = caller.principal;
    req.tenant = caller.tenant ?? null;
    admission.count(caller);
    // A load request's bytes count against the tenant's upload rate before its body is read
    // (one without a Content-Length is charged when read: repository.ts).
    const length = req.headers['content-length'];
    if (caller.tenant && length !== undefined && req.method === 'POST' && LOAD_PATH.test(path)) uploads.admit(caller.tenant, Number(length));
  });
}
