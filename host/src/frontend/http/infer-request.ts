/**
 * Decoding of `POST /v2/models/{m}[/versions/{v}]/infer` bodies: the JSON inference header
 * (spec §1.8, §1.11, §1.12), the binary tensor data extension (spec §2) and raw-binary requests.
 */
import type { ModelConfig } from '../../contract/model-config.js';
import { jsonAccessError } from '../../contract/errors.js';
import * as err from '../infer-request.errors.js';
import { applyRequestParameter, emptyRequestInit } from '../../dataplane/request-parameters.js';
import type { InferenceRequestInit, Tensor } from '../../contract/types.js';
import type { ShmAccess, ShmTarget } from '../../dataplane/shared-memory.js';
import { tensorDataType } from '../../contract/datatypes.js';
import { clientShmDisabled, isJsonObject } from './body.js';
import { isDataType, dataTypeByteSize, elementCount } from '../../contract/datatypes.js';
import { jsonToTensorData } from '../../tensor/json.js';
import { encodeBytesElements } from '../../tensor/bytes.js';
import { parseRequestJson } from './json-text.js';
import * as rawInput from '../../contract/raw-input.errors.js';

/** How each output is to be returned: `binary` = binary tensor data extension. */
export interface OutputFormats {
  /** `binary_data_output` request parameter (default for outputs without their own setting). */
  defaultBinary: boolean;
  perOutput: Map<string, boolean>;
  /** Outputs the client placed in a system shared-memory region (spec §3.3): written there, not in the body. */
  shm?: Map<string, ShmTarget>;
}

/**
 * The `shared_memory_*` parameters of one tensor (spec §3.3). @throws TritonError INVALID_ARG for
 * a non-string region or a size / offset that is not a non-negative integer
 */
function shmTarget(p: Record<string, unknown>, what: string): ShmTarget {
  const region = p.shared_memory_region;
  if (typeof region !== 'string') throw err.shmRegionNotString(what);
  const num = (v: unknown, key: string): number => {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw err.shmParamNotCount(key, what);
    return n;
  };
  if (p.shared_memory_byte_size === undefined) throw err.shmByteSizeMissing(what);
  return {
    region,
    byteSize: num(p.shared_memory_byte_size, 'shared_memory_byte_size'),
    offset: p.shared_memory_offset === undefined ? 0 : num(p.shared_memory_offset, 'shared_memory_offset'),
  };
}

export interface DecodedInferRequest {
  init: InferenceRequestInit;
  formats: OutputFormats;
}

/**
 * Request-level `parameters` (spec §1.11): HTTP's own `binary_data_output` (and the ignored
 * `headers`) here; reserved keys and pass-through parameters by the protocol-neutral rule.
 * @throws TritonError INTERNAL with the texts of Triton's ParseJsonTritonParams for a non-object
 *   or a reserved key of the wrong type; INVALID_ARG for a pass-through value of no parameter type
 */
function decodeParameters(params: unknown, init: InferenceRequestInit, formats: OutputFormats): void {
  if (params === undefined) return;
  if (!isJsonObject(params)) throw err.requestParamsNotObject();
  for (const [key, value] of Object.entries(params)) {
    if (key === 'binary_data_output') {
      if (typeof value !== 'boolean') throw jsonAccessError('binary_data_output', 'boolean');
      formats.defaultBinary = value;
    } else if (key !== 'headers') {
      applyRequestParameter(init, key, value);
    }
  }
}

/** A shape whose element count or byte size does not fit in 64 bits (Triton's int64 arithmetic). */
const shapeOverflow = err.shapeOverflow;

const UINT64_MAX = (1n << 64n) - 1n;

/**
 * An input's `shape`: dims are JSON unsigned 64-bit integers, as Triton reads them (IndexAsUInt);
 * a dim beyond 2^53 cannot describe data that fits a request and is a shape overflow.
 * @throws TritonError INTERNAL `Unable to parse 'shape': ...` (Triton's JSON wrapper text) for a
 *   missing shape, a non-array or a dim that is no unsigned 64-bit integer; INVALID_ARG for an overflow
 */
