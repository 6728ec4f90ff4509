/**
 * The text-generation I/O of Triton's OpenAI-compatible frontend (server repository,
 * python/openai engine/utils/triton.py), on Warden's data plane: which models serve it, how a
 * {@link GenerationRequest} becomes an inference request, and how a response's outputs become text
 * and token counts. The convention is the vLLM backend's: `text_input` (BYTES), optional `stream`
 * (BOOL), `sampling_parameters` (BYTES, one JSON object), `exclude_input_in_output` (BOOL),
 * `return_num_input_tokens` / `return_num_output_tokens` / `return_logprobs` (BOOL) →
 * `text_output` (BYTES), `num_input_tokens` / `num_output_tokens` (integers), `logprobs` (BYTES,
 * logprobs.ts). A model without `sampling_parameters` gets
 * the scalar sampling fields as inputs of the same name where it declares them (TensorRT-LLM's
 * convention: `max_tokens`, `temperature`, ...) and as request parameters otherwise.
 */
import type { ModelConfig } from '../../contract/model-config.js';
import type { InferenceRequestInit, InferenceResponse } from '../../contract/types.js';
import { decodeBytesElements } from '../../tensor/bytes.js';
import { tensorDataToJsonElements } from '../../tensor/json.js';
import { decodeGenerateRequest } from '../http/generate.js';
import { parseVllmLogprobs, type TokenLogprob } from './logprobs.js';
import type { GenerationRequest } from './schema.js';

/** The optional parts of the convention a model declares. */
export interface TextGenerationIO {
  stream: boolean;
  samplingParameters: boolean;
  excludeInput: boolean;
  countInput: boolean;
  countOutput: boolean;
  /** A BOOL `return_logprobs` input and a BYTES `logprobs` output: the model reports log probabilities. */
  logprobs: boolean;
  /** Names of every input (for the TensorRT-LLM style sampling inputs). */
  inputs: ReadonlySet<string>;
}

/** The model's text-generation I/O: undefined unless it has a BYTES `text_input` and a BYTES `text_output`. */
export function textGenerationIO(config: ModelConfig): TextGenerationIO | undefined {
  const input = new Map(config.input.map((i) => [i.name, i.data_type]));
  const output = new Map(config.output.map((o) => [o.name, o.data_type]));
  if (input.get('text_input') !== 'TYPE_STRING' || output.get('text_output') !== 'TYPE_STRING') return undefined;
  const bool = (name: string) => input.get(name) === 'TYPE_BOOL';
  return {
    stream: bool('stream'),
    samplingParameters: input.get('sampling_parameters') === 'TYPE_STRING',
    excludeInput: bool('exclude_input_in_output'),
    countInput: bool('return_num_input_tokens') && output.has('num_input_tokens'),
    countOutput: bool('return_num_output_tokens') && output.has('num_output_tokens'),
    logprobs: bool('return_logprobs') && output.get('logprobs') === 'TYPE_STRING',
    inputs: new Set(input.keys()),
  };
}

/**
 * The inference request of one choice: `prompt` in `text_input`, the flags the model declares,
 * the sampling fields as the model takes them (see the module comment). Echo without an
 * `exclude_input_in_output` input is done by the caller ({@link echoedByModel}).
 * @throws TritonError INVALID_ARG when the model's inputs refuse the values (decodeGenerateRequest)
 */
export function buildInferenceRequest(
  req: GenerationRequest,
  prompt: string,
  model: string,
  version: number,
  config: ModelConfig,
  io: TextGenerationIO,
): InferenceRequestInit {
  const doc: Record<string, unknown> = { text_input: prompt };
  if (io.stream) doc.stream = req.stream;
  if (io.excludeInput) doc.exclude_input_in_output = !req.echo;
  if (io.countInput) doc.return_num_input_tokens = true;
  if (io.countOutput) doc.return_num_output_tokens = true;
  // Sent whenever declared, as Triton's frontend sends it (false unless asked).
  if (io.logprobs) doc.return_logprobs = req.logprobs !== undefined;
  if (io.samplingParameters) doc.sampling_parameters = JSON.stringify(req.sampling);
  else {
    for (const [k, v] of Object.entries(req.sampling)) {
      // Only scalars fit an input of dims [1] or a request parameter; names the generate
      // mapping reserves are left out.
      if ((typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') && !(k in doc) && k !== 'parameters' && k !== 'id') doc[k] = v;
    }
  }
  return decodeGenerateRequest(doc, model, version, config);
}

/** Whether the model puts the prompt in its text itself when asked (else the frontend prepends it). */
export function echoedByModel(io: TextGenerationIO): boolean {
  return io.excludeInput;
}

/** What one response carries: text (possibly empty), the token counts and the log probabilities the model reported. */
export interface ResponseText {
  text: string;
  promptTokens?: number;
  completionTokens?: number;
  /** The tokens this response adds, with their log probabilities (a `logprobs` output in the vLLM convention). */
  logprobs?: TokenLogprob[];
}

/** The first element of an integer output as a number, or undefined. */
function firstInteger(r: InferenceResponse, name: string): number | undefined {
  const t = r.outputs.find((o) => o.name === name);
  if (!t || t.datatype === 'BYTES' || t.datatype === 'BOOL' || t.datatype.startsWith('FP') || t.datatype === 'BF16') return undefined;
  const first = tensorDataToJsonElements(t.data, t.datatype)[0];
  const n = first === undefined ? NaN : Number(first);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * Decodes the responses of one choice into text: `text_output`'s elements, UTF-8, a character
 * split across two responses (a byte-level token) held back until its last byte arrives.
 */
export class ChoiceDecoder {
  private readonly utf8 = new TextDecoder('utf-8', { fatal: false });
  private readonly lpText = new TextDecoder('utf-8', { fatal: false });

  /** The text and counts of one response (its outputs are read, not released). */
  decode(r: InferenceResponse): ResponseText {
    const t = r.outputs.find((o) => o.name === 'text_output');
    let text = '';
    if (t && t.datatype === 'BYTES') for (const e of decodeBytesElements(t.data, 'text_output')) text += this.utf8.decode(e, { stream: true });
    const out: ResponseText = { text, promptTokens: firstInteger(r, 'num_input_tokens'), completionTokens: firstInteger(r, 'num_output_tokens') };
    const lp = r.outputs.find((o) => o.name === 'logprobs');
    if (lp && lp.datatype === 'BYTES') {
      // One element per choice of the response; Warden's requests have one choice each.
      const first = decodeBytesElements(lp.data, 'logprobs')[0];
      const tokens = first === undefined ? undefined : parseVllmLogprobs(this.lpText.decode(first));
      if (tokens) out.logprobs = tokens;
    }
    return out;
  }

  /** What is left of a split character at the end of the choice (U+FFFD), usually ''. */
  flush(): string {
    return this.utf8.decode();
  }
}
