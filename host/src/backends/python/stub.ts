/**
 * One Python stub process (`host/python/warden_python_stub.py`, spec §7): spawned with a Unix
 * socket pair on fd 3 for control messages (`ipc.ts`) and a pair of shared-memory arenas
 * (`shm.ts`) for tensors; the child's stdout / stderr go into the model's log line by line.
 * {@link StubProcess.start} resolves when the stub answered its `init` (`ready`,
 * `auto_completed`), and rejects with the model's own error text (`init_failed`), on exit, or
 * after `startTimeoutMs`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { internal } from '../../contract/errors.js';
import * as errors from './python.errors.js';
import { encodeFrame, FrameDecoder, type InlineTail, type Message } from './ipc.js';
import { ArenaPair } from './shm.js';

/** `host/python/`: the stub and Warden's `triton_python_backend_utils` (from host/src or dist/host/src). */
export const PYTHON_DIR = (() => {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const up = here.includes('/dist/') ? ['..', '..', '..', '..', '..', 'host', 'python'] : ['..', '..', '..', 'python'];
  return join(here, ...up);
})();
export const STUB_FILE = join(PYTHON_DIR, 'warden_python_stub.py');

/** How long freed out-arena regions wait for a message to ride on (ms). */
export const FREE_FLUSH_MS = 2;

/** Longest stdout / stderr line kept in the log (bytes); longer lines are cut. */
const MAX_LOG_LINE = 8192;

export interface StubStartOptions {
  /** Interpreter to run the stub with. */
  python: string;
  /** Extra environment (PYTHONPATH is set here). */
  env?: NodeJS.ProcessEnv;
  /** Names the arena files and log lines (`<model>_<instance>`). */
  label: string;
  /** The `init` message without the arena paths. */
  init: Record<string, unknown>;
  logger: Logger;
  /** How long the stub may take to answer `init` (ms). */
  startTimeoutMs: number;
  /** Bound of each arena in bytes. */
  arenaLimitBytes?: number;
}

/** Why a stub process ended: what its in-flight requests and the log are told. */
export function exitReason(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return `was killed by signal ${signal}${signal === 'SIGKILL' ? ' (out of memory, or stopped by Warden)' : ''}`;
  return `exited with code ${code}`;
}

export class StubProcess {
  readonly arenas: ArenaPair;
  /** Messages after the answer to `init`. */
  onMessage: (msg: Message) => void = () => {};
  /** Called once when the process ends (after start succeeded). */
  onExit: (reason: string) => void = () => {};
  private exited = false;
  /** Messages the stub sent before its answer to `init` (logs, metrics from `initialize`). */
  private early: Message[] = [];
  private readonly socket: Socket;

  private constructor(
    private readonly child: ChildProcess,
    arenas: ArenaPair,
  ) {
    this.arenas = arenas;
    this.socket = child.stdio[3] as Socket;
  }

  get alive(): boolean {
    return !this.exited;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Out-arena regions read and not yet given back (sent with the next message, or after {@link FREE_FLUSH_MS}). */
  private pendingFree: [number, number][] = [];
  private freeTimer?: NodeJS.Timeout;

  /**
   * Send a control message (dropped once the process is gone), with `tail`'s inline tensors.
   * Regions queued with {@link freeOut} ride along in its `free` field.
   */
  send(msg: Record<string, unknown>, tail?: InlineTail): void {
    if (this.exited) return;
    if (this.pendingFree.length) {
      msg = { ...msg, free: this.pendingFree };
      this.pendingFree = [];
      // the flush timer stays armed (cheaper than re-arming it per response); it finds nothing to send
    }
    this.socket.write(encodeFrame(msg, tail));
  }

  /** Give out-arena regions back to the stub, with the next message (saves a frame per response). */
  freeOut(regions: readonly { offset: number; size: number }[]): void {
    if (this.exited || regions.length === 0) return;
    for (const r of regions) this.pendingFree.push([r.offset, r.size]);
    this.freeTimer ??= setTimeout(() => {
      this.freeTimer = undefined;
      if (this.pendingFree.length) this.send({ op: 'free' });
    }, FREE_FLUSH_MS).unref();
  }

  /** Hand the messages sent during start-up to {@link onMessage} (call after setting it). */
  deliverEarly(): void {
    const e = this.early;
    this.early = [];
    for (const m of e) this.onMessage(m);
  }

  /** Kill the process (SIGKILL); its exit is reported through {@link onExit}. */
  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL');
  }

