/** @module Interface warden:backend/inference@0.1.1 **/
/**
 * Calls a model that sends one response per request (not decoupled) and waits for it.
 * Errors: the callee's error response; `not-found` for a model that is not granted, or does
 * not exist, or is not ready; `invalid-arg` for a bad request, a decoupled callee (use
 * `start` and `next`), a call past the depth limit or back into its own chain;
 * `unavailable` when the caller's deadline passes first, past the in-flight limit or the
 * memory limit, or when the owner is over its rate or quota; `unsupported` outside `execute`.
 */
export function infer(request: InferenceRequest): Response;
/**
 * Starts a call and returns at once; its responses are read with `next`. Any callee,
 * decoupled or not. Same errors as `infer`, for what can be checked before the call runs.
 */
export function start(request: InferenceRequest): CallHandle;
/**
 * The next response of a started call, waiting until it arrives (or the caller's deadline):
 * `ok(some)` a response; `ok(none)` the call is complete (after its final response, or a
 * decoupled callee's flags-only final); `err` an error response, which completes the call.
 * After `ok(none)` or `err`, the handle is gone: `err(not-found)`.
 */
export function next(call: CallHandle): Response | undefined;
/**
 * Cancels a started call (`TRITONSERVER_InferenceRequestCancel`); the handle is gone. An
 * unknown handle is ignored.
 */
export function cancel(call: CallHandle): void;
export type Error = import('./warden-backend-types.js').Error;
export type Tensor = import('./warden-backend-types.js').Tensor;
export type Parameter = import('./warden-backend-types.js').Parameter;
export type Response = import('./warden-backend-types.js').Response;
/**
 * A call started with `start`, valid until `next` returned its last result (`ok(none)` or
 * `err`), `cancel`, or the end of the `execute` that started it.
 */
export type CallHandle = number;
/**
 * An inference request on another model (`TRITONSERVER_InferenceRequest`, spec §7.2
 * `pb_utils.InferenceRequest`).
 */
export interface InferenceRequest {
  /**
   * Model to call: a name the configuration grants.
   */
  modelName: string,
  /**
   * Version to call; -1: the version the server picks (the highest ready one, per the
   * model's version policy). Must be one the grant allows.
   */
  modelVersion: bigint,
  /**
   * Request id (may be empty).
   */
  id: string,
  /**
   * Input tensors (name, datatype, shape, little-endian data; BYTES elements each a 4-byte
   * little-endian length and the bytes), as in a client request.
   */
  inputs: Array<Tensor>,
  /**
   * Outputs wanted; empty: every output of the callee.
   */
  requestedOutputs: Array<string>,
  /**
   * Request parameters.
   */
  parameters: Array<Parameter>,
  /**
   * Timeout of the call in µs; 0: the rest of the caller's execute deadline. Never more than
   * that rest.
   */
  timeoutUs: bigint,
}
