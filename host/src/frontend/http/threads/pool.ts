/**
 * Front-end threads on the main thread's side (`--http-threads=N`): N worker
 * threads (worker.ts) each listen on the public host:port through their own SO_REUSEPORT socket
 * (the main thread's listener is one more of the group), claim plain `/infer` requests and send
 * them over a SharedArrayBuffer ring (ring.ts); this side serves each through the fast path's
 * data-plane entry (`serve`, fast-path.ts#serveClaimed) and sends the answer back over the other
 * ring (or the thread's port when it does not fit a slot). Everything else reaches the main
 * thread's Fastify app through an internal HTTP listener on a unix socket in a private 0700
 * directory, where the client address header the threads add is trusted (client-address.ts).
 * A thread that dies is logged and started again; `drain` stops them all gracefully.
 */
import type { RequestListener } from 'node:http';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { CancellationSignal } from '../../../contract/types.js';
import { workerEntry } from '../../../threads/worker-entry.js';
import { ConnectionBudget } from '../connection-budget.js';
import { ManualSignal } from '../../cancellation.js';
import type { HttpAnswer } from '../routing.js';
import {
  type FromThread,
  type FrontendThreadData,
  type RingRequest,
  type ToThread,
  answerBytes,
  readRequest,
  writeAnswerMessage,
  writeFallback,
} from './messages.js';
import { InternalListener } from '../internal-listener.js';
import { MAX_HTTP_THREADS } from './limits.js';
import { RingReader, RingWriter, closeRing, ringMemory } from './ring.js';

export { MAX_HTTP_THREADS };

export interface FrontendThreadsOptions {
  /** How many threads, 1..{@link MAX_HTTP_THREADS}. */
  count: number;
  /** The public listener's host and (bound) port. */
  host: string;
  port: number;
  /** Makes an SO_REUSEPORT listening socket (the native addon's reusePortListen). */
  listen: (host: string, port: number) => number;
  /** Closes a socket `listen` made that no thread took. */
  closeFd: (fd: number) => void;
  /**
   * Serve one claimed request (fast-path.ts#serveClaimed after authentication and admission).
   * @returns the answer, or undefined when the main thread's Fastify app must answer it instead
   *   (the thread then proxies it with its body); never rejects
   */
  serve: (r: RingRequest, signal: CancellationSignal) => Promise<HttpAnswer | undefined>;
  /** The request listener of the main thread's public server (fast path ahead of Fastify). */
  listener: RequestListener;
  maxInputSize: number;
  /** Claim plain `/infer` requests (the fast path is on); false: the threads proxy everything. */
  claim: boolean;
  /** Claim only requests that hold this header and value (`--http-restricted-api` inference; http/restricted.ts). */
  claimRestriction?: FrontendThreadData['claimRestriction'];
  server: FrontendThreadData['server'];
  /** `--http-max-connections` across the main listener and the threads (connection-budget.ts). */
  connections: ConnectionBudget;
  logger: Logger;
}

interface Thread {
  index: number;
  worker: Worker;
  toMain: SharedArrayBuffer;
  toThread: SharedArrayBuffer;
  writer: RingWriter;
  reader: RingReader;
  inflight: Map<number, ManualSignal>;
  dead: boolean;
  drained?: () => void;
}

/** The running front-end threads and the internal listener. */
export class FrontendThreads {
  /** How many threads were started again after dying. */
  restarts = 0;
  /** Requests each thread handed over its ring (by thread index), for tests and diagnostics. */
  readonly served: number[] = [];
  private readonly threads: (Thread | undefined)[] = [];
  private stopping = false;
  private constructor(
    private readonly opts: FrontendThreadsOptions,
    private readonly internal: InternalListener,
  ) {}

  /** Requests that reached the internal listener (proxied by a thread). */
  get proxied(): number {
    return this.internal.requests;
  }

  /**
   * Start the internal listener, then the threads; resolves once every thread listens.
   * @throws Error when a thread cannot start or listen (everything started is stopped again)
   */
  static async start(opts: FrontendThreadsOptions): Promise<FrontendThreads> {
    if (!Number.isInteger(opts.count) || opts.count < 1 || opts.count > MAX_HTTP_THREADS)
      throw new RangeError(`front-end threads: count must be 1..${MAX_HTTP_THREADS}`);
    const internal = await InternalListener.start(opts.listener, opts.server, 'main.sock');
    const pool = new FrontendThreads(opts, internal);
    try {
      for (let i = 0; i < opts.count; i++) await pool.startThread(i);
    } catch (e) {
      await pool.close();
      throw e;
    }
    return pool;
  }

  /** The internal listener's unix socket (its directory is removed on close). */
  get internalSocket(): string {
    return this.internal.socketPath;
  }

  /** The threads now running (for tests). */
  get running(): number {
    return this.threads.filter((t) => t && !t.dead).length;
  }

