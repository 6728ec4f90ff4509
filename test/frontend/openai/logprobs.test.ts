/**
 * Log probabilities through the OpenAI-compatible API (frontend/openai/logprobs.ts): the vLLM
 * backend's `logprobs` output read as Triton's OpenAI frontend reads it (engine/utils/triton.py),
 * and answered in OpenAI's shapes — completions' `{tokens, token_logprobs, top_logprobs,
 * text_offset}`, chat's `logprobs.content[] {token, logprob, bytes, top_logprobs}` — streamed and
 * not, end to end over HTTP on toy_llm (test/fixtures/python/toy_llm, deterministic log
 * probabilities); and the refusals: a model without the I/O, `top_logprobs` without `logprobs`,
 * values out of OpenAI's ranges.
 */
import { describe, expect, it } from 'vitest';
import { ChoiceLogprobs, completionLogprobs, parseVllmLogprobs } from '../../../host/src/frontend/openai/logprobs.js';
import { pythonEnvironment, pythonServer } from '../../backends/python/helpers.js';
import { sseData, type ToyLogprob, toyLogprobs, toyRepo, toyText, toyVariant } from './helpers.js';

/** Completions' `logprobs` object of `lps`, the first token starting `start` characters into the choice's text. */
function completionShape(lps: ToyLogprob[], start = 0) {
  let offset = start;
  return {
    tokens: lps.map((t) => t.token),
    token_logprobs: lps.map((t) => t.logprob),
    top_logprobs: lps.map((t) => Object.fromEntries(t.top.map((a) => [a.token, a.logprob]))),
    text_offset: lps.map((t) => {
      const o = offset;
      offset += t.token.length;
      return o;
    }),
  };
}

const bytes = (s: string) => [...Buffer.from(s, 'utf8')];

/** Chat's `logprobs.content` of `lps`, `top` alternatives each. */
function chatShape(lps: ToyLogprob[], top: number) {
  return lps.map((t) => ({
    token: t.token,
    logprob: t.logprob,
    bytes: bytes(t.token),
    top_logprobs: t.top.slice(0, top).map((a) => ({ token: a.token, logprob: a.logprob, bytes: bytes(a.token) })),
  }));
}

describe('the vLLM logprobs output, read and shaped', () => {
  it('takes the lowest rank as the token, every entry by rank as an alternative; skips empty positions', () => {
    const text = JSON.stringify([
      { '7': { logprob: -2, rank: 2, decoded_token: ' b' }, '3': { logprob: -0.5, rank: 1, decoded_token: ' a' } },
      {},
      { '9': { logprob: -1, rank: 1, decoded_token: 'é' } },
    ]);
    expect(parseVllmLogprobs(text)).toEqual([
      {
        token: ' a',
        logprob: -0.5,
        top: [
          { token: ' a', logprob: -0.5 },
          { token: ' b', logprob: -2 },
        ],
      },
      { token: 'é', logprob: -1, top: [{ token: 'é', logprob: -1 }] },
    ]);
  });

  it('"null", text that is not JSON, and a non-list are no log probabilities; Python’s bare -Infinity is -9999', () => {
    expect(parseVllmLogprobs('null')).toBeUndefined();
    expect(parseVllmLogprobs('[{')).toBeUndefined();
    expect(parseVllmLogprobs('{"a": 1}')).toBeUndefined();
    // As Python's json.dumps writes minus infinity; a token text that looks like it stays as it is.
    const parsed = parseVllmLogprobs('[{"1": {"logprob": -Infinity, "rank": 1, "decoded_token": "\\"logprob\\": -Infinity"}}]');
    expect(parsed).toEqual([{ token: '"logprob": -Infinity', logprob: -9999, top: [{ token: '"logprob": -Infinity', logprob: -9999 }] }]);
  });

  it('text_offset: the tokens end where the response’s text ends (an echoed prompt before them), in code points', () => {
    const lps = [
      { token: ' x', logprob: -1, top: [] },
      { token: ' 😀', logprob: -2, top: [] },
    ];
    expect(completionLogprobs(lps, 10).text_offset).toEqual([6, 8]);
    // A response whose text is the prompt "ab" and the two tokens, first in the choice.
    const choice = new ChoiceLogprobs('completion', 5);
    expect((choice.add('ab x 😀', lps) as { text_offset: number[] }).text_offset).toEqual([2, 4]);
    expect((choice.add(' y', [{ token: ' y', logprob: -3, top: [] }]) as { text_offset: number[] }).text_offset).toEqual([6]);
    expect(choice.total()).toMatchObject({ tokens: [' x', ' 😀', ' y'], text_offset: [2, 4, 6] });
    expect(new ChoiceLogprobs('chat', 0).total()).toBeNull();
  });
});

