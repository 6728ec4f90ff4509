/**
 * The metrics endpoint (spec §4): `GET /metrics` (also `/metrics/`) in Prometheus text format on
 * its own port; other paths answer 200 with an empty body; other methods 405.
 *
 * In multi-tenant mode the series name every tenant's models and show their traffic, so the scrape
 * is the operator's (DESIGN "Multi-tenancy"; docs/tenancy.md "Metrics"): with {@link MetricsAccess}
 * `GET /metrics` needs `Authorization: Bearer <token>` of an administrator (a tenants-file token or
 * JWT with role admin), as Prometheus sends it with `authorization: {type: Bearer, ...}` in its
 * scrape config. Missing or unknown credentials: 401 with `WWW-Authenticate: Bearer
 * realm="warden"`; a tenant's credentials: 403. Neither answer names a model.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Principal } from '../contract/types.js';
import type { ServerMetrics } from './prometheus.js';

/** Who may scrape (multi-tenant mode): absent = anyone (Triton's behaviour). */
export interface MetricsAccess {
  /**
   * The principal an `Authorization` header stands for, or undefined for missing, malformed or
   * unknown credentials. Never throws for bad credentials.
   */
  authenticate(authorization: string | undefined): Promise<Principal | undefined>;
}

const json = (error: string) => JSON.stringify({ error });

export function buildMetricsApp(metrics: ServerMetrics, logger: Logger, access?: MetricsAccess): FastifyInstance {
  const app: FastifyInstance = Fastify({
    loggerInstance: logger.child({ component: 'metrics' }, { level: logger.level === 'silent' ? 'silent' : 'warn' }) as FastifyBaseLogger,
    exposeHeadRoutes: false,
    forceCloseConnections: true,
  });
  app.route({
    method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'],
    url: '*',
    handler: async (req, reply) => {
      if (req.method !== 'GET') return reply.code(405).send();
      const path = req.url.split('?')[0];
      if (path !== '/metrics' && path !== '/metrics/') return reply.code(200).send('');
      if (access) {
        const principal = await access.authenticate(req.headers.authorization).catch(() => undefined);
        if (!principal) {
          return reply
            .code(401)
            .header('WWW-Authenticate', 'Bearer realm="warden"')
            .type('application/json')
            .send(json("metrics need an administrator's bearer token"));
        }
        if (principal.role !== 'admin')
          return reply.code(403).type('application/json').send(json("metrics are the operator's: an administrator's token is required"));
      }
      return reply
        .code(200)
        .type('text/plain; charset=utf-8')
        .send(await metrics.render());
    },
  });
  return app;
}
