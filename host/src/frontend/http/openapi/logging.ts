/** The logging extension (spec §3.4) and Warden's per-model log (docs/tenant-guide.md "Your model's log"). */
import { ERRORS, json, ok, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

/** `GET|POST /v2/logging`. */
export const LOG_SETTINGS: RouteDoc = {
  tag: 'logging',
  GET: { summary: "The server's log settings", responses: { '200': ok('The settings.', ref('LogSettings')), default: ERRORS } },
  POST: {
    summary: "Change the server's log settings",
    description: 'Keys left out (or null) stay as they are; `log_file` cannot be changed over the network (501).',
    requestBody: { content: json(ref('LogSettingsUpdate')) },
    responses: { '200': ok('The settings after the change.', ref('LogSettings')), default: ERRORS },
  },
};

/** `GET /v2/models/{model}[/versions/{version}]/log`. */
export const MODEL_LOG: RouteDoc = {
  tag: 'logging',
  GET: {
    summary: "The lines a model's backend wrote (Warden's addition)",
    description: "Readable by the model's tenant and by administrators; a version's lines only when a version is given.",
    query: { since: [{ type: 'integer', minimum: 0 }, 'Only lines after this sequence number (0: every kept line).'] },
    responses: { '200': ok("The model's log.", ref('ModelLog')), default: ERRORS },
  },
};

const settings = (update: boolean): JsonSchema => {
  const t = (type: JsonSchema): JsonSchema => (update ? { anyOf: [type, { type: 'null' }] } : type);
  return {
    type: 'object',
    ...(update ? {} : { required: ['log_file', 'log_info', 'log_warning', 'log_error', 'log_verbose_level', 'log_format'] }),
    additionalProperties: false,
    properties: {
      log_file: t({ type: 'string' }),
      log_info: t({ type: 'boolean' }),
      log_warning: t({ type: 'boolean' }),
      log_error: t({ type: 'boolean' }),
      log_verbose_level: t({ type: 'integer', minimum: 0 }),
      log_format: t({ enum: ['default', 'ISO8601'] }),
    },
  };
};

/** The logging group's component schemas. */
export const LOGGING_SCHEMAS: Record<string, JsonSchema> = {
  LogSettings: settings(false),
  LogSettingsUpdate: settings(true),
  ModelLog: {
    type: 'object',
    required: ['model', 'lines', 'next_seq', 'dropped_lines', 'dropped_bytes', 'limits'],
    additionalProperties: false,
    properties: {
      model: { type: 'string' },
      lines: {
        type: 'array',
        items: {
          type: 'object',
          required: ['seq', 'time', 'version', 'level', 'source', 'message'],
          additionalProperties: false,
          properties: {
            seq: { type: 'integer', minimum: 1 },
            time: { type: 'string', description: 'ISO 8601, UTC.' },
            version: { type: 'integer', minimum: 0 },
            level: { enum: ['error', 'warn', 'info', 'verbose'] },
            source: { enum: ['guest', 'stdout', 'stderr', 'host'] },
            message: { type: 'string' },
            truncated_bytes: { type: 'integer', minimum: 1 },
          },
        },
      },
      next_seq: { type: 'integer', minimum: 1, description: 'The sequence number the next line will get.' },
      dropped_lines: { type: 'integer', minimum: 0 },
      dropped_bytes: { type: 'integer', minimum: 0 },
      limits: {
        type: 'object',
        required: ['lines', 'bytes', 'lineBytes'],
        additionalProperties: false,
        properties: { lines: { type: 'integer' }, bytes: { type: 'integer' }, lineBytes: { type: 'integer' } },
      },
    },
  },
};
