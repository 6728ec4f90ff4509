/** The trace extension's routes (spec §3.5): the global and per-model trace settings. */
import { ERRORS, json, ok, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

/** `GET|POST /v2[/models/{model}[/versions/{version}]]/trace/setting`. */
export const TRACE_SETTINGS: RouteDoc = {
  tag: 'trace',
  GET: { summary: 'Trace settings (global, or in effect for a model)', responses: { '200': ok('The settings.', ref('TraceSettings')), default: ERRORS } },
  POST: {
    summary: 'Change trace settings',
    description: 'Keys left out stay as they are; for a model, null clears its override (the global value applies).',
    requestBody: { content: json(ref('TraceSettingsUpdate')) },
    responses: { '200': ok('The settings after the change.', ref('TraceSettings')), default: ERRORS },
  },
};

const KEYS = ['trace_file', 'trace_level', 'trace_rate', 'trace_count', 'log_frequency', 'trace_mode'];
const value = (key: string): JsonSchema => (key === 'trace_level' ? { type: 'array', items: { enum: ['OFF', 'TIMESTAMPS', 'TENSORS'] } } : { type: 'string' });

/** The trace group's component schemas. */
export const TRACE_SCHEMAS: Record<string, JsonSchema> = {
  TraceSettings: {
    type: 'object',
    required: KEYS,
    additionalProperties: false,
    properties: Object.fromEntries(KEYS.map((k) => [k, value(k)])),
  },
  TraceSettingsUpdate: {
    type: 'object',
    properties: Object.fromEntries(KEYS.map((k) => [k, { anyOf: [value(k), { type: 'string' }, { type: 'null' }] }])),
  },
};
