/**
 * The `warden:backend` WIT versions this Warden builds and serves (the server's own list,
 * backends/wasm/component-check.ts): a project pinned at another version is refused before a
 * build, with the list.
 */
import { SUPPORTED_BACKEND_API_VERSIONS } from '../contract/backend-api.js';

/** Supported `warden:backend` versions, e.g. `['0.1.0']`. */
export function supportedWitVersions(): readonly string[] {
  return SUPPORTED_BACKEND_API_VERSIONS;
}
