/**
 * Warden's Python backend (spec §7): `backend: "python"` models (`<model>/<version>/model.py`) and
 * Python-based backends (`backend: "<name>"` served by `<backend-directory>/<name>/model.py`, then
 * Warden's own `host/python/backends/<name>/model.py`, when no `libtriton_<name>.so` is found,
 * spec §6.9), each instance a supervised Python process speaking
 * to Warden over a socket with tensors in shared memory. Python models are trusted operator code:
 * they load only from the operator's repositories, never from the load API's uploads.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { uploadedNotServed } from './python.errors.js';
import type { Backend, BackendResolveRequest, BackendResolver } from '../../contract/types.js';
import { backendNameOf, findBackendLibrary } from '../library-search.js';
import { PythonBackend } from './backend.js';
import { PythonMetrics } from './metrics.js';
import { removeStaleArenas } from './shm.js';
import { PYTHON_DIR } from './stub.js';

/**
 * Python-based backends shipped with Warden (`host/python/backends/<name>/model.py`: `vllm`),
 * found after `<backend-directory>/<name>/model.py` so an operator's copy wins.
 */
export const BUILTIN_BACKENDS = join(PYTHON_DIR, 'backends');

export { PythonBackend } from './backend.js';
export { PythonMetrics } from './metrics.js';
export { defaultPython, NUMPY_VERSION } from './environment.js';

/** Backend names that are never Python-based (served by other resolvers). */
const NOT_PYTHON = new Set(['wasm', 'onnxruntime']);

const isFile = (p: string) => {
  try {
    return existsSync(p) && statSync(p).isFile();
  } catch {
    return false;
  }
};

export class PythonBackendResolver implements BackendResolver {
  private readonly backends = new Map<string, PythonBackend>();
  /** Custom metrics of every Python model (`/metrics`). */
  readonly metrics = new PythonMetrics();

  /**
   * @param opts.backendDirectory `--backend-directory` (Python-based backends live in `<dir>/<name>/model.py`)
   * @param opts.cacheDir where packed EXECUTION_ENV_PATH archives are unpacked
   */
  constructor(private readonly opts: { backendDirectory: string; cacheDir: string; logger: Logger }) {
    const stale = removeStaleArenas();
    if (stale > 0) opts.logger.info({ files: stale }, 'removed shared-memory arenas of Python backend processes that no longer exist');
  }

  /**
   * The Python backend for `backend: "python"` (or a `runtime` ending in `.py`) unless Triton's own
   * `libtriton_python.so` is found by the library search order (spec §6.9; the native resolver
   * then serves it), or the Python-based backend `<name>` when no native library of that name is
   * found (Triton's order).
   * @throws TritonError INVALID_ARG for an uploaded model (never run as Python) or a bad backend name
   */
  async resolve({ config, modelPath, versionPath, origin }: BackendResolveRequest): Promise<Backend | undefined> {
    const name = backendNameOf(config);
    if (!name || NOT_PYTHON.has(name)) return undefined;
    let artifactsDir: string | undefined;
    if (name === 'python') {
      // Triton's own Python backend (`libtriton_python.so` in the version, model or
      // `<backend-directory>/python/` directory, Triton's search order) wins over Warden's: the
      // native host serves it.
      if (
        !config.runtime.endsWith('.py') &&
        findBackendLibrary({ backendName: name, runtime: config.runtime, modelPath, versionPath, backendDirectory: this.opts.backendDirectory })
      )
        return undefined;
    } else {
      if (!config.runtime.endsWith('.py')) {
        if (findBackendLibrary({ backendName: name, runtime: config.runtime, modelPath, versionPath, backendDirectory: this.opts.backendDirectory }))
          return undefined;
        if (config.runtime) return undefined;
      }
      artifactsDir = [join(this.opts.backendDirectory, name), join(BUILTIN_BACKENDS, name)].find((d) => isFile(join(d, 'model.py')));
      if (!artifactsDir) return undefined;
    }
    if (origin.kind === 'upload') {
      throw uploadedNotServed(config.name, name);
    }
    const key = artifactsDir ?? 'python';
    let b = this.backends.get(key);
    if (!b)
      this.backends.set(key, (b = new PythonBackend({ name, artifactsDir, metrics: this.metrics, cacheDir: this.opts.cacheDir, logger: this.opts.logger })));
    return b;
  }

  async finalizeAll(): Promise<void> {
    this.backends.clear();
  }
}
