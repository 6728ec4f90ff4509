/**
 * The shared-memory extensions over HTTP (spec §3.3): `/v2/systemsharedmemory[/region/{r}]/
 * {status,register,unregister}` on core/shared-memory.ts (off unless `--allow-client-shm`:
 * status lists nothing, register / unregister are UNSUPPORTED), and
 * `/v2/cudasharedmemory/...`: status lists nothing, register is UNSUPPORTED (no GPU memory path).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidArg, unsupported } from '../../core/errors.js';
import { isJsonObject, optionalJson } from './body.js';
import type { FrontendContext } from './context.js';
import { route } from './routing.js';

const region = (q: FastifyRequest) => (q.params as { region?: string }).region ?? '';

export function installSharedMemoryRoutes(app: FastifyInstance, ctx: FrontendContext): void {
  const { shm } = ctx;
  route(app, '/v2/systemsharedmemory/status', { GET: (q, r) => r.send(shm.status(ctx.principalOf(q), '')) });
  route(app, '/v2/systemsharedmemory/region/:region/status', { GET: (q, r) => r.send(shm.status(ctx.principalOf(q), region(q))) });
  route(app, '/v2/systemsharedmemory/region/:region/register', {
    POST: (q, r) => {
      const body = optionalJson(q, ctx.maxInputSize);
      if (!isJsonObject(body)) throw invalidArg('register request must be a JSON object with key, offset and byte_size');
      if (typeof body.key !== 'string') throw invalidArg("Unable to parse 'key': attempt to access JSON non-string as string");
      shm.register(ctx.principalOf(q), region(q), body.key, body.offset ?? 0, body.byte_size);
      return r.code(200).send();
    },
  });
  route(app, '/v2/systemsharedmemory/region/:region/unregister', { POST: (q, r) => (shm.unregister(ctx.principalOf(q), region(q)), r.code(200).send()) });
  route(app, '/v2/systemsharedmemory/unregister', { POST: (q, r) => (shm.unregister(ctx.principalOf(q), ''), r.code(200).send()) });

  const cuda = () => {
    throw unsupported('CUDA shared memory is not supported: this server has no GPU memory path');
  };
  route(app, '/v2/cudasharedmemory/status', { GET: (_q, r) => r.send([]) });
  route(app, '/v2/cudasharedmemory/region/:region/status', { GET: (_q, r) => r.send([]) });
  for (const op of ['register', 'unregister']) {
    route(app, `/v2/cudasharedmemory/${op}`, { POST: cuda });
    route(app, `/v2/cudasharedmemory/region/:region/${op}`, { POST: cuda });
  }
}
