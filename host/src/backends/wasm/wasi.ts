/**
 * Warden's own deny-by-default WASI 0.2 for sandboxed backends (the WASI part of the `sandbox`
 * world in wit/worlds.wit). Runs inside the sandbox worker.
 *
 * - clocks (`monotonic-clock`, `wall-clock`) and `random` (`random`, `insecure`, `insecure-seed`) work;
 *   monotonic timers really block the instance (Atomics.wait), bounded by the execute deadline;
 * - `stdout` / `stderr` are captured into the model's log through `sink` (which applies the byte
 *   budget); `stdin` is empty (always closed);
 * - `environment` gives no variables, no arguments and no cwd; there is no terminal;
 * - `exit` ends the sandbox like a trap.
 * Filesystem, sockets and HTTP are not here at all: components importing them never load.
 *
 * preview2-shim is deliberately not used: its defaults expose the host filesystem and env.
 */
import { randomFillSync } from 'node:crypto';

/** Receives guest stdout/stderr bytes. */
export type OutputSink = (stream: 'stdout' | 'stderr', bytes: Uint8Array) => void;

/** Thrown by `wasi:cli/exit`: ends the sandbox like a trap. */
export class GuestExit extends Error {
  constructor(readonly status: string) {
    super(`the backend called wasi:cli/exit (${status}); sandboxed backends may not exit`);
    this.name = 'GuestExit';
  }
}

/** Largest random buffer handed out by one call (bytes); the guest must ask again for more. */
const MAX_RANDOM_BYTES = 1 << 20;

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the calling thread for `ns` nanoseconds (worker threads only). */
function blockFor(ns: bigint): void {
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

/** `wasi:io/poll` pollable: ready at a monotonic instant (ns), or always ready. */
class Pollable {
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

class IoError {
  constructor(private readonly msg: string) {}
  toDebugString(): string {
    return this.msg;
  }
}

const CLOSED = { tag: 'closed' } as const;

class InputStream {
  read(): Uint8Array {
    throw CLOSED;
  }
  blockingRead(): Uint8Array {
    throw CLOSED;
  }
  skip(): bigint {
    throw CLOSED;
  }
  blockingSkip(): bigint {
    throw CLOSED;
  }
  subscribe(): Pollable {
    return new Pollable(undefined);
  }
}

/** Largest single write accepted (what `check-write` permits), bytes. */
const WRITE_CHUNK = 64 * 1024;

class OutputStream {
  constructor(
    private readonly stream: 'stdout' | 'stderr',
    private readonly sink: OutputSink,
  ) {}
  checkWrite(): bigint {
    return BigInt(WRITE_CHUNK);
  }
  write(contents: Uint8Array): void {
    this.sink(this.stream, contents);
  }
  blockingWriteAndFlush(contents: Uint8Array): void {
    this.sink(this.stream, contents);
  }
  flush(): void {}
  blockingFlush(): void {}
  subscribe(): Pollable {
    return new Pollable(undefined);
  }
  writeZeroes(len: bigint): void {
    this.sink(this.stream, new Uint8Array(Number(len > BigInt(WRITE_CHUNK) ? BigInt(WRITE_CHUNK) : len)));
  }
  blockingWriteZeroesAndFlush(len: bigint): void {
    this.writeZeroes(len);
  }
  splice(): bigint {
    throw CLOSED;
  }
  blockingSplice(): bigint {
    throw CLOSED;
  }
}

class TerminalInput {}
class TerminalOutput {}

function randomBytes(len: bigint): Uint8Array {
  const n = Number(len > BigInt(MAX_RANDOM_BYTES) ? BigInt(MAX_RANDOM_BYTES) : len);
  return randomFillSync(new Uint8Array(n));
}

function randomU64(): bigint {
  const b = randomFillSync(new Uint8Array(8));
  return new DataView(b.buffer).getBigUint64(0, true);
}

/**
 * The WASI import object, keyed by interface name without version (what jco's glue looks up);
 * the caller adds versioned aliases.
 */
export function createWasi(sink: OutputSink): Record<string, Record<string, unknown>> {
  const stdin = new InputStream();
  const stdout = new OutputStream('stdout', sink);
  const stderr = new OutputStream('stderr', sink);
  const exit = (status: unknown) => {
    throw new GuestExit(JSON.stringify(status, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'no status');
  };
  return {
    'wasi:clocks/monotonic-clock': {
      now: () => process.hrtime.bigint(),
      resolution: () => 1n,
      subscribeInstant: (when: bigint) => new Pollable(when),
      subscribeDuration: (ns: bigint) => new Pollable(process.hrtime.bigint() + ns),
    },
    'wasi:clocks/wall-clock': {
      now: () => {
        const ms = Date.now();
        return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1_000_000 };
      },
      resolution: () => ({ seconds: 0n, nanoseconds: 1_000_000 }),
    },
    'wasi:random/random': { getRandomBytes: randomBytes, getRandomU64: randomU64 },
    'wasi:random/insecure': { getInsecureRandomBytes: randomBytes, getInsecureRandomU64: randomU64 },
    'wasi:random/insecure-seed': { insecureSeed: () => [randomU64(), randomU64()] },
    'wasi:io/error': { Error: IoError },
    'wasi:io/poll': {
      Pollable,
      poll: (list: Pollable[]) => {
        if (list.length === 0) throw new GuestExit('poll on an empty list');
        for (;;) {
          const ready = list.flatMap((p, i) => (p.ready() ? [i] : []));
          if (ready.length > 0) return new Uint32Array(ready);
          const soonest = list.reduce<bigint | undefined>((m, p) => (p.deadlineNs !== undefined && (m === undefined || p.deadlineNs < m) ? p.deadlineNs : m), undefined);
          if (soonest === undefined) return new Uint32Array([0]);
          blockFor(soonest - process.hrtime.bigint());
        }
      },
    },
    'wasi:io/streams': { InputStream, OutputStream },
    'wasi:cli/environment': { getEnvironment: () => [], getArguments: () => [], initialCwd: () => undefined },
    'wasi:cli/exit': { exit, exitWithCode: exit },
    'wasi:cli/stdin': { getStdin: () => stdin },
    'wasi:cli/stdout': { getStdout: () => stdout },
    'wasi:cli/stderr': { getStderr: () => stderr },
    'wasi:cli/terminal-input': { TerminalInput },
    'wasi:cli/terminal-output': { TerminalOutput },
    'wasi:cli/terminal-stdin': { getTerminalStdin: () => undefined },
    'wasi:cli/terminal-stdout': { getTerminalStdout: () => undefined },
    'wasi:cli/terminal-stderr': { getTerminalStderr: () => undefined },
  };
}
