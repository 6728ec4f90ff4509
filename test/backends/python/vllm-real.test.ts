/**
 * The vLLM bridge on real vLLM (spec §7.3): runs only where `vllm` is importable by the Python
 * backend's interpreter ($WARDEN_PYTHON, else the project's .venv) — a GPU host; see
 * scripts/test-vllm-real.sh. Model: $WARDEN_VLLM_MODEL (default facebook/opt-125m, Triton's
 * sample). Skips with a message everywhere else (vLLM's CPU build needs a torch that the package
 * registries here do not serve). Covers /generate, /generate_stream and the OpenAI-compatible API
 * (docs/openai.md) on the bridge: completions streamed and not, usage, logprobs, and chat's answer
 * for a model without a chat template.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { defaultPython } from '../../../host/src/backends/python/index.js';
import { pythonServer } from './helpers.js';
import { postJson, tempRepo } from '../../helpers/repo.js';

const python = defaultPython();
const probe = spawnSync(python, ['-c', 'import vllm; print(vllm.__version__)'], { encoding: 'utf8' });
const hasVllm = probe.status === 0;
if (!hasVllm) console.warn(`real-vLLM test skipped: 'import vllm' fails with ${python} (install vLLM on a GPU host and run scripts/test-vllm-real.sh)`);

describe.skipIf(!hasVllm)(`vLLM bridge on vLLM ${probe.stdout?.trim()}`, () => {
  const py = pythonServer(
    () => {
      const repo = tempRepo([]);
      repo.write('vllm_model/config.pbtxt', 'backend: "vllm"\ninstance_group [ { count: 1, kind: KIND_MODEL } ]\n');
      repo.write(
        'vllm_model/1/model.json',
        JSON.stringify({ model: process.env.WARDEN_VLLM_MODEL ?? 'facebook/opt-125m', gpu_memory_utilization: 0.3, enforce_eager: true }),
      );
      return repo;
    },
    {
      timeoutMs: 600_000,
      captureLog: false,
      logLevel: 'warn',
      exitTimeoutSecs: 5,
    },
  );

  it('/generate answers with the prompt and a completion', async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, {
      text_input: 'What is Triton Inference Server?',
      parameters: { stream: false, temperature: 0, max_tokens: 16 },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.text_output.startsWith('What is Triton Inference Server?')).toBe(true);
    expect(r.json.text_output.length).toBeGreaterThan('What is Triton Inference Server?'.length);
  }, 120_000);

  it('/generate_stream streams deltas', async () => {
    const res = await fetch(`${py.s.httpUrl}/v2/models/vllm_model/generate_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text_input: 'The capital of France is', parameters: { stream: true, temperature: 0, max_tokens: 16 } }),
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n\n')
      .filter((c) => c.startsWith('data: '))
      .map((c) => JSON.parse(c.slice(6)));
    expect(events.length).toBeGreaterThan(1);
    expect(events.every((e) => typeof e.text_output === 'string')).toBe(true);
  }, 120_000);

  it('the OpenAI-compatible API: completions streamed and not, with usage and logprobs; chat without a template is 400', async () => {
    const request = { model: 'vllm_model', prompt: 'The capital of France is', max_tokens: 8, temperature: 0, logprobs: 2 };
    const r = await postJson(`${py.s.httpUrl}/v1/completions`, request);
    expect(r.status, r.text).toBe(200);
    const choice = r.json.choices[0];
    expect(choice.text.length).toBeGreaterThan(0);
    expect(r.json.usage.prompt_tokens).toBeGreaterThan(0);
    expect(r.json.usage.completion_tokens).toBeGreaterThan(0);
    // One logprobs entry per generated token, with its alternatives (up to logprobs + 1).
    expect(choice.logprobs.tokens).toHaveLength(r.json.usage.completion_tokens);
    for (const top of choice.logprobs.top_logprobs) expect(Object.keys(top).length).toBeGreaterThanOrEqual(1);
    for (const lp of choice.logprobs.token_logprobs) expect(lp).toBeLessThanOrEqual(0);

    const res = await fetch(`${py.s.httpUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } }),
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n\n')
      .filter((c) => c.startsWith('data: '))
      .map((c) => c.slice(6));
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    // Greedy decoding: the stream says what the single answer said.
    expect(chunks.map((c) => c.choices[0]?.text ?? '').join('')).toBe(choice.text);
    expect(chunks.flatMap((c) => c.choices[0]?.logprobs?.tokens ?? [])).toEqual(choice.logprobs.tokens);
    expect(chunks.at(-1).usage).toEqual(r.json.usage);

    const chat = await postJson(`${py.s.httpUrl}/v1/chat/completions`, { model: 'vllm_model', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.status).toBe(400);
    expect(chat.json.error.code).toBe('chat_template_missing');
  }, 120_000);
});
