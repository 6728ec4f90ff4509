/**
 * The OpenAPI 3.1 document of the HTTP API, served at `GET /v2/openapi.json` (docs/architecture.md "The HTTP frontend"):
 * built from the routes this server registered, each carrying its description in its Fastify
 * route config (routing.ts#route attaches it from catalogue.ts), so a route that is not
 * registered is not described and a route without a description cannot be registered. The
 * descriptions are documentation only: Fastify neither validates nor serialises with them.
 */
import type { FastifyInstance } from 'fastify';
import { TRITON_PROTOCOL_VERSION, WARDEN_VERSION } from '../../../project.js';
import { COMPONENT_SCHEMAS, openapiPath } from './catalogue.js';
import type { Handler } from '../routing.js';
import { OPENAPI_CONFIG_KEY, type JsonSchema, type OperationDoc, type ResponseDoc, type RouteDoc } from './types.js';

export { OPENAPI_PATH } from './catalogue.js';

/** The described routes of each app, by Fastify URL, in registration order. */
const described = new WeakMap<FastifyInstance, Map<string, RouteDoc>>();

/**
 * Record the description of every route `app` registers from now on (call before any route is
 * registered; {@link openapiDocument} reads them).
 * @throws Error (from the registration) for a route whose config carries no description
 */
export function describeRoutes(app: FastifyInstance): void {
  const routes = new Map<string, RouteDoc>();
  described.set(app, routes);
  app.addHook('onRoute', (opts) => {
    const doc = (opts.config as Record<string, unknown> | undefined)?.[OPENAPI_CONFIG_KEY] as RouteDoc | undefined;
    if (!doc) throw new Error(`route ${opts.url} has no OpenAPI description (frontend/http/openapi/)`);
    routes.set(opts.url, doc);
  });
}

/** Path parameters, by name. */
const PATH_PARAMETERS: Record<string, [JsonSchema, string]> = {
  model: [{ type: 'string', minLength: 1 }, 'The model name (percent-encoded).'],
  version: [{ type: 'string', pattern: '^[0-9]+$' }, 'The model version; without it, the server picks the highest ready version.'],
  region: [{ type: 'string', minLength: 1 }, 'The shared-memory region name.'],
  repo: [{ type: 'string', minLength: 1 }, 'A repository name (not supported: 501).'],
  file: [{ type: 'string', minLength: 1 }, 'A file of the web console (docs/console.md).'],
};

const media = (content: Record<string, JsonSchema> | undefined) =>
  content && Object.fromEntries(Object.entries(content).map(([type, schema]) => [type, { schema }]));

function response(r: ResponseDoc): Record<string, unknown> {
  return {
    description: r.description,
    ...(r.headers && { headers: Object.fromEntries(Object.entries(r.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])) }),
    ...(r.content && { content: media(r.content) }),
  };
}

function operation(path: string, method: string, tag: string, open: boolean, op: OperationDoc): Record<string, unknown> {
  const parameters = [
    ...[...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => {
      const [schema, description] = PATH_PARAMETERS[name!] ?? [{ type: 'string' }, ''];
      return { name, in: 'path', required: true, description, schema };
    }),
    ...Object.entries(op.query ?? {}).map(([name, [schema, description]]) => ({ name, in: 'query', required: false, description, schema })),
  ];
  return {
    tags: [tag],
    summary: op.summary,
    ...(op.description && { description: op.description }),
    operationId: `${method}${path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    ...(parameters.length > 0 && { parameters }),
    ...(op.requestBody && {
      requestBody: {
        required: op.requestBody.required ?? false,
        ...(op.requestBody.description && { description: op.requestBody.description }),
        content: media(op.requestBody.content),
      },
    }),
    responses: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, response(r)])),
    ...(open && { security: [] }),
  };
}

/** Paths anyone may call without credentials in multi-tenant mode (frontend/http/auth.ts). */
const OPEN_PATHS = new Set(['/v2/health/live', '/v2/health/ready']);

/**
 * The OpenAPI 3.1 document of the routes `app` registered ({@link describeRoutes}).
 * @throws Error when `app` records no descriptions
 */
export function openapiDocument(app: FastifyInstance): Record<string, unknown> {
  const routes = described.get(app);
  if (!routes) throw new Error('openapiDocument: describeRoutes(app) was not called');
  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  for (const [url, doc] of routes) {
    const path = openapiPath(url);
    const item: Record<string, unknown> = {};
    for (const method of ['GET', 'POST'] as const) {
      const op = doc[method];
      if (op) item[method.toLowerCase()] = operation(path, method.toLowerCase(), doc.tag, OPEN_PATHS.has(path) || doc.open === true, op);
    }
    tags.add(doc.tag);
    paths[path] = item;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Warden HTTP API',
      version: WARDEN_VERSION,
      description:
        `Triton Inference Server's HTTP/REST protocol (KServe v2 / Open Inference Protocol and Triton's extensions, Triton ${TRITON_PROTOCOL_VERSION}), ` +
        "Warden's additions (per-model logs, statistics fields) and the OpenAI-compatible API. Every method a path does not list answers 405; " +
        'unknown paths answer 404 `{"error":"Not Found"}`.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    tags: [...tags].map((name) => ({ name })),
    paths,
    components: {
      schemas: COMPONENT_SCHEMAS,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A tenant token or JWT (multi-tenant mode; no credentials in single-user mode).' },
      },
    },
    security: [{}, { bearer: [] }],
  };
}

/**
 * The handler of `GET /v2/openapi.json`: {@link openapiDocument} as JSON, built at the first
 * request (every route is registered by then) and kept.
 */
export function openapiHandler(app: FastifyInstance): Handler {
  let text: string | undefined;
  return (_q, r) => r.type('application/json').send((text ??= JSON.stringify(openapiDocument(app))));
}