const skip = await pythonEnvironment();
if (skip) console.warn(`OpenAI logprobs tests skipped: ${skip}`);

describe.skipIf(skip !== undefined)('logprobs through the OpenAI-compatible API', () => {
  const py = pythonServer(
    () => {
      const repo = toyRepo();
      // Without the logprobs I/O; and without exclude_input_in_output, so that Warden echoes the prompt.
      toyVariant(repo, 'toy_nolp', ['return_logprobs', 'logprobs']);
      toyVariant(repo, 'toy_noecho', ['exclude_input_in_output']);
      return repo;
    },
    { timeoutMs: 120_000, captureLog: true },
  );
  const post = (path: string, body: unknown) =>
    fetch(`${py.s.httpUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const streamed = async (path: string, body: object) => {
    const res = await post(path, { ...body, stream: true });
    expect(res.status).toBe(200);
    const events = sseData(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    return events.slice(0, -1).map((e) => JSON.parse(e));
  };

  it('completions: tokens, token_logprobs, top_logprobs (as many as asked), text_offset; none without logprobs or at 0', async () => {
    for (const k of [1, 3]) {
      const body = await (await post('/v1/completions', { model: 'toy_llm', prompt: 'one two', max_tokens: 3, logprobs: k })).json();
      expect(body.choices[0].text).toBe(toyText(2, 3));
      expect(body.choices[0].logprobs).toEqual(completionShape(toyLogprobs(2, 3, k)));
    }
    for (const extra of [{}, { logprobs: 0 }]) {
      const body = await (await post('/v1/completions', { model: 'toy_llm', prompt: 'one two', max_tokens: 2, ...extra })).json();
      expect(body.choices[0].logprobs).toBeNull();
    }
  });

  it('completions with echo (by the model, and by Warden): text_offset counts the prompt; every choice of n has its own', async () => {
    for (const model of ['toy_llm', 'toy_noecho']) {
      const body = await (await post('/v1/completions', { model, prompt: 'one two', max_tokens: 2, logprobs: 2, echo: true, n: 2 })).json();
      expect(body.choices).toHaveLength(2);
      for (const c of body.choices) {
        expect(c.text).toBe('one two' + toyText(2, 2));
        expect(c.logprobs).toEqual(completionShape(toyLogprobs(2, 2, 2), 'one two'.length));
      }
    }
  });

  it.each(['toy_llm', 'toy_noecho'])(
    'streamed completions (%s, echo): each chunk the logprobs of its tokens, together the non-streamed answer',
    async (model) => {
      const request = { model, prompt: 'a b c', max_tokens: 5, logprobs: 2, echo: true };
      const whole = (await (await post('/v1/completions', request)).json()).choices[0].logprobs;
      const chunks = await streamed('/v1/completions', request);
      const withLp = chunks.filter((c) => c.choices[0].logprobs !== null);
      expect(withLp).toHaveLength(5);
      expect(
        withLp.every(
          (c) =>
            c.choices[0].logprobs.tokens.length === 1 && c.choices[0].logprobs.tokens[0] === c.choices[0].text.slice(-c.choices[0].logprobs.tokens[0].length),
        ),
      ).toBe(true);
      const joined = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] } as Record<string, unknown[]>;
      for (const c of withLp) for (const key of Object.keys(joined)) joined[key]!.push(...c.choices[0].logprobs[key]);
      expect(joined).toEqual(whole);
      expect(whole).toEqual(completionShape(toyLogprobs(3, 5, 2), 'a b c'.length));
    },
  );

  it('chat: content[] with token, logprob, UTF-8 bytes and top_logprobs (none unless asked), streamed and not', async () => {
    // The chat template renders "<|user|>hi there\n<|assistant|>": 3 of toy_llm's tokens.
    const messages = [{ role: 'user', content: 'hi there' }];
    const cases: [object, number][] = [
      [{ logprobs: true, top_logprobs: 2 }, 2],
      [{ logprobs: true }, 0],
      [{ logprobs: true, top_logprobs: 0 }, 0],
    ];
    for (const [asked, top] of cases) {
      const request = { model: 'toy_llm', messages, max_completion_tokens: 3, ...asked };
      const body = await (await post('/v1/chat/completions', request)).json();
      expect(body.choices[0].message.content).toBe(toyText(3, 3));
      expect(body.choices[0].logprobs).toEqual({ content: chatShape(toyLogprobs(3, 3, top), top), refusal: null });

      const chunks = await streamed('/v1/chat/completions', request);
      const content = chunks.flatMap((c) => c.choices[0].logprobs?.content ?? []);
      expect(content).toEqual(body.choices[0].logprobs.content);
      // The role chunk and the finish chunk carry none.
      expect(chunks[0].choices[0].logprobs).toBeNull();
      expect(chunks.at(-1).choices[0].logprobs).toBeNull();
    }
    const none = await (await post('/v1/chat/completions', { model: 'toy_llm', messages, max_tokens: 2, logprobs: false })).json();
    expect(none.choices[0].logprobs).toBeNull();
  });

  it('refusals: a model without the logprobs I/O (as Triton refuses non-vLLM models), top_logprobs alone, out-of-range values', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const cases: [string, object, string, string | RegExp][] = [
      ['/v1/completions', { model: 'toy_nolp', prompt: 'x', logprobs: 1 }, 'logprobs', /logprobs are not available for the model `toy_nolp`/],
      ['/v1/completions', { model: 'toy_llm', prompt: 'x', logprobs: 6 }, 'logprobs', "Invalid value for 'logprobs': must be between 0 and 5."],
      ['/v1/completions', { model: 'toy_llm', prompt: 'x', logprobs: true }, 'logprobs', "Invalid type for 'logprobs': expected an integer."],
      ['/v1/chat/completions', { model: 'toy_nolp', messages, logprobs: true }, 'logprobs', /logprobs are not available/],
      ['/v1/chat/completions', { model: 'toy_llm', messages, top_logprobs: 2 }, 'top_logprobs', '`top_logprobs` can only be used when `logprobs` is True'],
      ['/v1/chat/completions', { model: 'toy_llm', messages, logprobs: false, top_logprobs: 0 }, 'top_logprobs', /can only be used when `logprobs` is True/],
      ['/v1/chat/completions', { model: 'toy_llm', messages, logprobs: true, top_logprobs: 21 }, 'top_logprobs', /between 0 and 20/],
      ['/v1/chat/completions', { model: 'toy_llm', messages, logprobs: 1 }, 'logprobs', /expected a boolean/],
    ];
    for (const [path, body, param, message] of cases) {
      const res = await post(path, body);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
      const { error } = await res.json();
      expect(error).toMatchObject({ type: 'invalid_request_error', param });
      expect(error.message).toMatch(message);
    }
    // The same model answers without logprobs.
    const ok = await post('/v1/completions', { model: 'toy_nolp', prompt: 'x', max_tokens: 1 });
    expect((await ok.json()).choices[0]).toMatchObject({ text: toyText(1, 1), logprobs: null });
  });
});
