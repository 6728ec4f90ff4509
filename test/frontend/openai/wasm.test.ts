/**
 * A tenant's own sandboxed text generator behind the OpenAI-compatible API: tenant acme uploads
 * test/fixtures/wasm/toy_llm.c (a wasm component with the vLLM backend's I/O, the twin of the
 * Python toy) through the load API, and its API key then lists and uses it — completions streamed
 * and not, with usage and stop — while another tenant's key sees no such model (404).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../../backends/wasm/helpers.js';
import { PROJECT_ROOT, tempRepo } from '../../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../../helpers/servers.js';
import { sseData, toyText } from './helpers.js';

const TOKENS = testTokens('acme', 'other');

/** toy_llm's config as the tenant uploads it: the text-generation I/O, decoupled. */
const CONFIG = JSON.stringify({
  backend: 'wasm',
  max_batch_size: 0,
  model_transaction_policy: { decoupled: true },
  input: [
    { name: 'text_input', data_type: 'TYPE_STRING', dims: [1] },
    { name: 'stream', data_type: 'TYPE_BOOL', dims: [1], optional: true },
    { name: 'sampling_parameters', data_type: 'TYPE_STRING', dims: [1], optional: true },
    { name: 'return_num_input_tokens', data_type: 'TYPE_BOOL', dims: [1], optional: true },
    { name: 'return_num_output_tokens', data_type: 'TYPE_BOOL', dims: [1], optional: true },
  ],
  output: [
    { name: 'text_output', data_type: 'TYPE_STRING', dims: [-1] },
    { name: 'num_input_tokens', data_type: 'TYPE_UINT32', dims: [1] },
    { name: 'num_output_tokens', data_type: 'TYPE_UINT32', dims: [1] },
  ],
});

describe('a tenant’s sandboxed generator through the OpenAI API', () => {
  const suite = tenantServerPerSuite(async () => {
    await ensureBuilt();
    return {
      repo: tempRepo([]),
      tenants: [
        { id: 'acme', token: TOKENS.acme },
        { id: 'other', token: TOKENS.other },
      ],
      opts: { separateUploads: true },
    };
  }, 120_000);
  const call = (who: keyof typeof TOKENS, path: string, body?: unknown) =>
    fetch(`${suite.server.httpUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKENS[who]}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    const wasm = readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'toy_llm.wasm')).toString('base64');
    const r = await call('acme', '/v2/repository/models/toy/load', { parameters: { config: CONFIG, 'file:1/model.wasm': wasm } });
    expect(r.status, await r.text()).toBe(200);
    // The same model with a chat template among its files.
    const template = Buffer.from("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}[assistant]").toString('base64');
    const c = await call('acme', '/v2/repository/models/toychat/load', {
      parameters: { config: CONFIG, 'file:1/model.wasm': wasm, 'file:1/chat_template.jinja': template },
    });
    expect(c.status, await c.text()).toBe(200);
  });

  it('is listed for its tenant only', async () => {
    expect((await (await call('acme', '/v1/models')).json()).data).toEqual([
      expect.objectContaining({ id: 'toy', object: 'model', owned_by: 'acme' }),
      expect.objectContaining({ id: 'toychat', object: 'model', owned_by: 'acme' }),
    ]);
    expect((await (await call('other', '/v1/models')).json()).data).toEqual([]);
    expect((await call('other', '/v1/completions', { model: 'toy', prompt: 'x' })).status).toBe(404);
  });

  it('completes, streams, stops and reports usage', async () => {
    const body = await (await call('acme', '/v1/completions', { model: 'toy', prompt: 'one two three', max_tokens: 4 })).json();
    expect(body.choices[0]).toMatchObject({ text: toyText(3, 4), finish_reason: 'length' });
    expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    const stopped = await (await call('acme', '/v1/completions', { model: 'toy', prompt: 'a', max_tokens: 6, stop: 'delta' })).json();
    expect(stopped.choices[0]).toMatchObject({ text: ' beta gamma', finish_reason: 'stop' });

    const res = await call('acme', '/v1/completions', { model: 'toy', prompt: 'p q', max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    const events = sseData(await res.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.at(-1).usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 });
    expect(chunks.filter((c) => c.choices.length > 0 && c.choices[0].text !== '').map((c) => c.choices[0].text)).toEqual(toyText(2, 5).match(/ \w+/g));
  });

  it('chat through the chat template the tenant uploaded', async () => {
    // "[user] a b [assistant]": 4 of the toy's tokens.
    const body = await (await call('acme', '/v1/chat/completions', { model: 'toychat', messages: [{ role: 'user', content: 'a b' }], max_tokens: 2 })).json();
    expect(body.choices[0].message).toMatchObject({ role: 'assistant', content: toyText(4, 2) });
    expect(body.usage.prompt_tokens).toBe(4);
  });

  it('chat is refused with 400 when the model ships no chat template', async () => {
    const res = await call('acme', '/v1/chat/completions', { model: 'toy', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('chat_template_missing');
  });
});
