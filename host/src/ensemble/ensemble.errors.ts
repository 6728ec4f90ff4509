/**
 * The error catalogue of ensembles: validating the plan at load (ensemble/plan.ts, ensemble/load.ts),
 * running it (ensemble/run.ts, ensemble/sequence-override.ts) and its per-request caps
 * (ensemble/budget.ts), one function per message. Triton's wording where Triton has the message
 * (core `src/ensemble_scheduler/ensemble_utils.cc` ValidateEnsembleConfig, `ensemble_scheduler.cc`
 * EnsembleContext, `src/model_config_utils.cc` for the response cache), Warden's otherwise.
 */
import { TritonError, forbidden, internal, invalidArg } from '../contract/errors.js';

const dimsText = (d: readonly number[]): string => `[${d.join(',')}]`;

/** INVALID_ARG: a tensor's data type differs between two steps (Triton's text; `prefix` names the tensor). */
export function tensorTypeInconsistent(prefix: string, type: string, model: string, otherType: string, otherModel: string): TritonError {
  return invalidArg(`${prefix}inconsistent data type: ${type} is inferred from model ${model} while ${otherType} is inferred from model ${otherModel}`);
}

/** INVALID_ARG: a tensor's shape differs between two steps (Triton's text). */
export function tensorShapeInconsistent(prefix: string, dims: readonly number[], model: string, otherDims: readonly number[], otherModel: string): TritonError {
  return invalidArg(
    `${prefix}inconsistent shape: ${dimsText(dims)} is inferred from model ${model} while ${dimsText(otherDims)} is inferred from model ${otherModel}`,
  );
}

/** INVALID_ARG: an input_map to an input the step's model lacks (Triton's text). */
export function mapToMissingInput(ensemble: string, tensor: string, input: string, model: string): TritonError {
  return invalidArg(`in ensemble ${ensemble}, ensemble tensor ${tensor} is mapping to non-existing input ${input} in model ${model}`);
}

/** INVALID_ARG: a step's model input with no ensemble tensor (Triton's text). */
export function inputNotMapped(ensemble: string, input: string, model: string): TritonError {
  return invalidArg(`in ensemble ${ensemble}, input ${input} in model ${model} is not mapped to any ensemble tensors`);
}

/** INVALID_ARG: an output_map from an output the step's model lacks (Triton's text). */
export function mapFromMissingOutput(ensemble: string, tensor: string, output: string, model: string): TritonError {
  return invalidArg(`in ensemble ${ensemble}, ensemble tensor ${tensor} is mapped from non-existing output ${output} in model ${model}`);
}

/** INVALID_ARG: a step's max batch size below the ensemble's (Triton's text). */
export function stepBatchTooSmall(ensemble: string, max: number, model: string, stepMax: number): TritonError {
  return invalidArg(
    `ensemble ${ensemble} allows maximum batch size ${max}, but it contains model ${model} which only allows maximum batch size to be ${stepMax}`,
  );
}

/** INVALID_ARG: a step fed by two decoupled models (Triton's text). */
export function mixedDecoupledInputs(ensemble: string, model: string): TritonError {
  return invalidArg(`in ensemble ${ensemble}, step of model '${model}' receives inputs originated from different decoupled models`);
}

/** INVALID_ARG: a step's model name refused by the name rules; `problem` says why (Warden's text). */
export function stepModelNameInvalid(ensemble: string, model: string, problem: string): TritonError {
  return invalidArg(`in ensemble ${ensemble}, invalid model name '${model}' in a step: ${problem}`);
}

/** UNAVAILABLE: the server resolves no inference targets (Warden's, internal to the load). */
export function noServer(): TritonError {
  return new TritonError('UNAVAILABLE', 'no server');
}

/** INVALID_ARG: steps whose models are not available (Triton's text, `model_repository_manager.cc`). */
export function stepsUnavailable(ensemble: string, missing: readonly string[]): TritonError {
  return invalidArg(`ensemble ${ensemble} contains models that are not available or ambiguous: ${missing.join(', ')}`);
}

/** INVALID_ARG: the response cache on a decoupled ensemble (Triton's text, `model_config_utils.cc`). */
export function cacheDecoupled(model: string): TritonError {
  return invalidArg(`Response Cache does not currently support model ${model} with 'decoupled' transaction policy. Please disable the response cache.`);
}

/** INTERNAL: the ensemble ended without some outputs (Triton's text, EnsembleContext). */
export function outputsNotProduced(ensemble: string, missing: readonly string[]): TritonError {
  return internal(`ensemble '${ensemble}' did not produce output(s) ${missing.map((m) => `'${m}'`).join(', ')}`);
}

/** INVALID_ARG: a step's `sequence_id` response parameter of another type (Triton's text). */
export function sequenceIdParamType(): TritonError {
  return invalidArg("expected parameter 'sequence_id' to be TRITONSERVER_PARAMETER_INT or TRITONSERVER_PARAMETER_STRING");
}

/** INVALID_ARG: a step's `sequence_start` / `sequence_end` response parameter not a bool (Triton's text). */
export function sequenceFlagParamType(key: string): TritonError {
  return invalidArg(`expect parameter '${key}' to be TRITONSERVER_PARAMETER_BOOL`);
}

/** AccessError forbidden: a plan's composing inferences over the cap (Warden's text, DESIGN "Multi-tenancy"). */
export function planOverInferenceCap(who: string, inferences: number, max: number): TritonError {
  return forbidden(`${who}: at least ${inferences} composing inferences per request, over the cap of ${max} (max_ensemble_inferences)`);
}

/** AccessError forbidden: ensembles nested over the cap (Warden's text). */
export function nestedTooDeep(who: string, depth: number, max: number): TritonError {
  return forbidden(`${who}: ensembles nested ${depth} deep, over the cap of ${max} (max_ensemble_depth)`);
}

/** AccessError forbidden: one request's composing inferences over the cap (Warden's text). */
export function requestOverInferenceCap(who: string, max: number): TritonError {
  return forbidden(`${who}: more than ${max} composing inferences for one request (max_ensemble_inferences)`);
}

/** AccessError forbidden: one request's inferences in flight over the cap (Warden's text). */
export function requestOverFanout(who: string, max: number): TritonError {
  return forbidden(`${who}: more than ${max} composing inferences in flight for one request (max_ensemble_fanout)`);
}

/** A step's error as the ensemble reports it: the same code, the message prefixed (Triton's text, `EnsembleContext::FinishEnsemble`). */
export function stepFailed(ensemble: string, error: TritonError): TritonError {
  return new TritonError(error.code, `in ensemble '${ensemble}', ${error.message}`);
}
