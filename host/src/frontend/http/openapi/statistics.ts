/** The statistics extension's routes (spec §3.2): every model's, one model's, one version's. */
import { ERRORS, ok, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

/** `GET /v2/models/stats`. */
export const ALL_STATISTICS: RouteDoc = {
  tag: 'statistics',
  GET: {
    summary: 'Statistics of every serving model version the caller sees',
    description: 'A tenant sees its own models; an administrator (and single-user mode) every model.',
    responses: { '200': ok('Statistics.', ref('Statistics')), default: ERRORS },
  },
};

/** `GET /v2/models/{model}[/versions/{version}]/stats`. */
export const MODEL_STATISTICS: RouteDoc = {
  tag: 'statistics',
  GET: {
    summary: "A model's (or one version's) statistics",
    responses: { '200': ok('Statistics.', ref('Statistics')), default: ERRORS },
  },
};

const duration: JsonSchema = {
  type: 'object',
  required: ['count', 'ns'],
  additionalProperties: false,
  properties: { count: { type: 'integer', minimum: 0 }, ns: { type: 'integer', minimum: 0 } },
};
const durations = (names: string[]): JsonSchema => ({
  type: 'object',
  required: names,
  additionalProperties: false,
  properties: Object.fromEntries(names.map((n) => [n, ref('StatDuration')])),
});

const percentiles: JsonSchema = {
  type: 'object',
  required: ['count', 'p50', 'p90', 'p99'],
  additionalProperties: false,
  properties: {
    count: { type: 'integer', minimum: 1, maximum: 512, description: 'Samples the percentiles are over (the latest, at most 512).' },
    p50: { type: 'number', minimum: 0 },
    p90: { type: 'number', minimum: 0 },
    p99: { type: 'number', minimum: 0 },
  },
};

/** The statistics group's component schemas. */
export const STATISTICS_SCHEMAS: Record<string, JsonSchema> = {
  StatDuration: duration,
  LatencyPercentiles: percentiles,
  Statistics: {
    type: 'object',
    required: ['model_stats'],
    additionalProperties: false,
    properties: { model_stats: { type: 'array', items: ref('ModelStatistics') } },
  },
  ModelStatistics: {
    type: 'object',
    required: ['name', 'version', 'last_inference', 'inference_count', 'execution_count', 'inference_stats', 'response_stats', 'batch_stats', 'memory_usage'],
    additionalProperties: false,
    properties: {
      name: { type: 'string' },
      version: { type: 'string', pattern: '^[0-9]+$' },
      last_inference: { type: 'integer', minimum: 0, description: 'Milliseconds since the epoch; 0 before the first.' },
      inference_count: { type: 'integer', minimum: 0 },
      execution_count: { type: 'integer', minimum: 0 },
      inference_stats: durations(['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output', 'cache_hit', 'cache_miss']),
      response_stats: { type: 'object', additionalProperties: { type: 'object', additionalProperties: ref('StatDuration') } },
      batch_stats: {
        type: 'array',
        items: {
          type: 'object',
          required: ['batch_size', 'compute_input', 'compute_infer', 'compute_output'],
          additionalProperties: false,
          properties: {
            batch_size: { type: 'integer', minimum: 1 },
            compute_input: ref('StatDuration'),
            compute_infer: ref('StatDuration'),
            compute_output: ref('StatDuration'),
          },
        },
      },
      memory_usage: {
        type: 'array',
        items: { type: 'object', properties: { type: { enum: ['CPU', 'CPU_PINNED', 'GPU'] }, id: { type: 'integer' }, byte_size: { type: 'integer' } } },
      },
      pending_count: { type: 'integer', minimum: 0, description: "Warden's addition: requests accepted and not yet answered." },
      tenant: { type: 'string', description: "Warden's addition, in multi-tenant mode: the model's tenant ('' for an operator model)." },
      token_usage: {
        type: 'object',
        required: ['prompt_tokens', 'completion_tokens'],
        additionalProperties: false,
        description:
          "Warden's addition, once the version served an OpenAI-compatible request: the prompt and completion tokens counted (docs/openai.md); in multi-tenant mode also by the caller's tenant ('' the operator).",
        properties: {
          prompt_tokens: { type: 'integer', minimum: 0 },
          completion_tokens: { type: 'integer', minimum: 0 },
          tenants: {
            type: 'object',
            additionalProperties: {
              type: 'object',
              required: ['prompt_tokens', 'completion_tokens'],
              additionalProperties: false,
              properties: { prompt_tokens: { type: 'integer', minimum: 0 }, completion_tokens: { type: 'integer', minimum: 0 } },
            },
          },
        },
      },
      latency_percentiles_us: {
        type: 'object',
        additionalProperties: false,
        minProperties: 1,
        description:
          "Warden's addition, once the version timed a request: nearest-rank percentiles in microseconds of the latest successful requests' end-to-end durations (`request`) and of the latest queue times (`queue`), at most 512 of each. Requests the native HTTP data path served are counted in sums only and are not in these.",
        properties: { request: ref('LatencyPercentiles'), queue: ref('LatencyPercentiles') },
      },
    },
  },
};
