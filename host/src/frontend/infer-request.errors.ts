/**
 * The error catalogue of decoding an inference request (spec §1.8, §2 binary data), shared by
 * both frontends' decoders (frontend/http/infer-request.ts, frontend/grpc/infer.ts), one function
 * per message. Triton's wording where Triton has the message (server `src/http_server.cc`
 * HTTPAPIServer::InferRequestClass / ParseJsonTritonIO / ValidateInputContentType, `src/grpc/infer_handler.cc`
 * InferGRPCToInput / SetInferenceRequestMetadata), Warden's otherwise. Every text is INVALID_ARG
 * unless noted. The raw-input texts native backends share are in contract/raw-input.errors.ts.
 */
import { type TritonError, internal, invalidArg } from '../contract/errors.js';

/** A tensor's shared-memory region parameter that is not a string; `what` names the tensor (`input 'x'`). Warden's text. */
export function shmRegionNotString(what: string): TritonError {
  return invalidArg(`'shared_memory_region' of ${what} must be a string`);
}

/** A tensor's `shared_memory_offset` / `shared_memory_byte_size` that is not a non-negative integer (Warden's text). */
export function shmParamNotCount(key: string, what: string): TritonError {
  return invalidArg(`'${key}' of ${what} must be a non-negative integer`);
}

/** A tensor in shared memory without `shared_memory_byte_size` (Warden's text). */
export function shmByteSizeMissing(what: string): TritonError {
  return invalidArg(`'shared_memory_byte_size' must be set for ${what} in shared memory`);
}

/** INTERNAL: HTTP `parameters` that is not an object (Triton's text, `http_server.cc`, from its JSON wrapper). */
export function requestParamsNotObject(): TritonError {
  return internal(`failed to get request params.: attempt to get members for non-object`);
}

/** An HTTP input with none or several of its data sources (Triton's text, `http_server.cc` ValidateInputContentType). */
export function inputContentTypeInvalid(data: boolean, binary: boolean, shm: boolean): TritonError {
  let err = "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But";
  if (!data && !binary && !shm) err += ' no field is set';
  else err += ` set${data ? " 'data'" : ''}${binary ? " 'binary_data_size'" : ''}${shm ? " 'shared_memory_region'" : ''}`;
  return invalidArg(err);
}

/** A shape whose element count or byte size does not fit in 64 bits (Warden's text; Triton's int64 arithmetic). */
export function shapeOverflow(shape: readonly unknown[], input: string): TritonError {
  return invalidArg(`the shape [${shape.map(String).join(',')}] of input '${input}' is too large: its element count or byte size overflows`);
}

/** An `Inference-Header-Content-Length` past the body (Triton's text). */
export function requestJsonShort(missingBytes: number): TritonError {
  return invalidArg(`unexpected size for request JSON, expecting ${missingBytes} more bytes`);
}

/** An HTTP request body that is JSON but not an object (Warden's text after Triton's prefix). */
export function requestNotObject(): TritonError {
  return invalidArg('failed to parse the request JSON buffer: the inference request must be a JSON object');
}

/** An input of an unknown datatype (Triton's text). */
export function inputDatatypeInvalid(input: string): TritonError {
  return invalidArg(`invalid datatype for input ${input}`);
}

/** An input's `binary_data_size` past the body (Triton's text). */
export function inputBinaryShort(input: string, binarySize: number | bigint, model: string): TritonError {
  return invalidArg(`unexpected size for input '${input}', expecting ${binarySize} additional bytes for model '${model}'`);
}

/** Binary data after the last input (Triton's text). */
export function inputDataExtra(model: string): TritonError {
  return invalidArg(`unexpected additional input data for model '${model}'`);
}

/** An output requested twice (Triton's text). */
export function outputRepeated(output: string): TritonError {
  return invalidArg(`output '${output}' already exists in request`);
}

/** A raw binary request whose body does not fill the input's dims, bytes (Triton's text, Warden's detail). */
export function rawShapeMismatch(input: string, bytes: number, dims: readonly number[]): TritonError {
  return invalidArg(`The shape of the raw input '${input}' can not be deduced: ${bytes} bytes do not fit dims ${JSON.stringify(dims)}`);
}

/** A gRPC `model_version` that is not a non-negative integer (Triton's text, `grpc/infer_handler.cc`, with Warden's details). */
export function versionInvalid(version: string): TritonError {
  return invalidArg(`failed to get model version from specified version string '${version}' (details: version must be a non-negative integer)`);
}

/** A gRPC parameter with no value set (Warden's text). */
export function parameterNoValue(key: string): TritonError {
  return invalidArg(`parameter '${key}' has no value`);
}

/** A gRPC input shape with a negative dim (Warden's text after Triton's prefix). */
export function shapeDimNegative(input: string): TritonError {
  return invalidArg(`Unable to parse 'shape' for input '${input}': dims must be non-negative integers`);
}

/** A gRPC input with both `contents` and a shared-memory region (Warden's text). */
export function inputContentsAndShm(input: string, model: string): TritonError {
  return invalidArg(`input '${input}' sets both contents and shared_memory_region for model '${model}'`);
}

/** A gRPC request with both `contents` and `raw_input_contents` (Triton's text, `grpc/infer_handler.cc`). */
export function inputContentsAndRaw(input: string, model: string): TritonError {
  return invalidArg(`contents field must not be specified when using raw_input_contents for '${input}' for model '${model}'`);
}

/** A gRPC input with no data anywhere (Triton's text). */
export function inputDataMissing(input: string, model: string): TritonError {
  return invalidArg(`unable to find data for input tensor '${input}' for model '${model}' in request.`);
}

/** A gRPC output's `classification` that is not an unsigned integer (Warden's text). */
export function classificationNotCount(output: string): TritonError {
  return invalidArg(`'classification' of output '${output}' must be an unsigned integer`);
}

/** A gRPC `triton_enable_empty_final_response` that is not a bool (Triton's text, `grpc/stream_infer_handler.cc`). */
export function emptyFinalResponseNotBool(): TritonError {
  return invalidArg(`invalid value type for 'triton_enable_empty_final_response' parameter, expected bool_param.`);
}

/** A gRPC input of a datatype `InferTensorContents` has no list for (Warden's text). */
export function contentsNoList(datatype: string, input: string): TritonError {
  return invalidArg(`${datatype} input '${input}' must be sent in raw_input_contents: InferTensorContents has no ${datatype} list`);
}

/** A gRPC input with elements in other lists than its datatype's (Warden's text). */
export function contentsOtherLists(input: string, datatype: string, field: string): TritonError {
  return invalidArg(`input '${input}' of datatype ${datatype} must carry its elements in '${field}' only`);
}

/** A gRPC input whose `contents` count differs from the shape's (Warden's text). */
export function contentsCountMismatch(field: string, input: string, elements: number, got: number): TritonError {
  return invalidArg(`unexpected number of elements in '${field}' for input '${input}': the shape has ${elements}, got ${got}`);
}
