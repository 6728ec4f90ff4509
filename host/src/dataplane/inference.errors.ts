/**
 * The error catalogue of the data plane's inference and model-control calls (dataplane/: request
 * parameters, classification outputs, unary calls, model names, tenants' in-flight and upload
 * quotas), one function per message. Triton's wording where Triton has the message (core
 * `src/infer_request.cc`, `src/infer_response.cc`, `src/tritonserver.cc`), Warden's otherwise.
 */
import { type AccessError, type TritonError, exhausted, forbidden, internal, invalidArg } from '../contract/errors.js';

/** INVALID_ARG: a request parameter named `triton_...` (Triton's text). */
export function parameterReserved(): TritonError {
  return invalidArg(`parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.`);
}

/** INVALID_ARG: a request parameter of another type than int, bool, string or double (Triton's text: it omits double). */
export function parameterType(key: string): TritonError {
  return invalidArg(`parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
}

/** INVALID_ARG: classification of an output whose datatype has no order (Triton's text). */
export function classificationType(datatype: string): TritonError {
  return invalidArg(`class result not available for output due to unsupported type '${datatype}'`);
}

/** INVALID_ARG: classification of a named output whose datatype has no order (Triton's text). */
export function classificationOutputType(output: string, datatype: string): TritonError {
  return invalidArg(`class result not available for output '${output}' due to unsupported type '${datatype}'`);
}

/** INVALID_ARG: classification of an output of more elements than the bound (Warden's text). */
export function classificationTooLarge(output: string, elements: number, max: number): TritonError {
  return invalidArg(`output '${output}' has ${elements} elements, more than classification supports (${max})`);
}

/** INTERNAL: a unary call answered by other than one response (Triton's core wording). */
export function responseCountNotOne(count: number): TritonError {
  return internal(`expected a single response, got ${count}`);
}

/** INVALID_ARG: statistics for a model the caller cannot see or that has no such version (Triton's text). */
export function modelNotAvailable(model: string): TritonError {
  return invalidArg(`requested model '${model}' is not available`);
}

/** INVALID_ARG: a load / unload of a name that is not a model name; `shown` the quoted name, `problem` why (Warden's text). */
export function modelNameInvalid(shown: string, problem: string): TritonError {
  return invalidArg(`invalid model name ${shown}: ${problem}`);
}

/** Access error `exhausted`: a tenant at its in-flight quota; retry after 1 s (Warden's text). */
export function inflightQuota(tenant: string, inflight: number): AccessError {
  return exhausted(`tenant '${tenant}' has ${inflight} inference requests in flight, its quota (max_inflight)`, 1);
}

/** Access error `forbidden`: an upload over the tenant's per-load quota, bytes (Warden's text). */
export function uploadQuota(tenant: string, bytes: number, max: number): AccessError {
  return forbidden(`upload of ${bytes} bytes exceeds tenant '${tenant}''s quota of ${max} bytes (max_upload_bytes)`);
}
