/**
 * The error catalogue of native (Triton backend API) backends: serving native libraries, their
 * in-process calls into the server (BLS, model control), raw inputs, and the isolated backend host
 * process, one function per message. Warden's text; the raw-input texts Triton has are shared with
 * the HTTP frontend in contract/raw-input.errors.ts.
 */
import { TritonError, internal, invalidArg, unavailable } from '../../contract/errors.js';

/** INVALID_ARG: a native backend for an uploaded model (native code never comes from an upload). */
export function uploadedNotServed(model: string, backend: string): TritonError {
  return invalidArg(`model '${model}' was uploaded: native backend '${backend}' cannot serve uploaded models`);
}

/** INVALID_ARG: a raw input whose model input has a datatype raw bytes cannot carry. */
export function rawInputDatatype(raw: string, model: string, input: string, dataType: string): TritonError {
  return invalidArg(`raw input '${raw}': model '${model}' input '${input}' has datatype ${dataType}`);
}

/** UNAVAILABLE: an in-process call for model metadata in a server without it. */
export function metadataUnavailable(): TritonError {
  return unavailable('model metadata is not available in this server');
}

/** UNAVAILABLE: an in-process call for a model configuration in a server without it. */
export function configUnavailable(): TritonError {
  return unavailable('model configuration is not available in this server');
}

/** UNAVAILABLE: an in-process load / unload in a server without model control. */
export function modelControlUnavailable(): TritonError {
  return unavailable('model control is not available in this server');
}

/** UNAVAILABLE: raw inputs of an in-process request in a server without model configurations. */
export function rawInputsNeedConfig(): TritonError {
  return unavailable('raw inputs need the target model configuration, not available in this server');
}

/** UNSUPPORTED: an in-process call of an unknown kind. */
export function unknownCall(kind: string | number): TritonError {
  return new TritonError('UNSUPPORTED', `unknown in-process call ${kind}`);
}

/** UNAVAILABLE: an in-process call from a model unloaded meanwhile. */
export function callerUnloaded(): TritonError {
  return unavailable('in-process call from a model that is no longer loaded');
}

/** INVALID_ARG: the isolation parameter is neither 'process' nor 'none'. */
export function isolationInvalid(model: string, param: string, value: string): TritonError {
  return invalidArg(`model '${model}': ${param} must be 'process' or 'none', got '${value}'`);
}

/** INVALID_ARG: the ring size parameter over 1 GiB, bytes. */
export function ringBytesTooLarge(model: string, param: string, bytes: number): TritonError {
  return invalidArg(`model '${model}': parameter ${param} must be at most 1 GiB, got ${bytes}`);
}

/** UNAVAILABLE: the model was unloaded while its host process started. */
export function unloadedWhileStarting(model: string): TritonError {
  return unavailable(`model '${model}' was unloaded while its backend host process started`);
}

/** INTERNAL: the host process did not map its rings in time, ms. */
export function ringsTimeout(model: string, limitMs: number): TritonError {
  return internal(`the backend host process of model '${model}' did not map its rings within ${limitMs} ms`);
}

/** UNAVAILABLE: the host process is down (`down`, the supervisor's reason) or restarting. */
export function hostUnavailable(model: string, down: string | undefined): TritonError {
  return unavailable(down ?? `model '${model}' is restarting`);
}

/** INVALID_ARG: a batch the ring codec refuses; `detail` the codec's reason. */
export function batchRefused(model: string, detail: string): TritonError {
  return invalidArg(`model '${model}': ${detail}`);
}

/** INVALID_ARG: a batch larger than the host process's ring, bytes. */
export function batchOverRing(model: string, bytes: number, ringBytes: number, param: string): TritonError {
  return invalidArg(`model '${model}': a batch of ${bytes} bytes does not fit the backend host process's ring of ${ringBytes} bytes (raise ${param})`);
}

/** INTERNAL: the host process was asked to serve before it had rings. */
export function noRings(): TritonError {
  return internal('no rings to serve');
}

/** UNAVAILABLE: the host process was asked for an instance before its model loaded. */
export function hostModelNotLoaded(): TritonError {
  return new TritonError('UNAVAILABLE', 'model not loaded');
}

/** INTERNAL: the host process's backend gave a non-native instance. */
export function notNativeInstance(): TritonError {
  return internal('not a native instance');
}

/** INTERNAL: the host process exited; `exit` describes how (`exited with code 1`, `was killed by SIGKILL`). */
export function hostExited(exit: string): TritonError {
  return internal(`backend host process ${exit}`);
}

/** INTERNAL: a message could not be sent to the host process. */
export function hostUnreachable(detail: string): TritonError {
  return internal(`backend host process unreachable: ${detail}`);
}

/** INTERNAL: a request in flight when its host process failed; `reason` the supervisor's. */
export function failedInFlight(reason: string): TritonError {
  return internal(`${reason} while the request was in flight`);
}

/** UNAVAILABLE: BLS inference from a model whose server offers none. */
export function bridgeInferUnavailable(): TritonError {
  return unavailable('in-process inference is not available to this model');
}

/** UNAVAILABLE: the host process stopped answering or died; `reason` says how. */
export function hostFailed(reason: string): TritonError {
  return unavailable(reason);
}
