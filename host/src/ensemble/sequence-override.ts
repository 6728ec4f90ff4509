/**
 * Sequence settings inside an ensemble, as Triton's ensemble scheduler carries them (core
 * `ensemble_scheduler.cc`: `ConsumeResponse`, `InitStep`, `CheckAndSetEnsembleOutput`; spec §5.6).
 *
 * Every tensor a step produces carries a correlation ID and sequence flags (Triton's
 * `TensorData::Metadata` with `parameter_override_`): the step request's own, or — when the step's
 * response has parameters `sequence_id` (INT or STRING), `sequence_start` / `sequence_end` (BOOL)
 * — the ones those parameters give (the flags start from none: a response that names only
 * `sequence_id` clears START and END; one that names only a flag keeps the step's ID). A step's
 * request takes its ID and flags from the first of its inputs (in the step's `input_map` order)
 * that carries them; an input carrying others is ignored with an error in the log, as Triton;
 * a step that reads only ensemble inputs gets the ensemble request's. So an override reaches every
 * step downstream of the step that answered it, and nothing upstream or beside it. The ensemble's
 * response carries `sequence_id` / `sequence_start` / `sequence_end` from its outputs.
 *
 * Tenancy (DESIGN "Multi-tenancy"): an overriding ID is only ever a request's correlation ID: the
 * step downstream is sent through the data plane on behalf of the ensemble's caller, so the
 * sequence batcher keys it by (caller, ID) and a tenant's ID reaches an operator model's backend
 * under an ID of its own (scheduler/sequence-ids.ts), as a client's ID does.
 */
import { sequenceFlagParamType, sequenceIdParamType } from './ensemble.errors.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START, type InferenceRequest, type ParameterValue } from '../contract/types.js';

/** A sequence correlation id as requests carry it (`InferenceRequest.correlationId`). */
type CorrelationId = InferenceRequest['correlationId'];

/** The correlation ID and `TRITONSERVER_RequestFlag` bits a tensor carries to the steps that read it. */
export interface SequenceTag {
  readonly correlationId: CorrelationId;
  readonly flags: number;
}

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** A Triton INT parameter (int64) as Warden carries it: a bigint, or an integer number within int64. */
function isIntParameter(v: ParameterValue): v is number | bigint {
  if (typeof v === 'bigint') return v >= INT64_MIN && v <= INT64_MAX;
  return typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 63) && v < 2 ** 63;
}

/** An unsigned 64-bit ID as requests carry it: a number up to 2^53 − 1, else a bigint. */
function uint64Id(v: bigint): CorrelationId {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/**
 * The sequence settings a step's response gives the tensors it produces, or undefined when it has
 * none of the three parameters (its tensors then carry the step request's own).
 * @param stepId the correlation ID of the step's request (kept when the response names only flags)
 * @throws TritonError INVALID_ARG with Triton's text when `sequence_id` is not INT or STRING
 *   ("expected parameter 'sequence_id' to be TRITONSERVER_PARAMETER_INT or
 *   TRITONSERVER_PARAMETER_STRING") or a flag is not BOOL ("expect parameter 'sequence_start' to
 *   be TRITONSERVER_PARAMETER_BOOL"); the parameters are read in order and the first wrong one
 *   is reported.
 */
export function responseSequenceOverride(parameters: Readonly<Record<string, ParameterValue>> | undefined, stepId: CorrelationId): SequenceTag | undefined {
  if (!parameters) return undefined;
  let correlationId = stepId;
  let flags = 0;
  let override = false;
  for (const key in parameters) {
    const v = parameters[key]!;
    if (key === 'sequence_id') {
      if (typeof v === 'string') correlationId = v;
      // An INT is read as Triton reads it, its 64 bits as unsigned (-1 is 2^64 − 1).
      else if (isIntParameter(v)) correlationId = uint64Id(BigInt.asUintN(64, BigInt(v)));
      else throw sequenceIdParamType();
      override = true;
    } else if (key === 'sequence_start' || key === 'sequence_end') {
      if (typeof v !== 'boolean') throw sequenceFlagParamType(key);
      if (v) flags |= key === 'sequence_start' ? REQUEST_FLAG_SEQUENCE_START : REQUEST_FLAG_SEQUENCE_END;
      override = true;
    }
  }
  return override ? { correlationId, flags } : undefined;
}

/** Two correlation IDs are the same sequence ID: same kind (integer or string) and value. */
export function sameCorrelationId(a: CorrelationId, b: CorrelationId): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return BigInt(a) === BigInt(b);
}

/**
 * The ID and flags of a step's request: the first input tag (`input_map` order), else the
 * ensemble request's. `onConflict` is called for each later tag that differs (Triton logs it as
 * an error and keeps the first).
 */
export function stepSequence(
  request: SequenceTag,
  inputTags: readonly (SequenceTag | undefined)[],
  onConflict: (used: SequenceTag, ignored: SequenceTag) => void,
): SequenceTag {
  let chosen: SequenceTag | undefined;
  for (const tag of inputTags) {
    if (!tag) continue;
    if (!chosen) chosen = tag;
    else if (!sameCorrelationId(chosen.correlationId, tag.correlationId) || chosen.flags !== tag.flags) onConflict(chosen, tag);
  }
  return chosen ?? request;
}

/**
 * The parameters Triton adds to an ensemble's response for an output carrying `tag`
 * (`CheckAndSetEnsembleOutput`): `sequence_id` typed as the ensemble REQUEST's ID (a string
 * request ID gives the tag's string, '' for an integer tag; otherwise the tag's integer as int64,
 * 0 for a string tag — Triton reads the ID by the request's type), `sequence_start`,
 * `sequence_end`. Triton adds the three once per output (repeated keys in its JSON); Warden once.
 */
export function ensembleResponseSequenceParameters(requestId: CorrelationId, tag: SequenceTag): Record<string, ParameterValue> {
  let id: ParameterValue;
  if (typeof requestId === 'string') id = typeof tag.correlationId === 'string' ? tag.correlationId : '';
  else if (typeof tag.correlationId === 'string') id = 0;
  else {
    const v = BigInt.asIntN(64, BigInt(tag.correlationId));
    id = v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  return {
    sequence_id: id,
    sequence_start: (tag.flags & REQUEST_FLAG_SEQUENCE_START) !== 0,
    sequence_end: (tag.flags & REQUEST_FLAG_SEQUENCE_END) !== 0,
  };
}
