/**
 * Warden's own deny-by-default WASI 0.2 for sandboxed backends (the WASI part of the `sandbox`
 * world in wit/worlds.wit), composed from one module per capability:
 *
 * - ./clocks.ts: `monotonic-clock`, `wall-clock` work; timers block the instance, bounded by the
 *   execute deadline (./poll.ts: `wasi:io/poll`, `wasi:io/error`);
 * - ./random.ts: `random`, `insecure`, `insecure-seed` work;
 * - ./stdio.ts: `stdout` / `stderr` are captured into the model's log under the log budget;
 *   `stdin` is empty (always closed);
 * - ./cli.ts: `environment` gives no variables, no arguments and no cwd; there is no terminal;
 * - ./exit.ts: `exit` ends the sandbox like a trap.
 *
 * Filesystem, sockets and HTTP are not here at all: components importing them never load.
 * preview2-shim is deliberately not used: its defaults expose the host filesystem and env.
 */
import { cliImports } from './cli.js';
import { clockImports } from './clocks.js';
import { exitImports } from './exit.js';
import { pollImports } from './poll.js';
import { randomImports } from './random.js';
import { stdioImports, type StdioState } from './stdio.js';

export { GuestExit } from './exit.js';

/**
 * The WASI import object of one instance: plain objects keyed by interface name without version
 * (what jco's glue looks up), one key per WASI interface of the sandbox world and nothing else;
 * the caller adds versioned aliases.
 */
export function createWasi(stdio: StdioState): Record<string, Record<string, unknown>> {
  return { ...clockImports(), ...randomImports(), ...pollImports(), ...stdioImports(stdio), ...cliImports(), ...exitImports() };
}
