/**
 * Runs the Python compatibility scripts (test/compat/python/*.py) against a Warden server and
 * parses their machine-readable result line (see compat_common.py); starts that server.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { startServer } from '../../host/src/server.js';
import { ensureCompatVenv, PROJECT_ROOT } from './venv.js';

export const PY_DIR = join(PROJECT_ROOT, 'test', 'compat', 'python');
/** The default model repository `npm start` serves (Triton's example models live there). */
export const MODEL_REPOSITORY = join(PROJECT_ROOT, 'model_repository');
const RESULT_PREFIX = 'WARDEN_COMPAT_RESULT ';

export interface CaseResult {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ScriptResult {
  script: string;
  ok: boolean;
  cases: CaseResult[];
  observed: Record<string, unknown>;
}

export interface ScriptRun {
  exitCode: number | null;
  result: ScriptResult | undefined;
  stdout: string;
  stderr: string;
}

/** tritonclient wants `host:port`, not a URL. */
export function hostPort(httpUrl: string): string {
  return new URL(httpUrl).host;
}

/** Run one script with the venv's python; resolves after it exits (killed after timeoutMs). */
export function runScript(python: string, script: string, args: string[], timeoutMs = 120_000): Promise<ScriptRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(python, [join(PY_DIR, script), ...args], {
      cwd: PY_DIR,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      const line = stdout
        .split('\n')
        .reverse()
        .find((l) => l.startsWith(RESULT_PREFIX));
      let result: ScriptResult | undefined;
      if (line) result = JSON.parse(line.slice(RESULT_PREFIX.length)) as ScriptResult;
      resolvePromise({ exitCode, result, stdout, stderr });
    });
  });
}

/**
 * Asserts a script ran to its result line, that every expected case ran, and that all passed.
 * On failure the message lists each failed case with the script's detail (request, expected,
 * got), so a report can quote it directly.
 */
export function expectAllPassed(run: ScriptRun, expectedCases: readonly string[]): ScriptResult {
  if (!run.result) {
    throw new Error(`script printed no result line (exit ${run.exitCode})\nstdout:\n${run.stdout.slice(-4000)}\nstderr:\n${run.stderr.slice(-4000)}`);
  }
  const r = run.result;
  const names = r.cases.map((c) => c.name);
  expect(names, `cases run by ${r.script}`).toEqual(expect.arrayContaining([...expectedCases]));
  const failed = r.cases.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
  expect(failed, `failed cases in ${r.script}`).toEqual([]);
  expect(r.ok).toBe(true);
  expect(run.exitCode).toBe(0);
  return r;
}

export interface CompatServerOptions {
  modelControlMode: 'none' | 'poll' | 'explicit';
  loadModels?: string[];
  /** More repositories served beside the default one. */
  extraRepositories?: string[];
  /** Multi-tenant mode: the tenants file. */
  tenantsFile?: string;
  /** Serve gRPC too (ephemeral port; `CompatContext.grpcUrl`). */
  grpc?: boolean;
  /** `--allow-client-shm`. */
  allowClientShm?: boolean;
  /** `--cache-config local,size=N` (bytes). */
  responseCacheBytes?: number;
}

/** What a test in a compat suite uses: the venv's python and the server's `host:port`. */
export interface CompatContext {
  python: string;
  url: string;
  /** `host:port` of the gRPC endpoint (with `grpc: true`). */
  grpcUrl: string;
  /** Skips the calling test (with the reason) when PyPI was unreachable for the venv. */
  skipIfNoClient(ctx: TestSkip): void;
  /**
   * One compat script against this server: skips the calling test as {@link skipIfNoClient},
   * runs `script` with `--url <host:port>` then `args`, and asserts as {@link expectAllPassed}.
   * @returns the script's result (cases and observed values) for further assertions.
   */
  expectScript(ctx: TestSkip, script: string, args: readonly string[], expectedCases: readonly string[]): Promise<ScriptResult>;
}

/** The part of vitest's test context a compat test hands over: its `skip`. */
export interface TestSkip {
  skip: (note?: string) => never;
}

/**
 * Registers beforeAll / afterAll that prepare the venv and start Warden in-process on the
 * default model repository with ephemeral ports. The returned object is filled in by beforeAll.
 */
export function useCompatServer(opts: CompatServerOptions): CompatContext {
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let uploads: string | undefined;
  let skipReason: string | undefined;
  const c: CompatContext = {
    python: '',
    url: '',
    grpcUrl: '',
    skipIfNoClient(ctx) {
      if (skipReason !== undefined) ctx.skip(`tritonclient unavailable: ${skipReason}`);
    },
    async expectScript(ctx, script, args, expectedCases) {
      c.skipIfNoClient(ctx);
      return expectAllPassed(await runScript(c.python, script, ['--url', c.url, ...args]), expectedCases);
    },
  };
  beforeAll(async () => {
    const venv = await ensureCompatVenv();
    if (!venv.ok) {
      skipReason = venv.reason;
      process.stderr.write(`[compat] SKIPPING tritonclient suite: ${venv.reason}\n`);
      return;
    }
    c.python = venv.python;
    server = await startServer({
      modelRepositories: [MODEL_REPOSITORY, ...(opts.extraRepositories ?? [])],
      httpPort: 0,
      metricsPort: 0,
      modelControlMode: opts.modelControlMode,
      loadModels: opts.loadModels,
      tenantsFile: opts.tenantsFile,
      grpcPort: opts.grpc ? 0 : undefined,
      allowClientShm: opts.allowClientShm,
      responseCacheBytes: opts.responseCacheBytes,
      // Uploads go to a fresh directory: the default (inside model_repository/) is durable and
      // would carry tenants' models from one run into the next.
      uploadDirectory: (uploads = mkdtempSync(join(tmpdir(), 'warden-compat-uploads-'))),
      logLevel: 'silent',
    });
    c.url = hostPort(server.httpUrl);
    c.grpcUrl = server.grpcUrl ?? '';
  });
  afterAll(async () => {
    await server?.stop();
    if (uploads) rmSync(uploads, { recursive: true, force: true });
  });
  return c;
}
