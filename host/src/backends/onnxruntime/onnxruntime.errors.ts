/**
 * The error catalogue of the ONNX Runtime backend (backends/onnxruntime/: loading a model and its
 * external data, auto-completing its config, running sessions on the in-process engine or
 * onnxruntime-node), one function per message. Triton's wording where its onnxruntime backend has
 * the message (`onnxruntime_backend` `src/onnxruntime.cc`: the allowed-inputs / allowed-outputs
 * texts, "onnxruntime execute failure"), Warden's otherwise. Files are named relative to the model
 * (`<model>/<version>/<file>`), never by host path.
 */
import { type ErrorCode, TritonError, internal, invalidArg, unavailable } from '../../contract/errors.js';

/** INVALID_ARG: the model file's external data cannot be read; `detail` the parser's reason. */
export function modelFileRefused(model: string, version: number, file: string, detail: string): TritonError {
  return invalidArg(`model '${model}': ${model}/${version}/${file}: ${detail}`);
}

/** INVALID_ARG: an integer parameter that is not a non-negative integer. */
export function parameterNotCount(key: string, value: string): TritonError {
  return invalidArg(`parameter '${key}' must be a non-negative integer, got '${value}'`);
}

/** INVALID_ARG: auto-complete found a model input or output that is not a tensor. */
export function autoCompleteNotTensor(name: string): TritonError {
  return invalidArg(`unable to auto-complete config: '${name}' is not a tensor`);
}

/** INVALID_ARG: auto-complete found an ONNX type without a Triton datatype. */
export function autoCompleteType(name: string, type: string): TritonError {
  return invalidArg(`unable to auto-complete config: '${name}' has unsupported type ${type}`);
}

/** UNAVAILABLE: the instance's session cannot be (re)started. */
export function instanceUnavailable(model: string, detail: string): TritonError {
  return unavailable(`onnxruntime instance of model '${model}' is unavailable: ${detail}`);
}

/** UNAVAILABLE: an instance used after finalize. */
export function instanceFinalized(model: string): TritonError {
  return unavailable(`onnxruntime instance of model '${model}' is finalized`);
}

/** INVALID_ARG: an optional input given by some requests of a batch only. */
export function optionalInputPartial(input: string): TritonError {
  return invalidArg(`optional input '${input}' must be given by every request of a batch`);
}

/** INVALID_ARG: an output the model configuration does not declare (Triton's text). */
export function outputUndeclared(output: string, model: string): TritonError {
  return invalidArg(`unexpected inference output '${output}' for model '${model}'`);
}

/** INVALID_ARG: an unknown `inline_engine` parameter. */
export function inlineEngineInvalid(value: string): TritonError {
  return invalidArg(`parameter 'inline_engine' must be 'warden' or 'onnxruntime-node', got '${value}'`);
}

/** INVALID_ARG: a config input the session lacks (Triton's onnxruntime backend text). */
export function sessionInputUnknown(input: string, allowed: readonly string[]): TritonError {
  return invalidArg(`unexpected inference input '${input}', allowed inputs are: ${allowed.join(', ')}`);
}

/** INVALID_ARG: a config output the session lacks (Triton's onnxruntime backend text). */
export function sessionOutputUnknown(output: string, allowed: readonly string[]): TritonError {
  return invalidArg(`unexpected inference output '${output}', allowed outputs are: ${allowed.join(', ')}`);
}

/** INTERNAL: the in-process engine's session has no such input or output; `kind` says which. */
export function engineTensorUnknown(kind: 'input' | 'output', name: string): TritonError {
  return internal(`onnxruntime: the model has no ${kind} '${name}'`);
}

/** INTERNAL: a datatype the in-process engine does not pass. */
export function engineDatatype(datatype: string): TritonError {
  return internal(`onnxruntime: datatype ${datatype} is not passed by the in-process engine`);
}

/** `code` (INTERNAL unless the engine says otherwise): a run failed (Triton's onnxruntime backend text). */
export function executeFailed(detail: string, code: ErrorCode = 'INTERNAL'): TritonError {
  return new TritonError(code, `onnxruntime execute failure: ${detail}`);
}

/** INTERNAL: an output's ONNX element type differs from the configured datatype. */
export function outputTypeMismatch(output: string, onnxType: number, datatype: string): TritonError {
  return internal(`onnxruntime output '${output}' has ONNX element type ${onnxType}, not the ${datatype} of the model configuration`);
}

/** INTERNAL: a run without one of its outputs. */
export function outputMissing(output: string): TritonError {
  return internal(`onnxruntime did not produce output '${output}'`);
}

/** INVALID_ARG: the model nests deeper than the parser's cap. */
export function modelTooDeep(max: number): TritonError {
  return invalidArg(`the ONNX model nests graphs or attributes deeper than ${max} levels`);
}

/** INVALID_ARG: the model names more external-data entries than the cap. */
export function tooManyExternalEntries(max: number): TritonError {
  return invalidArg(`the ONNX model names more than ${max} external-data entries`);
}

/** INVALID_ARG: the model's protobuf cannot be parsed; `detail` cut at 200 characters. */
export function modelUnparsable(detail: string): TritonError {
  return invalidArg(`the ONNX model cannot be parsed: ${detail.slice(0, 200)}`);
}

/** INVALID_ARG: ONNX Runtime refused the model file; `file` as the server read it, `detail` its reason. */
export function sessionLoadFailed(model: string, file: string, detail: string): TritonError {
  return invalidArg(`failed to load ONNX model '${model}' from ${file}: ${detail}`);
}

/** INTERNAL: the session worker thread threw while it started. */
export function workerStartFailed(model: string, detail: string): TritonError {
  return internal(`onnxruntime worker of model '${model}' failed during start-up: ${detail}`);
}

/** INTERNAL: the session worker thread exited while it started. */
export function workerExitedAtStart(model: string, code: number): TritonError {
  return internal(`onnxruntime worker of model '${model}' exited during start-up (code ${code})`);
}

/** INTERNAL: a run on a session already running one. */
export function sessionBusy(): TritonError {
  return internal('onnxruntime session is already running');
}

/** INTERNAL: a run on a session its model released. */
export function sessionReleased(model: string): TritonError {
  return internal(`onnxruntime session of model '${model}' was released`);
}

/** UNSUPPORTED: a datatype onnxruntime-node has no tensor type for. */
export function datatypeUnsupported(datatype: string): TritonError {
  return new TritonError('UNSUPPORTED', `datatype ${datatype} is not supported by the onnxruntime backend`);
}
