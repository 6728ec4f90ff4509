/**
 * Warden's vLLM bridge (spec §7.3, §3.6): the Python-based backend
 * `host/python/backends/vllm` implements Triton's vLLM backend I/O contract above a narrow engine
 * boundary (`engine.py`). Here the engine is a tiny deterministic generator built in this test
 * (`tiny_engine.py`, named by `1/model.json`'s `engine_factory`); everything above the boundary —
 * auto-complete, /generate, /generate_stream, sampling parameters from the request parameters or
 * the `sampling_parameters` input, exclude_input_in_output, the optional outputs, cancellation,
 * engine errors — is exercised for real. The real-vLLM test is test/backends/python/vllm-real.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { until } from '../../helpers/wait.js';
import { postJson, tempRepo, sseEvents } from '../../helpers/repo.js';
import { pythonEnvironment, pythonServer } from './helpers.js';

const skip = await pythonEnvironment();

/** A tiny "LLM": word i of choice c is VOCAB[(hash(prompt) + i * (c + 1) + seed) % len]; 1 input token per prompt word. */
const TINY_ENGINE = `import asyncio, zlib
import triton_python_backend_utils as pb_utils
VOCAB = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
class TinyEngine:
    def __init__(self, args):
        self.delay = float(args.get("delay_ms", 0)) / 1000.0
        self.name = args["model"]
    async def generate(self, prompt, sampling, request_id):
        if "boom" in prompt:
            raise RuntimeError("tiny engine exploded")
        n = int(sampling.get("n", 1)); max_tokens = int(sampling.get("max_tokens", 16)); seed = int(sampling.get("seed", 0))
        stop = sampling.get("stop")
        h = zlib.crc32(prompt.encode())
        texts = [""] * n; counts = [0] * n; reasons = [None] * n; lps = [[] for _ in range(n)]
        for i in range(max_tokens):
            if self.delay:
                await asyncio.sleep(self.delay)
            for c in range(n):
                if reasons[c]:
                    continue
                w = VOCAB[(h + i * (c + 1) + seed) % len(VOCAB)]
                texts[c] += " " + w; counts[c] += 1
                lps[c].append({str(i): {"logprob": -0.5, "rank": 1, "decoded_token": " " + w}})
                if stop and w == stop:
                    reasons[c] = "stop"
                elif counts[c] == max_tokens:
                    reasons[c] = "length"
            done = all(reasons)
            yield {"texts": list(texts), "finish_reasons": list(reasons), "cumulative_logprobs": [-0.5 * k for k in counts],
                   "logprobs": [list(l) for l in lps], "num_input_tokens": len(prompt.split()), "num_output_tokens": list(counts), "finished": done}
            if done:
                return
    async def abort(self, request_id):
        pb_utils.Logger.log_info("tiny engine aborted %s" % request_id)
    def shutdown(self):
        pass
def create(args):
    return TinyEngine(args)
`;

