/**
 * The versions of the `warden:backend` WIT package (wit/, the API of sandboxed backends) this
 * server serves, shared by the load-time component check (backends/wasm/component-check.ts), the
 * server metadata (dataplane/server-api.ts: one `sandboxed_backend(warden:backend@X)` entry in
 * `extensions` per version, spec §1.4) and the tenant backend kit (kit/). wit/README.md
 * "Compatibility" says what a minor and a major version may change.
 */

/** The version wit/worlds.wit declares: what new components are built against. */
export const BACKEND_API_VERSION = '0.1.1';

/**
 * Every `warden:backend` version a component may be built against and still load: the current
 * one and, within its major version, every older minor the host still implements.
 */
export const SUPPORTED_BACKEND_API_VERSIONS: readonly string[] = Object.freeze(['0.1.0', BACKEND_API_VERSION]);

/**
 * Interfaces added after the first served version, with the version that added them: a component
 * must name that version or a later one to import them (`inference`: calls to other models).
 */
export const BACKEND_INTERFACE_SINCE: Readonly<Record<string, string>> = Object.freeze({ 'warden:backend/inference': '0.1.1' });

/** Whether version `a` (`x.y.z`) is older than `b`. */
export function olderVersion(a: string, b: string): boolean {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] ?? 0) < (y[i] ?? 0);
  return false;
}

/** The server metadata `extensions` entry that announces one supported version. */
export const backendApiExtension = (version: string): string => `sandboxed_backend(warden:backend@${version})`;
