/** @module Interface warden:backend/types@0.1.1 **/
/**
 * A Triton datatype (spec §1.9). The cases are in `TRITONSERVER_DataType` order, so the C
 * enum value of a case is its index + 1 (`INVALID` = 0 has no case: it can never travel).
 * Protocol names are the case names in upper case (`fp32` = `FP32`); the model-config name
 * is `TYPE_` + that (`bytes` = `TYPE_STRING`).
 * # Variants
 * 
 * ## `"bool"`
 * 
 * `BOOL`: 1 byte per element, 0 = false, anything else = true.
 * ## `"uint8"`
 * 
 * `UINT8`: 1 byte per element.
 * ## `"uint16"`
 * 
 * `UINT16`: 2 bytes per element, little-endian.
 * ## `"uint32"`
 * 
 * `UINT32`: 4 bytes per element, little-endian.
 * ## `"uint64"`
 * 
 * `UINT64`: 8 bytes per element, little-endian.
 * ## `"int8"`
 * 
 * `INT8`: 1 byte per element, two's complement.
 * ## `"int16"`
 * 
 * `INT16`: 2 bytes per element, little-endian two's complement.
 * ## `"int32"`
 * 
 * `INT32`: 4 bytes per element, little-endian two's complement.
 * ## `"int64"`
 * 
 * `INT64`: 8 bytes per element, little-endian two's complement.
 * ## `"fp16"`
 * 
 * `FP16`: IEEE 754 binary16, 2 bytes per element, little-endian.
 * ## `"fp32"`
 * 
 * `FP32`: IEEE 754 binary32, 4 bytes per element, little-endian.
 * ## `"fp64"`
 * 
 * `FP64`: IEEE 754 binary64, 8 bytes per element, little-endian.
 * ## `"bytes"`
 * 
 * `BYTES` (`TYPE_STRING` in model configs): variable size; every element is a 4-byte
 * little-endian u32 length followed by that many bytes, elements concatenated with no
 * padding (the binary tensor extension's layout, spec §2).
 * ## `"bf16"`
 * 
 * `BF16`: bfloat16, 2 bytes per element, little-endian.
 */
export type DataType = 'bool' | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'int8' | 'int16' | 'int32' | 'int64' | 'fp16' | 'fp32' | 'fp64' | 'bytes' | 'bf16';
/**
 * `TRITONSERVER_Error_Code` (spec §6.5), in C enum order. The HTTP status a client sees is
 * derived from it (spec §1.2): `internal` 500, `not-found` 404, `unavailable` 503,
 * `unsupported` 501, everything else 400.
 * # Variants
 * 
 * ## `"unknown"`
 * 
 * `TRITONSERVER_ERROR_UNKNOWN`.
 * ## `"internal"`
 * 
 * `TRITONSERVER_ERROR_INTERNAL`: a bug or failure inside the backend.
 * ## `"not-found"`
 * 
 * `TRITONSERVER_ERROR_NOT_FOUND`: e.g. a file or tensor that does not exist.
 * ## `"invalid-arg"`
 * 
 * `TRITONSERVER_ERROR_INVALID_ARG`: the request (or config) is wrong.
 * ## `"unavailable"`
 * 
 * `TRITONSERVER_ERROR_UNAVAILABLE`: try again later.
 * ## `"unsupported"`
 * 
 * `TRITONSERVER_ERROR_UNSUPPORTED`: the backend does not do that.
 * ## `"already-exists"`
 * 
 * `TRITONSERVER_ERROR_ALREADY_EXISTS`.
 * ## `"cancelled"`
 * 
 * `TRITONSERVER_ERROR_CANCELLED`: the request was cancelled.
 */
export type ErrorCode = 'unknown' | 'internal' | 'not-found' | 'invalid-arg' | 'unavailable' | 'unsupported' | 'already-exists' | 'cancelled';
/**
 * An error (`TRITONSERVER_Error`): a code and a human-readable message. The message reaches
 * the client verbatim, so it should say what was wrong with which tensor or parameter.
 */
export interface Error {
  code: ErrorCode,
  message: string,
}
/**
 * A tensor in host byte order (little-endian), row-major, no padding (spec §1.10).
 * 
 * `data` holds exactly `product(shape) * byte-size(datatype)` bytes for fixed-size
 * datatypes; for `bytes` it holds `product(shape)` length-prefixed elements. When the model
 * batches (`max_batch_size > 0`) the first dimension of `shape` is the batch dimension.
 */
