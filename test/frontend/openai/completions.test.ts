/**
 * The OpenAI-compatible API (frontend/openai/) end to end over HTTP, single-user mode, on the toy
 * generator (test/fixtures/python/toy_llm, the vLLM backend's I/O): `/v1/models`, completions and
 * chat completions, non-streaming and streamed, usage, stop, `n`, echo, the chat template, and
 * errors in OpenAI's shape with OpenAI's status codes.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { pythonEnvironment, pythonServer } from '../../backends/python/helpers.js';
import { until } from '../../helpers/wait.js';
import { sseData, toyRepo, toyText } from './helpers.js';

const execFileAsync = promisify(execFile);
const skip = await pythonEnvironment();
if (skip) console.warn(`OpenAI API tests skipped: ${skip}`);

describe.skipIf(skip !== undefined)('OpenAI-compatible API (single-user)', () => {
  const py = pythonServer(() => toyRepo({ plain: 'toy_plain', extra: ['simple'] }), { timeoutMs: 120_000, captureLog: true });
  const url = (path: string) => `${py.s.httpUrl}${path}`;
  const post = (path: string, body: unknown) =>
    fetch(url(path), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('lists the text-generation models only, as OpenAI model objects', async () => {
    const res = await fetch(url('/v1/models'));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id).sort()).toEqual(['toy_llm', 'toy_plain']);
    expect(body.data[0]).toMatchObject({ object: 'model', owned_by: 'warden' });
    expect(typeof body.data[0].created).toBe('number');
    const one = await fetch(url('/v1/models/toy_llm'));
    expect(await one.json()).toMatchObject({ id: 'toy_llm', object: 'model' });
    for (const missing of ['nope', 'simple']) {
      const r = await fetch(url(`/v1/models/${missing}`));
      expect(r.status).toBe(404);
      expect((await r.json()).error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found', param: 'model' });
    }
  });

  it('completes a prompt: text, finish_reason length at max_tokens, usage from the model', async () => {
    const res = await post('/v1/completions', { model: 'toy_llm', prompt: 'one two three', max_tokens: 5 });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ object: 'text_completion', model: 'toy_llm' });
    expect(body.id).toMatch(/^cmpl-/);
    expect(body.choices).toEqual([{ index: 0, text: toyText(3, 5), logprobs: null, finish_reason: 'length' }]);
    expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 });
  });

  it('stop ends generation before the stop string (finish_reason stop); echo puts the prompt first', async () => {
    const stopped = await (await post('/v1/completions', { model: 'toy_llm', prompt: 'a', max_tokens: 6, stop: ['delta'] })).json();
    expect(stopped.choices[0]).toMatchObject({ text: ' beta gamma', finish_reason: 'stop' });
    expect(stopped.usage.completion_tokens).toBe(2);
    const echoed = await (await post('/v1/completions', { model: 'toy_llm', prompt: 'a b', max_tokens: 2, echo: true })).json();
    expect(echoed.choices[0].text).toBe('a b' + toyText(2, 2));
  });

  it('n choices: one inference request each, usage counts every choice', async () => {
    const body = await (await post('/v1/completions', { model: 'toy_llm', prompt: 'x', max_tokens: 3, n: 3 })).json();
    expect(body.choices.map((c: { index: number; text: string }) => [c.index, c.text])).toEqual([0, 1, 2].map((i) => [i, toyText(1, 3)]));
    expect(body.usage).toEqual({ prompt_tokens: 1, completion_tokens: 9, total_tokens: 10 });
  });

  it('counts the usage in the statistics of the version that served it (token_usage, no tenants in single-user mode)', async () => {
    const usage = async () =>
      (await (await fetch(url('/v2/models/toy_llm/stats'))).json()).model_stats[0].token_usage ?? { prompt_tokens: 0, completion_tokens: 0 };
    const before = await usage();
    expect(before).not.toHaveProperty('tenants');
    for (const stream of [false, true]) await (await post('/v1/completions', { model: 'toy_llm', prompt: 'u v w', max_tokens: 4, n: 2, stream })).text();
    expect(await usage()).toEqual({ prompt_tokens: before.prompt_tokens + 6, completion_tokens: before.completion_tokens + 16 });
  });

  it('streams a completion as SSE chunks ending in [DONE], with a usage chunk when asked', async () => {
    const res = await post('/v1/completions', { model: 'toy_llm', prompt: 'p q', max_tokens: 4, stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = sseData(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    const usage = chunks.pop();
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 });
    expect(chunks.every((c) => c.object === 'text_completion' && c.usage === null && c.id === usage.id)).toBe(true);
    expect(chunks.map((c) => c.choices[0].text).join('')).toBe(toyText(2, 4));
    expect(chunks.filter((c) => c.choices[0].text !== '').length).toBe(4);
    expect(chunks.at(-1).choices[0].finish_reason).toBe('length');
    expect(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
  });

  it('chat: the model’s chat template makes the prompt; streamed deltas carry the role first', async () => {
    // The template renders "<|user|>hi there\n<|assistant|>": 3 words (toy_llm's tokens), so the text starts at VOCAB[3].
    const body = await (
      await post('/v1/chat/completions', { model: 'toy_llm', messages: [{ role: 'user', content: 'hi there' }], max_completion_tokens: 3 })
    ).json();
    expect(body).toMatchObject({ object: 'chat.completion', model: 'toy_llm' });
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.choices[0]).toMatchObject({ index: 0, message: { role: 'assistant', content: toyText(3, 3) }, finish_reason: 'length' });
    expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });

    const res = await post('/v1/chat/completions', { model: 'toy_llm', messages: [{ role: 'user', content: 'hi there' }], max_tokens: 3, stream: true });
    const events = sseData(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && !('usage' in c))).toBe(true);
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe(toyText(3, 3));
    expect(chunks.at(-1).choices[0]).toMatchObject({ delta: {}, finish_reason: 'length' });
  });

  it('curl: a streamed chat completion read as it arrives (-N), and an error answer', async () => {
    const curl = (args: string[]) => execFileAsync('curl', ['-sS', '-N', '-H', 'Content-Type: application/json', ...args], { encoding: 'utf8' });
    const body = JSON.stringify({ model: 'toy_llm', messages: [{ role: 'user', content: 'hi there' }], max_tokens: 2, stream: true });
    const { stdout } = await curl(['-d', body, url('/v1/chat/completions')]);
    const events = sseData(stdout);
    expect(events.at(-1)).toBe('[DONE]');
    expect(
      events
        .slice(0, -1)
        .map((e) => JSON.parse(e).choices[0].delta.content ?? '')
        .join(''),
    ).toBe(toyText(3, 2));
    const missing = await curl(['-w', '\n%{http_code}', '-d', JSON.stringify({ model: 'gpt-4o', prompt: 'x' }), url('/v1/completions')]);
    const [json, code] = missing.stdout.trim().split('\n');
    expect(code).toBe('404');
    expect(JSON.parse(json!).error.code).toBe('model_not_found');
  });

  it('chat with a model that ships no chat template: 400 naming the template', async () => {
    const res = await post('/v1/chat/completions', { model: 'toy_plain', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'chat_template_missing', param: 'model' });
    expect(error.message).toContain('chat template');
  });

  it('errors in OpenAI’s shape: unknown model 404, bad parameters 400, unsupported 400, non-JSON 400', async () => {
    const cases: [unknown, number, string | null][] = [
      [{ model: 'nope', prompt: 'x' }, 404, 'model'],
      [{ model: 'simple', prompt: 'x' }, 400, 'model'],
      [{ model: 'toy_llm', prompt: 'x', temperature: 3 }, 400, 'temperature'],
      [{ model: 'toy_llm', prompt: 'x', max_tokens: 'many' }, 400, 'max_tokens'],
      [{ model: 'toy_llm', prompt: 'x', n: 17 }, 400, 'n'],
      [{ model: 'toy_llm', prompt: 'x', logit_bias: { '1': 2 } }, 400, 'logit_bias'],
      [{ model: 'toy_llm', prompt: 'x', bogus: 1 }, 400, 'bogus'],
      [{ model: 'toy_llm', prompt: '' }, 400, 'prompt'],
      [{ model: 'toy_llm', prompt: 'x', stream_options: { include_usage: true } }, 400, 'stream_options'],
      [{ prompt: 'x' }, 400, 'model'],
    ];
    for (const [body, status, param] of cases) {
      const res = await post('/v1/completions', body);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), status]);
      const { error } = await res.json();
      expect(error.param).toBe(param);
      expect(error.type).toBe('invalid_request_error');
      expect(typeof error.message).toBe('string');
    }
    const chat = await post('/v1/chat/completions', { model: 'toy_llm', messages: [] });
    expect(chat.status).toBe(400);
    expect((await chat.json()).error.param).toBe('messages');
    const embeddings = await post('/v1/embeddings', { model: 'toy_llm', input: 'x' });
    expect(embeddings.status).toBe(404);
    expect((await embeddings.json()).error).toMatchObject({ code: 'unknown_url', type: 'invalid_request_error' });
    expect(await (await fetch(url('/v2/nothing'))).json()).toEqual({ error: 'Not Found' });
    const raw = await fetch(url('/v1/completions'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' });
    expect(raw.status).toBe(400);
    expect((await raw.json()).error.type).toBe('invalid_request_error');
  });

  it("refusals worded as Triton's OpenAI frontend words them (engine/triton_engine.py)", async () => {
    const cases: [unknown, string][] = [
      [{ model: 'toy_llm', prompt: '' }, 'prompt must be non-empty'],
      [{ model: 'toy_llm', prompt: [1, 2, 3] }, 'only single string input is supported'],
      [{ model: 'toy_llm', prompt: 'x', suffix: 'y' }, 'suffix is not currently supported'],
      [{ model: 'toy_llm', prompt: 'x', stream_options: { include_usage: true } }, '`stream_options` can only be used when `stream` is True'],
    ];
    for (const [body, message] of cases) {
      const res = await post('/v1/completions', body);
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toBe(message);
    }
  });

  it('a model error: 500 in OpenAI’s shape before anything streamed; an error event then [DONE] mid-stream', async () => {
    for (const stream of [false, true]) {
      const res = await post('/v1/completions', { model: 'toy_llm', prompt: '@fail=0', stream });
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toBe('application/json');
      const { error } = await res.json();
      expect(error).toMatchObject({ type: 'server_error' });
      expect(error.message).toContain('toy_llm failed after 0 tokens');
    }
    const res = await post('/v1/completions', { model: 'toy_llm', prompt: '@fail=2', stream: true, max_tokens: 8 });
    expect(res.status).toBe(200);
    const events = sseData(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    const last = JSON.parse(events.at(-2)!);
    expect(last.error.message).toContain('toy_llm failed after 2 tokens');
    expect(
      events
        .slice(0, -2)
        .map((e) => JSON.parse(e).choices[0].text)
        .join(''),
    ).toBe(toyText(1, 2));
  });

  it('a client that disconnects mid-stream cancels the generation', async () => {
    const abort = new AbortController();
    const res = await fetch(url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'toy_llm', messages: [{ role: 'user', content: 'go @delay=20' }], max_tokens: 500, stream: true }),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    let seen = '';
    while ((seen.match(/"content":" /g) ?? []).length < 2) seen += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    // toy_llm counts the generations it stopped on a cancellation (prompt `@cancelled`).
    const cancelled = async () => (await (await post('/v1/completions', { model: 'toy_llm', prompt: '@cancelled' })).json()).choices[0].text;
    await until(async () => (await cancelled()) === 'cancelled=1', { within: 20_000, what: 'the cancelled generation' });
  });
});
