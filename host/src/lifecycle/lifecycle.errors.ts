/**
 * The error catalogue of model lifecycles (lifecycle/: finding a model's version, loading from the
 * repository and upload sources, admitting a configuration against the server's caps, ensembles'
 * dependencies, a version's admission of requests and its unload), one function per message.
 * Triton's wording where Triton has the message (core `src/model_repository_manager/`
 * `model_repository_manager.cc`, `model_lifecycle.cc`, `src/backend_model.cc`), Warden's otherwise.
 */
import { type TritonError, internal, invalidArg, notFound, unavailable } from '../contract/errors.js';

/** UNAVAILABLE: a load after the server began to stop (Warden's text). */
export function shuttingDown(): TritonError {
  return unavailable('server is shutting down');
}

// A model or version that is not there: shared with the BLS capability, which answers an ungranted
// callee exactly as a missing one.
export { modelNotFound, versionNotFound } from '../contract/model-lookup.errors.js';

/** NOT_FOUND: a model none of whose versions is ready, asked for its latest (Triton's text). */
export function noAvailableVersion(model: string): TritonError {
  return notFound(`Request for unknown model: '${model}' has no available versions`);
}

/** UNAVAILABLE: a version known but not ready, or no longer accepting requests (Triton's text). */
export function versionNotReady(model: string, version: number): TritonError {
  return unavailable(`Request for unknown model: '${model}' version ${version} is not at ready state`);
}

/** INVALID_ARG: file overrides without a `config` override (Triton's text). */
export function overridesNeedConfig(model: string): TritonError {
  return invalidArg(`failed to load '${model}', failed to poll from model repository: model configuration must be provided when file overrides are given`);
}

/** INTERNAL: no source holds the model (Triton's text, LoadUnloadModel when the poll found nothing). */
export function pollFailed(model: string): TritonError {
  return internal(`failed to load '${model}', failed to poll from model repository`);
}

/** INVALID_ARG: a model in two or more repositories (Triton's text; `problem` the index's reason). */
export function modelNotUnique(model: string, problem: string): TritonError {
  return invalidArg(`failed to load '${model}', ${problem}`);
}

/** UNAVAILABLE: a load with files while the upload store is disabled; `why` the operator's reason (Warden's text). */
export function uploadsRefused(model: string, why: string): TritonError {
  return unavailable(`failed to load '${model}': uploads are refused: ${why}`);
}

/** UNAVAILABLE: the load / unload API outside explicit mode (Triton's text). */
export function explicitOnly(): TritonError {
  return unavailable('explicit model load / unload is not allowed if polling is enabled');
}

/** INVALID_ARG: the version policy selects no version (Triton's text). */
export function noVersionAvailable(model: string): TritonError {
  return invalidArg(`failed to load '${model}', no version is available`);
}

/** INVALID_ARG: a backend's auto-completed configuration that is an ensemble's (Warden's text). */
export function backendMadeEnsemble(model: string): TritonError {
  return invalidArg(`model '${model}': the configuration its backend completed is an ensemble's, which has no backend`);
}

/** INVALID_ARG: no backend serves the model's backend or platform (Triton's text). */
export function backendNotFound(backend: string): TritonError {
  return invalidArg(`unable to find backend library for backend '${backend}'`);
}

/** INVALID_ARG: a KIND_GPU instance group on a server without GPUs (Triton's text). */
export function gpuUnavailable(group: string, model: string): TritonError {
  return invalidArg(`instance group ${group} of model ${model} has kind KIND_GPU but no GPUs are available`);
}

/** INVALID_ARG: ensembles that depend on each other in a cycle (Warden's text). */
export function ensembleCycle(name: string, ensemble: string): TritonError {
  return invalidArg(`circular dependency between ensembles: ${name} -> ... -> ${ensemble} -> ${name}`);
}

/** INVALID_ARG: a model that names files (labels, initial state) with no directory to read them from (Warden's text). */
export function configFilesNoDirectory(model: string): TritonError {
  return invalidArg(`model '${model}' names files (label_filename, initial_state data_file) but has no model directory`);
}

/** INVALID_ARG: more instances than the server allows per model (Warden's text). */
export function instancesOverServerCap(model: string, n: number, cap: number): TritonError {
  return invalidArg(`model '${model}' asks for ${n} instances, more than this server allows per model (${cap}; --max-instances-per-model)`);
}

/** INVALID_ARG: a configuration field over the server's bound; `flag` the option that sets it (Warden's text). */
export function overServerBound(model: string, what: string, n: number, cap: number, flag: string): TritonError {
  return invalidArg(`model '${model}': ${what} ${n} exceeds this server's bound ${cap} (--${flag})`);
}

/**
 * INVALID_ARG: an uploaded model naming a backend uploads may not use; `what` names it (`backend 'x'`,
 * `platform 'y'`, `no backend`), `allowed` the kinds that may be uploaded (Warden's text).
 */
export function uploadBackendRefused(model: string, what: string, allowed: string): TritonError {
  return invalidArg(
    `model '${model}' names ${what}, which cannot be loaded from uploaded files (allowed: ${allowed}); native and Python backends are installed by the operator on the server's disk`,
  );
}

/** INVALID_ARG: an uploaded model setting `runtime` (Warden's text). */
export function uploadRuntimeRefused(model: string, runtime: string): TritonError {
  return invalidArg(`model '${model}' sets runtime '${runtime}', which uploaded models may not set`);
}

/** UNAVAILABLE: a version that reports itself unhealthy; `why` its reason (Warden's text). */
export function versionUnhealthy(model: string, version: number, why: string): TritonError {
  return unavailable(`model '${model}' version ${version} is unavailable: ${why}`);
}

/** UNAVAILABLE: a request still unanswered when its version's unload drain bound passed (Warden's text). */
export function unloadTimedOut(model: string, version: number): TritonError {
  return unavailable(`model '${model}' version ${version} is unloading: the request did not finish within the exit timeout`);
}

/** UNAVAILABLE: a request still queued when its version unloads (Warden's text). */
export function versionUnloading(model: string, version: number): TritonError {
  return unavailable(`model '${model}' version ${version} is unloading`);
}
