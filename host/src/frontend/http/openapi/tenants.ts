/**
 * Warden's tenants route (`GET /v2/tenants`, multi-tenant mode only; frontend/http/tenants.ts) and
 * the web console's static routes (frontend/console/; `--console`, docs/console.md).
 */
import { QUOTA_KEYS } from '../../../tenancy/types.js';
import { ERRORS, ok, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

/** `GET /v2/tenants`. */
export const TENANTS: RouteDoc = {
  tag: 'tenants',
  GET: {
    summary: "Tenants, their quotas and usage (Warden's addition; multi-tenant mode only)",
    description:
      'An administrator sees every tenant of the tenants file; a tenant sees only its own entry. Never a token or its hash. ' +
      "Usage counts the caller's view of the models: models in the tenant's namespace, those ready, and their requests.",
    responses: { '200': ok('The caller and the tenants it may see.', ref('Tenants')), default: ERRORS },
  },
};

const count: JsonSchema = { type: 'integer', minimum: 0 };

/** The tenants group's component schemas. */
export const TENANTS_SCHEMAS: Record<string, JsonSchema> = {
  Tenants: {
    type: 'object',
    required: ['caller', 'tenants'],
    additionalProperties: false,
    properties: {
      caller: {
        type: 'object',
        required: ['id', 'role'],
        additionalProperties: false,
        properties: { id: { type: 'string' }, role: { enum: ['admin', 'tenant'] } },
      },
      tenants: { type: 'array', items: ref('Tenant') },
    },
  },
  Tenant: {
    type: 'object',
    required: ['id', 'role', 'weight', 'shared_models', 'allow_onnx', 'quotas', 'usage', 'models'],
    additionalProperties: false,
    properties: {
      id: { type: 'string' },
      role: { enum: ['admin', 'tenant'] },
      weight: { type: 'number', exclusiveMinimum: 0 },
      shared_models: { type: 'array', items: { type: 'string' } },
      allow_onnx: { type: 'boolean' },
      quotas: {
        type: 'object',
        required: [...QUOTA_KEYS],
        additionalProperties: false,
        properties: Object.fromEntries(QUOTA_KEYS.map((k) => [k, { type: 'number', minimum: 0 }])),
        description: "The tenant's quotas (docs/tenancy.md).",
      },
      models: {
        type: 'array',
        items: ref('RepositoryIndexEntry'),
        description: "The tenant's models as its own repository index lists them (operator models shared with it left out).",
      },
      usage: {
        type: 'object',
        required: ['models', 'ready_models', 'inference_count', 'failed_count', 'pending_count'],
        additionalProperties: false,
        properties: {
          models: { ...count, description: "Models in the tenant's namespace (any state)." },
          ready_models: count,
          inference_count: { ...count, description: 'Inferences its serving models answered (statistics `inference_count`).' },
          failed_count: { ...count, description: 'Failed requests of its serving models (statistics `inference_stats.fail.count`).' },
          pending_count: { ...count, description: 'Requests accepted and not yet answered.' },
        },
      },
    },
  },
};

/** A console page or asset: static, never needs credentials (the console then calls the API with the tenant's token). */
const asset = (summary: string, types: string[]): RouteDoc => ({
  tag: 'console',
  open: true,
  GET: {
    summary,
    description: 'Served only with `--console` (docs/console.md); the HTML carries a strict Content-Security-Policy.',
    responses: {
      '200': { description: 'The file.', content: Object.fromEntries(types.map((t) => [t, { type: 'string' }])) },
      '404': { description: 'No such file.', content: { 'application/json': ref('Error') } },
    },
  },
});

/** The console's routes, by the Fastify URL under the console path (`''`: the path itself). */
export const CONSOLE_ROUTES: Record<string, RouteDoc> = {
  '': {
    tag: 'console',
    open: true,
    GET: {
      summary: 'The web console (redirects to the path with a trailing slash)',
      responses: { '308': { description: 'Redirect.', headers: { Location: 'The console page.' } } },
    },
  },
  '/': asset('The web console page', ['text/html']),
  '/:file': asset("The console's scripts and style sheet", ['text/javascript', 'text/css']),
  '/vendor/:file': asset("The console's front-end toolkit (Preact and htm, shipped from the package's dependencies)", ['text/javascript']),
};
