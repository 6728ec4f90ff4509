/**
 * The error catalogue of raw binary inputs (spec §2 "Raw binary request": a body that is the bytes
 * of a model's one input, no JSON header), shared by the HTTP frontend's decoder
 * (frontend/http/infer-request.ts) and native backends' in-process raw inputs
 * (backends/native/raw-input.ts), one function per message. Triton's text (server
 * `src/http_server.cc`). All INVALID_ARG.
 */
import { type TritonError, invalidArg } from './errors.js';

/** A raw request to a model of other than one input; `found` the raw inputs given (1 over HTTP). */
export function rawInputCount(found: number, inputs: number, model: string): TritonError {
  return invalidArg(`Raw request must only have 1 input (found ${found}) to be deduced but got ${inputs} inputs in '${model}' model configuration`);
}

/** A raw BYTES input whose model input's dims are not [1]. */
export function rawBytesShape(input: string): TritonError {
  return invalidArg(`For BYTE datatype raw input '${input}', the model must have input shape [1]`);
}

/** A raw input whose model input has several variable dims. */
export function rawShapeAmbiguous(input: string): TritonError {
  return invalidArg(`The shape of the raw input '${input}' can not be deduced because there are more than one variable-sized dimension`);
}
