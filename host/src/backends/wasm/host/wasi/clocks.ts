/**
 * `wasi:clocks/monotonic-clock` and `wasi:clocks/wall-clock` for sandboxed backends: both work
 * (the sandbox rules allow clocks). Monotonic time is `process.hrtime` in ns; subscriptions are
 * {@link Pollable}s that block the sandbox's thread until their instant.
 */
import { Pollable } from './poll.js';

/** WASI `datetime`: seconds and nanoseconds since the Unix epoch. */
export interface Datetime {
  seconds: bigint;
  nanoseconds: number;
}

/** `monotonic-clock.now`: ns on the host's monotonic clock. */
export function monotonicNow(): bigint {
  return process.hrtime.bigint();
}

/** `wall-clock.now`: the host's wall clock, at ms precision. */
export function wallNow(): Datetime {
  const ms = Date.now();
  return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1_000_000 };
}

/** `wasi:clocks/monotonic-clock` and `wasi:clocks/wall-clock`, keyed by unversioned interface name. */
export function clockImports(): Record<string, Record<string, unknown>> {
  return {
    'wasi:clocks/monotonic-clock': {
      now: monotonicNow,
      resolution: () => 1n,
      subscribeInstant: (when: bigint) => new Pollable(when),
      subscribeDuration: (ns: bigint) => new Pollable(process.hrtime.bigint() + ns),
    },
    'wasi:clocks/wall-clock': {
      now: wallNow,
      resolution: () => ({ seconds: 0n, nanoseconds: 1_000_000 }),
    },
  };
}
