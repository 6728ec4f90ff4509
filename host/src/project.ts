/**
 * Where Warden is installed and what it is: the project root (two levels above `host/src`, or
 * three above `dist/host/src`) and Warden's own name and version (package.json). Clients see
 * Triton's identity in server metadata (`--id`, default `triton`, spec §1.4); Warden's shows in
 * the start log line, `warden --version` and the `warden_build_info` metric.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root. */
export const PROJECT_ROOT = (() => {
  const here = fileURLToPath(new URL('.', import.meta.url));
  return here.includes(`${'/'}dist${'/'}`) ? join(here, '..', '..', '..') : join(here, '..', '..');
})();

/** The Triton release whose protocol Warden implements (spec header). */
export const TRITON_PROTOCOL_VERSION = '2.73.0';

/** Warden's own name. */
export const WARDEN_NAME = 'warden';

/** Warden's version (package.json `version`; `unknown` if it cannot be read). */
export const WARDEN_VERSION: string = (() => {
  try {
    const v = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' ? v : 'unknown';
  } catch {
    return 'unknown';
  }
})();
