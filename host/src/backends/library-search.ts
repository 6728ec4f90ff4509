/**
 * Which native backend library serves a model (spec §6.9): the backend name from `backend:` or the
 * legacy `platform:`, then Triton's library search order, with `runtime` naming the library file.
 */
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { ModelConfig } from '../contract/model-config.js';
import { backendNameInvalid, runtimeInvalid } from './library-search.errors.js';

/** Legacy `platform` values and the backend that serves them (Triton's platform → backend map). */
export const PLATFORM_BACKENDS: Readonly<Record<string, string>> = {
  tensorrt_plan: 'tensorrt',
  onnxruntime_onnx: 'onnxruntime',
  pytorch_libtorch: 'pytorch',
  libtorch: 'pytorch',
  torch_aoti: 'pytorch',
  tensorflow_graphdef: 'tensorflow',
  tensorflow_savedmodel: 'tensorflow',
};

/** The backend name of a config: `backend`, else the platform's backend; '' if neither (ensembles). */
export function backendNameOf(config: Pick<ModelConfig, 'backend' | 'platform'>): string {
  if (config.backend) return config.backend;
  return PLATFORM_BACKENDS[config.platform] ?? '';
}

/** Triton's library file name for a backend: `libtriton_<name>.so`. */
export function libraryFileName(backendName: string): string {
  return `libtriton_${backendName}.so`;
}

/** Where a backend library was found. */
export interface FoundLibrary {
  /** Absolute path of the shared library to dlopen. */
  libraryPath: string;
  /** What TRITONBACKEND_BackendArtifacts reports: the directory holding the library. */
  artifactsDir: string;
}

/**
 * Search `<versionPath>/<file>`, `<modelPath>/<file>`, `<backendDirectory>/<backend>/<file>` in that
 * order, where `<file>` is `runtime` if set, else `libtriton_<backend>.so` (spec §6.9).
 * @returns the first existing regular file, or undefined.
 * @throws TritonError INVALID_ARG for a backend name or `runtime` that is not a plain file name
 *   (a path escaping the backend directory is rejected, as Triton does).
 */
export function findBackendLibrary(opts: {
  backendName: string;
  runtime?: string;
  modelPath: string;
  versionPath: string;
  backendDirectory: string;
}): FoundLibrary | undefined {
  const { backendName, runtime } = opts;
  if (!isPlainName(backendName)) {
    throw backendNameInvalid(backendName);
  }
  if (runtime && !isPlainName(runtime)) {
    throw runtimeInvalid(runtime, backendName);
  }
  const file = runtime || libraryFileName(backendName);
  const candidates = [join(opts.versionPath, file), join(opts.modelPath, file), join(opts.backendDirectory, backendName, file)];
  for (const c of candidates) {
    if (isFile(c)) return { libraryPath: c, artifactsDir: dirname(c) };
  }
  return undefined;
}

function isPlainName(name: string): boolean {
  return name.length > 0 && name === basename(name) && name !== '.' && name !== '..' && !name.includes('\0');
}

function isFile(p: string): boolean {
  try {
    return existsSync(p) && statSync(p).isFile();
  } catch {
    return false;
  }
}
