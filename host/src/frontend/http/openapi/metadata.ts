/** The metadata routes (spec §1.4, §1.5, §1.7): server metadata, model metadata, model configuration. */
import { ERRORS, ok, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

/** `GET /v2`. */
export const SERVER_METADATA: RouteDoc = {
  tag: 'metadata',
  GET: { summary: "The server's name, protocol version and extensions", responses: { '200': ok('Server metadata.', ref('ServerMetadata')), default: ERRORS } },
};

/** `GET /v2/models/{model}[/versions/{version}]`. */
export const MODEL_METADATA: RouteDoc = {
  tag: 'metadata',
  GET: {
    summary: "A model's versions, platform, inputs and outputs",
    description: '`versions` lists the ready versions, or the one asked for; shapes carry a leading -1 for a batching model.',
    responses: { '200': ok('Model metadata.', ref('ModelMetadata')), default: ERRORS },
  },
};

/** `GET /v2/models/{model}[/versions/{version}]/config`. */
export const MODEL_CONFIG: RouteDoc = {
  tag: 'model-config',
  GET: {
    summary: "A model's normalised configuration",
    description: 'The JSON form of the `ModelConfig` protobuf, every default printed, not wrapped (spec §1.7).',
    responses: { '200': ok('The model configuration.', ref('ModelConfig')), default: ERRORS },
  },
};

/** `GET /v2/openapi.json`: this description. */
export const OPENAPI_ROUTE: RouteDoc = {
  tag: 'metadata',
  GET: {
    summary: 'This description of the HTTP API (OpenAPI 3.1)',
    description: "Warden's addition; generated from the routes this server registered. Authenticated like `GET /v2` in multi-tenant mode.",
    responses: { '200': ok('The OpenAPI document.', { type: 'object', required: ['openapi', 'info', 'paths'] }), default: ERRORS },
  },
};

const tensorMetadata: JsonSchema = {
  type: 'object',
  required: ['name', 'datatype', 'shape'],
  additionalProperties: false,
  properties: { name: { type: 'string' }, datatype: ref('Datatype'), shape: ref('Shape') },
};

/** The metadata group's component schemas. */
export const METADATA_SCHEMAS: Record<string, JsonSchema> = {
  ServerMetadata: {
    type: 'object',
    required: ['name', 'version', 'extensions'],
    additionalProperties: false,
    properties: { name: { type: 'string' }, version: { type: 'string' }, extensions: { type: 'array', items: { type: 'string' } } },
  },
  ModelMetadata: {
    type: 'object',
    required: ['name', 'versions', 'platform', 'inputs', 'outputs'],
    additionalProperties: false,
    properties: {
      name: { type: 'string' },
      versions: { type: 'array', items: { type: 'string', pattern: '^[0-9]+$' } },
      platform: { type: 'string' },
      inputs: { type: 'array', items: tensorMetadata },
      outputs: { type: 'array', items: tensorMetadata },
    },
  },
  ModelConfig: {
    type: 'object',
    description: 'model_config.proto `ModelConfig` in JSON (snake_case names, enums by name).',
    required: ['name', 'max_batch_size', 'input', 'output'],
    properties: {
      name: { type: 'string' },
      platform: { type: 'string' },
      backend: { type: 'string' },
      max_batch_size: { type: 'integer', minimum: 0 },
      input: { type: 'array', items: { type: 'object', required: ['name', 'data_type', 'dims'] } },
      output: { type: 'array', items: { type: 'object', required: ['name', 'data_type', 'dims'] } },
      instance_group: { type: 'array', items: { type: 'object' } },
      parameters: { type: 'object', additionalProperties: { type: 'object', properties: { string_value: { type: 'string' } } } },
    },
  },
};
