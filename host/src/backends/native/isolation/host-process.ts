/**
 * One native backend-host process, parent side: spawn (the same Node, the same addon and
 * libtritonserver.so), control calls over Node's IPC (load, instances, finalize, log lines), the
 * doorbell socket of the request path (ring.ts: fd 4 in the child), and exit detection.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { TritonError, type ErrorCode } from '../../../contract/errors.js';
import * as errors from '../native.errors.js';
import { nativeAddon } from '../../../platform/addon.js';
import type { FromChild, ToChild, ToChildServer } from './protocol.js';

/** The child's end of the doorbell socket (a socketpair: one byte = "records waiting in a ring"). */
export const DOORBELL_FD = 4;
const ONE = Buffer.from([1]);

/** Distributes a call's `Omit<ToChild, 'rid'>` over the union. */
type Call = ToChild extends infer T ? (T extends ToChild ? Omit<T, 'rid'> : never) : never;

/** The child entry: compiled `child.js` beside this file, else `child.ts` through tsx (tests). */
function childEntry(): { path: string; execArgv: string[] } {
  const js = fileURLToPath(new URL('./child.js', import.meta.url));
  if (existsSync(js)) return { path: js, execArgv: [] };
  const tsx = createRequire(import.meta.url).resolve('tsx');
  return { path: fileURLToPath(new URL('./child.ts', import.meta.url)), execArgv: ['--import', pathToFileURL(tsx).href] };
}

/** How a backend-host process ended: `signal` (e.g. SIGSEGV) or exit `code`. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class BackendHostProcess {
  private readonly child: ChildProcess;
  private nextRid = 1;
  private readonly calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: TritonError) => void }>();
  private exited?: ProcessExit;
  private readonly doorbell: Socket;
  /** The child's ring-reader thread (0 = unknown: no placement). */
  private readerTid = 0;
  /** Resolves when the process is gone. */
  readonly exit: Promise<ProcessExit>;

  /**
   * @param onDoorbell the child rang: records wait in its ring to Warden
   * @param logger where the child's log lines go
   * @param onServerCall the backend's in-process inference calls (BLS)
   */
  constructor(
    onDoorbell: () => void,
    private readonly logger: Logger,
    private readonly onServerCall: (m: Extract<FromChild, { t: 'server' }>) => void = () => undefined,
  ) {
    const entry = childEntry();
    this.child = fork(entry.path, [], {
      execArgv: entry.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'],
    });
    this.doorbell = this.child.stdio[DOORBELL_FD] as Socket;
    this.doorbell.on('data', () => {
      try {
        onDoorbell();
      } catch (e) {
        // What cannot be read (out of the ring, inconsistent) ends the process: never the server.
        this.logger.error({ err: e, pid: this.child.pid }, 'malformed record from the backend host process: killing it');
        this.child.kill('SIGKILL');
      }
    });
    this.doorbell.on('error', () => undefined); // the process died: its exit says why
    this.child.on('message', (m: FromChild) => {
      try {
        this.onMessage(m);
      } catch (e) {
        // A process that sends what cannot be read (e.g. a slot outside its ring) is not trusted
        // any further: it is killed (and restarted), never allowed to take the server down.
        this.logger.error({ err: e, pid: this.child.pid }, 'malformed message from the backend host process: killing it');
        this.child.kill('SIGKILL');
      }
    });
    this.exit = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exited = { code, signal };
        const err = errors.hostExited(describeExit(this.exited));
        for (const c of this.calls.values()) c.reject(err);
        this.calls.clear();
        resolve(this.exited);
      });
    });
    this.child.on('error', (e) => {
      this.logger.error({ err: e }, 'backend host process error');
      // Never started (e.g. EAGAIN): no 'exit' will come, so it ends here for every waiter.
      if (this.child.pid === undefined) this.child.emit('exit', null, null);
    });
  }

  /** The child's pid (for logs). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Send a call; resolves with the child's reply value. @throws TritonError from the child, or INTERNAL if it died */
  call<T = unknown>(m: Call): Promise<T> {
    if (this.exited) return Promise.reject(errors.hostExited(describeExit(this.exited)));
    const rid = this.nextRid++;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(rid, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ ...m, rid } as ToChild, (e) => {
        if (e && this.calls.delete(rid)) reject(errors.hostUnreachable(e.message));
      });
    });
  }

  /** A message that is not a call (no reply): in-process inference answers and responses. */
  notify(m: ToChildServer): void {
    if (this.exited || !this.child.connected) return;
    this.child.send(m, (e) => e && this.logger.debug({ err: e }, 'backend host process gone before a message reached it'));
  }

  /**
   * Record the child's ring-reader thread id (its `load` reply), once checked to be a thread of
   * this child: only then will {@link ring} place it.
   */
  setReaderTid(tid: unknown): void {
    const pid = this.child.pid;
    if (pid !== undefined && typeof tid === 'number' && Number.isInteger(tid) && tid > 0 && existsSync(`/proc/${pid}/task/${tid}`)) this.readerTid = tid;
  }

  /**
   * Tell the child that records wait in its ring from Warden. With `place`, its sleeping reader is
   * first moved onto this thread's CPU (native/src/core/wake.cc: a cross-vCPU wake-up costs ~40 µs
   * on VMs whose idle vCPUs halt); the reader takes its whole CPU mask back as it wakes.
   */
  ring(place = false): void {
    if (this.exited) return;
    if (place && this.readerTid !== 0) nativeAddon().wakeAffinityPlace(this.readerTid);
    this.doorbell.write(ONE);
  }

  /** SIGKILL (a stuck or unwanted process); resolves when it is gone. */
  kill(): Promise<ProcessExit> {
    if (!this.exited) this.child.kill('SIGKILL');
    return this.exit;
  }

  /** Let the process end by itself (it exits when the channel closes); SIGKILL after `graceMs`. */
  async close(graceMs: number): Promise<ProcessExit> {
    if (this.exited) return this.exited;
    if (this.child.connected) this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const e = await this.exit;
    clearTimeout(timer);
    return e;
  }

  private onMessage(m: FromChild): void {
    switch (m.t) {
      case 'reply': {
        const c = this.calls.get(m.rid);
        if (!c) return;
        this.calls.delete(m.rid);
        if (m.error) c.reject(new TritonError(m.error.code as ErrorCode, m.error.message));
        else c.resolve(m.value);
        return;
      }
      case 'log':
        this.logger[m.level]({ ...m.obj, pid: this.child.pid }, m.msg);
        return;
      case 'server':
        this.onServerCall(m);
        return;
    }
  }
}

/** "was killed by signal SIGSEGV" / "exited with code 3". */
export function describeExit(e: ProcessExit): string {
  return e.signal ? `was killed by signal ${e.signal}` : `exited with code ${e.code}`;
}
