/**
 * The OpenAI-compatible API's cost per token (`benchOpenai(ctx)`, run by bench/run.ts as suite
 * `openai`; docs/openai.md): the Python toy generator (test/fixtures/python/toy_llm, which sends
 * its tokens as fast as the Python backend takes them) streamed through `/v1/chat/completions`
 * and through `/v2/models/toy_llm/generate_stream` with the same inputs (the token counts asked for
 * on both). Reports time to first
 * token (request sent → first event with text, ms), tokens/s per stream and over all streams, for
 * 1 and 16 concurrent streams, and the OpenAI layer's cost (µs per token: the difference of the
 * per-stream times per token).
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchContext } from './ctx.js';

const TOKENS = 256;

type Path = 'openai' | 'generate_stream';

/** One stream: time to the first text event and to the end; events with text counted. */
async function stream(url: string, path: Path): Promise<{ ttftMs: number; totalMs: number; n: number }> {
  const t0 = performance.now();
  const res =
    path === 'openai'
      ? await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'toy_llm', messages: [{ role: 'user', content: 'The quick brown fox' }], max_tokens: TOKENS, stream: true }),
        })
      : await fetch(`${url}/v2/models/toy_llm/generate_stream`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            text_input: 'The quick brown fox',
            stream: true,
            sampling_parameters: JSON.stringify({ max_tokens: TOKENS }),
            // What the OpenAI layer asks the model for too (the token counts of its usage).
            exclude_input_in_output: true,
            return_num_input_tokens: true,
            return_num_output_tokens: true,
          }),
        });
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  const reader = res.body!.getReader();
  let first = 0;
  let n = 0;
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += Buffer.from(value).toString();
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      // A token: generate_stream's text_output, a chat chunk's non-empty content.
      if (/"text_output":"[^"]|"content":"[^"]/.test(event)) {
        n++;
        if (n === 1) first = performance.now();
      }
    }
  }
  return { ttftMs: first - t0, totalMs: performance.now() - t0, n };
}

export async function benchOpenai(ctx: BenchContext): Promise<unknown> {
  ctx.log('\n== OpenAI-compatible API vs generate_stream (toy_llm, Python backend) ==');
  const repo = await ctx.makeRepository([]);
  await cp(join(ctx.root, 'test', 'fixtures', 'python', 'toy_llm'), join(repo, 'toy_llm'), { recursive: true });
  const warden = await ctx.startWarden(repo);
  const rows: (string | number)[][] = [];
  const perToken: Record<string, Record<Path, number>> = {};
  try {
    for (const path of ['generate_stream', 'openai'] as const) await stream(warden.url, path); // warm-up
    for (const c of [1, 16]) {
      for (const path of ['generate_stream', 'openai'] as const) {
        const rounds = [];
        for (let r = 0; r < Math.max(3, ctx.rounds); r++) {
          const t0 = performance.now();
          const streams = await Promise.all(Array.from({ length: c }, () => stream(warden.url, path)));
          const wall = (performance.now() - t0) / 1000;
          if (streams.some((s) => s.n !== TOKENS)) throw new Error(`${path}: a stream had ${streams.map((s) => s.n).join(',')} tokens, not ${TOKENS}`);
          rounds.push({
            ttft: ctx.median(streams.map((s) => s.ttftMs)),
            usPerToken: ctx.median(streams.map((s) => (s.totalMs * 1000) / s.n)),
            all: (c * TOKENS) / wall,
          });
        }
        const us = ctx.median(rounds.map((r) => r.usPerToken));
        (perToken[`c=${c}`] ??= {} as Record<Path, number>)[path] = us;
        rows.push([
          `c=${c}`,
          path === 'openai' ? '/v1/chat/completions' : '/generate_stream',
          ctx.median(rounds.map((r) => r.ttft)).toFixed(2),
          (1e6 / us).toFixed(0),
          ctx.median(rounds.map((r) => r.all)).toFixed(0),
          us.toFixed(1),
        ]);
      }
    }
  } finally {
    await warden.stop();
  }
  const cost = Object.entries(perToken)
    .map(([c, p]) => `${c}: ${(p.openai - p.generate_stream).toFixed(1)} µs per token`)
    .join('; ');
  const body = `${ctx.table(['streams', 'route', 'TTFT ms (median)', 'tokens/s per stream', 'tokens/s all streams', 'µs per token per stream'], rows)}\n\nOpenAI layer's cost (per-stream time per token, OpenAI minus generate_stream): ${cost}`;
  ctx.log(body);
  ctx.section(`OpenAI-compatible API vs generate_stream (toy_llm, ${TOKENS} tokens per stream)`, body);
  return undefined;
}