function decodeShape(shape: unknown, name: string): number[] {
  if (shape === undefined) throw jsonAccessError('shape', 'missing');
  if (!Array.isArray(shape)) throw jsonAccessError('shape', 'array');
  const dims = shape.map((d) => {
    if (typeof d === 'bigint' && d >= 0n && d <= UINT64_MAX) return Infinity;
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) throw jsonAccessError('shape', 'unsigned-integer');
    return d;
  });
  if (dims.includes(Infinity)) throw shapeOverflow(shape, name);
  return dims;
}

/**
 * Exactly one data source per input (Triton's ValidateInputContentType text).
 * @throws TritonError INVALID_ARG `Input must set only one of the following fields: ... But no field is set` / `But set 'data' 'binary_data_size'`
 */
function validateInputContentType(data: boolean, binary: boolean, shm: boolean): void {
  if (Number(data) + Number(binary) + Number(shm) === 1) return;
  throw err.inputContentTypeInvalid(data, binary, shm);
}

/** A member of `parameters` that is an object; Triton looks nothing up in a non-object (Find is false). */
function objectOrUndefined(v: unknown): Record<string, unknown> | undefined {
  return isJsonObject(v) ? v : undefined;
}

/**
 * Decode an inference request.
 * @param body the whole request body (decompressed)
 * @param headerLength `Inference-Header-Content-Length`, or undefined if absent (whole body is JSON)
 * @param shm the caller's shared-memory regions (undefined: `--allow-client-shm` is off, and a
 *   `shared_memory_region` parameter gets UNSUPPORTED)
 * @throws TritonError with Triton's codes: INVALID_ARG for malformed JSON, bad sizes, leftover
 *   bytes; INTERNAL for JSON type errors in tensor data (as Triton's JSON layer).
 */
export function decodeInferRequest(
  body: Buffer,
  headerLength: number | undefined,
  modelName: string,
  version: number,
  config: ModelConfig,
  shm?: ShmAccess,
): DecodedInferRequest {
  const init = emptyRequestInit(modelName, version);
  const formats: OutputFormats = { defaultBinary: false, perOutput: new Map() };
  const jsonLen = headerLength ?? body.length;
  if (jsonLen === 0) return decodeRawBinary(body, init, formats, modelName, config);
  if (jsonLen < 0 || jsonLen > body.length) {
    throw err.requestJsonShort(jsonLen - body.length);
  }
  const doc = parseRequestJson(body.subarray(0, jsonLen));
  if (!isJsonObject(doc)) throw err.requestNotObject();
  if (doc.id !== undefined) {
    if (typeof doc.id !== 'string') throw jsonAccessError('id', 'string');
    init.id = doc.id;
  }
  decodeParameters(doc.parameters, init, formats);
  if (doc.inputs === undefined) throw jsonAccessError('inputs', 'missing');
  if (!Array.isArray(doc.inputs)) throw jsonAccessError('inputs', 'array');
  let offset = jsonLen;
  for (const item of doc.inputs) {
    // Triton's order: the data source first (ValidateInputContentType: a non-object has none), then name, datatype, shape.
    const raw: Record<string, unknown> = isJsonObject(item) ? item : {};
    const params = objectOrUndefined(raw.parameters);
    const binSize = params?.binary_data_size;
    const shmRegion = params?.shared_memory_region;
    validateInputContentType(raw.data !== undefined, binSize !== undefined, shmRegion !== undefined);
    const name = raw.name;
    if (name === undefined) throw jsonAccessError('name', 'missing');
    if (typeof name !== 'string') throw jsonAccessError('name', 'string');
    const datatype = raw.datatype;
    if (datatype === undefined) throw jsonAccessError('datatype', 'missing');
    if (typeof datatype !== 'string') throw jsonAccessError('datatype', 'string');
    const shape = decodeShape(raw.shape, name);
    if (!isDataType(datatype)) throw err.inputDatatypeInvalid(name);
    const n = elementCount(shape);
    if (!Number.isSafeInteger(n) || (isDataType(datatype) && datatype !== 'BYTES' && !Number.isSafeInteger(n * dataTypeByteSize(datatype))))
      throw shapeOverflow(shape, name);
    let data: Uint8Array;
    if (shmRegion !== undefined) {
      if (!shm) throw clientShmDisabled();
      data = shm.read(shmTarget(params!, `input '${name}'`));
    } else if (binSize !== undefined) {
      if (typeof binSize === 'bigint' && binSize > 0n && binSize <= UINT64_MAX) {
        throw err.inputBinaryShort(name, binSize, modelName);
      }
      if (typeof binSize !== 'number' || !Number.isSafeInteger(binSize) || binSize < 0) {
        throw jsonAccessError('binary_data_size', 'unsigned-integer');
      }
      if (offset + binSize > body.length) {
        throw err.inputBinaryShort(name, binSize, modelName);
      }
      data = body.subarray(offset, offset + binSize);
      offset += binSize;
    } else {
      data = jsonToTensorData(raw.data, datatype, n, name);
    }
    init.inputs.push({ name, datatype, shape, data });
  }
  if (offset !== body.length) throw err.inputDataExtra(modelName);
  if (doc.outputs !== undefined) {
    if (!Array.isArray(doc.outputs)) throw jsonAccessError('outputs', 'array');
    const requested = new Set<string>();
    for (const raw of doc.outputs) {
      if (!isJsonObject(raw) || raw.name === undefined) throw jsonAccessError('name', 'missing');
      if (typeof raw.name !== 'string') throw jsonAccessError('name', 'string');
      if (requested.has(raw.name)) throw err.outputRepeated(raw.name);
      requested.add(raw.name);
      const p = objectOrUndefined(raw.parameters);
      if (p?.shared_memory_region !== undefined) {
        if (!shm) throw clientShmDisabled();
        const target = shmTarget(p, `output '${raw.name}'`);
        shm.hold(target);
        (formats.shm ??= new Map()).set(raw.name, target);
      }
      if (p?.classification !== undefined) {
        const k = p.classification;
        const bigCount = typeof k === 'bigint' && k >= 0n && k <= UINT64_MAX; // more classes than any output has
        if (!bigCount && (typeof k !== 'number' || !Number.isSafeInteger(k) || k < 0))
          throw jsonAccessError('classification', 'unsigned-integer', 'Unable to set');
        ((init.classification ??= new Map()) as Map<string, number>).set(raw.name, bigCount ? Number.MAX_SAFE_INTEGER : (k as number));
      }
      if (p?.binary_data !== undefined && typeof p.binary_data !== 'boolean') throw jsonAccessError('binary_data', 'boolean');
      // A listed output is binary only with its own `binary_data: true`; `binary_data_output` is
      // the default of outputs not listed (Triton http_server.cc CheckBinaryOutputData).
      formats.perOutput.set(raw.name, p?.binary_data === true);
      init.requestedOutputs.push(raw.name);
    }
  }
  return { init, formats };
}

