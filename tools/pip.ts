/**
 * Process and package-index helpers shared by the tests (test/compat/venv.ts) and the benchmarks
 * (tools/triton-wheel.ts, used by bench/vs-triton.ts): a quiet subprocess runner, a probe of the
 * package index pip uses, and a cross-process lock. This folder is compiled by tsconfig.json
 * (like host/src and bench) and imported from source by the tests; it never imports test/.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/** The project root: the nearest directory above this file holding package.json (works from source and from dist/). */
export const PROJECT_ROOT = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();

/** Exit code (null when killed) and everything the process wrote to stdout and stderr. */
export interface Exec {
  code: number | null;
  out: string;
}

/** Run `cmd args` in the project root with pip's quiet settings, killed after `timeoutMs`; never rejects. */
export function exec(cmd: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<Exec> {
  return new Promise((resolvePromise) => {
    const child = spawn(cmd, args, {
      cwd: PROJECT_ROOT,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolvePromise({ code: -1, out: out + String(e) });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, out });
    });
  });
}

/** True if the package index pip uses answers at all (any HTTP status counts as reachable). */
export async function indexReachable(env: NodeJS.ProcessEnv, project = 'tritonclient'): Promise<{ reachable: boolean; url: string; error?: string }> {
  const base = (env.PIP_INDEX_URL ?? process.env.PIP_INDEX_URL ?? 'https://pypi.org/simple').replace(/\/+$/, '');
  const url = `${base}/${project}/`;
  try {
    const res = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(15_000) });
    await res.arrayBuffer().catch(() => undefined);
    return { reachable: true, url };
  } catch (e) {
    const cause = (e as { cause?: unknown }).cause;
    return { reachable: false, url, error: String(cause ?? e) };
  }
}

/**
 * Run `fn` holding a cross-process lock keyed by `venvDir` (any path: one lock per path): a
 * directory in the system temp folder, taken over when older than 10 minutes.
 * @throws Error when the lock is not free within 10 minutes
 */
export async function withLock<T>(venvDir: string, fn: () => Promise<T>): Promise<T> {
  const key = createHash('sha256').update(venvDir).digest('hex').slice(0, 12);
  const lock = join(tmpdir(), `warden-compat-venv-${key}.lock`);
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > 10 * 60_000) await rm(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for the venv lock ${lock}`, { cause: e });
      await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}
