/**
 * The shared-memory extensions over HTTP (spec §3.3): `/v2/systemsharedmemory[/region/{r}]/
 * {status,register,unregister}` on dataplane/shared-memory.ts (off unless `--allow-client-shm`:
 * register / unregister are UNSUPPORTED), and `/v2/cudasharedmemory/...` as Triton built without
 * GPUs: status lists nothing, unregister succeeds, register is INVALID_ARG.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  clientShmDisabled,
  cudaShmUnsupported,
  shmRegionNameMissing,
  shmRegisterBodyNotObject,
  shmRegisterKeyNotString,
} from '../../dataplane/shared-memory.errors.js';
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
      if (!isJsonObject(body)) throw shmRegisterBodyNotObject();
      if (typeof body.key !== 'string') throw shmRegisterKeyNotString();
      shm.register(ctx.principalOf(q), region(q), body.key, body.offset ?? 0, body.byte_size);
      return r.code(200).send();
    },
  });
  route(app, '/v2/systemsharedmemory/region/:region/unregister', { POST: (q, r) => (shm.unregister(ctx.principalOf(q), region(q)), r.code(200).send()) });
  route(app, '/v2/systemsharedmemory/unregister', { POST: (q, r) => (shm.unregister(ctx.principalOf(q), ''), r.code(200).send()) });

  // CUDA shared memory on a server without GPUs, as Triton built without TRITON_ENABLE_GPU
  // (server `http_server.cc` HandleCudaSharedMemory): status lists nothing, unregister succeeds
  // (nothing is registered), register is INVALID_ARG; register / unregister are UNSUPPORTED while
  // client shared memory is off.
  route(app, '/v2/cudasharedmemory/status', { GET: (q, r) => r.send(shm.cudaStatus(ctx.principalOf(q), '')) });
  route(app, '/v2/cudasharedmemory/region/:region/status', { GET: (q, r) => r.send(shm.cudaStatus(ctx.principalOf(q), region(q))) });
  const cudaRegister = (q: FastifyRequest) => {
    if (!shm.enabled) throw clientShmDisabled();
    const name = region(q);
    if (name === '') throw shmRegionNameMissing('cuda');
    throw cudaShmUnsupported(name);
  };
  const cudaUnregister = (_q: FastifyRequest, r: FastifyReply) => {
    if (!shm.enabled) throw clientShmDisabled();
    return r.code(200).send();
  };
  route(app, '/v2/cudasharedmemory/register', { POST: cudaRegister });
  route(app, '/v2/cudasharedmemory/region/:region/register', { POST: cudaRegister });
  route(app, '/v2/cudasharedmemory/unregister', { POST: cudaUnregister });
  route(app, '/v2/cudasharedmemory/region/:region/unregister', { POST: cudaUnregister });
}
