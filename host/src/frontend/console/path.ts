/** The console's path on the HTTP port (`--console-path`; docs/console.md). */

/** Where the console is served unless `--console-path` says otherwise. */
export const DEFAULT_CONSOLE_PATH = '/console';

/**
 * Why `path` cannot be the console's path, or undefined when it can: `/` then letters, digits,
 * `-`, `_` (and further `/`-separated such segments), not under the API's `/v2` or `/v1`.
 */
export function consolePathProblem(path: string): string | undefined {
  if (!/^(\/[A-Za-z0-9_-]+)+$/.test(path)) return 'must be / followed by letters, digits, - or _ segments, without a trailing /';
  if (/^\/(v1|v2)(\/|$)/.test(path)) return 'must not be under /v1 or /v2 (the API)';
  return undefined;
}

/** Whether the request path `url` (query string removed) is one of the console's, under `path`. */
export function isConsolePath(path: string, url: string): boolean {
  return url === path || url.startsWith(`${path}/`);
}
