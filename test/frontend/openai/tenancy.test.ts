/**
 * The OpenAI-compatible API in multi-tenant mode: the tenant's bearer token is the API key,
 * `/v1/models` lists only what the caller may use (its own and the operator's models shared with
 * it), a wrong key is 401 and an over-rate request 429 with `Retry-After`, both in OpenAI's error
 * shape, and the tokens of each request are counted per tenant in the metrics and in the model's
 * statistics.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TempRepo } from '../../helpers/repo.js';
import { type TenantServer, startTenantServer, testTokens } from '../../helpers/servers.js';
import { pythonEnvironment } from '../../backends/python/helpers.js';
import { toyRepo, toyText } from './helpers.js';

const skip = await pythonEnvironment();
const TOKENS = testTokens('alpha', 'beta', 'slow', 'admin');

describe.skipIf(skip !== undefined)('OpenAI-compatible API (multi-tenant)', () => {
  let repo: TempRepo;
  let t: TenantServer;
  beforeAll(async () => {
    repo = toyRepo({ plain: 'toy_private' });
    t = await startTenantServer(
      repo,
      [
        { id: 'alpha', token: TOKENS.alpha, shared_models: ['toy_llm'], quotas: { max_tokens_per_request: 8 } },
        { id: 'beta', token: TOKENS.beta },
        { id: 'slow', token: TOKENS.slow, shared_models: ['toy_llm'], quotas: { requests_per_second: 0.01, burst: 2 } },
        { id: 'admin', token: TOKENS.admin, role: 'admin' },
      ],
      {
        loadModels: ['*'],
        metricsPort: 0,
        metricsAuth: false,
        metricsTenantLabels: true,
        exitOnError: true,
        cacheDir: `${repo.path}/.cache`,
        logger: pino({ level: 'silent' }),
      },
    );
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
    repo?.cleanup();
  });

  const call = (token: string | undefined, path: string, body?: unknown) =>
    fetch(`${t.server.httpUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const ids = async (token: string) => ((await (await call(token, '/v1/models')).json()).data as { id: string }[]).map((m) => m.id).sort();

  it('lists only the models the key may use', async () => {
    expect(await ids(TOKENS.alpha)).toEqual(['toy_llm']);
    expect(await ids(TOKENS.beta)).toEqual([]);
    expect(await ids(TOKENS.admin)).toEqual(['toy_llm', 'toy_private']);
  });

  it('a model the key may not use is 404 in OpenAI’s shape, as an unknown one', async () => {
    for (const model of ['toy_private', 'nope']) {
      const res = await call(TOKENS.alpha, '/v1/completions', { model, prompt: 'x' });
      expect(res.status).toBe(404);
      expect((await res.json()).error).toMatchObject({ code: 'model_not_found', param: 'model', type: 'invalid_request_error' });
    }
    expect((await call(TOKENS.beta, '/v1/models/toy_llm')).status).toBe(404);
  });

  it('a wrong or missing key is 401 in OpenAI’s shape', async () => {
    for (const token of ['not-a-token-0123456789abcdefghij', undefined]) {
      const res = await call(token, '/v1/chat/completions', { model: 'toy_llm', messages: [{ role: 'user', content: 'x' }] });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const { error } = await res.json();
      expect(error).toMatchObject({ type: 'authentication_error' });
      expect(typeof error.message).toBe('string');
    }
  });

  it('over the tenant’s rate: 429 with Retry-After in OpenAI’s shape', async () => {
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 3; i++) {
      const res = await call(TOKENS.slow, '/v1/completions', { model: 'toy_llm', prompt: 'x', max_tokens: 1 });
      statuses.push(res.status);
      if (res.status === 429) limited = res;
      else await res.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await limited!.json()).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
  });

  it('max_tokens over the tenant’s max_tokens_per_request is 400; a request without one is held to it', async () => {
    const over = await call(TOKENS.alpha, '/v1/chat/completions', { model: 'toy_llm', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 9 });
    expect(over.status).toBe(400);
    expect((await over.json()).error).toMatchObject({ param: 'max_completion_tokens', code: 'invalid_value' });
    // No bound asked: the default (16) lowered to the quota (8).
    const held = await (await call(TOKENS.alpha, '/v1/completions', { model: 'toy_llm', prompt: 'x' })).json();
    expect(held.choices[0]).toMatchObject({ text: toyText(1, 8), finish_reason: 'length' });
  });

  it('counts prompt and completion tokens per tenant in the metrics', async () => {
    const body = await (await call(TOKENS.alpha, '/v1/completions', { model: 'toy_llm', prompt: 'a b c d', max_tokens: 7 })).json();
    expect(body.choices[0].text).toBe(toyText(4, 7));
    const text = await (await fetch(`${t.server.metricsUrl}/metrics`)).text();
    const series = (kind: string) => Number(new RegExp(`warden_openai_tokens_total\\{model="toy_llm",tenant="alpha",kind="${kind}"\\} (\\d+)`).exec(text)?.[1]);
    // Tenant alpha's requests so far: the held one (1 prompt token, 8 generated) and this one.
    expect(series('prompt')).toBe(1 + 4);
    expect(series('completion')).toBe(8 + 7);
    // Tenant slow's two requests are its own series.
    expect(Number(/warden_openai_tokens_total\{model="toy_llm",tenant="slow",kind="completion"\} (\d+)/.exec(text)?.[1])).toBe(2);
  });

  it('counts them per tenant in the statistics of the version that served them (token_usage)', async () => {
    const stats = async () => (await (await call(TOKENS.admin, '/v2/models/toy_llm/stats')).json()).model_stats[0];
    // The requests above: alpha 5 prompt and 15 completion tokens, slow 2 and 2 (the metrics' figures).
    expect((await stats()).token_usage).toEqual({
      prompt_tokens: 7,
      completion_tokens: 17,
      tenants: { alpha: { prompt_tokens: 5, completion_tokens: 15 }, slow: { prompt_tokens: 2, completion_tokens: 2 } },
    });
    const streamed = await call(TOKENS.alpha, '/v1/chat/completions', {
      model: 'toy_llm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 3,
      stream: true,
    });
    expect(await streamed.text()).toContain('[DONE]');
    // The chat template renders "<|user|>x\n<|assistant|>": 2 tokens.
    expect((await stats()).token_usage.tenants.alpha).toEqual({ prompt_tokens: 7, completion_tokens: 18 });
    // A model no OpenAI-compatible request used has none.
    expect((await (await call(TOKENS.admin, '/v2/models/toy_private/stats')).json()).model_stats[0]).not.toHaveProperty('token_usage');
  });
});
