/**
 * The shared-memory regions of Triton's own Python backend (`libtriton_python.so`) in a
 * backend-host process. That backend names one POSIX region per stub
 * `<shm-region-prefix-name><uuid>` (python_backend `stub_launcher.cc`; the default prefix is
 * `triton_<backend>_backend_shm_region_`, `python_be.cc`) and removes it when the stub is cleaned
 * up; a backend-host process that dies (crash, kill) never does. So each backend-host process gets
 * a prefix of its own, generated here — the configured or default prefix followed by a random
 * token — and once the process is gone the server removes the regions under that prefix: names it
 * generated, never another process's.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';

/** Where POSIX shared memory objects live on Linux (shm_open; boost::interprocess uses it). */
export const SHM_DIR = '/dev/shm';

/** The backend `cmdline` setting Triton's Python backend reads its region prefix from. */
export const PREFIX_SETTING = 'shm-region-prefix-name';

/** Whether `libraryPath` is Triton's Python backend library. */
export function isTritonPythonLibrary(libraryPath: string): boolean {
  return basename(libraryPath) === 'libtriton_python.so';
}

/**
 * For Triton's Python backend: the backend config message with a region prefix of one process's
 * own (`<configured or default prefix>warden<24 hex>_`, only characters python_backend's
 * IsValidIdentifier accepts added), and that prefix; for any other library, undefined.
 * @param backend the backend's name (the default prefix names it), library and
 *   TRITONBACKEND_BackendConfig JSON (`{"cmdline":{...}}`)
 * @throws SyntaxError for a config message that is not JSON (Warden builds it: never)
 */
export function processRegionPrefix(backend: { name: string; libraryPath: string; configJson: string }): { prefix: string; configJson: string } | undefined {
  if (!isTritonPythonLibrary(backend.libraryPath)) return undefined;
  const config = JSON.parse(backend.configJson || '{}') as { cmdline?: Record<string, string> };
  const cmdline = { ...(config.cmdline ?? {}) };
  const base = cmdline[PREFIX_SETTING] || `triton_${backend.name}_backend_shm_region_`;
  const prefix = `${base}warden${randomBytes(12).toString('hex')}_`;
  cmdline[PREFIX_SETTING] = prefix;
  return { prefix, configJson: JSON.stringify({ ...config, cmdline }) };
}

/**
 * Remove the regions named `<prefix>…` (a prefix from {@link processRegionPrefix}), e.g. once
 * the backend-host process that used it is gone. Mappings stay valid for a process still using
 * one (a stub about to notice its parent died). Never throws.
 * @returns the names removed
 */
export function removeRegions(prefix: string, dir = SHM_DIR): string[] {
  if (prefix.length < 8 || prefix.includes('/')) return [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    try {
      unlinkSync(join(dir, name));
      removed.push(name);
    } catch {
      /* gone already, or not ours to remove (sticky /dev/shm) */
    }
  }
  return removed;
}
