/** The model repository extension's routes (spec §3.1): index, load (Warden: a tenant's upload), unload. */
import { ERRORS, error, json, ok, okEmpty, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

/** The repository group's routes, by Fastify URL. */
export const REPOSITORY_ROUTES: Record<string, RouteDoc> = {
  '/v2/repository/index': {
    tag: 'model-repository',
    POST: {
      summary: 'The models of the repositories the caller sees, with their states',
      requestBody: { content: json({ type: 'object', properties: { ready: { type: 'boolean', description: 'Only ready models.' } } }) },
      responses: { '200': ok('One entry per model (version).', { type: 'array', items: ref('RepositoryIndexEntry') }), default: ERRORS },
    },
  },
  '/v2/repository/models/{model}/load': {
    tag: 'model-repository',
    POST: {
      summary: 'Load or reload a model (in multi-tenant mode: upload a tenant model)',
      description:
        '`parameters.config`: a JSON `ModelConfig` overriding config.pbtxt; `file:<version>/<path>`: a file of the model, base64; ' +
        "`file_sha256:<version>/<path>` (Warden's): a file already uploaded, by its SHA-256. Answers once the model loaded or failed.",
      requestBody: { content: json(ref('LoadRequest')) },
      responses: { '200': okEmpty('Loaded (empty body).'), default: ERRORS },
    },
  },
  '/v2/repository/models/{model}/unload': {
    tag: 'model-repository',
    POST: {
      summary: 'Unload a model',
      requestBody: {
        content: json({ type: 'object', properties: { parameters: { type: 'object', properties: { unload_dependents: { type: 'boolean' } } } } }),
      },
      responses: { '200': okEmpty('Unloading (empty body); in-flight requests finish first.'), default: ERRORS },
    },
  },
};

const named = (what: string): RouteDoc => ({
  tag: 'model-repository',
  POST: {
    summary: `${what} in a named repository (not supported)`,
    responses: { '501': error("`'repository_name' specification is not supported`."), default: ERRORS },
  },
});

/** The named-repository forms, which Triton refuses (spec §1.1). */
export const NAMED_REPOSITORY_ROUTES: Record<string, RouteDoc> = {
  '/v2/repository/{repo}/index': named('The index'),
  '/v2/repository/{repo}/models/{model}/load': named('Load'),
  '/v2/repository/{repo}/models/{model}/unload': named('Unload'),
};

/** The repository group's component schemas. */
export const REPOSITORY_SCHEMAS: Record<string, JsonSchema> = {
  RepositoryIndexEntry: {
    type: 'object',
    required: ['name'],
    additionalProperties: false,
    properties: {
      name: { type: 'string' },
      version: { type: 'string', pattern: '^[0-9]+$' },
      state: { enum: ['UNKNOWN', 'READY', 'UNAVAILABLE', 'LOADING', 'UNLOADING'] },
      reason: { type: 'string' },
    },
  },
  LoadRequest: {
    type: 'object',
    properties: {
      parameters: {
        type: 'object',
        properties: { config: { type: 'string', description: 'A JSON ModelConfig, as a string.' } },
        additionalProperties: { type: 'string' },
      },
    },
  },
};
