/** The trace extension's routes (spec §3.5): `GET|POST /v2[/models/{m}[/versions/{v}]]/trace/setting`. */
import type { FastifyInstance } from 'fastify';
import { optionalJson } from './body.js';
import type { FrontendContext } from './context.js';
import { route } from './routing.js';

export function installTraceRoutes(app: FastifyInstance, ctx: FrontendContext): void {
  const { api } = ctx;
  const modelOf = (q: { params: unknown }) => (q.params as { model?: string }).model;
  for (const url of ['/v2/trace/setting', '/v2/models/:model/trace/setting', '/v2/models/:model/versions/:version/trace/setting']) {
    route(app, url, {
      GET: (q, r) => r.send(api.traceSettings(ctx.principalOf(q), modelOf(q))),
      POST: (q, r) => r.send(api.updateTraceSettings(ctx.principalOf(q), modelOf(q), optionalJson(q, ctx.maxInputSize) ?? {})),
    });
  }
}
