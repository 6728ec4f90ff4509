/**
 * The request bodies of `/v1/completions` and `/v1/chat/completions`, checked against OpenAI's
 * published schema (the `openai` package's `completion_create_params` and
 * `chat/completion_create_params` types) and turned into one {@link GenerationRequest}. A field
 * set to null counts as absent, as the schema's optional fields allow. Fields OpenAI defines but
 * Warden does not serve (tools, logit_bias, suffix, ...) are refused with 400 when set,
 * unknown fields are refused as OpenAI refuses them, and the sampling fields go to the model
 * as Triton's OpenAI frontend sends them to a vLLM model: one JSON object in its
 * `sampling_parameters` input (engine/utils/triton.py).
 */
import * as errors from './openai.errors.js';

/** At most this many choices (`n`) per request: each is one inference request of its own. */
export const MAX_CHOICES = 16;
/** `max_tokens` when a request sets none (Triton's OpenAI frontend's `--default-max-tokens`). */
export const DEFAULT_MAX_TOKENS = 16;
/** At most this many stop sequences (OpenAI's bound). */
const MAX_STOP = 4;
/** Bounds of completions' `logprobs` and chat's `top_logprobs` (OpenAI's schema, as Triton's frontend's schemas/openai.py). */
export const MAX_COMPLETION_LOGPROBS = 5;
export const MAX_TOP_LOGPROBS = 20;

/** One chat message as the chat template sees it. */
export interface ChatMessage {
  role: string;
  content: string;
  name?: string;
}

/** A checked completion or chat request. */
export interface GenerationRequest {
  kind: 'completion' | 'chat';
  model: string;
  /** The prompt (completions); chat requests get theirs from the chat template. */
  prompt?: string;
  messages?: ChatMessage[];
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  includeUsage: boolean;
  /** Choices wanted (1..{@link MAX_CHOICES}). */
  n: number;
  /** `echo` (completions): the prompt is part of the text. */
  echo: boolean;
  /** The generation bound, in tokens, and the field that set it (`max_tokens`, `max_completion_tokens`). */
  maxTokens: number;
  maxTokensParam: string;
  /** Whether the request set the bound (else it is {@link DEFAULT_MAX_TOKENS}). */
  maxTokensSet: boolean;
  /** The sampling fields for the model, `max_tokens` included (JSON-serialisable). */
  sampling: Record<string, unknown>;
  /**
   * Log probabilities asked for (completions: `logprobs` > 0; chat: `logprobs: true`), with how
   * many alternatives per token the answer lists (`top`: completions' `logprobs`, chat's
   * `top_logprobs`, 0 when unset); undefined when not asked.
   */
  logprobs?: { top: number };
}

type Doc = Record<string, unknown>;

