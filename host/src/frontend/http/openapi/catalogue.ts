/**
 * Every route's description, by path (OpenAPI's `{param}` form), from the API groups' modules:
 * what routing.ts#route attaches to each route it registers. Per-model routes are described once
 * per suffix, for both `/v2/models/{model}` and `/v2/models/{model}/versions/{version}`.
 */
import { COMMON_SCHEMAS } from './common.js';
import { HEALTH_ROUTES, HEALTH_SCHEMAS, MODEL_READY } from './health.js';
import { GENERATE, GENERATE_STREAM, INFER, INFERENCE_SCHEMAS } from './inference.js';
import { LOG_SETTINGS, LOGGING_SCHEMAS, MODEL_LOG } from './logging.js';
import { METADATA_SCHEMAS, MODEL_CONFIG, MODEL_METADATA, OPENAPI_ROUTE, SERVER_METADATA } from './metadata.js';
import { OPENAI_ROUTES, OPENAI_SCHEMAS } from './openai.js';
import { NAMED_REPOSITORY_ROUTES, REPOSITORY_ROUTES, REPOSITORY_SCHEMAS } from './repository.js';
import { SHARED_MEMORY_ROUTES, SHARED_MEMORY_SCHEMAS } from './shared-memory.js';
import { ALL_STATISTICS, MODEL_STATISTICS, STATISTICS_SCHEMAS } from './statistics.js';
import { TRACE_SCHEMAS, TRACE_SETTINGS } from './trace.js';
import { TENANTS, TENANTS_SCHEMAS } from './tenants.js';
import type { JsonSchema, RouteDoc } from './types.js';

/** Where this description is served. */
export const OPENAPI_PATH = '/v2/openapi.json';

const ROUTES: Record<string, RouteDoc> = {
  ...HEALTH_ROUTES,
  '/v2': SERVER_METADATA,
  [OPENAPI_PATH]: OPENAPI_ROUTE,
  '/v2/models/stats': ALL_STATISTICS,
  '/v2/logging': LOG_SETTINGS,
  '/v2/trace/setting': TRACE_SETTINGS,
  '/v2/tenants': TENANTS,
  ...REPOSITORY_ROUTES,
  ...NAMED_REPOSITORY_ROUTES,
  ...SHARED_MEMORY_ROUTES,
  ...OPENAI_ROUTES,
};

/** The per-model routes, by what follows `/v2/models/{model}[/versions/{version}]`. */
const MODEL_ROUTES: Record<string, RouteDoc> = {
  '': MODEL_METADATA,
  '/ready': MODEL_READY,
  '/config': MODEL_CONFIG,
  '/stats': MODEL_STATISTICS,
  '/log': MODEL_LOG,
  '/infer': INFER,
  '/generate': GENERATE,
  '/generate_stream': GENERATE_STREAM,
  '/trace/setting': TRACE_SETTINGS,
};

/** Every component schema the descriptions reference (`#/components/schemas/<Name>`). */
export const COMPONENT_SCHEMAS: Record<string, JsonSchema> = {
  ...COMMON_SCHEMAS,
  ...HEALTH_SCHEMAS,
  ...METADATA_SCHEMAS,
  ...INFERENCE_SCHEMAS,
  ...STATISTICS_SCHEMAS,
  ...LOGGING_SCHEMAS,
  ...TRACE_SCHEMAS,
  ...REPOSITORY_SCHEMAS,
  ...SHARED_MEMORY_SCHEMAS,
  ...OPENAI_SCHEMAS,
  ...TENANTS_SCHEMAS,
};

/** A Fastify URL pattern (`/v2/models/:model`) as an OpenAPI path (`/v2/models/{model}`). */
export function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

/** The description of the route `url` (a Fastify URL pattern). @returns undefined for a route no module describes */
export function routeDoc(url: string): RouteDoc | undefined {
  const path = openapiPath(url);
  if (Object.hasOwn(ROUTES, path)) return ROUTES[path];
  const m = /^\/v2\/models\/\{model\}(?:\/versions\/\{version\})?(.*)$/.exec(path);
  return m && Object.hasOwn(MODEL_ROUTES, m[1]!) ? MODEL_ROUTES[m[1]!] : undefined;
}
