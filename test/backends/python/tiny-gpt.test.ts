/**
 * A Python model generating with torch + transformers (spec §7, on a GPU where there is one): tiny_gpt
 * (test/fixtures/python/tiny_gpt, a randomly initialised GPT-2 built at initialize) streams one
 * response per token over /generate_stream. Runs where the Python backend's interpreter imports
 * torch and transformers (the GPU machine: on CUDA), skips with a message elsewhere. Figures (time
 * to first token, tokens/s) come from bench/python-gpu.ts, not from here.
 */
import { spawnSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultPython } from '../../../host/src/backends/python/index.js';
import { pythonServer } from './helpers.js';
import { PROJECT_ROOT, tempRepo } from '../../helpers/repo.js';

const probe = spawnSync(defaultPython(), ['-c', 'import torch, transformers, numpy; print(torch.cuda.is_available())'], { encoding: 'utf8' });
const ok = probe.status === 0;
if (!ok) console.warn(`tiny_gpt test skipped: the Python backend's interpreter (${defaultPython()}) cannot import torch + transformers + numpy`);

describe.skipIf(!ok)(`tiny_gpt (torch, cuda=${probe.stdout?.trim()})`, () => {
  const py = pythonServer(
    () => {
      const repo = tempRepo([]);
      cpSync(join(PROJECT_ROOT, 'test', 'fixtures', 'python', 'tiny_gpt'), join(repo.path, 'tiny_gpt'), { recursive: true });
      return repo;
    },
    {
      timeoutMs: 300_000,
      captureLog: false,
      logLevel: 'warn',
      exitTimeoutSecs: 5,
    },
  );

  it('streams one token per response and is deterministic (greedy, seeded)', async () => {
    const run = async () => {
      const res = await fetch(`${py.s.httpUrl}/v2/models/tiny_gpt/generate_stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text_input: 'Hello', parameters: { max_tokens: 12 } }),
      });
      expect(res.status).toBe(200);
      return (await res.text())
        .split('\n\n')
        .filter((c) => c.startsWith('data: '))
        .map((c) => JSON.parse(c.slice(6)).text_output as string);
    };
    const a = await run();
    expect(a).toHaveLength(12);
    expect(await run()).toEqual(a);
  }, 120_000);
});
