/**
 * Shared pieces of the OpenAI-compatible API tests: a repository with the toy generator
 * (test/fixtures/python/toy_llm: deterministic, the vLLM backend's I/O, a chat template), a
 * variant without a chat template, variants without some of its I/O, the log probabilities
 * toy_llm reports, and a reader of server-sent events.
 */
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT, type TempRepo, tempRepo } from '../../helpers/repo.js';

const TOY_SRC = join(PROJECT_ROOT, 'test', 'fixtures', 'python', 'toy_llm');

/** The words toy_llm generates in turn (its model.py VOCAB). */
export const VOCAB = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];

/** What toy_llm generates for a prompt of `promptWords` words, `tokens` tokens long. */
export function toyText(promptWords: number, tokens: number): string {
  let s = '';
  for (let i = 0; i < tokens; i++) s += ' ' + VOCAB[(promptWords + i) % VOCAB.length];
  return s;
}

/** One generated token's log probability and its alternatives, by rank. */
export interface ToyLogprob {
  token: string;
  logprob: number;
  top: { token: string; logprob: number }[];
}

/**
 * The log probabilities toy_llm reports (its model.py) for a prompt of `promptWords` words,
 * `tokens` tokens long, asked for `alternatives` per token (vLLM's `logprobs`: at least 1 entry).
 */
export function toyLogprobs(promptWords: number, tokens: number, alternatives: number): ToyLogprob[] {
  const entries = Math.min(Math.max(alternatives, 1), VOCAB.length);
  return Array.from({ length: tokens }, (_, i) => {
    const top = Array.from({ length: entries }, (_, r) => ({
      token: ' ' + VOCAB[(promptWords + i + r) % VOCAB.length],
      logprob: -0.5 * (r + 1) - 0.125 * (i % 4),
    }));
    return { token: top[0]!.token, logprob: top[0]!.logprob, top };
  });
}

/** A repository holding toy_llm, and `toy_plain` (the same model without a chat template) under `plain`. */
export function toyRepo(opts: { plain?: string; extra?: string[] } = {}): TempRepo {
  const repo = tempRepo(opts.extra ?? []);
  cpSync(TOY_SRC, join(repo.path, 'toy_llm'), { recursive: true });
  if (opts.plain) {
    const dst = join(repo.path, opts.plain);
    cpSync(TOY_SRC, dst, { recursive: true });
    rmSync(join(dst, '1', 'chat_template.jinja'));
    repo.write(`${opts.plain}/config.pbtxt`, readFileSync(join(TOY_SRC, 'config.pbtxt'), 'utf8').replace('name: "toy_llm"', `name: "${opts.plain}"`));
  }
  return repo;
}

/** Add toy_llm to `repo` as `name` without the inputs and outputs named in `drop` (e.g. `return_logprobs`, `logprobs`). */
export function toyVariant(repo: TempRepo, name: string, drop: readonly string[]): void {
  cpSync(TOY_SRC, join(repo.path, name), { recursive: true });
  const lines = readFileSync(join(TOY_SRC, 'config.pbtxt'), 'utf8')
    .split('\n')
    .filter((line) => !line.startsWith('#') && !drop.some((d) => line.includes(`name: "${d}"`)));
  const config = lines
    .join('\n')
    .replace('name: "toy_llm"', `name: "${name}"`)
    // The tensor lists' last entries lose their comma.
    .replace(/,(\n\s*\])/g, '$1');
  for (const d of drop) if (config.includes(`"${d}"`)) throw new Error(`toy_llm config.pbtxt changed: ${d} was not removed`);
  repo.write(`${name}/config.pbtxt`, config);
}

/** The `data:` payloads of an event stream's text, in order. */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
}
