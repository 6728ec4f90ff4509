/**
 * The error catalogue of the Python backend (backends/python/: resolving a Python model, its
 * execution environment, the stub process, and the stub's BLS and model-control calls), one
 * function per message. Warden's text except where noted; model files are named relative to the
 * model (`<model>/<version>`), and the stub's own path only as the installation holds it (the data
 * plane's scrubber names it relative to the installation).
 */
import { TritonError, internal, invalidArg, unavailable } from '../../contract/errors.js';

/** INVALID_ARG: a Python backend for an uploaded model (Python models are installed by the operator). */
export function uploadedNotServed(model: string, backend: string): TritonError {
  return invalidArg(`model '${model}' was uploaded: Python backend '${backend}' cannot serve uploaded models (Python models are installed by the operator)`);
}

/** INVALID_ARG: a Python model from an upload reached the backend itself (defence in depth). */
export function uploadedModel(model: string): TritonError {
  return invalidArg(`model '${model}' was uploaded: Python models run only from the operator's repositories`);
}

/** INVALID_ARG: a config-named file that is not a file name (an absolute path is not shown). */
export function fileNameInvalid(what: string, name: string): TritonError {
  return invalidArg(name.startsWith('/') ? `invalid ${what}: an absolute path; it must be a file name` : `invalid ${what} '${name}': it must be a file name`);
}

/** INVALID_ARG: an integer parameter that is not a non-negative integer. */
export function parameterNotCount(key: string, model: string, value: string): TritonError {
  return invalidArg(`parameter '${key}' of model '${model}' must be a non-negative integer, got '${value}'`);
}

/** INVALID_ARG: no `model.py` in the backend directory of a Python-based backend. */
export function backendModelMissing(model: string, backend: string): TritonError {
  return invalidArg(`unable to find 'model.py' for Python model '${model}' (looked in the backend directory of '${backend}')`);
}

/** INVALID_ARG: no model file in the version directory (Triton's wording, with where it looked). */
export function modelFileMissing(file: string, model: string, version: number): TritonError {
  return invalidArg(`unable to find '${file}' for Python model '${model}' (looked in ${model}/${version})`);
}

/** INVALID_ARG: `EXECUTION_ENV_PATH` names no archive. */
export function envArchiveMissing(model: string): TritonError {
  return invalidArg(`EXECUTION_ENV_PATH of model '${model}': the archive does not exist`);
}

/** INVALID_ARG: the environment archive does not unpack; `detail` tar's message (cut at 500 characters). */
export function envArchiveUnpack(model: string, detail: string): TritonError {
  return invalidArg(`EXECUTION_ENV_PATH of model '${model}': failed to unpack the archive: ${detail.trim().slice(0, 500)}`);
}

/** INVALID_ARG: the environment holds no `bin/python`. */
export function envNoPython(model: string): TritonError {
  return invalidArg(`EXECUTION_ENV_PATH of model '${model}' names no Python environment (no bin/python inside)`);
}

/** INTERNAL: the installation lacks the stub script; `path` its installed path. */
export function stubMissing(path: string): TritonError {
  return internal(`the Python backend stub is missing (${path})`);
}

/** INTERNAL: the interpreter cannot be started. */
export function interpreterStart(python: string, detail: string): TritonError {
  return internal(`failed to start the Python interpreter '${python}': ${detail}`);
}

/** UNAVAILABLE: the instance is being unloaded. */
export function instanceUnloading(): TritonError {
  return unavailable('instance is being unloaded');
}

/** UNAVAILABLE: the instance has no stub process. */
export function instanceNoProcess(model: string, instance: string): TritonError {
  return unavailable(`Python model '${model}' instance '${instance}' has no running process`);
}

/** INTERNAL: inputs could not be written for the stub. */
export function inputsNotPassed(detail: string): TritonError {
  return internal(`failed to pass inputs to the Python model: ${detail}`);
}

/** UNAVAILABLE: requests in flight when their model was unloaded. */
export function modelUnloaded(): TritonError {
  return new TritonError('UNAVAILABLE', 'model was unloaded');
}

/** INVALID_ARG: a BLS call to a decoupled model without `decoupled=True` (Triton's Python backend text). */
export function blsDecoupled(model: string): TritonError {
  return invalidArg(`model '${model}' is decoupled: use exec(decoupled=True) or async_exec(decoupled=True)`);
}

/** UNAVAILABLE: model control from a stub in a server without it. */
export function modelControlUnavailable(): TritonError {
  return unavailable('model control is not available in this server');
}

/** INVALID_ARG: a stub's load with more file overrides than the cap. */
export function loadTooManyFiles(model: string, max: number): TritonError {
  return invalidArg(`failed to load '${model}': more than ${max} file overrides`);
}

/** INVALID_ARG: a stub's load with file overrides over the arena, bytes. */
export function loadFilesTooLarge(model: string, total: number, max: number): TritonError {
  return invalidArg(`failed to load '${model}': file overrides of ${total} bytes exceed ${max}`);
}

/** INVALID_ARG: a malformed file override from the stub. */
export function loadFileMalformed(model: string): TritonError {
  return invalidArg(`failed to load '${model}': malformed file override from the Python stub`);
}

/** INVALID_ARG: a stub's load parameter that is not a file override (`key` cut at 256 characters). */
export function loadParameterUnknown(model: string, key: string): TritonError {
  return invalidArg(`failed to load '${model}': unrecognized load parameter '${key.slice(0, 256)}' (file overrides are named 'file:<version>/<path>')`);
}

/** INTERNAL: a stub's response message that does not decode; `detail` why. */
export function responseMalformed(model: string, detail: string): TritonError {
  return internal(`Python model '${model}' sent a malformed response: ${detail}`);
}

/** UNAVAILABLE: an instance's stub failed; `why` how (exited, stopped answering). */
export function instanceFailed(model: string, instance: string, why: string): TritonError {
  return unavailable(`Python model '${model}' instance '${instance}' failed: ${why}`);
}

/** INVALID_ARG: a RESCHEDULE release the model's scheduler cannot take (Triton core's text, `infer_request.cc`). */
export function rescheduleRefused(): TritonError {
  return invalidArg('Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.');
}
