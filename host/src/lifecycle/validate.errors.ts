/**
 * The error catalogue of request and response validation against the model config (spec §5.4,
 * §1.8, §1.12; lifecycle/validate.ts), one function per message. Triton's wording where Triton has
 * the message (core `src/infer_request.cc` ValidateRequestInputs / Normalize, with its
 * `InferenceRequest::LogRequest` prefix `[request id: <id>] `), Warden's otherwise. Every function
 * takes the request's id as sent ('' for none: `<id_unknown>`, as Triton).
 */
import { type TritonError, internal, invalidArg } from '../contract/errors.js';

const shapeText = (s: readonly number[]): string => `[${s.join(',')}]`;
/** Triton's prefix on its request validation errors (core `infer_request.h` LogRequest). */
const logRequest = (requestId: string): string => `[request id: ${requestId || '<id_unknown>'}] `;
const quotedList = (names: readonly string[]): string => `[${names.map((n) => `'${n}'`).join(',')}]`;

/** Triton's note after a shape error, only for a model with a non-zero max_batch_size (core `infer_request.cc`). */
const IMPLICIT_BATCH_NOTE =
  'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.';

/**
 * INVALID_ARG: required inputs missing (Triton's text, ValidateRequestInputs): names quoted and
 * joined by ',' with no space; "between R and N" when some inputs are optional (`required < total`).
 */
export function inputsMissing(
  requestId: string,
  model: string,
  required: number,
  total: number,
  got: readonly string[],
  missing: readonly string[],
): TritonError {
  const expected = total === required ? `expected ${total} inputs` : `expected number of inputs between ${required} and ${total}`;
  return invalidArg(
    `${logRequest(requestId)}${expected} but got ${got.length} inputs for model '${model}'. Got input(s) ${quotedList(got)}, but missing required input(s) ${quotedList(missing)}. Please provide all required input(s).`,
  );
}

/** INVALID_ARG: an input the model does not declare (Triton's text). */
export function inputUnexpected(model: string, input: string): TritonError {
  return invalidArg(`unexpected inference input '${input}' for model '${model}'`);
}

/** INVALID_ARG: an input given twice (Triton's text). */
export function inputRepeated(requestId: string, input: string): TritonError {
  return invalidArg(`${logRequest(requestId)}input '${input}' already exists in request`);
}

/** INVALID_ARG: an input of another datatype than declared (Triton's text). */
export function inputDatatypeMismatch(requestId: string, input: string, datatype: string, model: string, expected: string): TritonError {
  return invalidArg(`${logRequest(requestId)}inference input '${input}' data-type is '${datatype}', but model '${model}' expects '${expected}'`);
}

/** INVALID_ARG: a batching model's input without a batch dimension (Triton's text). */
export function inputNoBatchDim(requestId: string, input: string, model: string): TritonError {
  return invalidArg(`${logRequest(requestId)}input '${input}' has no shape but model requires batch dimension for '${model}'`);
}

/** INVALID_ARG: inputs with different batch sizes (Triton's text). */
export function inputBatchMismatch(requestId: string, input: string, model: string): TritonError {
  return invalidArg(`${logRequest(requestId)}input '${input}' batch size does not match other inputs for '${model}'`);
}

/** INVALID_ARG: an input's shape against the declared dims (Triton's text; the note when the model batches). */
export function inputShapeMismatch(
  requestId: string,
  input: string,
  model: string,
  expected: readonly number[],
  got: readonly number[],
  batching: boolean,
): TritonError {
  return invalidArg(
    `${logRequest(requestId)}unexpected shape for input '${input}' for model '${model}'. Expected ${shapeText(expected)}, got ${shapeText(got)}. ${batching ? IMPLICIT_BATCH_NOTE : ''}`,
  );
}

/** INVALID_ARG: a BYTES input whose elements do not match its shape; `why` from the element check (Warden's text). */
export function inputBytesInvalid(input: string, model: string, why: string): TritonError {
  return invalidArg(`input '${input}' for model '${model}': ${why}`);
}

/** INVALID_ARG: a fixed-size input's bytes against its shape (Triton's text, `why` its detail). */
export function inputByteSizeMismatch(requestId: string, input: string, model: string, why: string): TritonError {
  return invalidArg(`${logRequest(requestId)}input byte size mismatch for input '${input}' for model '${model}'. ${why}`);
}

/** INVALID_ARG: batch over max_batch_size (Triton's text). */
export function batchTooLarge(requestId: string, model: string, max: number): TritonError {
  return invalidArg(`${logRequest(requestId)}inference request batch-size must be <= ${max} for '${model}'`);
}

/** INVALID_ARG: batch of 0 (Triton's text). */
export function batchTooSmall(model: string): TritonError {
  return invalidArg(`inference request batch-size must be >= 1 for '${model}'`);
}

/** INVALID_ARG: a requested output the model does not declare (Triton's text). */
export function outputUnexpected(model: string, output: string): TritonError {
  return invalidArg(`unexpected inference output '${output}' for model '${model}'`);
}

/** INTERNAL: a backend's output the model does not declare (Warden's text). */
export function backendOutputUnexpected(model: string, output: string): TritonError {
  return internal(`backend produced unexpected output '${output}' for model '${model}'`);
}

/** INTERNAL: a backend's output of a shape other than declared (Warden's text). */
export function backendOutputShape(model: string, output: string, shape: readonly number[], expected: readonly number[]): TritonError {
  return internal(`backend produced output '${output}' of shape ${shapeText(shape)} for model '${model}', expected ${shapeText(expected)}`);
}

/** INTERNAL: a backend's output with a negative or unsafe dimension (Warden's text). */
export function backendOutputInvalidShape(output: string, shape: readonly number[]): TritonError {
  return internal(`backend produced output '${output}' with invalid shape ${shapeText(shape)}`);
}

/** INTERNAL: a backend's output whose data does not match its shape; `why` from the check (Warden's text). */
export function backendOutputBytes(output: string, why: string): TritonError {
  return internal(`backend produced output '${output}' whose data does not match its shape: ${why}`);
}
