/**
 * The metrics endpoint (spec §4): `GET /metrics` (also `/metrics/`) in Prometheus text format on
 * its own port; other paths answer 200 with an empty body; other methods 405.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ServerMetrics } from './prometheus.js';

export function buildMetricsApp(metrics: ServerMetrics, logger: Logger): FastifyInstance {
  const app: FastifyInstance = Fastify({ loggerInstance: logger.child({ component: 'metrics' }, { level: logger.level === 'silent' ? 'silent' : 'warn' }) as FastifyBaseLogger,  exposeHeadRoutes: false, forceCloseConnections: true });
  app.route({
    method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'],
    url: '*',
    handler: async (req, reply) => {
      if (req.method !== 'GET') return reply.code(405).send();
      const path = req.url.split('?')[0];
      if (path !== '/metrics' && path !== '/metrics/') return reply.code(200).send('');
      return reply.code(200).type('text/plain; charset=utf-8').send(await metrics.render());
    },
  });
  return app;
}
