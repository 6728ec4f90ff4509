/**
 * Multi-tenant mode on the HTTP frontend (DESIGN "Multi-tenancy"): every request except the
 * health probes carries `Authorization: Bearer <token>`; the tenant registry turns it into the
 * request's {@link Principal}. Unknown or missing credentials get 401 with `WWW-Authenticate`
 * (RFC 6750); failures are counted per client address (tenancy/unauthenticated.ts: past the
 * address's failure rate the 401 is held back by the tarpit, and audit lines are aggregated per
 * address and interval); tokens are never logged. Each tenant's request rate is limited by
 * tenancy/request-rate.ts (the rule gRPC applies): `burst` requests per `burst /
 * requests_per_second` seconds, 429 with `Retry-After` beyond it. Administrators are not rate limited.
 */
import { clientAddressOf } from './client-address.js';
import { closeIfBodyPending } from './routing.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { AccessError } from '../../contract/errors.js';
import type { Principal } from '../../contract/types.js';
import { authFailure } from '../../tenancy/http-auth.js';
import type { TenantRegistry } from '../../tenancy/registry.js';
import type { TenantRequestRate, TenantUploadRate } from '../../tenancy/request-rate.js';

/** The load route (spec §3.1), as requests spell it. */
const LOAD_PATH = /^\/v2\/repository\/models\/[^/]+\/load$/;
import { FailedAuthentications } from '../../tenancy/unauthenticated.js';
import type { TenantConfig } from '../../tenancy/types.js';

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

/** The principal of an authenticated request. @throws AccessError 401 if the hook did not run (a bug) */
export function requestPrincipal(req: FastifyRequest): Principal {
  if (!req.principal) throw new AccessError(401, 'authentication required');
  return req.principal;
}

/**
 * Install authentication and per-tenant rate limits on `app` (before its routes are added): an
 * `onRequest` hook authenticates every request but the health probes (401 on failure, tarpit and
 * audit per client address as tenancy/unauthenticated.ts rules), then counts it against its tenant's rate (`rate.admit`, AccessError 429 with
 * `Retry-After`, answered through the error handler's tarpit).
 * @param registry the tenants (hot-reloaded); quotas are read per request, so edits apply at once
 * @param rate the request-rate windows, shared with the `/infer` fast path (fast-path.ts) so a
 *   tenant's requests are counted once whichever path serves them
 * @param uploads the upload-rate windows (`upload_bytes_per_minute`), shared with gRPC
 */
export async function installTenancy(app: FastifyInstance, registry: TenantRegistry, logger: Logger, rate: TenantRequestRate, uploads: TenantUploadRate): Promise<void> {
  app.decorateRequest('principal', null);
  app.decorateRequest('tenant', null);
  const failures = new FailedAuthentications(logger, 'http');
  app.addHook('onClose', async () => failures.close());
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?', 1)[0]!;
    if (UNAUTHENTICATED.has(path)) return;
    const r = await registry.authenticate(req.headers.authorization);
    if (r.ok) {
      req.principal = r.principal;
      req.tenant = r.tenant;
      rate.admit(r.tenant);
      // A load request's bytes count against the tenant's upload rate before its body is read
      // (one without a Content-Length is charged when read: repository.ts).
      const length = req.headers['content-length'];
      if (length !== undefined && req.method === 'POST' && LOAD_PATH.test(path)) uploads.admit(r.tenant, Number(length));
      return;
    }
    // Per client address: the tarpit past the failure rate, one aggregated audit line per interval.
    const delayMs = failures.failed(clientAddressOf(req), r.reason);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const f = authFailure(r.reason);
    closeIfBodyPending(req, reply);
    return reply.code(401).header('WWW-Authenticate', f.wwwAuthenticate).type('application/json').send(JSON.stringify({ error: f.message }));
  });
}
