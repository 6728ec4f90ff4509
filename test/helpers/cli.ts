/**
 * The `warden` command line (`host/src/cli.ts` under tsx) as a child process, for the tests of
 * what only the process does: flags, signals, exit codes, where the log goes.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { PROJECT_ROOT } from './repo.js';
import { until } from './wait.js';

/** ModelMesh's tritonserver launch line (KServe modelmesh-serving, ServingRuntime triton-2.x), without its repository. */
export const MODELMESH_FLAGS: readonly string[] = [
  '--model-control-mode=explicit',
  '--strict-model-config=false',
  '--strict-readiness=false',
  '--allow-http=true',
  '--allow-sagemaker=false',
  '--grpc-keepalive-time=60000',
  '--grpc-keepalive-timeout=10000',
  '--grpc-keepalive-permit-without-calls=True',
  '--grpc-http2-max-pings-without-data=0',
  '--grpc-http2-min-recv-ping-interval-without-data=10000',
  '--grpc-http2-max-ping-strikes=0',
];

/** A running CLI process and what it wrote so far. */
export interface CliProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Its stdout so far. */
  readonly stdout: string;
  /** Its stderr so far. */
  readonly stderr: string;
  /** stdout and stderr so far, in the order they arrived. */
  readonly output: string;
  /** Its exit code and the wall time (ms, `Date.now()`) it exited at. */
  exited: Promise<{ code: number | null; at: number }>;
  /**
   * Resolves once the log line "Warden started" was written (to stdout or stderr; with `inFile`, to
   * that log file instead).
   * @throws Error after `withinMs` (default 30 s) without it, with the process's latest output.
   */
  started(inFile?: () => string, withinMs?: number): Promise<void>;
}

/** Start `warden <args>` in the project root; stdout and stderr are piped and collected. */
export function spawnCli(args: readonly string[]): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'host/src/cli.ts'), ...args], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
    output += d;
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
    output += d;
  });
  const exited = new Promise<{ code: number | null; at: number }>((r) => child.on('exit', (code) => r({ code, at: Date.now() })));
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    get output() {
      return output;
    },
    exited,
    started: (inFile, withinMs = 30_000) =>
      until(() => (inFile ? inFile() : output).includes('Warden started'), { within: withinMs, every: 100, what: 'Warden started' }).catch((e: Error) => {
        throw new Error(`${e.message}; its latest output:\n${(inFile ? inFile() : output).slice(-2000)}`);
      }),
  };
}
