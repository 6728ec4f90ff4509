/**
 * Shared pieces of the Python backend tests: the interpreter (the project's `.venv`, made by
 * `npm install` / the compatibility suite's `ensureCompatVenv`, with pinned numpy), a temporary
 * repository of Python models, and an in-process inference helper.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { ensureCompatVenv } from '../../compat/venv.js';
import { inferAndCollect } from '../../../host/src/dataplane/inference.js';
import { emptyRequestInit } from '../../../host/src/dataplane/request-parameters.js';
import { SINGLE_USER, type InferenceRequestInit, type Tensor } from '../../../host/src/contract/types.js';
import type { RunningServer, ServerOptions } from '../../../host/src/server.js';
import type { TempRepo } from '../../helpers/repo.js';
import { startTestServer } from '../../helpers/servers.js';

/**
 * Make sure `.venv` has numpy. Returns a reason to skip only when PyPI is unreachable and no
 * environment exists (ensureCompatVenv throws on any other failure).
 */
export async function pythonEnvironment(): Promise<string | undefined> {
  const v = await ensureCompatVenv();
  return v.ok ? undefined : v.reason;
}

/** Write `<name>/config.pbtxt` and `<name>/1/model.py`. */
export function pythonModel(repo: TempRepo, name: string, config: string, modelPy: string): void {
  repo.write(`${name}/config.pbtxt`, `name: "${name}"\nbackend: "python"\n${config}`);
  repo.write(`${name}/1/model.py`, modelPy);
}

export { tensor } from '../../helpers/backend-request.js';

/** The Python server of a describe block: its repository, Warden on it, and Warden's log lines (JSON). */
export interface PythonServer {
  readonly repo: TempRepo;
  readonly s: RunningServer;
  readonly log: string[];
}

/** Options of {@link pythonServer}: the server's, and what else it needs. */
export type PythonServerOptions = Partial<ServerOptions> & {
  /** Level of the captured log (default `info`; `silent` captures nothing). */
  logLevel?: string;
  /** `false`: no capture, Warden logs to stdout at `logLevel` (for runs read by a person). */
  captureLog?: boolean;
  /** Repositories served before the built one (paths). */
  before?: string[];
  /** The `beforeAll` hook's limit (ms; vitest's default when absent). */
  timeoutMs?: number;
};

/**
 * One Warden for the enclosing describe block: `beforeAll` builds the repository (`build`) and
 * starts Warden on it with every model loaded, `exitOnError`, a compile cache inside the
 * repository and a logger writing each line to `log`, `opts` over these; `afterAll` stops it
 * and removes the repository.
 */
export function pythonServer(build: () => TempRepo, opts: PythonServerOptions = {}): PythonServer {
  const { logLevel = 'info', captureLog = true, before = [], timeoutMs, ...serverOpts } = opts;
  const log: string[] = [];
  let repo: TempRepo | undefined;
  let s: RunningServer | undefined;
  beforeAll(async () => {
    repo = build();
    const logging = captureLog
      ? { logger: pino({ level: logLevel }, { write: (line: string) => void log.push(line) }) }
      : { logLevel: logLevel as ServerOptions['logLevel'] };
    s = await startTestServer([...before, repo], { loadModels: ['*'], ...logging, exitOnError: true, cacheDir: join(repo.path, '.cache'), ...serverOpts });
  }, timeoutMs);
  afterAll(async () => {
    await s?.stop();
    repo?.cleanup();
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('the Python server is not started (beforeAll has not run)');
    return v;
  };
  return {
    log,
    get repo() {
      return started(repo);
    },
    get s() {
      return started(s);
    },
  };
}

/** Infer in-process (the data plane) and collect every response. */
export function infer(s: RunningServer, model: string, inputs: Tensor[], extra: Partial<InferenceRequestInit> = {}) {
  return inferAndCollect(s.api, SINGLE_USER, model, -1, { ...emptyRequestInit(model, -1), inputs, ...extra });
}

/** Elements of an output as numbers (little-endian). */
export function f32(t: Tensor | undefined): number[] {
  if (!t) throw new Error('missing output');
  return [...new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength))];
}
export function i32(t: Tensor | undefined): number[] {
  if (!t) throw new Error('missing output');
  return [...new Int32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength))];
}
