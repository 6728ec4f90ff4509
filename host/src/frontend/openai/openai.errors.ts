/**
 * The error catalogue of the OpenAI-compatible API (frontend/openai/), one function per message.
 * Each error carries the request field it concerns (`param` of OpenAI's error object) and, where
 * OpenAI has one, its `code`; error-shape.ts gives the HTTP status and the `{"error": {...}}` body.
 * Wording: OpenAI's where its API has the message, Triton's OpenAI frontend's (server repository,
 * python/openai engine/triton_engine.py) where only Triton has it, Warden's otherwise. INVALID_ARG
 * (400) unless noted.
 */
import type { TritonError } from '../../contract/errors.js';
import { OpenAIError } from './openai-error.js';

const invalid = (message: string, param: string | null = null, code: string | null = null) => new OpenAIError('INVALID_ARG', message, param, code);

/** NOT_FOUND (404): a model the caller cannot use, or that does not exist (OpenAI's text). */
export function modelNotFound(model: string): TritonError {
  return new OpenAIError('NOT_FOUND', `The model \`${model}\` does not exist or you do not have access to it.`, 'model', 'model_not_found');
}

/** A model that does not declare the text-generation I/O (`text_input`, `text_output`; Warden's text). */
export function modelNotTextGeneration(model: string): TritonError {
  return invalid(
    `The model \`${model}\` does not declare the text-generation inputs and outputs (text_input and text_output, BYTES).`,
    'model',
    'model_not_supported',
  );
}

/** A body that is not JSON; `detail` the parser's reason (Warden's text). */
export function bodyNotJson(detail: string): TritonError {
  return invalid(`We could not parse the JSON body of your request: ${detail}`);
}

/** A body that is JSON but not an object (Warden's text). */
export function bodyNotObject(): TritonError {
  return invalid('The request body must be a JSON object.');
}

/** A required field that is absent (OpenAI's text). */
export function fieldMissing(param: string): TritonError {
  return invalid(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
}

/** A field whose value has the wrong type; `expected` in words (OpenAI's text). */
export function fieldType(param: string, expected: string): TritonError {
  return invalid(`Invalid type for '${param}': expected ${expected}.`, param, 'invalid_type');
}

/** A number outside its range; `range` in words (OpenAI's text). */
export function fieldRange(param: string, range: string): TritonError {
  return invalid(`Invalid value for '${param}': must be ${range}.`, param, 'invalid_value');
}

/** A field the API does not know (OpenAI's text). */
export function fieldUnknown(param: string): TritonError {
  return invalid(`Unrecognized request argument supplied: ${param}`, param, 'unknown_parameter');
}

/** A field the API knows that Warden does not serve (Triton's OpenAI frontend's text). */
export function fieldUnsupported(param: string): TritonError {
  return invalid(`${param} is not currently supported`, param, 'unsupported_parameter');
}

/** `n` above Warden's cap of parallel choices (Warden's text). */
export function choicesOverCap(n: number, cap: number): TritonError {
  return invalid(`Received n=${n}, but at most ${cap} choices are served per request`, 'n', 'invalid_value');
}

/** `stream_options` without `stream` (Triton's OpenAI frontend's text). */
export function streamOptionsWithoutStream(): TritonError {
  return invalid('`stream_options` can only be used when `stream` is True', 'stream_options');
}

/** An empty prompt (Triton's OpenAI frontend's text). */
export function promptEmpty(): TritonError {
  return invalid('prompt must be non-empty', 'prompt');
}

/** A prompt that is not one string (token arrays, batches; Triton's OpenAI frontend's text). */
export function promptNotString(): TritonError {
  return invalid('only single string input is supported', 'prompt');
}

/** An empty `messages` array (OpenAI's text). */
export function messagesEmpty(): TritonError {
  return invalid("Invalid 'messages': empty array. Expected an array with minimum length 1.", 'messages', 'empty_array');
}

/** A message that is not `{role, content}` as the schema has it; `index` its place (Warden's text). */
export function messageInvalid(index: number, detail: string): TritonError {
  return invalid(`Invalid 'messages[${index}]': ${detail}`, `messages[${index}]`, 'invalid_value');
}

/** A chat request to a model that ships no chat template (Warden's text). */
export function chatTemplateMissing(model: string): TritonError {
  return invalid(
    `The model \`${model}\` ships no chat template (chat_template.jinja, or chat_template in tokenizer_config.json, in its version folder); use /v1/completions with your own prompt.`,
    'model',
    'chat_template_missing',
  );
}

/** The model's chat template failed to render; `detail` the template engine's reason (Warden's text). */
export function chatTemplateFailed(model: string, detail: string): TritonError {
  return invalid(`The chat template of \`${model}\` failed to render: ${detail}`, 'messages', 'chat_template_error');
}

/** UNAVAILABLE: a chat template that ran past its time or memory bound (Warden's text). */
export function chatTemplateOverBudget(model: string, ms: number): TritonError {
  return new OpenAIError('UNAVAILABLE', `The chat template of \`${model}\` did not render within ${ms} ms`, 'messages', 'chat_template_error');
}

/** A `max_tokens` above the tenant's cap (Warden's text). */
export function maxTokensOverCap(param: string, requested: number, cap: number): TritonError {
  return invalid(`Invalid value for '${param}': ${requested} is above this API key's limit of ${cap} tokens per request.`, param, 'invalid_value');
}

/** `top_logprobs` without `logprobs: true` (Triton's OpenAI frontend's text). */
export function topLogprobsWithoutLogprobs(): TritonError {
  return invalid('`top_logprobs` can only be used when `logprobs` is True', 'top_logprobs');
}

/**
 * `logprobs` asked of a model that does not return them: it declares no `return_logprobs` input
 * and `logprobs` output, the vLLM backend's (Warden's text; Triton's frontend refuses every
 * backend but vLLM with "logprobs are currently available only for the vLLM backend").
 */
export function logprobsUnavailable(model: string): TritonError {
  return invalid(
    `logprobs are not available for the model \`${model}\`: it does not declare the return_logprobs input and logprobs output (BYTES) of the vLLM backend`,
    'logprobs',
    'unsupported_parameter',
  );
}
