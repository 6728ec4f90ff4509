/**
 * Generation through the Python backend on a GPU (`benchPythonGpu(ctx)`, run by bench/run.ts as
 * suite `python-gpu`; spec §7): tiny_gpt (test/fixtures/python/tiny_gpt — a randomly
 * initialised GPT-2, 4 layers × 256, greedy) streamed over /generate_stream. Reports time to first
 * token (request sent → first SSE event, ms) and decode tokens/s (tokens after the first / time
 * after the first), for one stream at a time and for 4 concurrent streams. Skips (a line in the
 * report) where the Python backend's interpreter cannot import torch + transformers.
 */
import { spawnSync } from 'node:child_process';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchContext } from './ctx.js';

async function stream(url: string, tokens: number): Promise<{ ttftMs: number; tokPerS: number; n: number }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v2/models/tiny_gpt/generate_stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text_input: 'The quick brown fox', parameters: { max_tokens: tokens } }),
  });
  if (res.status !== 200) throw new Error(`tiny_gpt answered ${res.status}`);
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
      if (buf.slice(0, i).startsWith('data: ')) {
        n++;
        if (n === 1) first = performance.now();
      }
      buf = buf.slice(i + 2);
    }
  }
  const end = performance.now();
  return { ttftMs: first - t0, tokPerS: (n - 1) / ((end - first) / 1000), n };
}

export async function benchPythonGpu(ctx: BenchContext): Promise<unknown> {
  ctx.log('\n== Python backend generating with torch (tiny_gpt over /generate_stream) ==');
  const { defaultPython } = await import('../host/src/backends/python/index.js');
  const probe = spawnSync(defaultPython(), ['-c', 'import torch, transformers; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")'], {
    encoding: 'utf8',
  });
  if (probe.status !== 0) {
    const body = `skipped: ${defaultPython()} cannot import torch + transformers`;
    ctx.log(body);
    ctx.section('Python backend generation (tiny_gpt)', body);
    return undefined;
  }
  const repo = await ctx.makeRepository([]);
  await cp(join(ctx.root, 'test', 'fixtures', 'python', 'tiny_gpt'), join(repo, 'tiny_gpt'), { recursive: true });
  const warden = await ctx.startWarden(repo);
  const tokens = 128;
  const rows: (string | number)[][] = [];
  try {
    await stream(warden.url, 8); // warm-up (CUDA kernels, caches)
    const seq = [];
    for (let i = 0; i < Math.max(3, ctx.rounds); i++) seq.push(await stream(warden.url, tokens));
    rows.push(['1 stream', tokens, ctx.median(seq.map((r) => r.ttftMs)).toFixed(1), ctx.median(seq.map((r) => r.tokPerS)).toFixed(0), '']);
    const t0 = performance.now();
    const par = await Promise.all(Array.from({ length: 4 }, () => stream(warden.url, tokens)));
    const total = par.reduce((s, r) => s + r.n, 0) / ((performance.now() - t0) / 1000);
    rows.push([
      '4 concurrent streams',
      tokens,
      ctx.median(par.map((r) => r.ttftMs)).toFixed(1),
      ctx.median(par.map((r) => r.tokPerS)).toFixed(0),
      total.toFixed(0),
    ]);
  } finally {
    await warden.stop();
  }
  const body = `device: ${probe.stdout.trim()}\n\n${ctx.table(['case', 'tokens', 'TTFT ms (median)', 'decode tokens/s per stream', 'tokens/s all streams'], rows)}`;
  ctx.log(body);
  ctx.section('Python backend generation (tiny_gpt)', body);
  return undefined;
}