/** Fields a request may carry that do not change what is generated (accepted, not used). */
const IGNORED = ['user', 'metadata', 'store', 'service_tier', 'prompt_cache_key', 'safety_identifier', 'parallel_tool_calls', 'prompt_cache_retention'];
/** Sampling fields outside OpenAI's schema that vLLM takes and clients send in `extra_body`. */
const VLLM_EXTRAS = ['top_k', 'min_p', 'repetition_penalty', 'min_tokens', 'ignore_eos'];
/** Schema fields Warden refuses when set, per endpoint. */
const UNSUPPORTED = {
  completion: ['suffix', 'logit_bias'],
  chat: [
    'logit_bias',
    'tools',
    'tool_choice',
    'functions',
    'function_call',
    'audio',
    'prediction',
    'web_search_options',
    'moderation',
    'prompt_cache_options',
    'reasoning_effort',
    'verbosity',
  ],
} as const;
const COMMON = ['model', 'stream', 'stream_options', 'n', 'max_tokens', 'temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'seed', 'stop'];
const KNOWN = {
  completion: new Set([...COMMON, ...IGNORED, ...VLLM_EXTRAS, ...UNSUPPORTED.completion, 'prompt', 'echo', 'best_of', 'logprobs']),
  chat: new Set([
    ...COMMON,
    ...IGNORED,
    ...VLLM_EXTRAS,
    ...UNSUPPORTED.chat,
    'messages',
    'max_completion_tokens',
    'response_format',
    'modalities',
    'logprobs',
    'top_logprobs',
  ]),
};

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/** A number field within [min, max], or undefined when absent. */
function numberIn(doc: Doc, param: string, min: number, max: number): number | undefined {
  const v = doc[param];
  if (v === undefined) return undefined;
  if (!isNumber(v)) throw errors.fieldType(param, 'a number');
  if (v < min || v > max) throw errors.fieldRange(param, `between ${min} and ${max}`);
  return v;
}

/** An integer field of at least `min` (and at most `max`), or undefined when absent. A bigint is out of range. */
function integerIn(doc: Doc, param: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const v = doc[param];
  if (v === undefined) return undefined;
  if (typeof v === 'bigint') throw errors.fieldRange(param, `between ${min} and ${max}`);
  if (!isInteger(v)) throw errors.fieldType(param, 'an integer');
  if (v < min || v > max) throw errors.fieldRange(param, max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `between ${min} and ${max}`);
  return v;
}

function booleanField(doc: Doc, param: string): boolean | undefined {
  const v = doc[param];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw errors.fieldType(param, 'a boolean');
  return v;
}

/** `stop`: a string or up to four strings. */
function stopField(doc: Doc): string[] | undefined {
  const v = doc.stop;
  if (v === undefined) return undefined;
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string')) throw errors.fieldType('stop', 'a string or an array of strings');
  if (list.length > MAX_STOP) throw errors.fieldRange('stop', `an array of at most ${MAX_STOP} strings`);
  return list as string[];
}

/** One message's content: a string, or text parts (`{type: "text", text}`) joined. */
function messageContent(m: Doc, i: number): string {
  const c = m.content;
  if (c === undefined || c === null) {
    if (m.role === 'assistant') return '';
    throw errors.messageInvalid(i, "missing 'content'");
  }
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) throw errors.messageInvalid(i, "'content' must be a string or an array of content parts");
  return c
    .map((part: unknown, j) => {
      if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string')
        throw errors.messageInvalid(i, `content part ${j} is not a text part ({"type": "text", "text": ...}); only text is supported`);
      return part.text;
    })
    .join('');
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

function messagesField(doc: Doc): ChatMessage[] {
  const v = doc.messages;
  if (v === undefined) throw errors.fieldMissing('messages');
  if (!Array.isArray(v)) throw errors.fieldType('messages', 'an array');
  if (v.length === 0) throw errors.messagesEmpty();
  return v.map((m: unknown, i) => {
    if (!isObject(m)) throw errors.messageInvalid(i, 'expected an object');
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) throw errors.messageInvalid(i, `'role' must be one of ${[...ROLES].join(', ')}`);
    const message: ChatMessage = { role: m.role, content: messageContent(m, i) };
    if (typeof m.name === 'string') message.name = m.name;
    return message;
  });
}

/** Refuse what is set but not served: the endpoint's unsupported fields, and the schema's values Warden does not serve. */
function refuseUnsupported(doc: Doc, kind: 'completion' | 'chat'): void {
  for (const key of UNSUPPORTED[kind]) {
    const v = doc[key];
    // `false` / `0` and empty lists ask for nothing.
    if (v === undefined || v === false || v === 0 || (Array.isArray(v) && v.length === 0)) continue;
    if (key === 'tool_choice' && v === 'none') continue;
    throw errors.fieldUnsupported(key);
  }
  if (kind === 'completion') {
    const bestOf = integerIn(doc, 'best_of', 0, 20);
    if (bestOf !== undefined && bestOf > 1) throw errors.fieldUnsupported('best_of');
  } else {
    const format = doc.response_format;
    if (format !== undefined && !(isObject(format) && format.type === 'text')) throw errors.fieldUnsupported('response_format');
    const modalities = doc.modalities;
    if (modalities !== undefined && !(Array.isArray(modalities) && modalities.every((m) => m === 'text'))) throw errors.fieldUnsupported('modalities');
  }
}

/**
 * The log probabilities a request asks for, as Triton's frontend reads them (engine/utils/triton.py,
 * engine/triton_engine.py): completions' `logprobs` (0..5) asks when above 0; chat's `logprobs`
 * (a boolean) asks when true, with `top_logprobs` (0..20) alternatives, which needs `logprobs: true`.
 * @throws TritonError 400 for a mistyped or out-of-range value, or `top_logprobs` without `logprobs`
 */
