/**
 * The official `openai` Python client (PyPI, pinned below, installed into `.venv-openai/` on first
 * use) against Warden's OpenAI-compatible API in multi-tenant mode, on the toy generator: model
 * listing, completions and chat (streamed, usage, `n`, stop, logprobs) and the client's exception
 * classes for OpenAI's error answers (404, 400, 401). Skips only when PyPI cannot be reached.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exec } from '../../../tools/pip.js';
import { pythonEnvironment } from '../../backends/python/helpers.js';
import { ensureVenvTool, venvBin, type VenvTool } from '../../helpers/venv-tool.js';
import type { TempRepo } from '../../helpers/repo.js';
import { type TenantServer, startTenantServer, testTokens } from '../../helpers/servers.js';
import { toyLogprobs, toyRepo, toyText } from './helpers.js';

/** The `openai` client (looked up with `pip index versions openai`; newest at the time of writing). */
export const OPENAI_VERSION = '3.57.0';
const OPENAI_TOOL: VenvTool = { venv: '.venv-openai', distribution: 'openai', version: OPENAI_VERSION };

const backend = await pythonEnvironment();
const client = backend ? { ok: false as const, reason: backend } : await ensureVenvTool(OPENAI_TOOL);
const skip = client.ok ? undefined : client.reason;
if (skip) console.warn(`openai client test skipped: ${skip}`);
const TOKENS = testTokens('acme');

describe.skipIf(skip !== undefined)(`the openai Python client ${OPENAI_VERSION}`, () => {
  let repo: TempRepo;
  let t: TenantServer;
  beforeAll(async () => {
    repo = toyRepo();
    t = await startTenantServer(repo, [{ id: 'acme', token: TOKENS.acme, shared_models: ['toy_llm'] }], {
      loadModels: ['*'],
      exitOnError: true,
      cacheDir: `${repo.path}/.cache`,
      logger: pino({ level: 'silent' }),
    });
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
    repo?.cleanup();
  });

  it('lists, completes, chats, streams and raises the client’s errors', async () => {
    const r = await exec(venvBin(OPENAI_TOOL, 'python'), [join(import.meta.dirname, 'openai_client.py'), t.server.httpUrl, TOKENS.acme], 120_000);
    expect(r.code, r.out).toBe(0);
    const out = JSON.parse(r.out.trim().split('\n').at(-1)!);
    expect(out.models).toEqual(['toy_llm']);
    expect(out.model).toMatchObject({ id: 'toy_llm', object: 'model' });
    expect(out.completion).toEqual({ text: toyText(2, 3), finish: 'length', usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 } });
    // chat_template.jinja renders "<|user|>hello\n<|assistant|>": 2 of toy_llm's tokens.
    expect(out.chat).toEqual({
      texts: [toyText(2, 4), toyText(2, 4)],
      roles: ['assistant', 'assistant'],
      finish: ['length', 'length'],
      usage: { prompt_tokens: 2, completion_tokens: 8, total_tokens: 10 },
    });
    expect(out.chat_stream).toEqual({
      deltas: toyText(2, 5).match(/ \w+/g),
      finish: 'length',
      usage: { prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 },
    });
    expect(out.completion_stream).toBe(' gamma');
    // toy_llm's deterministic log probabilities (helpers.ts toyLogprobs), as the client's types read them.
    const lps = toyLogprobs(2, 3, 2);
    expect(out.completion_logprobs.whole).toEqual({
      tokens: lps.map((t) => t.token),
      token_logprobs: lps.map((t) => t.logprob),
      top_logprobs: lps.map((t) => Object.fromEntries(t.top.map((a) => [a.token, a.logprob]))),
      text_offset: [0, 6, 12],
    });
    expect(out.completion_logprobs.streamed_tokens).toEqual(lps.map((t) => t.token));
    const bytes = (s: string) => [...Buffer.from(s)];
    const chat = lps.map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: bytes(t.token),
      top_logprobs: t.top.map((a) => ({ token: a.token, logprob: a.logprob, bytes: bytes(a.token) })),
    }));
    expect(out.chat_logprobs).toEqual({ whole: chat, streamed: chat });
    expect(out.errors).toEqual({
      not_found: { status: 404, code: 'model_not_found', param: 'model', type: 'invalid_request_error' },
      bad_request: { status: 400, param: 'temperature', type: 'invalid_request_error' },
      auth: { status: 401, type: 'authentication_error' },
      top_logprobs: { status: 400, param: 'top_logprobs', message: '`top_logprobs` can only be used when `logprobs` is True' },
    });
  }, 180_000);
});
