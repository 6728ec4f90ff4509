/**
 * The error catalogue of the HTTP frontend (frontend/http/: request bodies, the repository and
 * load requests, `/infer`, `/generate`, authentication and restricted APIs), one function per
 * message. Triton's wording where Triton's HTTP server has the message (server
 * `src/http_server.cc`, its JSON wrapper `triton_json.h`), Warden's otherwise. INVALID_ARG unless
 * noted.
 */
import { AccessError, type TritonError, internal, invalidArg, unavailable, unsupported } from '../../contract/errors.js';

/** A model log read's `since` that is not a non-negative integer (Warden's text). */
export function logSinceInvalid(): TritonError {
  return invalidArg(`the query parameter 'since' of a model log read must be a non-negative integer (a line's seq)`);
}

/** A chunked body of more non-empty chunks than the bound (Warden's text). */
export function bodyTooManyChunks(maxChunks: number): TritonError {
  return invalidArg(`Chunked request body exceeds maximum of ${maxChunks} non-empty chunks. Send fewer or larger HTTP chunks.`);
}

/** A compressed body that does not decompress; `detail` zlib's reason (Warden's text). */
export function bodyDecompressFailed(encoding: string, detail: string): TritonError {
  return invalidArg(`failed to decompress the request body (${encoding}): ${detail}`);
}

/** A `Content-Encoding` other than gzip, deflate and identity (Warden's text). */
export function bodyEncodingUnsupported(encoding: string): TritonError {
  return invalidArg(`unsupported Content-Encoding '${encoding}', only 'gzip' and 'deflate' are supported`);
}

/** A JSON body nested deeper than the bound (Triton's text). */
export function jsonTooDeep(maxDepth: number): TritonError {
  return invalidArg(`JSON nesting depth exceeds maximum allowed limit (${maxDepth})`);
}

/** INTERNAL: malformed JSON; `detail` the parser's reason (Triton's TritonJson parse error, 500 as tritonserver answers it). */
export function jsonMalformed(detail: string): TritonError {
  return internal(`failed to parse the request JSON buffer: ${detail}`);
}

/** An `Inference-Header-Content-Length` that is not an int32 of at least 0 (Warden's text). */
export function headerLengthInvalid(value: string): TritonError {
  return invalidArg(`invalid Inference-Header-Content-Length '${value}'`);
}

/** UNSUPPORTED: `/infer` of a decoupled model (Triton's text). */
export function inferDecoupled(): TritonError {
  return unsupported("HTTP end point doesn't support models with decoupled transaction policy");
}

/** A `/generate` input whose elements do not fit its dims (Warden's text). */
export function generateShapeMismatch(elements: number, input: string, dims: readonly number[]): TritonError {
  return invalidArg(`unable to fit ${elements} element(s) of '${input}' into its dims ${JSON.stringify(dims)}`);
}

/** A `/generate` body that is JSON but not an object (Warden's text after Triton's prefix). */
export function generateNotObject(): TritonError {
  return invalidArg('failed to parse the request JSON buffer: the generate request must be a JSON object');
}

/** A `/generate` input named `parameters` beside the keyword (Triton's text). */
export function generateParametersIsInput(): TritonError {
  return invalidArg("Keyword 'parameters' for nested schema also given as input tensor name");
}

/** A `/generate` `parameters` keyword that is not an object (Triton's text). */
export function generateParametersNotObject(): TritonError {
  return invalidArg("Expected JSON object for keyword 'parameters'");
}

/**
 * A `/generate` input given twice (Triton's text: the core's, with LogRequest's prefix, after the
 * keyword being converted for a key inside `parameters`, `http_server.cc` ConvertGenerateRequest).
 */
export function generateInputRepeated(inParameters: boolean, requestId: string, input: string): TritonError {
  const where = inParameters ? "Converting keyword: 'parameters': " : '';
  return invalidArg(`${where}[request id: ${requestId || '<id_unknown>'}] input '${input}' already exists in request`);
}

/** A `/generate` input that is neither a scalar nor a 1-D array (Warden's text). */
export function generateInputNotFlat(input: string): TritonError {
  return invalidArg(`input '${input}' must be a scalar or a 1-D array`);
}

/** A compressed `/generate` body (Triton's text). */
export function generateEncodingUnsupported(): TritonError {
  return invalidArg("Unsupported HTTP header Content-Encoding: only 'identity' is supported for generate");
}

/** `/generate` of a model that answers other than once (Triton's text). */
export function generateNotOneResponse(): TritonError {
  return invalidArg('generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses');
}

/** A repository index body that is not an object (Warden's text). */
export function indexNotObject(): TritonError {
  return invalidArg('index request must be a JSON object');
}

/** An unload body that is not an object (Warden's text). */
export function unloadNotObject(): TritonError {
  return invalidArg('unload request must be a JSON object');
}

/** A load body that is not an object (Warden's text). */
export function loadNotObject(): TritonError {
  return invalidArg('load request must be a JSON object');
}

/**
 * A repository request member of the wrong JSON type (Triton's text, its JSON wrapper behind the
 * frontend's `Unable to parse` prefix); INVALID_ARG as Triton's repository handlers answer it.
 */
export function memberType(field: string, expected: 'boolean' | 'object' | 'string'): TritonError {
  return invalidArg(`Unable to parse '${field}': attempt to access JSON non-${expected} as ${expected}`);
}

/** Access error `unauthenticated`: no credentials, or none the server knows (Warden's text). */
export function authenticationRequired(): AccessError {
  return new AccessError('unauthenticated', 'authentication required');
}

/** Access error `forbidden`: a restricted API without its header (Triton's text, 403). */
export function apiRestricted(header: string): AccessError {
  return new AccessError('forbidden', `This API is restricted, expecting header '${header}'`);
}

/** INTERNAL: a job for the HTTP codec pool after it closed (Warden's text). */
export function codecPoolClosed(): TritonError {
  return internal('the HTTP codec pool is closed');
}

/** INTERNAL: the HTTP codec worker of a job in flight failed; `why` says how (`exited with code 1`). */
export function codecWorkerFailed(why: string): TritonError {
  return internal(`HTTP codec worker ${why}`);
}

/** A request body over `--http-max-input-size`; `size` bytes, or a description (`more than N`) (Triton's text). */
export function requestTooLarge(size: number | string, maxInputSize: number): TritonError {
  return invalidArg(
    `Request JSON size of ${size} bytes exceeds the maximum allowed value of ${maxInputSize} bytes. Use --http-max-input-size to increase the limit.`,
  );
}

/** A response whose JSON outputs could exceed `--http-max-json-output-bytes`, bytes (Warden's text). */
export function jsonResponseTooLarge(model: string, bytes: number, maxBytes: number, largestOutput: string): TritonError {
  return invalidArg(
    `JSON response of model '${model}' could be up to ${bytes} bytes, more than the server's limit of ${maxBytes} bytes ` +
      `(--http-max-json-output-bytes; largest output '${largestOutput}'). Request the outputs in binary: ` +
      `"parameters": {"binary_data": true} on each output, or "binary_data_output": true on the request (binary tensor data extension).`,
  );
}

/** UNAVAILABLE: `--http-data-path=native` without the addon's data path (Warden's text). */
export function dataPathUnavailable(): TritonError {
  return unavailable('--http-data-path=native needs the native addon built with its data path (npm install builds it)');
}
