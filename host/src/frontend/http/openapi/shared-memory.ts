/**
 * The shared-memory extensions' routes (spec §3.3): system shared memory (register / unregister
 * only with `--allow-client-shm`) and CUDA shared memory as Triton built without GPUs.
 */
import { ERRORS, error, json, ok, okEmpty, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

const status = (kind: 'system' | 'cuda', region: boolean): RouteDoc => ({
  tag: 'shared-memory',
  GET: {
    summary: region ? `The ${kind} shared-memory region's status` : `Every ${kind} shared-memory region the caller registered`,
    responses:
      kind === 'cuda' && region
        ? { '404': error('No CUDA region exists (no GPUs): not found (400 for a system region of that name).'), default: ERRORS }
        : {
            '200': ok(kind === 'cuda' ? 'Nothing: no GPUs.' : 'The regions.', {
              type: 'array',
              items: ref(kind === 'cuda' ? 'CudaShmRegion' : 'SystemShmRegion'),
            }),
            default: ERRORS,
          },
  },
});

const unregister = (kind: 'system' | 'cuda', region: boolean): RouteDoc => ({
  tag: 'shared-memory',
  POST: {
    summary: region ? `Unregister the ${kind} shared-memory region` : `Unregister every ${kind} shared-memory region of the caller`,
    responses: { '200': okEmpty('Unregistered (empty body).'), default: ERRORS },
  },
});

const cudaRegister: RouteDoc = {
  tag: 'shared-memory',
  POST: {
    summary: 'Register a CUDA shared-memory region (refused: no GPUs)',
    responses: { '400': error('Refused: the server has no GPUs (or no region name).'), default: ERRORS },
  },
};

/** The shared-memory group's routes, by Fastify URL. */
export const SHARED_MEMORY_ROUTES: Record<string, RouteDoc> = {
  '/v2/systemsharedmemory/status': status('system', false),
  '/v2/systemsharedmemory/region/{region}/status': status('system', true),
  '/v2/systemsharedmemory/region/{region}/register': {
    tag: 'shared-memory',
    POST: {
      summary: 'Register a POSIX shared-memory object as a region',
      requestBody: { required: true, content: json(ref('SystemShmRegister')) },
      responses: { '200': okEmpty('Registered (empty body).'), default: ERRORS },
    },
  },
  '/v2/systemsharedmemory/region/{region}/unregister': unregister('system', true),
  '/v2/systemsharedmemory/unregister': unregister('system', false),
  '/v2/cudasharedmemory/status': status('cuda', false),
  '/v2/cudasharedmemory/region/{region}/status': status('cuda', true),
  '/v2/cudasharedmemory/register': cudaRegister,
  '/v2/cudasharedmemory/region/{region}/register': cudaRegister,
  '/v2/cudasharedmemory/unregister': unregister('cuda', false),
  '/v2/cudasharedmemory/region/{region}/unregister': unregister('cuda', true),
};

/** The shared-memory group's component schemas. */
export const SHARED_MEMORY_SCHEMAS: Record<string, JsonSchema> = {
  SystemShmRegister: {
    type: 'object',
    required: ['key', 'byte_size'],
    properties: {
      key: { type: 'string', description: 'The shm_open name.' },
      offset: { type: 'integer', minimum: 0 },
      byte_size: { type: 'integer', minimum: 0 },
    },
  },
  SystemShmRegion: {
    type: 'object',
    required: ['name', 'key', 'offset', 'byte_size'],
    additionalProperties: false,
    properties: { name: { type: 'string' }, key: { type: 'string' }, offset: { type: 'integer', minimum: 0 }, byte_size: { type: 'integer', minimum: 0 } },
  },
  CudaShmRegion: {
    type: 'object',
    required: ['name', 'device_id', 'byte_size'],
    properties: { name: { type: 'string' }, device_id: { type: 'integer' }, byte_size: { type: 'integer' } },
  },
};
