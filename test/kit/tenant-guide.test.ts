/**
 * docs/tenant-guide.md as a tenant follows it: the fenced commands of "From `warden backend new`
 * to an inference", run as written by a shell (with `warden` the CLI of this checkout and
 * `python3` the .venv's, which has tritonclient) against a server in multi-tenant mode, end with
 * tritonclient's inference through the tenant's token; then each error of "Errors you may meet"
 * is made to happen on the project those commands made, and its text must match the block the
 * guide quotes.
 */
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../host/src/project.js';
import { ensureBuilt, FIXTURES } from '../backends/wasm/helpers.js';
import { ensureCompatVenv, VENV_PYTHON } from '../compat/venv.js';
import { startTenantServer, testTokens, type TenantServer } from '../helpers/servers.js';
import { KIT_CACHE_HOME, runBackend, scratch, softmax } from './helpers.js';

const GUIDE = readFileSync(join(PROJECT_ROOT, 'docs', 'tenant-guide.md'), 'utf8');
const TOKENS = testTokens('acme');

/** The text of the guide's section `heading` (`## heading` up to the next `## `). */
function section(heading: string): string {
  const start = GUIDE.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/tenant-guide.md has no section '## ${heading}'`).toBeGreaterThanOrEqual(0);
  const end = GUIDE.indexOf('\n## ', start + 1);
  return GUIDE.slice(start, end < 0 ? undefined : end);
}

/** The body of the first fenced block of `lang` in `text`. */
function fenced(text: string, lang: string): string {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(text);
  expect(m, `no \`\`\`${lang} block`).not.toBeNull();
  return m![1]!;
}

/** A quoted error line as a pattern: `<placeholder>` stands for any text. */
function pattern(quoted: string): RegExp {
  const parts = quoted.trim().split(/<[^>]+>/);
  return new RegExp(`^${parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+?')}$`);
}

/** Runs `script` with bash (-e: the first failing command fails it) in `cwd`; resolves to its exit code and output. */
function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-c', script], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let work: { dir: string; remove(): void };
let tenancy: TenantServer;
let run: { code: number | null; stdout: string; stderr: string };
const commands = fenced(section('From `warden backend new` to an inference'), 'sh');

beforeAll(async () => {
  await ensureBuilt();
  const venv = await ensureCompatVenv();
  expect(venv, 'the .venv with tritonclient').toMatchObject({ ok: true });
  work = scratch('warden-guide-');
  const repo = join(work.dir, 'repo');
  mkdirSync(repo);
  tenancy = await startTenantServer(repo, [{ id: 'acme', token: TOKENS.acme }], { separateUploads: true });
  // `warden` and `python3` as the guide's reader has them: this checkout's CLI, a Python with tritonclient
  const bin = join(work.dir, 'bin');
  mkdirSync(bin);
  const tsx = pathToFileURL(join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  writeFileSync(join(bin, 'warden'), `#!/bin/sh\nexec "${process.execPath}" --import "${tsx}" "${join(PROJECT_ROOT, 'host', 'src', 'cli.ts')}" "$@"\n`);
  writeFileSync(join(bin, 'python3'), `#!/bin/sh\nexec "${VENV_PYTHON}" "$@"\n`);
  for (const f of ['warden', 'python3']) chmodSync(join(bin, f), 0o755);
  const home = join(work.dir, 'home');
  mkdirSync(home);
  run = await bash(commands, home, {
    PATH: `${bin}:${process.env.PATH}`,
    WARDEN_URL: tenancy.server.httpUrl,
    WARDEN_TOKEN: TOKENS.acme,
    XDG_CACHE_HOME: KIT_CACHE_HOME,
  });
}, 300_000);

afterAll(async () => {
  await tenancy?.stop();
  work?.remove();
});

describe('docs/tenant-guide.md', () => {
  it('takes fewer than ten commands from `warden backend new` to an inference through tritonclient with a tenant token', () => {
    const lines = commands.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
    expect(lines[0]).toMatch(/^warden backend new /);
    expect(lines.at(-1)).toMatch(/infer\.py .*--token "\$WARDEN_TOKEN"/);
    expect(lines.length).toBeLessThan(10);
  });

  it('its commands, run as written, end with the inference of the sample on the server', () => {
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const last = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { OUTPUT0: number[] };
    const want = softmax([1, 2, 3, 4]);
    last.OUTPUT0.forEach((v, i) => expect(v).toBeCloseTo(want[i]!, 6));
    // each step said what it did: build, test (the response, times, memory), check, upload
    expect(run.stdout).toMatch(/built 1\/model\.wasm/);
    expect(run.stderr).toMatch(/engine v8: load [\d.]+ ms/);
    expect(run.stdout).toContain("passes the server's load-time checks");
    expect(run.stdout).toContain("loaded model 'softmax'");
  });

  /** Each error of the guide: how to make it happen on a copy of the guide's project. */
  const SCENARIOS: Record<string, { fixture: string; params?: Record<string, string>; command: 'test' | 'check' }> = {
    'Over memory': { fixture: 'alloc_execute', params: { memory_limit_bytes: '16777216' }, command: 'test' },
    'Over the deadline': { fixture: 'loop_execute', params: { execute_timeout_ms: '300' }, command: 'test' },
    'A forbidden import': { fixture: 'import_filesystem', command: 'check' },
    'A wrong output': { fixture: 'wrong_dtype', command: 'test' },
  };

  it('lists exactly the errors this test makes happen', () => {
    const headings = [...section('Errors you may meet').matchAll(/^### (.+)$/gm)].map((m) => m[1]);
    expect(headings).toEqual(Object.keys(SCENARIOS));
  });

  it.each(Object.entries(SCENARIOS))('%s: the text the guide quotes is what the kit prints', async (heading, s) => {
    const errors = section('Errors you may meet');
    const at = errors.indexOf(`### ${heading}\n`);
    const quoted = fenced(errors.slice(at), 'text');
    const dir = join(work.dir, heading.replace(/\W+/g, '-'));
    cpSync(join(work.dir, 'home', 'softmax'), dir, { recursive: true });
    copyFileSync(join(FIXTURES, 'build', `${s.fixture}.wasm`), join(dir, '1', 'model.wasm'));
    let config = readFileSync(join(dir, 'config.pbtxt'), 'utf8').replace(/parameters \{\s*key: "memory_limit_bytes"[^}]*\}\s*\}/, '');
    for (const [k, v] of Object.entries(s.params ?? {})) config += `parameters {\n  key: "${k}"\n  value: { string_value: "${v}" }\n}\n`;
    writeFileSync(join(dir, 'config.pbtxt'), config);
    const r = await runBackend(s.command, dir, ...(s.command === 'test' ? ['--input', join(dir, 'input.json')] : []));
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(pattern(quoted));
  });
});
