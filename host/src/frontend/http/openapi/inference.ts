/**
 * The inference routes: `/infer` (spec §1.8–§1.13, the binary tensor data extension §2) and the
 * generate extension's `/generate` and `/generate_stream` (spec §3.6).
 */
import { ERRORS, json, ok, ref } from './common.js';
import type { JsonSchema, RouteDoc } from './types.js';

const BINARY_HEADER = 'With binary tensor data (spec §2): the byte length of the JSON header that starts the body.';

/** `POST /v2/models/{model}[/versions/{version}]/infer`. */
export const INFER: RouteDoc = {
  tag: 'inference',
  POST: {
    summary: 'Run one inference',
    description:
      'A JSON request, or (binary tensor data extension, spec §2) a JSON header of `Inference-Header-Content-Length` bytes followed by the binary inputs ' +
      '(`Inference-Header-Content-Length: 0`: the raw bytes of a one-input model). Bodies may be sent gzip / deflate compressed (`Content-Encoding`).',
    requestBody: {
      required: true,
      content: { ...json(ref('InferenceRequest')), 'application/octet-stream': { type: 'string', contentMediaType: 'application/octet-stream' } },
    },
    responses: {
      '200': {
        description: 'The outputs: JSON, or with binary outputs a JSON header (of `Inference-Header-Content-Length` bytes) followed by their bytes.',
        content: { ...json(ref('InferenceResponse')), 'application/octet-stream': { type: 'string', contentMediaType: 'application/octet-stream' } },
        headers: { 'Inference-Header-Content-Length': BINARY_HEADER },
      },
      default: ERRORS,
    },
  },
};

/** `POST /v2/models/{model}[/versions/{version}]/generate`. */
export const GENERATE: RouteDoc = {
  tag: 'inference',
  POST: {
    summary: 'Run one inference with flat JSON inputs and outputs (generate extension)',
    description:
      "Each top-level key (and each key of `parameters`) is an input of that name, else a request parameter; the answer's keys are the response's " +
      'parameters and outputs (single-element outputs as scalars). The model must answer with exactly one response.',
    requestBody: { required: true, content: json(ref('GenerateRequest')) },
    responses: { '200': ok('The response.', ref('GenerateResponse')), default: ERRORS },
  },
};

/** `POST /v2/models/{model}[/versions/{version}]/generate_stream`. */
export const GENERATE_STREAM: RouteDoc = {
  tag: 'inference',
  POST: {
    summary: 'Run one inference and stream its responses as server-sent events (generate extension)',
    description:
      'Each response is an event `data: <GenerateResponse JSON>`; an error after the first response is an event `data: {"error": ...}`. ' +
      'Errors before inference starts are ordinary JSON error answers.',
    requestBody: { required: true, content: json(ref('GenerateRequest')) },
    responses: {
      '200': {
        description: 'The event stream.',
        content: { 'text/event-stream': { type: 'string', description: '`data: <json>` events, each followed by a blank line.' } },
      },
      default: ERRORS,
    },
  },
};

const parameters: JsonSchema = {
  type: 'object',
  description: 'Parameters: strings, integers, booleans or numbers (spec §1.11, §3.8).',
  additionalProperties: { type: ['string', 'number', 'boolean'] },
};

/** The inference group's component schemas. */
export const INFERENCE_SCHEMAS: Record<string, JsonSchema> = {
  InferenceRequest: {
    type: 'object',
    required: ['inputs'],
    properties: {
      id: { type: 'string' },
      parameters,
      inputs: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'shape', 'datatype'],
          properties: {
            name: { type: 'string' },
            shape: { type: 'array', items: { type: 'integer', minimum: 0 } },
            datatype: ref('Datatype'),
            parameters,
            data: { description: 'The elements, flat or nested, row-major (spec §1.10); absent for binary or shared-memory inputs.' },
          },
        },
      },
      outputs: {
        type: 'array',
        items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, parameters } },
      },
    },
  },
  InferenceResponse: {
    type: 'object',
    required: ['model_name', 'model_version', 'outputs'],
    additionalProperties: false,
    properties: {
      id: { type: 'string' },
      model_name: { type: 'string' },
      model_version: { type: 'string', pattern: '^[0-9]+$' },
      parameters: { type: 'object' },
      outputs: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'datatype', 'shape'],
          additionalProperties: false,
          properties: {
            name: { type: 'string' },
            datatype: ref('Datatype'),
            shape: { type: 'array', items: { type: 'integer', minimum: 0 } },
            data: { type: 'array', description: 'JSON outputs: the elements, flat, row-major.' },
            parameters: {
              type: 'object',
              description: '`binary_data_size` for a binary output; `shared_memory_region` / `_byte_size` / `_offset` for a shared-memory one.',
              properties: {
                binary_data_size: { type: 'integer', minimum: 0 },
                shared_memory_region: { type: 'string' },
                shared_memory_byte_size: { type: 'integer', minimum: 0 },
                shared_memory_offset: { type: 'integer', minimum: 0 },
              },
            },
          },
        },
      },
    },
  },
  GenerateRequest: {
    type: 'object',
    description: 'Inputs by name (a scalar or a 1-D array each), and request parameters; `parameters` (an object) holds more of either.',
    properties: { id: { type: 'string' }, parameters: { type: 'object' } },
  },
  GenerateResponse: {
    type: 'object',
    required: ['model_name', 'model_version'],
    description: "`model_name`, `model_version`, `id` when the request had one, then the response's parameters and outputs by name.",
    properties: { id: { type: 'string' }, model_name: { type: 'string' }, model_version: { type: 'string', pattern: '^[0-9]+$' } },
  },
};
