/**
 * Shared pieces of the OpenAI-compatible API tests: a repository with the toy generator
 * (test/fixtures/python/toy_llm: deterministic, the vLLM backend's I/O, a chat template), a
 * variant without a chat template, and a reader of server-sent events.
 */
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT, type TempRepo, tempRepo } from '../../helpers/repo.js';

/** The words toy_llm generates in turn (its model.py VOCAB). */
export const VOCAB = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];

/** What toy_llm generates for a prompt of `promptWords` words, `tokens` tokens long. */
export function toyText(promptWords: number, tokens: number): string {
  let s = '';
  for (let i = 0; i < tokens; i++) s += ' ' + VOCAB[(promptWords + i) % VOCAB.length];
  return s;
}

/** A repository holding toy_llm, and `toy_plain` (the same model without a chat template) under `plain`. */
export function toyRepo(opts: { plain?: string; extra?: string[] } = {}): TempRepo {
  const repo = tempRepo(opts.extra ?? []);
  const src = join(PROJECT_ROOT, 'test', 'fixtures', 'python', 'toy_llm');
  cpSync(src, join(repo.path, 'toy_llm'), { recursive: true });
  if (opts.plain) {
    const dst = join(repo.path, opts.plain);
    cpSync(src, dst, { recursive: true });
    rmSync(join(dst, '1', 'chat_template.jinja'));
    repo.write(`${opts.plain}/config.pbtxt`, readFileSync(join(src, 'config.pbtxt'), 'utf8').replace('name: "toy_llm"', `name: "${opts.plain}"`));
  }
  return repo;
}

/** The `data:` payloads of an event stream's text, in order. */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
}
