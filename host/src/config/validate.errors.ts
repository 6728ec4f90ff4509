/**
 * The error catalogue of model configuration validation (spec §5.3–§5.7; validate.ts), one
 * function per message or per family of messages of one shape. Triton's wording (core
 * `src/model_config_utils.cc` ValidateModelConfig and the checks it calls), typos included, since
 * clients match on it; Warden's where Triton has no such check (a name given twice). Every text is
 * INVALID_ARG. `model` is the configuration's name.
 */
import { type TritonError, invalidArg } from '../contract/errors.js';

const WILDCARD_DIM = -1;
const ENSEMBLE = 'ensemble';

/** `model input` / `model output` and, once named, the tensor's quoted name (Triton's ValidateIOShape prefix). */
const ioOwner = (io: 'input' | 'output', name?: string): string => `model ${io}${name === undefined ? '' : ` '${name}'`}`;

/**
 * A required field unset (Triton's "must specify" texts): `owner` what lacks it (`model input 'x'`,
 * `metric control`, ...), `model` appended as ` for <model>` when given; `nonEmpty`: the field is
 * a list or string that is empty.
 */
export function fieldMissing(owner: string, field: string, model?: string, nonEmpty = false): TritonError {
  return invalidArg(`${owner} must specify ${nonEmpty ? 'non-empty ' : ''}'${field}'${model === undefined ? '' : ` for ${model}`}`);
}

/** An input or output with no name, data type or dims (Triton's ValidateIOShape). */
export function ioFieldMissing(io: 'input' | 'output', name: string, field: 'name' | 'data_type' | 'dims', model: string): TritonError {
  return fieldMissing(ioOwner(io, field === 'name' ? undefined : name), field, model);
}

/** No backend and a platform other than `ensemble`. */
export function platformUnexpected(platform: string, model: string): TritonError {
  return invalidArg(`unexpected platform type '${platform}' for ${model}`);
}

/** A backend and a platform that name different frameworks. */
export function platformBackendMismatch(platform: string, backend: string): TritonError {
  return invalidArg(`unexpected 'platform' and 'backend' pair, got:${platform}, ${backend}`);
}

/** The ensemble platform with a backend. */
export function ensembleHasBackend(model: string, platform: string): TritonError {
  return invalidArg(`Ensemble model '${model}' must have platform type '${platform}' and empty backend type`);
}

/** `ensemble_scheduling` without the ensemble platform (`set`), or the ensemble platform without it. */
export function ensembleSchedulingMismatch(model: string, set: boolean): TritonError {
  return set
    ? invalidArg(`ensemble scheduling cannot be set for model '${model}' whose platform is not ${ENSEMBLE}`)
    : invalidArg(`ensemble scheduling must be set for ensemble ${model} whose platform is ${ENSEMBLE}`);
}

/** A negative max_batch_size. */
export function maxBatchSizeNegative(model: string): TritonError {
  return invalidArg(`'max_batch_size' must be non-negative value for ${model}`);
}

/** No version policy (normalisation sets one; a config that bypasses it). */
export function versionPolicyMissing(model: string): TritonError {
  return invalidArg(`must specify 'version policy' for ${model}`);
}

/** A preferred batch size of the dynamic or the oldest sequence batcher below 1 or (`tooLarge`) over max_batch_size. */
export function preferredBatchSizeInvalid(batcher: 'dynamic' | 'sequence', tooLarge: boolean, model: string): TritonError {
  const what = batcher === 'dynamic' ? 'dynamic batching preferred size' : 'sequence batching preferred batch size';
  return invalidArg(`${what} must be ${tooLarge ? '<= max batch size' : 'positive'} for ${model}`);
}

/** The default priority level, or a queue policy's level, outside [1, priority_levels]. */
export function priorityLevelOutOfRange(of: 'default' | 'queue policy', levels: number, model: string): TritonError {
  const what = of === 'default' ? 'default priority level must be' : 'priority queue policy must have priority level';
  return invalidArg(`${what} in range [1, ${levels}] for ${model}`);
}

/** preserve_ordering with several priority levels, or with a queue policy that delays on timeout. */
export function preserveOrderingConflict(model: string, conflict: 'priority levels' | 'DELAY'): TritonError {
  return conflict === 'DELAY'
    ? invalidArg(`Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${model}`)
    : invalidArg(`Only one priority level is allowed when 'preserve_ordering' is true for ${model}`);
}

/** The response cache on a sequence-batched or decoupled model. */
export function responseCacheUnsupported(model: string, by: 'sequence batching' | 'decoupled'): TritonError {
  const what = by === 'decoupled' ? "'decoupled' transaction policy" : 'sequence batching scheduler';
  return invalidArg(`Response Cache does not currently support model ${model} with ${what}. Please disable the response cache.`);
}

