/**
 * `--http-restricted-api` on the HTTP frontend (frontend/restricted.ts; Triton server
 * src/http_server.cc RETURN_AND_RESPOND_IF_RESTRICTED / RespondIfRestricted): each route belongs
 * to one API group, as Triton's handlers check them; a request to a restricted group without the
 * group's header and value gets 403 `{"error":"This API is restricted, expecting header '<key>'"}`
 * before the route's method check and before its body is read. Routes are classified when they
 * are registered (routing.ts#route), so a route no group names cannot be added at all. Claimed
 * `/infer` requests (fast-path.ts, threads/worker.ts) are claimed only when they hold the
 * `inference` header; the rest go to Fastify, which refuses them here.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { AccessError } from '../../contract/errors.js';
import { type RestrictedCategory, type RestrictedFeatures, type Restriction, restrictionSatisfied } from '../restricted.js';
import { apiRestricted } from './http.errors.js';

/**
 * The API group of a route, by its Fastify URL pattern (Triton's Handle* functions: health and
 * model readiness are `health`; server and model metadata `metadata`; infer and generate
 * `inference`; both shared-memory extensions `shared-memory`; `/config` `model-config`; every
 * `/v2/repository/...` route `model-repository`; `/stats` `statistics`; trace settings `trace`;
 * `/v2/logging` and Warden's per-model `/log` `logging`).
 * @throws Error for a route no group covers (a new route must be classified)
 */
export function httpCategoryOf(url: string): RestrictedCategory {
  // Warden's description of the HTTP API (openapi/document.ts) is grouped with server metadata.
  if (url === '/v2' || url === '/v2/openapi.json') return 'metadata';
  // The OpenAI-compatible API (frontend/openai/), grouped as Triton's OpenAI frontend groups it
  // (middleware/api_restriction.py): the model list `model-repository`, completions `inference`.
  if (url === '/v1/models' || url === '/v1/models/:model') return 'model-repository';
  if (url === '/v1/completions' || url === '/v1/chat/completions') return 'inference';
  if (url.startsWith('/v2/health/')) return 'health';
  if (url.startsWith('/v2/repository/')) return 'model-repository';
  if (url.startsWith('/v2/systemsharedmemory/') || url.startsWith('/v2/cudasharedmemory/')) return 'shared-memory';
  if (url === '/v2/logging') return 'logging';
  if (url.endsWith('/trace/setting')) return 'trace';
  if (url === '/v2/models/stats') return 'statistics';
  // Warden's tenants route (tenants.ts): quotas and usage, read as statistics are.
  if (url === '/v2/tenants') return 'statistics';
  const m = /^\/v2\/models\/:model(?:\/versions\/:version)?(?:\/(ready|config|stats|log|infer|generate|generate_stream))?$/.exec(url);
  if (m) {
    switch (m[1]) {
      case undefined:
        return 'metadata';
      case 'ready':
        return 'health';
      case 'config':
        return 'model-config';
      case 'stats':
        return 'statistics';
      case 'log':
        return 'logging';
      default:
        return 'inference';
    }
  }
  throw new Error(`route ${url} belongs to no restricted API group (frontend/http/restricted.ts)`);
}

/** The restrictions of each app, set before its routes are registered. */
const restrictions = new WeakMap<FastifyInstance, RestrictedFeatures>();

/** Record `features` for `app`'s routes; call before any route is registered (routing.ts#route reads it). */
export function restrictRoutes(app: FastifyInstance, features: RestrictedFeatures | undefined): void {
  restrictions.set(app, features ?? {});
}

/**
 * The restriction of the route `url` of `app`. @returns undefined when its group is open
 * @throws Error when no group covers `url` ({@link httpCategoryOf})
 */
export function routeRestriction(app: FastifyInstance, url: string): Restriction | undefined {
  const category = httpCategoryOf(url);
  return restrictions.get(app)?.[category];
}

/**
 * Whether `req` holds the header `r` asks for, with its value. The first of repeated headers
 * counts (libevhtp's evhtp_kv_find); header names match in any letter case.
 */
export function requestSatisfies(req: IncomingMessage, r: Restriction): boolean {
  return restrictionSatisfied(r, req.headersDistinct[r.header.toLowerCase()]?.[0]);
}

/** Triton's answer to a request without the header: 403 `This API is restricted, expecting header '<key>'`. */
export function restrictedError(r: Restriction): AccessError {
  return apiRestricted(r.header);
}