function logprobsField(doc: Doc, kind: 'completion' | 'chat'): { top: number } | undefined {
  if (kind === 'completion') {
    const k = integerIn(doc, 'logprobs', 0, MAX_COMPLETION_LOGPROBS);
    return k !== undefined && k > 0 ? { top: k } : undefined;
  }
  const wanted = booleanField(doc, 'logprobs') ?? false;
  const top = integerIn(doc, 'top_logprobs', 0, MAX_TOP_LOGPROBS);
  if (top !== undefined && !wanted) throw errors.topLogprobsWithoutLogprobs();
  return wanted ? { top: top ?? 0 } : undefined;
}

/**
 * Check a request body and build its {@link GenerationRequest}.
 * @throws TritonError (an OpenAIError: 400 with its `param`) for a body that is not an object, a
 *   missing or mistyped field, a value out of range, an unknown field, or a field Warden does not serve
 */
export function parseGenerationRequest(body: unknown, kind: 'completion' | 'chat'): GenerationRequest {
  if (!isObject(body)) throw errors.bodyNotObject();
  // null is absent (the schema's Optional[...] fields).
  const doc: Doc = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null));
  for (const key of Object.keys(doc)) if (!KNOWN[kind].has(key)) throw errors.fieldUnknown(key);
  if (doc.model === undefined) throw errors.fieldMissing('model');
  if (typeof doc.model !== 'string') throw errors.fieldType('model', 'a string');
  refuseUnsupported(doc, kind);

  const stream = booleanField(doc, 'stream') ?? false;
  let includeUsage = false;
  if (doc.stream_options !== undefined) {
    if (!isObject(doc.stream_options)) throw errors.fieldType('stream_options', 'an object');
    if (!stream) throw errors.streamOptionsWithoutStream();
    const u = doc.stream_options.include_usage;
    if (u !== undefined && u !== null && typeof u !== 'boolean') throw errors.fieldType('stream_options.include_usage', 'a boolean');
    includeUsage = u === true;
  }
  const n = integerIn(doc, 'n', 1, 128) ?? 1;
  if (n > MAX_CHOICES) throw errors.choicesOverCap(n, MAX_CHOICES);

  // Chat: max_completion_tokens, else the deprecated max_tokens (as Triton's frontend reads them).
  const completionTokens = kind === 'chat' ? integerIn(doc, 'max_completion_tokens', 1) : undefined;
  const maxTokensParam = completionTokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
  const requested = completionTokens ?? integerIn(doc, 'max_tokens', 1);
  const maxTokens = requested ?? DEFAULT_MAX_TOKENS;

  const sampling: Record<string, unknown> = {};
  const set = (k: string, v: unknown) => {
    if (v !== undefined) sampling[k] = v;
  };
  set('temperature', numberIn(doc, 'temperature', 0, 2));
  set('top_p', numberIn(doc, 'top_p', 0, 1));
  set('presence_penalty', numberIn(doc, 'presence_penalty', -2, 2));
  set('frequency_penalty', numberIn(doc, 'frequency_penalty', -2, 2));
  set('seed', integerIn(doc, 'seed', Number.MIN_SAFE_INTEGER));
  set('stop', stopField(doc));
  set('top_k', integerIn(doc, 'top_k', -1));
  set('min_p', numberIn(doc, 'min_p', 0, 1));
  set('repetition_penalty', numberIn(doc, 'repetition_penalty', 0, 100));
  set('min_tokens', integerIn(doc, 'min_tokens', 0));
  set('ignore_eos', booleanField(doc, 'ignore_eos'));
  sampling.max_tokens = maxTokens;
  // vLLM's `logprobs` sampling field: alternatives per token (chat: `top_logprobs`, 1 when unset,
  // as Triton's frontend sends it).
  const logprobs = logprobsField(doc, kind);
  if (logprobs) sampling.logprobs = kind === 'chat' && doc.top_logprobs === undefined ? 1 : logprobs.top;

  const request: GenerationRequest = {
    kind,
    model: doc.model,
    stream,
    includeUsage,
    n,
    echo: false,
    maxTokens,
    maxTokensParam,
    maxTokensSet: requested !== undefined,
    sampling,
  };
  if (logprobs) request.logprobs = logprobs;
  if (kind === 'completion') {
    const p = Array.isArray(doc.prompt) && doc.prompt.length === 1 && typeof doc.prompt[0] === 'string' ? doc.prompt[0] : doc.prompt;
    if (p === undefined || p === '') throw errors.promptEmpty();
    if (typeof p !== 'string') throw errors.promptNotString();
    request.prompt = p;
    request.echo = booleanField(doc, 'echo') ?? false;
  } else {
    request.messages = messagesField(doc);
  }
  return request;
}