/** A sequence control input with no name, or (`tensor` given) one tensor named for two control kinds. */
export function controlTensorInvalid(model: string, tensor?: string): TritonError {
  if (tensor === undefined) return invalidArg(`sequence batching control tensor must have a name for ${model}`);
  return invalidArg(`sequence batching control tensor '${tensor}' is specified for multiple control kinds for ${model}`);
}

/** One sequence control kind given for two tensors. */
export function controlKindRepeated(kind: string, model: string): TritonError {
  return invalidArg(`sequence batching specifies multiple ${kind} tensors for ${model}`);
}

const FALSE_TRUE = "'int32_false_true', 'fp32_false_true' or 'bool_false_true'";

/**
 * A sequence control kind's false/true values: given for a typed kind (`unexpected`), missing for a
 * boolean one, given in more than one type, or (a field name) with other than 2 entries.
 */
export function controlValuesInvalid(
  problem: 'unexpected' | 'missing' | 'several' | 'int32_false_true' | 'fp32_false_true' | 'bool_false_true',
  kind: string,
  model: string,
): TritonError {
  const suffix = `for ${kind} for ${model}`;
  if (problem === 'unexpected') return invalidArg(`sequence batching must not specify either ${FALSE_TRUE} ${suffix}`);
  if (problem === 'missing') return invalidArg(`sequence batching must specify either ${FALSE_TRUE} ${suffix}`);
  if (problem === 'several') {
    return invalidArg(`sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' ${suffix}`);
  }
  return invalidArg(`sequence batching control '${problem}' must have exactly 2 entries ${suffix}`);
}

/** A CONTROL_SEQUENCE_CORRID tensor of a type a correlation id cannot have. */
export function corridDataTypeInvalid(model: string): TritonError {
  return invalidArg(
    `unexpected data type for control CONTROL_SEQUENCE_CORRID for ${model}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`,
  );
}

/** The direct sequence batcher's minimum_slot_utilization outside [0, 1]. */
export function slotUtilizationOutOfRange(model: string): TritonError {
  return invalidArg(`sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${model}`);
}

/** An ensemble field an ensemble may not have (it runs no instances of its own). */
export function ensembleFieldSet(field: 'instance group' | 'optimization' | 'model_warmup', ensemble: string): TritonError {
  return invalidArg(`${field} ${field === 'model_warmup' ? 'can not' : 'should not'} be specified for ensemble '${ensemble}'`);
}

/** An ensemble without steps, or (`step` given) a step without a model, input map or output map. */
export function ensembleFieldMissing(field: 'step' | 'model_name' | 'input_map' | 'output_map', ensemble: string, step?: number): TritonError {
  return invalidArg(`must specify '${field}' ${step === undefined ? 'for' : `in step ${step} of`} ensemble '${ensemble}'`);
}

/** An ensemble tensor written by two steps; `step` the second. */
export function ensembleTensorWrittenTwice(tensor: string, ensemble: string, step: number): TritonError {
  return invalidArg(`ensemble tensor '${tensor}' can appear in an output map only once for ensemble '${ensemble}' step ${step}`);
}

/** An ensemble input no step reads, or an output no step writes (Triton's text, its stray quote kept). */
export function ensembleIoUnused(io: 'input' | 'output', tensor: string, ensemble: string): TritonError {
  return invalidArg(`ensemble ${io} '${tensor}' for ensemble ${ensemble}' is not used`);
}

/** An ensemble output the steps never write from the inputs; `unconnected` the first tensor on its path that nothing writes. */
export function ensembleOutputNotWritten(output: string, ensemble: string, unconnected?: string): TritonError {
  const why = unconnected === undefined ? '' : `: at least one of its depending tensors, '${unconnected}', is not connected`;
  return invalidArg(`output '${output}' for ensemble '${ensemble}' is not written${why}`);
}

/** An ensemble tensor written but never read (nor an output). */
export function ensembleTensorUnused(tensor: string, ensemble: string): TritonError {
  return invalidArg(`ensemble tensor '${tensor}' is unused in ensemble '${ensemble}'`);
}

/** A non-ensemble model without instance groups. */
export function instanceGroupsMissing(model: string): TritonError {
  return invalidArg(`must specify one or more 'instance group's for ${model}`);
}

/**
 * An instance group whose GPUs do not fit its kind: a CPU or model group that names GPUs
 * (`some`), a GPU group that names none (`none`) or in a server without GPUs (`unavailable`).
 */
export function instanceGpusInvalid(group: string, model: string, kind: string, gpus: 'some' | 'none' | 'unavailable'): TritonError {
  const but = gpus === 'some' ? 'specifies one or more GPUs' : gpus === 'none' ? 'specifies no GPUs' : 'no GPUs are available';
  return invalidArg(`instance group ${group} of model ${model} has kind ${kind} but ${but}`);
}

