/**
 * `wasi:cli/exit` for sandboxed backends: a backend may not end its sandbox's process, so
 * `exit` / `exit-with-code` throw {@link GuestExit}, which ends the call like a trap (the engine
 * discards the sandbox and starts a new one).
 */

/** Thrown by `wasi:cli/exit`: ends the sandbox like a trap. */
export class GuestExit extends Error {
  constructor(readonly status: string) {
    super(`the backend called wasi:cli/exit (${status}); sandboxed backends may not exit`);
    this.name = 'GuestExit';
  }
}

/**
 * `exit(status)` and `exit-with-code(code)`: never return.
 * @throws GuestExit naming the status (as JSON, bigints as decimal strings)
 */
export function exit(status: unknown): never {
  throw new GuestExit(JSON.stringify(status, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'no status');
}

/** The `wasi:cli/exit` interface, keyed by unversioned interface name. */
export function exitImports(): Record<string, Record<string, unknown>> {
  return { 'wasi:cli/exit': { exit, exitWithCode: exit } };
}
