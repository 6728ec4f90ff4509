/** The health routes (spec §1.3, §1.6): server liveness and readiness, a model's readiness. */
import { ERRORS, error, ok, okEmpty, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

const SCHEMA = { live: 'HealthLive', ready: 'HealthReady' } as const;

const probe = (key: 'live' | 'ready', what: string): RouteDoc => ({
  tag: 'health',
  GET: {
    summary: `Whether the server is ${key}`,
    description: `${what} Never needs credentials, in multi-tenant mode too. The status is Triton's; the body is the Open Inference Protocol's.`,
    responses: {
      '200': ok(`The server is ${key}.`, ref(SCHEMA[key])),
      // The process is live whenever it answers: only readiness answers 400.
      ...(key === 'ready' && { '400': ok('The server is not ready.', ref(SCHEMA[key])) }),
      default: ERRORS,
    },
  },
});

/** The health group's routes, by Fastify URL. */
export const HEALTH_ROUTES: Record<string, RouteDoc> = {
  '/v2/health/live': probe('live', 'Live: the process answers.'),
  '/v2/health/ready': probe('ready', 'Ready: accepting requests and (with `--strict-readiness`) every model asked to load is ready.'),
};

/** `GET /v2/models/{model}[/versions/{version}]/ready`. */
export const MODEL_READY: RouteDoc = {
  tag: 'health',
  GET: {
    summary: 'Whether a model (version) is ready for inference',
    responses: {
      '200': okEmpty('Ready (empty body).'),
      '400': error('`{"error":"Model version not ready"}`: not ready, or not a model the caller knows.'),
      default: ERRORS,
    },
  },
};

const health = (key: 'live' | 'ready'): JsonSchema => ({
  type: 'object',
  required: [key],
  additionalProperties: false,
  properties: { [key]: { type: 'boolean' } },
});

/** The health group's component schemas. */
export const HEALTH_SCHEMAS: Record<string, JsonSchema> = { HealthLive: health('live'), HealthReady: health('ready') };