/**
 * Raw binary request (spec §2, `Inference-Header-Content-Length: 0`): the body is the bytes of the
 * model's single input; every output is returned binary.
 */
function decodeRawBinary(body: Buffer, init: InferenceRequestInit, formats: OutputFormats, modelName: string, config: ModelConfig): DecodedInferRequest {
  formats.defaultBinary = true;
  if (config.input.length !== 1) {
    throw rawInput.rawInputCount(1, config.input.length, modelName);
  }
  const ci = config.input[0]!;
  const datatype = tensorDataType(ci);
  const batched = config.max_batch_size > 0;
  let dims: number[];
  if (datatype === 'BYTES') {
    if (ci.dims.length !== 1 || ci.dims[0] !== 1) {
      throw rawInput.rawBytesShape(ci.name);
    }
    dims = [1];
  } else {
    const size = dataTypeByteSize(datatype);
    const variable = ci.dims.filter((d) => d === -1).length;
    if (variable > 1) {
      throw rawInput.rawShapeAmbiguous(ci.name);
    }
    const fixed = ci.dims.reduce((n, d) => (d === -1 ? n : n * d), 1) * size;
    if (fixed === 0 || body.length % fixed !== 0 || (variable === 0 && body.length !== fixed)) {
      throw err.rawShapeMismatch(ci.name, body.length, ci.dims);
    }
    dims = ci.dims.map((d) => (d === -1 ? body.length / fixed : d));
  }
  // A raw BYTES input is the single element's bytes, without the 4-byte length prefix (as Triton reads it).
  const data = datatype === 'BYTES' ? encodeBytesElements([body]) : body;
  init.inputs.push({ name: ci.name, datatype, shape: batched ? [1, ...dims] : dims, data } satisfies Tensor);
  return { init, formats };
}
