/**
 * Supervision of what a backend runs out of its own thread of control — a Python stub process
 * (python/instance.ts), a native backend-host process (native/isolation/isolated.ts), a V8
 * sandbox worker (wasm/v8/instance.ts), an ONNX Runtime session worker (onnxruntime/index.ts):
 * start it, know whether it serves (health), fail its requests in flight when it is gone, and
 * start another one under one back-off policy. What is supervised is the "child"; the backend
 * owns its requests, texts and logs, the supervisor the states and timers.
 *
 * Back-off ({@link RESTART_BACKOFF}, as Kubernetes restarts a crashing container: at once, then
 * exponentially, reset after a stable run): the first restart after a child dies is at once;
 * while children keep dying before they served {@link BackoffPolicy.stableMs}, or restarts keep
 * failing, each further attempt waits twice as long as the last, from `initialMs` up to `maxMs`.
 * A child that served `stableMs` resets the count. A child its owner replaces after a fault
 * contained to one request (a wasm trap or execute deadline: DESIGN "Sandbox rules", respawn
 * after a trap, never re-enter) is replaced at once and counts nothing: a request's fault is not
 * a crash loop.
 *
 * States: `idle` (not started), `up` (a child serves), `restarting` (the child is gone; the next
 * one is waited for or starting), `closed` (no restart any more).
 */

/** When restarts happen (see the module comment). */
export interface BackoffPolicy {
  /** Delay before the second restart in a row, ms; doubled for each further one. */
  readonly initialMs: number;
  /** The longest delay, ms. */
  readonly maxMs: number;
  /** A child that served this long before it died resets the back-off, ms. */
  readonly stableMs: number;
}

/** The one back-off policy of every supervised child: at once, then 100 ms doubling up to 5 s; reset after 10 s of service. */
export const RESTART_BACKOFF: BackoffPolicy = Object.freeze({ initialMs: 100, maxMs: 5_000, stableMs: 10_000 });

/**
 * The delay before restart attempt `n` in a row (0 = the first after a child that ran stably), ms:
 * 0, then `initialMs · 2^(n-1)`, at most `maxMs`.
 */
export function restartDelayMs(policy: BackoffPolicy, n: number): number {
  if (n <= 0) return 0;
  return Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(n - 1, 30));
}

export type SupervisorState = 'idle' | 'up' | 'restarting' | 'closed';

/** `R`: what a death is reported with (a text, or the error the child's requests fail with). */
export interface SupervisorOptions<C, R = string> {
  /** Start one child; resolves once it serves, rejects when it cannot start. */
  start(): Promise<C>;
  /** Stop a child that came up after {@link Supervisor.close} (it never serves). */
  stop(child: C): void;
  /**
   * Fail the requests in flight in a child that is gone, with `reason` (called once per child,
   * before its successor is started; also after close, when a child ends at unload).
   */
  failInFlight(child: C, reason: R): void;
  /** The health {@link Supervisor.reason} while a dead child's successor is awaited (default: the reason's text). */
  describe?(reason: R): string;
  /** Default {@link RESTART_BACKOFF}. */
  policy?: BackoffPolicy;
  /** A restarted child serves (for the backend's log line). */
  onRestarted?(child: C): void;
  /** A restart failed (not after close); the next attempt follows in `retryMs`. */
  onRestartFailed?(error: unknown, retryMs: number): void;
  /** The clock of stable runs, ms (default `Date.now`). */
  now?: () => number;
}

/** One supervised child at a time (see the module comment). */
export class Supervisor<C, R = string> {
  private current: C | undefined;
  private st: SupervisorState = 'idle';
  private why: string | undefined;
  /** The error of the last failed restart attempt, until a child serves. */
  private lastError: unknown;
  /** Restarts in a row since the last stable child (the back-off exponent). */
  private failures = 0;
  private upAt = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Settles with the restart attempt under way (or waited for). */
  private next: Promise<C> | undefined;
  /** Settles once a child serves again (through failed attempts), or rejects at close. */
  private up: { promise: Promise<C>; resolve: (c: C) => void; reject: (e: Error) => void } | undefined;
  private readonly policy: BackoffPolicy;
  private readonly now: () => number;

  /** Restarts that brought a child up. */
  restarts = 0;

  constructor(private readonly opts: SupervisorOptions<C, R>) {
    this.policy = opts.policy ?? RESTART_BACKOFF;
    this.now = opts.now ?? (() => Date.now());
  }

  /** The state (see the module comment). */
  get state(): SupervisorState {
    return this.st;
  }

  /**
   * The child that serves; after {@link close}, the last one (its owner ends it); undefined while
   * idle or restarting.
   */
  get child(): C | undefined {
    return this.st === 'up' || this.st === 'closed' ? this.current : undefined;
  }

  /** True while restarting after a restart attempt failed (until a child serves again). */
  get failing(): boolean {
    return this.st === 'restarting' && this.lastError !== undefined;
  }

  /** Why no child serves (or why the serving one is about to go), as the owner worded it; undefined when healthy. */
  get reason(): string | undefined {
    return this.why;
  }

  /** True from {@link close} on. */
  get closed(): boolean {
    return this.st === 'closed';
  }

  /**
   * Start the first child. Its start error is the caller's (a load fails with it): nothing is
   * retried.
   * @throws what `start` throws; Error when not `idle`
   */
  async start(): Promise<C> {
    if (this.st !== 'idle') throw new Error(`supervisor: start while ${this.st}`);
    const child = await this.opts.start();
    if (this.closed) {
      this.opts.stop(child);
      throw new Error('supervisor: closed while starting');
    }
    this.serve(child);
    return child;
  }

