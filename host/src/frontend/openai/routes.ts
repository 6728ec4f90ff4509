/**
 * The OpenAI-compatible API on the HTTP port (docs/openai.md; the data plane it runs on: DESIGN
 * "One request, end to end"): `GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/completions`,
 * `POST /v1/chat/completions`. In multi-tenant mode the tenant's bearer token is the API key (the
 * HTTP frontend's authentication and rate limits apply as to every route: 401, 429 with
 * `Retry-After`), and every error leaves in OpenAI's shape (error-shape.ts) through the
 * frontend's error handler.
 */
import type { FastifyInstance } from 'fastify';
import type { FrontendContext } from '../http/context.js';
import { route } from '../http/routing.js';
import { ChatTemplatePool } from './chat-template.js';
import { type TokenUsageSink, handleCompletion } from './completions.js';
import { getModel, listModels } from './models.js';

export { isOpenAIPath, openaiErrorAnswer, openaiErrorBody } from './error-shape.js';
export type { TokenUsageSink } from './completions.js';

/** Register the `/v1/...` routes on `app` (before it is ready); the chat template workers close with it. */
export function installOpenAIRoutes(app: FastifyInstance, ctx: FrontendContext, onTokenUsage?: TokenUsageSink): void {
  const templates = new ChatTemplatePool();
  app.addHook('onClose', async () => templates.close());
  const created = Math.floor(Date.now() / 1000);
  const deps = { ctx, templates, onTokenUsage };
  route(app, '/v1/models', {
    GET: async (q, r) => r.type('application/json').send(JSON.stringify({ object: 'list', data: await listModels(ctx.api, ctx.principalOf(q), created) })),
  });
  route(app, '/v1/models/:model', {
    GET: (q, r) => r.type('application/json').send(JSON.stringify(getModel(ctx.api, ctx.principalOf(q), (q.params as { model: string }).model, created))),
  });
  route(app, '/v1/completions', { POST: (q, r) => handleCompletion(deps, q, r, 'completion') });
  route(app, '/v1/chat/completions', { POST: (q, r) => handleCompletion(deps, q, r, 'chat') });
}
