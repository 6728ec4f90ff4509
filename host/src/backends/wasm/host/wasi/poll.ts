/**
 * `wasi:io/poll` and `wasi:io/error` for sandboxed backends. Pollables are ready at a monotonic
 * instant (clock subscriptions) or always ready (streams); blocking really blocks the sandbox's
 * thread (Atomics.wait), which the execute deadline bounds.
 */
import { GuestExit } from './exit.js';

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the calling thread for `ns` nanoseconds (worker threads only: the main thread may not wait). */
export function blockFor(ns: bigint): void {
  let remaining = ns;
  while (remaining > 0n) {
    const start = process.hrtime.bigint();
    const ms = Number(remaining / 1_000_000n);
    if (ms >= 1) Atomics.wait(sleepCell, 0, 0, ms);
    else {
      // sub-millisecond: spin on the clock (Atomics.wait has ms resolution)
      while (process.hrtime.bigint() - start < remaining);
    }
    remaining -= process.hrtime.bigint() - start;
  }
}

/** `wasi:io/poll` pollable: ready at a monotonic instant (ns, `process.hrtime`), or always ready. */
export class Pollable {
  constructor(readonly deadlineNs: bigint | undefined) {}
  ready(): boolean {
    return this.deadlineNs === undefined || process.hrtime.bigint() >= this.deadlineNs;
  }
  block(): void {
    if (this.deadlineNs === undefined) return;
    const now = process.hrtime.bigint();
    if (this.deadlineNs > now) blockFor(this.deadlineNs - now);
  }
}

/** `wasi:io/error` error resource: a debug string only. */
export class IoError {
  constructor(private readonly msg: string) {}
  toDebugString(): string {
    return this.msg;
  }
}

/**
 * `poll(in: list<borrow<pollable>>) -> list<u32>`: blocks until at least one pollable is ready and
 * returns the indexes of the ready ones.
 * @throws GuestExit for an empty list (WASI says that traps)
 */
export function poll(list: Pollable[]): Uint32Array {
  if (list.length === 0) throw new GuestExit('poll on an empty list');
  for (;;) {
    const ready = list.flatMap((p, i) => (p.ready() ? [i] : []));
    if (ready.length > 0) return new Uint32Array(ready);
    const soonest = list.reduce<bigint | undefined>(
      (m, p) => (p.deadlineNs !== undefined && (m === undefined || p.deadlineNs < m) ? p.deadlineNs : m),
      undefined,
    );
    if (soonest === undefined) return new Uint32Array([0]);
    blockFor(soonest - process.hrtime.bigint());
  }
}

/** `wasi:io/error` and `wasi:io/poll`, keyed by unversioned interface name. */
export function pollImports(): Record<string, Record<string, unknown>> {
  return {
    'wasi:io/error': { Error: IoError },
    'wasi:io/poll': { Pollable, poll },
  };
}
