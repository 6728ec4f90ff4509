/**
 * Log probabilities of generated tokens: read from a model's `logprobs` output in the vLLM
 * backend's convention (the output Triton's OpenAI frontend reads, engine/utils/triton.py
 * `_get_logprobs_from_response`), and written in OpenAI's two shapes (the `openai` package's
 * `CompletionChoice.Logprobs` and `ChatCompletionTokenLogprob`).
 *
 * The convention: one BYTES element per response, `"null"` or a JSON list with one entry per token
 * the response adds, each `{"<token id>": {"logprob": number, "rank": integer, "decoded_token":
 * string}, ...}`: the sampled token and the model's most likely alternatives. As Triton's frontend,
 * the entry of lowest rank is the generated token and every entry, by rank, an alternative.
 */

/** One alternative at a token position. */
export interface TopToken {
  token: string;
  logprob: number;
}

/** One generated token with its log probability and its alternatives (by rank, the token first). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  top: TopToken[];
}

/**
 * OpenAI's stand-in for a log probability of minus infinity (its API reference: "-9999.0 is used to
 * signify that the token is very unlikely"); Python's `json.dumps` writes it as `-Infinity`, which
 * is not JSON.
 */
const UNLIKELY = -9999.0;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The tokens of one response's `logprobs` element, or undefined when it is `"null"` or not in the
 * convention (Triton's frontend then answers without log probabilities as well). Entries without
 * a string `decoded_token` or a numeric `logprob` are skipped, as empty entries are.
 */
export function parseVllmLogprobs(text: string): TokenLogprob[] | undefined {
  // Python's json.dumps writes -inf / nan bare; only after a `"logprob": ` key (a quote inside a
  // JSON string is escaped, so the pattern cannot match inside one).
  const json = text.replace(/"logprob": (-Infinity|NaN)/g, `"logprob": ${UNLIKELY}`);
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!Array.isArray(doc)) return undefined;
  const tokens: TokenLogprob[] = [];
  for (const position of doc) {
    if (!isObject(position)) continue;
    const entries: { token: string; logprob: number; rank: number }[] = [];
    for (const e of Object.values(position)) {
      if (!isObject(e) || typeof e.decoded_token !== 'string' || typeof e.logprob !== 'number') continue;
      entries.push({ token: e.decoded_token, logprob: e.logprob, rank: typeof e.rank === 'number' ? e.rank : Number.MAX_SAFE_INTEGER });
    }
    if (entries.length === 0) continue;
    entries.sort((a, b) => a.rank - b.rank);
    tokens.push({ token: entries[0]!.token, logprob: entries[0]!.logprob, top: entries.map(({ token, logprob }) => ({ token, logprob })) });
  }
  return tokens;
}

/** A string's length in code points (Python's `len`, the unit of OpenAI's `text_offset`). */
export function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Completions' `logprobs` object (`CompletionChoice.Logprobs`). */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

/**
 * Completions' `logprobs` of `tokens`, the last tokens of a text that ends `end` code points into
 * the choice's text: each `text_offset` is where its token begins there (a response's text may
 * begin with more than its tokens: the echoed prompt). `top_logprobs` keeps every alternative the
 * model sent (OpenAI's API: up to `logprobs` + 1, the sampled token among them).
 */
export function completionLogprobs(tokens: readonly TokenLogprob[], end: number): CompletionLogprobs {
  const lengths = tokens.map((t) => codePoints(t.token));
  let offset = Math.max(0, end - lengths.reduce((a, b) => a + b, 0));
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  tokens.forEach((t, i) => {
    out.tokens.push(t.token);
    out.token_logprobs.push(t.logprob);
    out.top_logprobs.push(Object.fromEntries(t.top.map((a) => [a.token, a.logprob])));
    out.text_offset.push(offset);
    offset += lengths[i]!;
  });
  return out;
}

/** Two completions' `logprobs` objects of one choice, one after the other (a non-streamed answer of several responses). */
export function appendCompletionLogprobs(into: CompletionLogprobs, more: CompletionLogprobs): void {
  into.tokens.push(...more.tokens);
  into.token_logprobs.push(...more.token_logprobs);
  into.top_logprobs.push(...more.top_logprobs);
  into.text_offset.push(...more.text_offset);
}

const encoder = new TextEncoder();
const utf8 = (s: string): number[] => [...encoder.encode(s)];

/** Chat's `logprobs.content` entries (`ChatCompletionTokenLogprob`), at most `top` alternatives each (`top_logprobs`). */
export function chatLogprobs(tokens: readonly TokenLogprob[], top: number): unknown[] {
  return tokens.map((t) => ({
    token: t.token,
    logprob: t.logprob,
    bytes: utf8(t.token),
    top_logprobs: t.top.slice(0, top).map((a) => ({ token: a.token, logprob: a.logprob, bytes: utf8(a.token) })),
  }));
}

/**
 * The log probabilities of one choice as its responses come, in the answer's shape: completions'
 * {@link CompletionLogprobs}, chat's `{content: [ChatCompletionTokenLogprob...], refusal: null}`.
 */
export class ChoiceLogprobs {
  private end: number;
  private reported = false;
  private readonly completion: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  private readonly content: unknown[] = [];

  /**
   * @param kind the endpoint
   * @param top chat: alternatives per token (`top_logprobs`); completions keep every one the model sent
   * @param prefix text the choice begins with before its first response (the prompt, when Warden echoes it)
   */
  constructor(
    private readonly kind: 'completion' | 'chat',
    private readonly top: number,
    prefix = '',
  ) {
    this.end = codePoints(prefix);
  }

  /**
   * One response: `text` what it adds to the choice's text, `tokens` its tokens' log probabilities.
   * @returns that response's `logprobs` in the answer's shape (a streamed chunk's), or null when it has none
   */
  add(text: string, tokens: readonly TokenLogprob[] | undefined): unknown {
    this.end += codePoints(text);
    if (!tokens || tokens.length === 0) return null;
    this.reported = true;
    if (this.kind === 'chat') {
      const content = chatLogprobs(tokens, this.top);
      this.content.push(...content);
      return { content, refusal: null };
    }
    const part = completionLogprobs(tokens, this.end);
    appendCompletionLogprobs(this.completion, part);
    return part;
  }

  /** The whole choice's `logprobs` (a non-streamed answer), or null when the model reported none. */
  total(): unknown {
    if (!this.reported) return null;
    return this.kind === 'chat' ? { content: this.content, refusal: null } : this.completion;
  }
}
