/**
 * Request parameters, protocol-neutrally (spec §1.11): the reserved keys Triton turns into request
 * fields (`sequence_id`, `sequence_start`, `sequence_end`, `priority`, `timeout`) and the rule for
 * every other key. Every frontend (HTTP, gRPC) decodes parameters through here, once.
 */
import { jsonAccessError } from '../contract/errors.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START, type InferenceRequestInit, type ParameterValue } from '../contract/types.js';
import { parameterReserved, parameterType } from './inference.errors.js';

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

/**
 * A pass-through request parameter: string, int, bool or double; `triton_` keys are reserved.
 * An integer beyond 2^53 (a `bigint` from the exact JSON parse) stays exact while it fits int64
 * (Triton's `TRITONSERVER_InferenceRequestSetIntParameter`); beyond int64 it is a double, as
 * Triton reads a number that is no int64.
 * @throws TritonError INVALID_ARG with Triton's wording
 */
export function requestParameter(key: string, value: unknown): ParameterValue {
  if (key.startsWith('triton_')) throw parameterReserved();
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value >= INT64_MIN && value <= INT64_MAX ? value : Number(value);
  // Triton's text (it also accepts doubles; the message was not updated when they were added).
  throw parameterType(key);
}

/** A JSON unsigned 64-bit integer (rapidjson `IsUint64`): a non-negative safe integer or a bigint ≤ 2^64−1. */
function isUint64(v: unknown): v is number | bigint {
  return (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'bigint' && v >= 0n && v <= UINT64_MAX);
}

/**
 * Apply one request-level parameter to `init`: a reserved key sets its request field
 * (`sequence_id` → correlationId, `sequence_start`/`sequence_end` → flags, `priority`,
 * `timeout` in µs → timeoutUs); any other key is stored in `init.parameters` under the
 * {@link requestParameter} rule. Frontend-specific keys (e.g. HTTP's `binary_data_output`) are the
 * frontend's to handle before calling this. An integer `sequence_id` beyond 2^53 stays exact
 * (a bigint correlation id), so two such sequences never share a slot.
 * @throws TritonError INTERNAL for a reserved key with a value of the wrong type or range, with
 *   the text of Triton's `ParseJsonTritonParams` (e.g. `Unable to parse 'priority': attempt to
 *   access JSON non-unsigned-integer as unsigned-integer`); INVALID_ARG from {@link requestParameter}
 */
export function applyRequestParameter(init: InferenceRequestInit, key: string, value: unknown): void {
  switch (key) {
    case 'sequence_id':
      // Triton reads an unsigned integer, and failing that a string.
      if (typeof value === 'string') init.correlationId = value;
      else if (isUint64(value)) init.correlationId = typeof value === 'bigint' && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
      else throw jsonAccessError('sequence_id', 'string');
      return;
    case 'sequence_start':
    case 'sequence_end': {
      if (typeof value !== 'boolean') throw jsonAccessError(key, 'boolean');
      const flag = key === 'sequence_start' ? REQUEST_FLAG_SEQUENCE_START : REQUEST_FLAG_SEQUENCE_END;
      if (value) init.flags |= flag;
      return;
    }
    case 'priority':
    case 'timeout': {
      if (!isUint64(value)) throw jsonAccessError(key, 'unsigned-integer');
      // Beyond 2^53 a priority level or a timeout in µs is out of any meaningful range: a double is exact enough.
      const n = Number(value);
      if (key === 'priority') init.priority = n;
      else init.timeoutUs = n;
      return;
    }
    default:
      init.parameters[key] = requestParameter(key, value);
  }
}

/** A request with no inputs and every field at its default, for `model` / `version` (-1 = latest). */
export function emptyRequestInit(model: string, version: number): InferenceRequestInit {
  return { id: '', model, version, tenant: '', inputs: [], requestedOutputs: [], parameters: {}, correlationId: 0, flags: 0, priority: 0, timeoutUs: 0 };
}