/** What the tiny engine generates for `prompt` (choice 0), mirrored here: */
function expected(prompt: string, tokens: number, seed = 0): string {
  const VOCAB = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];
  const h = crc32(Buffer.from(prompt));
  return Array.from({ length: tokens }, (_, i) => ' ' + VOCAB[(h + i + seed) % VOCAB.length]).join('');
}
function crc32(b: Buffer): number {
  let c = ~0 >>> 0;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

describe.skipIf(skip !== undefined)('vLLM bridge (tiny engine behind the engine boundary)', () => {
  const py = pythonServer(
    () => {
      const repo = tempRepo([]);
      for (const [name, delay] of [
        ['vllm_model', 0],
        ['vllm_slow', 50],
      ] as const) {
        repo.write(`${name}/config.pbtxt`, `backend: "vllm"\ninstance_group [ { count: 1, kind: KIND_MODEL } ]\n`);
        repo.write(`${name}/1/model.json`, JSON.stringify({ model: 'tiny', engine_factory: 'tiny_engine:create', delay_ms: delay }));
        repo.write(`${name}/1/tiny_engine.py`, TINY_ENGINE);
      }
      return repo;
    },
    {
      // A client abort mid-SSE leaves its connection counted as in flight until the exit timeout (HTTP
      // frontend, also with repeat_native): keep teardown short.
      exitTimeoutSecs: 2,
    },
  );

  it('auto-complete gives Triton vLLM backend I/O, decoupled, max_batch_size 0', async () => {
    const cfg = await (await fetch(`${py.s.httpUrl}/v2/models/vllm_model/config`)).json();
    expect(cfg.backend).toBe('vllm');
    expect(cfg.max_batch_size).toBe(0);
    expect(cfg.model_transaction_policy).toEqual({ decoupled: true });
    expect(cfg.input.map((i: { name: string }) => i.name)).toEqual([
      'text_input',
      'image',
      'stream',
      'sampling_parameters',
      'exclude_input_in_output',
      'return_finish_reason',
      'return_cumulative_logprob',
      'return_logprobs',
      'return_num_input_tokens',
      'return_num_output_tokens',
    ]);
    expect(cfg.output.map((o: { name: string; data_type: string }) => `${o.name}:${o.data_type}`)).toEqual([
      'text_output:TYPE_STRING',
      'finish_reason:TYPE_STRING',
      'cumulative_logprob:TYPE_FP32',
      'logprobs:TYPE_STRING',
      'num_input_tokens:TYPE_UINT32',
      'num_output_tokens:TYPE_UINT32',
    ]);
  });

  it('/generate: prompt + completion, sampling parameters from the request parameters', async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, {
      text_input: 'What is Triton?',
      parameters: { stream: false, temperature: 0, max_tokens: 5 },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ model_name: 'vllm_model', model_version: '1', text_output: 'What is Triton?' + expected('What is Triton?', 5) });
    const seeded = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, { text_input: 'hi', parameters: { max_tokens: 3, seed: 2 } });
    expect(seeded.json.text_output).toBe('hi' + expected('hi', 3, 2));
  });

  it('/generate_stream with stream: deltas that add up to the completion, prompt excluded', async () => {
    const res = await fetch(`${py.s.httpUrl}/v2/models/vllm_model/generate_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text_input: 'Tell me', parameters: { stream: true, max_tokens: 6 } }),
    });
    expect(res.status).toBe(200);
    const events = sseEvents(await res.text());
    expect(events).toHaveLength(6);
    expect(events.map((e) => e.text_output).join('')).toBe(expected('Tell me', 6));
  });

  it('sampling_parameters input (JSON string) wins over request parameters; exclude_input_in_output; stream with exclude false is refused', async () => {
    let r = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, {
      text_input: 'abc',
      sampling_parameters: JSON.stringify({ max_tokens: '2' }),
      exclude_input_in_output: true,
      parameters: { max_tokens: 9 },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.text_output).toBe(expected('abc', 2));
    r = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, { text_input: 'abc', stream: true, exclude_input_in_output: false });
    expect(r.status).toBe(400);
    expect(r.json.error).toContain('Streaming with `exclude_input_in_output=False` is not allowed.');
  });

  it('the optional outputs: finish_reason, cumulative_logprob, logprobs, num_input_tokens, num_output_tokens; n choices', async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, {
      text_input: 'one two three',
      return_finish_reason: true,
      return_cumulative_logprob: true,
      return_logprobs: true,
      return_num_input_tokens: true,
      return_num_output_tokens: true,
      exclude_input_in_output: true,
      parameters: { max_tokens: 4, n: 2 },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.text_output).toHaveLength(2);
    expect(r.json.text_output[0]).toBe(expected('one two three', 4));
    expect(r.json.finish_reason).toEqual(['length', 'length']);
    expect(r.json.cumulative_logprob).toEqual([-2, -2]);
    expect(r.json.num_input_tokens).toBe(3);
    expect(r.json.num_output_tokens).toEqual([4, 4]);
    expect(JSON.parse(r.json.logprobs[0])).toHaveLength(4);
  });

  it('a stop word ends generation with finish_reason stop', async () => {
    const words = expected('stop me', 8).trim().split(' ');
    const r = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, {
      text_input: 'stop me',
      exclude_input_in_output: true,
      return_finish_reason: true,
      parameters: { max_tokens: 8, stop: words[2] },
    });
    expect(r.json.text_output).toBe(' ' + words.slice(0, 3).join(' '));
    expect(r.json.finish_reason).toBe('stop');
  });

  it('engine errors come back as the request error (text_output "N/A" + error, final)', async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, { text_input: 'boom', parameters: { max_tokens: 2 } });
    expect(r.status).toBe(500);
    expect(r.json.error).toContain('Error generating stream: tiny engine exploded');
    const ok = await postJson(`${py.s.httpUrl}/v2/models/vllm_model/generate`, { text_input: 'fine', parameters: { max_tokens: 1 } });
    expect(ok.status).toBe(200);
  });

  it('a client that goes away mid-stream cancels the request: the engine request is aborted', async () => {
    const abort = new AbortController();
    const res = await fetch(`${py.s.httpUrl}/v2/models/vllm_slow/generate_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text_input: 'long', parameters: { stream: true, max_tokens: 200 } }),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await until(() => py.log.some((l) => l.includes('tiny engine aborted')), { within: 3_000, every: 30 });
    expect(py.log.some((l) => l.includes('"model":"vllm_slow"') && l.includes('tiny engine aborted'))).toBe(true);
  });
});