  /**
   * Spawn a stub and send it `init`.
   * @returns the process and the stub's answer (`ready` / `auto_completed` message)
   * @throws TritonError INTERNAL with the model's error (`init_failed`), the exit reason and the
   *   last stderr lines, or the timeout
   */
  static async start(opts: StubStartOptions): Promise<{ stub: StubProcess; answer: Record<string, unknown> }> {
    if (!existsSync(STUB_FILE)) throw errors.stubMissing(STUB_FILE);
    const arenas = new ArenaPair(opts.label, opts.arenaLimitBytes);
    let child: ChildProcess;
    try {
      child = spawn(opts.python, ['-u', '-B', STUB_FILE], {
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
        env: {
          ...process.env,
          ...opts.env,
          PYTHONPATH: [PYTHON_DIR, opts.env?.PYTHONPATH ?? process.env.PYTHONPATH].filter(Boolean).join(':'),
          PYTHONDONTWRITEBYTECODE: '1',
        },
      });
    } catch (e) {
      arenas.close();
      throw errors.interpreterStart(opts.python, (e as Error).message);
    }
    const stub = new StubProcess(child, arenas);
    const stderrTail: string[] = [];
    const lines = (stream: NodeJS.ReadableStream | null, level: 'info' | 'warn') => {
      let pending = '';
      stream?.on('data', (d: Buffer) => {
        pending += d.toString('utf8');
        let i: number;
        while ((i = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, Math.min(i, MAX_LOG_LINE));
          pending = pending.slice(i + 1);
          if (level === 'warn') {
            stderrTail.push(line);
            if (stderrTail.length > 20) stderrTail.shift();
          }
          opts.logger[level]({ stub: opts.label, stream: level === 'warn' ? 'stderr' : 'stdout' }, line);
        }
        if (pending.length > MAX_LOG_LINE) pending = pending.slice(0, MAX_LOG_LINE);
      });
    };
    lines(child.stdout, 'info');
    lines(child.stderr, 'warn');

    return new Promise((resolve, reject) => {
      let started = false;
      const decoder = new FrameDecoder();
      const fail = (why: string) => {
        if (started) return;
        started = true;
        clearTimeout(timer);
        stub.kill();
        reject(internal(why));
      };
      const timer = setTimeout(() => fail(`the Python stub did not start within ${opts.startTimeoutMs} ms`), opts.startTimeoutMs);
      child.on('error', (e) => {
        if (child.pid === undefined && !stub.exited) {
          // Never started (EACCES, ENOENT): no 'exit' follows, so its arenas are removed here.
          stub.exited = true;
          arenas.close();
        }
        fail(`failed to start the Python interpreter '${opts.python}': ${e.message}`);
      });
      child.on('exit', (code, signal) => {
        stub.exited = true;
        clearTimeout(stub.freeTimer);
        arenas.close();
        if (!started) {
          const tail = stderrTail.slice(-5).join('\n');
          fail(`the Python stub ${exitReason(code, signal)} before it was ready${tail ? `: ${tail}` : ''}`);
        } else stub.onExit(exitReason(code, signal));
      });
      stub.socket.on('error', () => {});
      stub.socket.on('data', (chunk: Buffer) => {
        let msgs: Message[];
        try {
          msgs = decoder.push(chunk);
        } catch (e) {
          opts.logger.error({ stub: opts.label, err: (e as Error).message }, 'malformed message from the Python stub; stopping it');
          stub.kill();
          return;
        }
        for (const m of msgs) {
          if (!started) {
            if (m.op !== 'init_failed' && m.op !== 'ready' && m.op !== 'auto_completed') {
              if (m.op === 'log') opts.logger.info({ stub: opts.label }, String(m.message).slice(0, 65536));
              else if (stub.early.length < 10_000) stub.early.push(m);
              continue;
            }
            if (m.op === 'init_failed') {
              opts.logger.error({ stub: opts.label }, String(m.trace ?? m.error));
              fail(String(m.error));
              continue;
            }
            started = true;
            clearTimeout(timer);
            resolve({ stub, answer: m });
            continue;
          }
          try {
            stub.onMessage(m);
          } catch (e) {
            opts.logger.error({ stub: opts.label, err: e }, 'failed to handle a message from the Python stub');
          }
        }
      });
      try {
        stub.send({ ...opts.init, in_path: arenas.inPath, out_path: arenas.outPath, arena_limit: arenas.limitBytes });
      } catch (e) {
        fail(`failed to send init to the Python stub: ${(e as Error).message}`);
      }
    });
  }
}
