/**
 * Multi-tenant mode on the HTTP frontend (DESIGN "Multi-tenancy"): every request except the
 * health probes carries `Authorization: Bearer <token>`; the tenant registry turns it into the
 * request's {@link Principal}. Unknown or missing credentials get 401 with `WWW-Authenticate`
 * (RFC 6750) and an audit line; tokens are never logged. Each tenant's request rate is limited
 * (`@fastify/rate-limit`, keyed by tenant): `burst` requests per `burst / requests_per_second`
 * seconds, 429 with `Retry-After` beyond it. Administrators are not rate limited.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { AccessError } from '../../core/errors.js';
import type { Principal } from '../../core/types.js';
import { auditEvent } from '../../tenancy/audit.js';
import { authFailure } from '../../tenancy/http-auth.js';
import type { TenantRegistry } from '../../tenancy/registry.js';
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
 * Install authentication and per-tenant rate limits on `app` (before its routes are added).
 * @param registry the tenants (hot-reloaded); quotas are read per request, so edits apply at once
 */
export async function installTenancy(app: FastifyInstance, registry: TenantRegistry, logger: Logger): Promise<void> {
  app.decorateRequest('principal', null);
  app.decorateRequest('tenant', null);
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?', 1)[0]!;
    if (UNAUTHENTICATED.has(path)) return;
    const r = await registry.authenticate(req.headers.authorization);
    if (r.ok) {
      req.principal = r.principal;
      req.tenant = r.tenant;
      return;
    }
    auditEvent(logger, { event: 'auth_failure', tenant: null, outcome: 'error', reason: r.reason, remote: req.ip });
    const f = authFailure(r.reason);
    return reply.code(401).header('WWW-Authenticate', f.wwwAuthenticate).type('application/json').send(JSON.stringify({ error: f.message }));
  });
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    keyGenerator: (req) => req.tenant?.id ?? '',
    allowList: (req) => !req.tenant || req.tenant.role === 'admin',
    max: (req) => Math.max(1, Math.floor(req.tenant?.quotas.burst ?? 1)),
    timeWindow: (req) => {
      const q = req.tenant?.quotas;
      return q && q.requests_per_second > 0 ? Math.ceil((1000 * q.burst) / q.requests_per_second) : 1000;
    },
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
    errorResponseBuilder: (req, ctx) =>
      new AccessError(429, `tenant '${req.tenant?.id ?? ''}' exceeded its request rate (requests_per_second ${req.tenant?.quotas.requests_per_second}, burst ${req.tenant?.quotas.burst})`, Math.ceil(ctx.ttl / 1000)),
  });
}
