/**
 * `wasi:cli/environment` and the `wasi:cli/terminal-*` interfaces for sandboxed backends: no
 * environment variables, no arguments, no working directory, no terminal.
 */

class TerminalInput {}
class TerminalOutput {}

/** The environment and terminal interfaces, keyed by unversioned interface name. */
export function cliImports(): Record<string, Record<string, unknown>> {
  return {
    'wasi:cli/environment': { getEnvironment: () => [], getArguments: () => [], initialCwd: () => undefined },
    'wasi:cli/terminal-input': { TerminalInput },
    'wasi:cli/terminal-output': { TerminalOutput },
    'wasi:cli/terminal-stdin': { getTerminalStdin: () => undefined },
    'wasi:cli/terminal-stdout': { getTerminalStdout: () => undefined },
    'wasi:cli/terminal-stderr': { getTerminalStderr: () => undefined },
  };
}
