/**
 * The error catalogue of finding a backend's shared library (backends/library-search.ts, the
 * search order of Triton's backend manager: version directory, model directory, backend
 * directory), one function per message: Warden's text, naming directories relative to the model
 * (`<model>/<version>`) or by the flag that sets them, never by host path.
 */
import { type TritonError, invalidArg } from '../contract/errors.js';

/** INVALID_ARG: a backend name with path separators. */
export function backendNameInvalid(backend: string): TritonError {
  return invalidArg(`invalid backend name '${backend}': it must be a plain name (no path separators)`);
}

/** INVALID_ARG: a `runtime` that is not one file name. */
export function runtimeInvalid(runtime: string, backend: string): TritonError {
  return invalidArg(`invalid runtime '${runtime}' for backend '${backend}': it must be a file name inside the backend directory`);
}

/** INVALID_ARG: no library in any searched directory; `versionDir` is the version directory's name. */
export function libraryNotFound(file: string, backend: string, model: string, versionDir: string): TritonError {
  return invalidArg(
    `unable to find backend library '${file}' for backend '${backend}' of model '${model}'; searched the model's version directory (${model}/${versionDir}), the model directory (${model}) and the backend directory (--backend-directory/${backend})`,
  );
}