  /** Test hook: thread `index` throws from its event loop (it is then restarted). */
  crash(index: number): void {
    this.threads[index]?.worker.postMessage({ t: 'crash' } satisfies ToThread);
  }

  private async startThread(index: number): Promise<void> {
    const fd = this.opts.listen(this.opts.host, this.opts.port);
    const toMain = ringMemory();
    const toThread = ringMemory();
    // a thread started again: the connections its predecessor counted died with it
    this.opts.connections.reset(ConnectionBudget.threadSlot(index));
    const data: FrontendThreadData = {
      index,
      fd,
      toMain,
      toThread,
      socketPath: this.internal.socketPath,
      maxInputSize: this.opts.maxInputSize,
      claim: this.opts.claim,
      claimRestriction: this.opts.claimRestriction,
      connections: this.opts.connections.memory,
      server: this.opts.server,
    };
    const entry = workerEntry(import.meta.url, 'worker');
    let worker: Worker;
    try {
      worker = new Worker(entry.script, { eval: entry.eval, workerData: data, name: `warden-http-${index}` });
    } catch (e) {
      this.opts.closeFd(fd);
      throw e;
    }
    const t: Thread = { index, worker, toMain, toThread, writer: new RingWriter(toThread), reader: new RingReader(toMain), inflight: new Map(), dead: false };
    this.threads[index] = t;
    let listening = false;
    const started = new Promise<void>((resolve, reject) => {
      worker.on('message', (m: FromThread) => {
        if (m.t === 'listening') {
          listening = true;
          resolve();
        } else if (m.t === 'cancel') t.inflight.get(m.id)?.abort();
        else if (m.t === 'drained') t.drained?.();
      });
      worker.on('error', (e) => {
        this.opts.logger.error({ err: e, thread: index }, 'HTTP front-end thread failed');
        if (!listening) reject(e);
      });
      worker.on('exit', (code) => {
        t.dead = true;
        t.reader.close();
        closeRing(toThread);
        for (const s of t.inflight.values()) s.abort();
        t.inflight.clear();
        t.drained?.();
        if (!listening) {
          this.opts.closeFd(fd);
          return reject(new Error(`HTTP front-end thread ${index} exited (code ${code}) before listening`));
        }
        if (this.stopping || this.threads[index] !== t) return;
        this.opts.logger.error({ thread: index, code }, 'HTTP front-end thread died; its requests in flight failed; starting it again');
        this.restarts++;
        setTimeout(() => {
          if (this.stopping) return;
          this.startThread(index).catch((e) => this.opts.logger.error({ err: e, thread: index }, 'HTTP front-end thread could not be started again'));
        }, 50);
      });
    });
    void t.reader.start(
      (m) => this.onRequest(t, m),
      (e) => this.opts.logger.error({ err: e, thread: index }, 'malformed front-end ring message'),
    );
    await started;
  }

  private onRequest(t: Thread, m: Buffer): void {
    const r = readRequest(m);
    this.served[t.index] = (this.served[t.index] ?? 0) + 1;
    const signal = new ManualSignal();
    t.inflight.set(r.id, signal);
    void this.opts
      .serve(r, signal)
      .catch((e: unknown) => {
        // `serve` answers every error itself; should one escape, Fastify answers the request.
        this.opts.logger.error({ err: e, thread: t.index }, 'front-end ring request failed');
        return undefined;
      })
      .then((a) => {
        t.inflight.delete(r.id);
        if (!t.dead) this.answer(t, r.id, a);
      });
  }

  private answer(t: Thread, id: number, a: HttpAnswer | undefined): void {
    if (a === undefined) {
      if (!t.writer.write(5, (b) => writeFallback(b, id))) t.worker.postMessage({ t: 'fallback', id } satisfies ToThread);
      return;
    }
    if (t.writer.write(answerBytes(a), (b) => writeAnswerMessage(b, id, a))) return;
    // Longer than a slot (or the ring is full): the port carries it, copied once.
    t.worker.postMessage({ t: 'answer', id, status: a.status, headers: a.headers, body: a.body } satisfies ToThread);
  }

  /**
   * Stop the threads gracefully: each stops accepting, answers what it has in flight (this side
   * keeps serving its ring and the internal listener), closes its connections and exits.
   */
  async drain(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.threads.map(async (t) => {
        if (!t || t.dead) return;
        await new Promise<void>((resolve) => {
          t.drained = resolve;
          t.worker.postMessage({ t: 'drain' } satisfies ToThread);
        });
        await t.worker.terminate();
      }),
    );
  }

  /** After {@link drain} and the Fastify app's close: stop every thread still running, close the internal listener, remove its directory. */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.threads.map((t) => t?.worker.terminate()));
    await this.internal.close();
  }
}
