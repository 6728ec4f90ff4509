/**
 * The OpenAI-compatible API's routes (docs/openai.md; frontend/openai/): the text-generation
 * models, completions and chat completions, in OpenAI's shapes (the `openai` package's types),
 * every error in OpenAI's error object.
 */
import { json, ok, ref } from './common.js';
import type { JsonSchema, ResponseDoc, RouteDoc } from './types.js';

const ERRORS: ResponseDoc = {
  description: "An error in OpenAI's shape, with OpenAI's status (400, 401, 403, 404, 429 with `Retry-After`, 500, 501, 503).",
  content: json(ref('OpenAIError')),
};

const completion = (chat: boolean): RouteDoc => ({
  tag: 'openai',
  POST: {
    summary: chat ? 'Create a chat completion' : 'Create a completion',
    description: 'With `stream: true`, server-sent events of chunks ending in `data: [DONE]`.',
    requestBody: { required: true, content: json(ref(chat ? 'ChatCompletionRequest' : 'CompletionRequest')) },
    responses: {
      '200': {
        description: chat ? 'A `ChatCompletion`, or its stream of `ChatCompletionChunk`s.' : 'A `Completion`, or its stream of chunks.',
        content: { ...json(ref(chat ? 'ChatCompletion' : 'Completion')), 'text/event-stream': { type: 'string' } },
      },
      default: ERRORS,
    },
  },
});

/** The OpenAI-compatible group's routes, by path. */
export const OPENAI_ROUTES: Record<string, RouteDoc> = {
  '/v1/models': {
    tag: 'openai',
    GET: {
      summary: 'The text-generation models the caller may use',
      responses: {
        '200': ok('The models.', {
          type: 'object',
          required: ['object', 'data'],
          additionalProperties: false,
          properties: { object: { const: 'list' }, data: { type: 'array', items: ref('OpenAIModel') } },
        }),
        default: ERRORS,
      },
    },
  },
  '/v1/models/{model}': {
    tag: 'openai',
    GET: { summary: 'One text-generation model', responses: { '200': ok('The model.', ref('OpenAIModel')), default: ERRORS } },
  },
  '/v1/completions': completion(false),
  '/v1/chat/completions': completion(true),
};

const nullableString: JsonSchema = { type: ['string', 'null'] };
const usage: JsonSchema = {
  anyOf: [
    {
      type: 'object',
      required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
      properties: { prompt_tokens: { type: 'integer' }, completion_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
    },
    { type: 'null' },
  ],
};
const header = (object: string, choice: JsonSchema): JsonSchema => ({
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'choices'],
  additionalProperties: false,
  properties: {
    id: { type: 'string' },
    object: { const: object },
    created: { type: 'integer' },
    model: { type: 'string' },
    system_fingerprint: nullableString,
    choices: { type: 'array', items: choice },
    usage,
  },
});
const finish: JsonSchema = { enum: ['stop', 'length'] };
const numbers: JsonSchema = { type: 'array', items: { type: 'number' } };
/** Completions' `logprobs` (`CompletionChoice.Logprobs`), null when not asked or not reported. */
const completionLogprobs: JsonSchema = {
  anyOf: [
    {
      type: 'object',
      required: ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset'],
      additionalProperties: false,
      properties: {
        tokens: { type: 'array', items: { type: 'string' } },
        token_logprobs: numbers,
        top_logprobs: { type: 'array', items: { type: 'object', additionalProperties: { type: 'number' } } },
        text_offset: { type: 'array', items: { type: 'integer' } },
      },
    },
    { type: 'null' },
  ],
};
const tokenLogprob = (alternatives: boolean): JsonSchema => ({
  type: 'object',
  required: alternatives ? ['token', 'logprob', 'bytes', 'top_logprobs'] : ['token', 'logprob', 'bytes'],
  additionalProperties: false,
  properties: {
    token: { type: 'string' },
    logprob: { type: 'number' },
    bytes: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 255 } },
    ...(alternatives ? { top_logprobs: { type: 'array', items: tokenLogprob(false) } } : {}),
  },
});
/** Chat's `logprobs` (`ChatCompletion.Choice.Logprobs`), null when not asked or not reported. */
const chatLogprobs: JsonSchema = {
  anyOf: [
    {
      type: 'object',
      required: ['content'],
      additionalProperties: false,
      properties: { content: { type: 'array', items: tokenLogprob(true) }, refusal: { type: 'null' } },
    },
    { type: 'null' },
  ],
};

/** The OpenAI-compatible group's component schemas. */
export const OPENAI_SCHEMAS: Record<string, JsonSchema> = {
  OpenAIError: {
    type: 'object',
    required: ['error'],
    additionalProperties: false,
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'param', 'code'],
        additionalProperties: false,
        properties: { message: { type: 'string' }, type: { type: 'string' }, param: nullableString, code: nullableString },
      },
    },
  },
  OpenAIModel: {
    type: 'object',
    required: ['id', 'object', 'created', 'owned_by'],
    additionalProperties: false,
    properties: { id: { type: 'string' }, object: { const: 'model' }, created: { type: 'integer' }, owned_by: { type: 'string' } },
  },
  CompletionRequest: {
    type: 'object',
    required: ['model', 'prompt'],
    properties: { model: { type: 'string' }, prompt: { type: ['string', 'array'] }, stream: { type: 'boolean' }, max_tokens: { type: ['integer', 'null'] } },
  },
  ChatCompletionRequest: {
    type: 'object',
    required: ['model', 'messages'],
    properties: {
      model: { type: 'string' },
      messages: { type: 'array', items: { type: 'object', required: ['role'], properties: { role: { type: 'string' }, content: {} } } },
      stream: { type: 'boolean' },
      max_tokens: { type: ['integer', 'null'] },
    },
  },
  Completion: header('text_completion', {
    type: 'object',
    required: ['index', 'text', 'logprobs', 'finish_reason'],
    additionalProperties: false,
    properties: { index: { type: 'integer' }, text: { type: 'string' }, logprobs: completionLogprobs, finish_reason: finish },
  }),
  ChatCompletion: header('chat.completion', {
    type: 'object',
    required: ['index', 'message', 'logprobs', 'finish_reason'],
    additionalProperties: false,
    properties: {
      index: { type: 'integer' },
      message: {
        type: 'object',
        required: ['role', 'content'],
        properties: { role: { const: 'assistant' }, content: { type: 'string' }, refusal: { type: 'null' } },
      },
      logprobs: chatLogprobs,
      finish_reason: finish,
    },
  }),
};