  /** Supervise `child`, the first one, started by the owner itself (its start errors are the owner's). @throws Error when not `idle` */
  adopt(child: C): void {
    if (this.st !== 'idle') throw new Error(`supervisor: adopt while ${this.st}`);
    this.serve(child);
  }

  /**
   * The serving child is about to go (its owner is stopping it): {@link reason} says why from
   * now on, until a successor serves.
   */
  unhealthy(reason: string): void {
    if (this.st === 'up') this.why = reason;
  }

  /**
   * `child` died on its own (exit, crash, a kill after a stuck request): its requests in flight
   * fail with `reason`, and unless closed its successor starts after the back-off. A child that is
   * not the serving one (already replaced) is ignored.
   */
  died(child: C, reason: R): void {
    if (!this.gone(child, reason)) return;
    if (this.now() - this.upAt >= this.policy.stableMs) this.failures = 0;
    this.schedule(restartDelayMs(this.policy, this.failures++));
  }

  /**
   * The owner stopped `child` on purpose after a fault contained to one request (a wasm trap or
   * execute deadline): its requests in flight fail with `reason` and, unless closed, its
   * successor starts at once; the back-off count is left as it is.
   */
  replace(child: C, reason: R): void {
    if (!this.gone(child, reason)) return;
    this.schedule(0);
  }

  /**
   * The owner replaced the serving child `old` itself, on purpose and not after a fault (an idle
   * child released, a fresh one started on demand): `next` serves from now on; nothing fails and
   * the back-off count is left as it is.
   * @returns false (and nothing changes) when `old` is not the serving child
   */
  swap(old: C, next: C): boolean {
    if (this.st !== 'up' || this.current !== old) return false;
    this.current = next;
    return true;
  }

  /**
   * The serving child, else the child of the restart attempt under way or due (waited for); while
   * the back-off after a failed attempt runs, that attempt's error at once (a caller fails fast
   * rather than wait out the delay).
   * @throws what the attempt's start threw; Error when idle or closed
   */
  attempt(): Promise<C> {
    if (this.st === 'up') return Promise.resolve(this.current!);
    if (this.st === 'restarting') return this.timer && this.lastError !== undefined ? Promise.reject(this.lastError) : this.next!;
    return Promise.reject(new Error(`supervisor: no child (${this.st})`));
  }

  /**
   * The serving child, waiting through failed restart attempts until one serves.
   * @throws Error when idle, or closed before a child serves again
   */
  whenUp(): Promise<C> {
    if (this.st === 'up') return Promise.resolve(this.current!);
    if (this.st === 'restarting') return this.up!.promise;
    return Promise.reject(new Error(`supervisor: no child (${this.st})`));
  }

  /**
   * No more restarts: a pending one is cancelled, one under way has its child stopped when it
   * comes up, and whoever waits in {@link whenUp} is refused. The serving child is left to its
   * owner (which ends it); its death is still reported to `failInFlight`.
   */
  close(): void {
    if (this.st === 'closed') return;
    this.st = 'closed';
    clearTimeout(this.timer);
    this.timer = undefined;
    const up = this.up;
    this.up = undefined;
    up?.reject(new Error('supervisor: closed'));
  }

  private serve(child: C): void {
    this.current = child;
    this.st = 'up';
    this.why = undefined;
    this.lastError = undefined;
    this.upAt = this.now();
  }

  /** Mark `child` gone and fail its requests. @returns false when it is not the serving child */
  private gone(child: C, reason: R): boolean {
    if (this.current !== child || (this.st !== 'up' && this.st !== 'closed')) return false;
    const wasClosed = this.closed;
    this.current = undefined;
    this.why = this.opts.describe ? this.opts.describe(reason) : reason instanceof Error ? reason.message : String(reason);
    this.opts.failInFlight(child, reason);
    if (wasClosed) return false;
    this.st = 'restarting';
    if (!this.up) {
      let resolve!: (c: C) => void;
      let reject!: (e: Error) => void;
      const promise = new Promise<C>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      promise.catch(() => undefined);
      this.up = { promise, resolve, reject };
    }
    return true;
  }

  /** The next restart attempt, after `delayMs`. */
  private schedule(delayMs: number): void {
    let settle!: { resolve: (c: C) => void; reject: (e: unknown) => void };
    this.next = new Promise<C>((resolve, reject) => (settle = { resolve, reject }));
    this.next.catch(() => undefined);
    const run = (): void => {
      this.timer = undefined;
      if (this.closed) return settle.reject(new Error('supervisor: closed'));
      this.opts.start().then(
        (child) => {
          if (this.closed) {
            this.opts.stop(child);
            return settle.reject(new Error('supervisor: closed'));
          }
          this.serve(child);
          this.restarts++;
          const up = this.up;
          this.up = undefined;
          this.opts.onRestarted?.(child);
          settle.resolve(child);
          up?.resolve(child);
        },
        (e: unknown) => {
          settle.reject(e);
          if (this.closed) return;
          this.lastError = e ?? new Error('start failed');
          const retryMs = restartDelayMs(this.policy, this.failures++);
          this.opts.onRestartFailed?.(e, retryMs);
          this.schedule(retryMs);
        },
      );
    };
    if (delayMs <= 0) run();
    else this.timer = setTimeout(run, delayMs);
  }
}
