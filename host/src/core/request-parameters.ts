/**
 * Request parameters, protocol-neutrally (spec §1.11): the reserved keys Triton turns into request
 * fields (`sequence_id`, `sequence_start`, `sequence_end`, `priority`, `timeout`) and the rule for
 * every other key. Every frontend (HTTP today, gRPC later) decodes parameters through here, once.
 */
import { invalidArg } from './errors.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START, type InferenceRequestInit, type ParameterValue } from './types.js';

/**
 * A pass-through request parameter: string, int, bool or double; `triton_` keys are reserved.
 * @throws TritonError INVALID_ARG with Triton's wording
 */
export function requestParameter(key: string, value: unknown): ParameterValue {
  if (key.startsWith('triton_')) throw invalidArg(`parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.`);
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  // An integer beyond 2^53 from an exact JSON parse: a number (int64 parameters are 53-bit here).
  if (typeof value === 'bigint') return Number(value);
  // Triton's text (it also accepts doubles; the message was not updated when they were added).
  throw invalidArg(`parameter '${key}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
}

/**
 * Apply one request-level parameter to `init`: a reserved key sets its request field
 * (`sequence_id` → correlationId, `sequence_start`/`sequence_end` → flags, `priority`,
 * `timeout` in µs → timeoutUs); any other key is stored in `init.parameters` under the
 * {@link requestParameter} rule. Frontend-specific keys (e.g. HTTP's `binary_data_output`) are the
 * frontend's to handle before calling this.
 * @throws TritonError INVALID_ARG for a reserved key with a value of the wrong type or range
 */
export function applyRequestParameter(init: InferenceRequestInit, key: string, value: unknown): void {
  if (typeof value === 'bigint' && value >= 0n && (key === 'sequence_id' || key === 'priority' || key === 'timeout')) value = Number(value);
  switch (key) {
    case 'sequence_id':
      if (typeof value === 'string') init.correlationId = value;
      else if (typeof value === 'number' && Number.isInteger(value) && value >= 0) init.correlationId = value;
      else throw invalidArg(`'sequence_id' must be an unsigned integer or a string`);
      return;
    case 'sequence_start':
    case 'sequence_end': {
      if (typeof value !== 'boolean') throw invalidArg(`'${key}' must be a boolean`);
      const flag = key === 'sequence_start' ? REQUEST_FLAG_SEQUENCE_START : REQUEST_FLAG_SEQUENCE_END;
      if (value) init.flags |= flag;
      return;
    }
    case 'priority':
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw invalidArg(`'priority' must be an unsigned integer`);
      init.priority = value;
      return;
    case 'timeout':
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw invalidArg(`'timeout' must be an unsigned integer`);
      init.timeoutUs = value;
      return;
    default:
      init.parameters[key] = requestParameter(key, value);
  }
}

/** A request with no inputs and every field at its default, for `model` / `version` (-1 = latest). */
export function emptyRequestInit(model: string, version: number): InferenceRequestInit {
  return { id: '', model, version, tenant: '', inputs: [], requestedOutputs: [], parameters: {}, correlationId: 0, flags: 0, priority: 0, timeoutUs: 0 };
}
