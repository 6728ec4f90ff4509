/**
 * The error catalogue of inference from a sandboxed backend (contract/bls.ts,
 * backends/wasm/host/inference.ts), one function per message. Warden's text (Triton has no
 * capabilities or limits on BLS).
 */
import { type TritonError, internal, invalidArg, unavailable, unsupported } from './errors.js';

/** INVALID_ARG: a grant parameter whose key names no valid model. */
export function grantName(model: string, key: string, problem: string): TritonError {
  return invalidArg(`model '${model}': parameter '${key}' grants no valid model name (${problem})`);
}

/** INVALID_ARG: a grant whose value is neither `*` nor version numbers. */
export function grantVersions(model: string, key: string, value: string): TritonError {
  return invalidArg(`model '${model}': parameter '${key}' must be '*' or comma-separated version numbers, got '${value.slice(0, 64)}'`);
}

/** INVALID_ARG: more grants than a configuration may hold. */
export function tooManyGrants(model: string, max: number): TritonError {
  return invalidArg(`model '${model}': more than ${max} 'bls_model:' grants`);
}

/** INVALID_ARG at load: a granted model the owner cannot call (unknown, not shared, or not ready). */
export function grantUnresolved(model: string, callee: string, reason: string): TritonError {
  return invalidArg(`model '${model}': granted model '${callee}' cannot be called: ${reason}`);
}

/** INVALID_ARG: a non-decoupled `infer` on a decoupled callee. */
export function calleeDecoupled(callee: string): TritonError {
  return invalidArg(`model '${callee}' is decoupled: call it with start and next, not infer`);
}

/** INVALID_ARG: a call deeper than the chain limit. */
export function chainTooDeep(callee: string, max: number): TritonError {
  return invalidArg(`call to model '${callee}' refused: calls nest at most ${max} models deep`);
}

/** INVALID_ARG: a call back into a model already waiting on the chain. */
export function chainCycle(callee: string): TritonError {
  return invalidArg(`call to model '${callee}' refused: the model is already on this call chain (recursion)`);
}

/** UNAVAILABLE: past the calls in flight one execute may have. */
export function tooManyInflight(max: number): TritonError {
  return unavailable(`too many model calls in flight in this execute (at most ${max})`);
}

/** UNAVAILABLE: responses held for the guest past its memory limit. */
export function responsesTooLarge(callee: string, limit: number): TritonError {
  return unavailable(`responses of the call to model '${callee}' exceed the instance's memory limit of ${limit} bytes`);
}

/** UNAVAILABLE: the caller's execute deadline passed (or left no time) before the call answered. */
export function callerDeadline(callee: string): TritonError {
  return unavailable(`call to model '${callee}' ended: the calling execute reached its deadline`);
}

/** UNSUPPORTED: a call outside `execute` (e.g. from `model.create`). */
export function outsideExecute(): TritonError {
  return unsupported('models can be called only during execute');
}

/** INVALID_ARG: a call handle the execute does not have. */
export function unknownCall(handle: number): TritonError {
  return invalidArg(`no call ${handle} in flight in this execute`);
}

/** INTERNAL: a non-decoupled callee that ended its call without a response. */
export function noResponse(callee: string): TritonError {
  return internal(`the call to model '${callee}' ended without a response`);
}
