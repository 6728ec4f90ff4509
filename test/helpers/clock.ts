/**
 * A {@link Clock} moved by hand, injected into schedulers and model versions
 * (`ModelVersionOptions.clock`, `SchedulerOptions.clock`) so that queue delays, queue timeouts and
 * sequence idle timeouts are tested without sleeping: time stands still until {@link advance}.
 */
import type { Clock, ClockTimer } from '../../host/src/scheduler/clock.js';

interface Pending {
  at: bigint;
  seq: number;
  fn: () => void;
}

/** Manual monotonic time (ns) and the timers due on it. */
export class ManualClock implements Clock {
  private t: bigint;
  private seq = 0;
  private readonly timers = new Set<Pending>();

  /** @param startNs the first reading (large, as `process.hrtime.bigint()` is; 0 has no special meaning). */
  constructor(startNs = 1_000_000_000_000n) {
    this.t = startNs;
  }

  now(): bigint {
    return this.t;
  }

  schedule(fn: () => void, ms: number): ClockTimer {
    const p: Pending = { at: this.t + BigInt(Math.max(0, Math.round(ms * 1e6))), seq: this.seq++, fn };
    this.timers.add(p);
    return p;
  }

  cancel(timer: ClockTimer | undefined): void {
    if (timer) this.timers.delete(timer as Pending);
  }

  /** Timers not yet fired or cancelled. */
  get pending(): number {
    return this.timers.size;
  }

  /**
   * Move time forward by `ms` (≥ 0), firing every timer that falls due on the way, in order of
   * their due time (then of scheduling), each with the clock set to its due time; timers they
   * schedule fire too if due. Synchronous: what the callbacks start asynchronously (an execution)
   * runs on the test's next await.
   */
  advance(ms: number): void {
    const end = this.t + BigInt(Math.round(ms * 1e6));
    for (;;) {
      let next: Pending | undefined;
      for (const p of this.timers) if (p.at <= end && (!next || p.at < next.at || (p.at === next.at && p.seq < next.seq))) next = p;
      if (!next) break;
      this.timers.delete(next);
      if (next.at > this.t) this.t = next.at;
      next.fn();
    }
    this.t = end;
  }
}