export interface Tensor {
  /**
   * Input or output name, as in the model configuration.
   */
  name: string,
  datatype: DataType,
  /**
   * Dimensions; every entry is >= 0 (the host resolves `-1` dims before execute and
   * checks outputs against the config after it).
   */
  shape: BigInt64Array,
  /**
   * Raw bytes of the tensor.
   */
  data: Uint8Array,
}
/**
 * The value of a request or response parameter (`TRITONSERVER_ParameterType` STRING, INT,
 * BOOL, DOUBLE; spec §1.11, §3.8). JSON integers arrive as `int`, other numbers as `double`.
 */
export type ParameterValue = ParameterValueString | ParameterValueInt | ParameterValueBool | ParameterValueDouble;
export interface ParameterValueString {
  tag: 'string',
  val: string,
}
export interface ParameterValueInt {
  tag: 'int',
  val: bigint,
}
export interface ParameterValueBool {
  tag: 'bool',
  val: boolean,
}
export interface ParameterValueDouble {
  tag: 'double',
  val: number,
}
/**
 * One named parameter. Keys are unique within a list; reserved keys (`sequence_id`,
 * `priority`, `triton_*`, ...) never reach a backend.
 */
export interface Parameter {
  key: string,
  value: ParameterValue,
}
/**
 * A sequence correlation id (`TRITONBACKEND_RequestCorrelationId[String]`, spec §3.7):
 * Triton ids are either unsigned 64-bit integers or strings; 0 / "" mean "no sequence" and
 * arrive as `none`.
 */
export type CorrelationId = CorrelationIdNone | CorrelationIdInt | CorrelationIdString;
export interface CorrelationIdNone {
  tag: 'none',
}
export interface CorrelationIdInt {
  tag: 'int',
  val: bigint,
}
export interface CorrelationIdString {
  tag: 'string',
  val: string,
}
/**
 * `TRITONSERVER_RequestFlag` bits (spec §6.5).
 */
export interface RequestFlags {
  /**
   * `TRITONSERVER_REQUEST_FLAG_SEQUENCE_START` (1): first request of a sequence.
   */
  sequenceStart?: boolean,
  /**
   * `TRITONSERVER_REQUEST_FLAG_SEQUENCE_END` (2): last request of a sequence.
   */
  sequenceEnd?: boolean,
}
/**
 * Identifies one in-flight request of one instance, for the `host` functions that act on a
 * request (`send-response`, `send-final`, `is-cancelled`). Valid only while the `execute`
 * call that received the request runs.
 */
export type RequestHandle = number;
/**
 * One inference request (`TRITONBACKEND_Request`), after the host validated it against
 * the model configuration (datatypes, shapes, batch size).
 */
export interface Request {
  /**
   * Handle for the `host` functions that act on this request.
   */
  handle: RequestHandle,
  /**
   * The client's request id (`TRITONBACKEND_RequestId`); "" if none.
   */
  id: string,
  /**
   * Sequence correlation id (`TRITONBACKEND_RequestCorrelationId[String]`).
   */
  correlationId: CorrelationId,
  /**
   * `TRITONBACKEND_RequestFlags`.
   */
  flags: RequestFlags,
  /**
   * Request priority; 0 = the model's default level, 1 = highest.
   */
  priority: number,
  /**
   * Request timeout in microseconds (µs); 0 = none.
   */
  timeoutUs: bigint,
  /**
   * Batch size this request contributes: the first dimension of its inputs when the model
   * batches, else 1.
   */
  batchSize: number,
  /**
   * Input tensors (`TRITONBACKEND_RequestInput*`), in the order the client sent them.
   */
  inputs: Array<Tensor>,
  /**
   * Names of the outputs to produce (`TRITONBACKEND_RequestOutputName`): the client's list,
   * or every output of the model configuration if the client named none (spec §1.12).
   */
  requestedOutputs: Array<string>,
  /**
   * Request parameters (`TRITONBACKEND_RequestParameter`), reserved keys removed.
   */
  parameters: Array<Parameter>,
}
/**
 * One inference response (`TRITONBACKEND_Response`).
 */
export interface Response {
  /**
   * Output tensors, in the order they appear in the response (spec §1.12). Every name must
   * be an output of the model configuration, with its datatype and a shape that matches
   * its dims; the host refuses the response otherwise.
   */
  outputs: Array<Tensor>,
  /**
   * Response parameters (`TRITONBACKEND_ResponseSet*Parameter`); keys must not start with
   * `triton_`.
   */
  parameters: Array<Parameter>,
}
