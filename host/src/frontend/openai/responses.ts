/**
 * The response objects of the OpenAI-compatible API, as the `openai` package's types define them:
 * `Completion` / `CompletionChoice` (object `text_completion`, also each streamed chunk),
 * `ChatCompletion` (`chat.completion`), `ChatCompletionChunk` (`chat.completion.chunk`) and
 * `CompletionUsage` (a choice's `logprobs` comes shaped: logprobs.ts); and the usage and finish reason of a choice from the token counts the model
 * reports (io.ts).
 */
import { randomUUID } from 'node:crypto';
import type { ResponseText } from './io.js';

/** `CompletionUsage`. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A request's identity in every object and chunk it answers with. */
export interface ResponseHeader {
  id: string;
  created: number;
  model: string;
}

/** A fresh header: `cmpl-<uuid>` for completions, `chatcmpl-<uuid>` for chat (OpenAI's prefixes). */
export function responseHeader(kind: 'completion' | 'chat', model: string): ResponseHeader {
  return { id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model };
}

/**
 * The token counts of a request's choices, as the model reports them (`num_input_tokens` once,
 * `num_output_tokens` per response: vLLM's convention, summed as Triton's frontend sums them).
 * Without reports there is no usage (null), as Triton's frontend answers for such models.
 */
export class UsageTally {
  private prompt: number | undefined;
  private readonly completion: number[];
  private reported = false;

  constructor(choices: number) {
    this.completion = new Array<number>(choices).fill(0);
  }

  /** Count one response of choice `index`. */
  add(index: number, r: ResponseText): void {
    if (r.promptTokens !== undefined && this.prompt === undefined) this.prompt = r.promptTokens;
    if (r.completionTokens !== undefined) {
      this.completion[index]! += r.completionTokens;
      this.reported = true;
    }
  }

  /** Tokens choice `index` generated, if the model reported them. */
  completionTokens(index: number): number | undefined {
    return this.reported ? this.completion[index] : undefined;
  }

  /** The request's usage (prompt counted once, every choice's completion tokens), or null without reports. */
  usage(): Usage | null {
    if (!this.reported && this.prompt === undefined) return null;
    const prompt = this.prompt ?? 0;
    const completion = this.completion.reduce((a, b) => a + b, 0);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
}

/** `length` when the choice generated `maxTokens` tokens (known only from the model's counts), else `stop`. */
export function finishReason(completionTokens: number | undefined, maxTokens: number): 'stop' | 'length' {
  return completionTokens !== undefined && completionTokens >= maxTokens ? 'length' : 'stop';
}

/** One choice of a non-streamed answer: its text, finish reason and `logprobs` (null when not asked or not reported). */
export interface FinishedChoice {
  text: string;
  finish: string;
  logprobs?: unknown;
}

/** `Completion` (non-streaming). */
export function completionObject(h: ResponseHeader, choices: FinishedChoice[], usage: Usage | null): unknown {
  return {
    id: h.id,
    object: 'text_completion',
    created: h.created,
    model: h.model,
    system_fingerprint: null,
    choices: choices.map((c, index) => ({ index, text: c.text, logprobs: c.logprobs ?? null, finish_reason: c.finish })),
    usage,
  };
}

/** `ChatCompletion` (non-streaming). */
export function chatObject(h: ResponseHeader, choices: FinishedChoice[], usage: Usage | null): unknown {
  return {
    id: h.id,
    object: 'chat.completion',
    created: h.created,
    model: h.model,
    system_fingerprint: null,
    choices: choices.map((c, index) => ({
      index,
      message: { role: 'assistant', content: c.text, refusal: null },
      logprobs: c.logprobs ?? null,
      finish_reason: c.finish,
    })),
    usage,
  };
}

/** One streamed chunk of choice `index` (`text` / `delta`, with its tokens' `logprobs`), or the usage chunk (no choice, `usage` set). */
export function chunkObject(
  kind: 'completion' | 'chat',
  h: ResponseHeader,
  choice: { index: number; text?: string; role?: boolean; finish: string | null; logprobs?: unknown } | undefined,
  usage: Usage | null | undefined,
): unknown {
  const choices: unknown[] = [];
  if (choice) {
    const logprobs = choice.logprobs ?? null;
    if (kind === 'completion') choices.push({ index: choice.index, text: choice.text ?? '', logprobs, finish_reason: choice.finish });
    else {
      const delta: Record<string, string> = {};
      if (choice.role) delta.role = 'assistant';
      if (choice.text !== undefined) delta.content = choice.text;
      choices.push({ index: choice.index, delta, logprobs, finish_reason: choice.finish });
    }
  }
  const chunk: Record<string, unknown> = {
    id: h.id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created: h.created,
    model: h.model,
    system_fingerprint: null,
    choices,
  };
  // With `stream_options.include_usage`, every chunk has `usage` (null until the last: OpenAI's stream).
  if (usage !== undefined) chunk.usage = usage;
  return chunk;
}
