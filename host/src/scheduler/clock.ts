/**
 * The time source of the schedulers and model versions: a monotonic clock in nanoseconds and
 * one-shot timers. Everything a scheduler times (the dynamic batcher's and the sequence batcher's
 * `max_queue_delay_microseconds`, queue policy timeouts, `max_sequence_idle_microseconds`,
 * request statistics, spec §5.6 and §4) reads it from here, so that one injected clock drives all
 * of it. Production uses {@link SYSTEM_CLOCK}; tests inject a manual clock and move time by hand
 * instead of sleeping.
 */

/** A timer of {@link Clock.schedule}; opaque to its holder. */
export type ClockTimer = object;

/** Monotonic time and one-shot timers. */
export interface Clock {
  /** Monotonic time, ns. The origin is arbitrary: only differences mean anything. */
  now(): bigint;
  /**
   * Call `fn` once, `ms` milliseconds from now (fractions allowed; ≤ 0 = as soon as possible,
   * never before `schedule` returns).
   * @param unref the timer does not keep the process alive (Node's `Timeout.unref`).
   */
  schedule(fn: () => void, ms: number, unref?: boolean): ClockTimer;
  /** Cancel a timer of {@link schedule}; undefined, or a timer that already fired, is a no-op. */
  cancel(timer: ClockTimer | undefined): void;
}

/** The process's clock: `process.hrtime.bigint()` and Node's timers. */
export const SYSTEM_CLOCK: Clock = Object.freeze({
  now: (): bigint => process.hrtime.bigint(),
  schedule(fn: () => void, ms: number, unref = false): ClockTimer {
    const t = setTimeout(fn, ms);
    if (unref) t.unref();
    return t;
  },
  cancel(timer: ClockTimer | undefined): void {
    clearTimeout(timer as NodeJS.Timeout | undefined);
  },
});