/** An instance group naming a GPU the server does not have; `supported` the ids it has. */
export function instanceGpuUnsupported(group: string, model: string, id: number, supported: readonly number[]): TritonError {
  return invalidArg(
    `instance group ${group} of model ${model} specifies invalid or unsupported gpu id ${id}. GPUs with at least the minimum required CUDA compute compatibility of 6.000000 are: ${supported.join(', ')}`,
  );
}

/**
 * An instance group's TensorRT profiles: given on another platform, or one that is empty, not a
 * number (Triton's std::stoi failure) or negative.
 */
export function instanceProfileInvalid(
  group: string,
  model: string,
  platform: string,
  problem: 'platform' | 'empty' | 'unparsable' | 'negative',
  profile = '',
): TritonError {
  const where = `instance group ${group} of model ${model} and platform ${platform}`;
  if (problem === 'platform') return invalidArg(`${where} specifies profile field which is only supported for TensorRT models`);
  if (problem === 'empty') return invalidArg('profile name must not be empty');
  if (problem === 'unparsable') return invalidArg(`unable to parse '${profile}': stoi`);
  return invalidArg(`${where} specifies invalid profile ${profile}. The field should contain the string representation of a non-negative integer.`);
}

/** A non-batching model's input or output reshaped to a scalar. */
export function ioReshapeScalar(io: 'input' | 'output', name: string, model: string): TritonError {
  return invalidArg(`${ioOwner(io, name)} cannot have empty reshape for non-batching model as scalar tensors are not supported for ${model}`);
}

/** A dim (or `reshape` dim) below 1 other than -1. */
export function ioDimInvalid(io: 'input' | 'output', name: string, reshape: boolean, model: string): TritonError {
  const dims = reshape ? 'reshape dimensions' : 'dimension';
  return invalidArg(`${ioOwner(io, name)} ${dims} must be integer >= 1, or ${WILDCARD_DIM} to indicate a variable-size dimension for ${model}`);
}

/** Dims and reshape of different element counts, or of different variable-size dimensions. */
export function ioReshapeMismatch(io: 'input' | 'output', name: string, of: 'size' | 'variable-size dimensions', model: string): TritonError {
  const what = of === 'size' ? 'size' : 'number of variable-size dimensions';
  return invalidArg(`${ioOwner(io, name)} has different ${what} for dims and reshape for ${model}`);
}

/** An input or output name given twice (Warden's text). */
export function ioRepeated(io: 'input' | 'output', name: string, model: string): TritonError {
  return invalidArg(`${ioOwner(io, name)} is specified more than once for ${model}`);
}

/** A format that needs 3 dims (NHWC/NCHW inputs, non-linear inputs and outputs) with another rank. */
export function ioNeeds3Dims(format: 'NHWC/NCHW' | 'non-linear input' | 'non-linear output', model: string): TritonError {
  if (format === 'NHWC/NCHW') return invalidArg(`model input NHWC/NCHW require 3 dims for ${model}`);
  return invalidArg(`Non-linear IO format ${format === 'non-linear input' ? 'input' : 'output'} requires 3 dims for ${model}`);
}

/** Shape tensors or a non-linear IO format on a platform other than TensorRT. */
export function ioTensorRtOnly(feature: 'shape tensors' | 'non-linear', model: string): TritonError {
  if (feature === 'shape tensors') return invalidArg(`shape tensors are only supported for TensorRT platform for ${model}`);
  return invalidArg(`Non-linear IO format is only supported for the TensorRT platform for ${model}`);
}

/** A batch input or output of `kind` with other than one source input. */
export function batchIoSourceCount(io: 'input' | 'output', kind: string, count: number, model: string): TritonError {
  return invalidArg(`batch ${io} kind '${kind}' expects 1 source input, got ${count} for ${model}`);
}

/** A batch input of a type other than INT32 or FP32. */
export function batchInputDataType(model: string): TritonError {
  return invalidArg(`batch input data type must be TYPE_INT32 or TYPE_FP32 for ${model}`);
}

/** A batch input's or output's source input the model does not have, or a batch output's unknown target. */
export function batchIoNameUnknown(what: 'source input' | 'target output', name: string, model: string): TritonError {
  return invalidArg(`unknown ${what} name '${name}' for ${model}`);
}

/** A batch output naming one target twice. */
export function batchOutputTargetRepeated(name: string, model: string): TritonError {
  return invalidArg(`target output name '${name}' can only be specified once for ${model}`);
}

/** A model directory whose name is not the configuration's name. */
export function directoryNameMismatch(directory: string, model: string): TritonError {
  return invalidArg(`unexpected directory name '${directory}' for model '${model}', directory name must equal model name`);
}
