/**
 * Decoding of `POST /v2/models/{m}[/versions/{v}]/infer` bodies: the JSON inference header
 * (spec §1.8, §1.11, §1.12), the binary tensor data extension (spec §2) and raw-binary requests.
 */
import type { ModelConfig } from '../../config/types.js';
import { TritonError, internal, invalidArg } from '../../core/errors.js';
import { applyRequestParameter, emptyRequestInit } from '../../core/request-parameters.js';
import type { InferenceRequestInit, Tensor } from '../../core/types.js';
import type { ShmAccess, ShmTarget } from '../../core/shared-memory.js';
import { tensorDataType } from '../../core/validate.js';
import { clientShmDisabled, isJsonObject } from './body.js';
import { isDataType, dataTypeByteSize, elementCount } from '../../tensor/datatypes.js';
import { jsonToTensorData } from '../../tensor/json.js';
import { encodeBytesElements } from '../../tensor/bytes.js';
import { parseRequestJson } from './json-text.js';

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
  if (typeof region !== 'string') throw invalidArg(`'shared_memory_region' of ${what} must be a string`);
  const num = (v: unknown, key: string): number => {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw invalidArg(`'${key}' of ${what} must be a non-negative integer`);
    return n;
  };
  if (p.shared_memory_byte_size === undefined) throw invalidArg(`'shared_memory_byte_size' must be set for ${what} in shared memory`);
  return { region, byteSize: num(p.shared_memory_byte_size, 'shared_memory_byte_size'), offset: p.shared_memory_offset === undefined ? 0 : num(p.shared_memory_offset, 'shared_memory_offset') };
}

export interface DecodedInferRequest {
  init: InferenceRequestInit;
  formats: OutputFormats;
}


/**
 * Request-level `parameters` (spec §1.11): HTTP's own `binary_data_output` (and the ignored
 * `headers`) here; reserved keys and pass-through parameters by the protocol-neutral rule.
 */
function decodeParameters(params: unknown, init: InferenceRequestInit, formats: OutputFormats): void {
  if (params === undefined) return;
  if (!isJsonObject(params)) throw invalidArg(`'parameters' must be a JSON object`);
  for (const [key, value] of Object.entries(params)) {
    if (key === 'binary_data_output') {
      if (typeof value !== 'boolean') throw invalidArg(`'binary_data_output' must be a boolean`);
      formats.defaultBinary = value;
    } else if (key !== 'headers') {
      applyRequestParameter(init, key, value);
    }
  }
}

/** A shape whose element count or byte size does not fit in 64 bits (Triton's int64 arithmetic). */
function shapeOverflow(shape: readonly unknown[], name: string) {
  return invalidArg(`the shape [${shape.map(String).join(',')}] of input '${name}' is too large: its element count or byte size overflows`);
}

function decodeShape(shape: unknown, name: string): number[] {
  if (!Array.isArray(shape)) throw internal(`Unable to parse 'shape': attempt to access JSON non-array as array for input '${name}'`);
  return shape.map((d) => {
    if (typeof d === 'bigint' && d >= 0n) throw shapeOverflow(shape, name);
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
      throw invalidArg(`Unable to parse 'shape' for input '${name}': dims must be non-negative integers`);
    }
    return d;
  });
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
    throw invalidArg(`unexpected size for request JSON, expecting ${jsonLen - body.length} more bytes`);
  }
  const doc = parseRequestJson(body.subarray(0, jsonLen));
  if (!isJsonObject(doc)) throw invalidArg('failed to parse the request JSON buffer: the inference request must be a JSON object');
  if (doc.id !== undefined) {
    if (typeof doc.id !== 'string') throw internal(`Unable to parse 'id': attempt to access JSON non-string as string`);
    init.id = doc.id;
  }
  decodeParameters(doc.parameters, init, formats);
  if (!Array.isArray(doc.inputs)) throw internal(`Unable to parse 'inputs': attempt to access JSON non-array as array`);
  let offset = jsonLen;
  for (const raw of doc.inputs) {
    if (!isJsonObject(raw)) throw internal(`Unable to parse 'inputs': attempt to access JSON non-object as object`);
    const name = raw.name;
    if (typeof name !== 'string') throw internal(`Unable to parse 'name': attempt to access JSON non-string as string`);
    const datatype = raw.datatype;
    if (!isDataType(datatype)) throw invalidArg(`invalid datatype for input ${name}`);
    const shape = decodeShape(raw.shape, name);
    const params = raw.parameters;
    if (params !== undefined && !isJsonObject(params)) throw invalidArg(`'parameters' of input '${name}' must be a JSON object`);
    const binSize = params?.binary_data_size;
    const shmRegion = params?.shared_memory_region;
    const sources = [raw.data !== undefined, binSize !== undefined, shmRegion !== undefined].filter(Boolean).length;
    if (sources !== 1) {
      throw invalidArg(
        `Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But ${sources === 0 ? 'none were set' : 'more than one were set'} for input '${name}'`,
      );
    }
    const n = elementCount(shape);
    if (!Number.isSafeInteger(n) || (isDataType(datatype) && datatype !== 'BYTES' && !Number.isSafeInteger(n * dataTypeByteSize(datatype)))) throw shapeOverflow(shape, name);
    let data: Uint8Array;
    if (shmRegion !== undefined) {
      if (!shm) throw clientShmDisabled();
      data = shm.read(shmTarget(params!, `input '${name}'`));
    } else if (binSize !== undefined) {
      if (typeof binSize === 'bigint' && binSize > 0n) {
        throw invalidArg(`unexpected size for input '${name}', expecting ${binSize} additional bytes for model '${modelName}'`);
      }
      if (typeof binSize !== 'number' || !Number.isSafeInteger(binSize) || binSize < 0) {
        throw invalidArg(`'binary_data_size' of input '${name}' must be an unsigned integer`);
      }
      if (offset + binSize > body.length) {
        throw invalidArg(
          `unexpected size for input '${name}', expecting ${binSize} additional bytes for model '${modelName}'`,
        );
      }
      data = body.subarray(offset, offset + binSize);
      offset += binSize;
    } else {
      data = jsonToTensorData(raw.data, datatype, n, name);
    }
    init.inputs.push({ name, datatype, shape, data });
  }
  if (offset !== body.length) throw invalidArg(`unexpected additional input data for model '${modelName}'`);
  if (doc.outputs !== undefined) {
    if (!Array.isArray(doc.outputs)) throw internal(`Unable to parse 'outputs': attempt to access JSON non-array as array`);
    const requested = new Set<string>();
    for (const raw of doc.outputs) {
      if (!isJsonObject(raw) || typeof raw.name !== 'string') throw internal(`Unable to parse 'outputs': each output needs a string 'name'`);
      if (requested.has(raw.name)) throw invalidArg(`output '${raw.name}' already exists in request`);
      requested.add(raw.name);
      const p = raw.parameters;
      if (p !== undefined && !isJsonObject(p)) throw invalidArg(`'parameters' of output '${raw.name}' must be a JSON object`);
      if (p?.shared_memory_region !== undefined) {
        if (!shm) throw clientShmDisabled();
        (formats.shm ??= new Map()).set(raw.name, shmTarget(p, `output '${raw.name}'`));
      }
      if (p?.classification !== undefined) {
        const k = p.classification;
        if (typeof k !== 'number' || !Number.isSafeInteger(k) || k < 0) throw invalidArg(`'classification' of output '${raw.name}' must be an unsigned integer`);
        ((init.classification ??= new Map()) as Map<string, number>).set(raw.name, k);
      }
      if (p?.binary_data !== undefined) {
        if (typeof p.binary_data !== 'boolean') throw invalidArg(`'binary_data' of output '${raw.name}' must be a boolean`);
        formats.perOutput.set(raw.name, p.binary_data);
      }
      init.requestedOutputs.push(raw.name);
    }
  }
  return { init, formats };
}

/**
 * Raw binary request (spec §2, `Inference-Header-Content-Length: 0`): the body is the bytes of the
 * model's single input; every output is returned binary.
 */
function decodeRawBinary(
  body: Buffer,
  init: InferenceRequestInit,
  formats: OutputFormats,
  modelName: string,
  config: ModelConfig,
): DecodedInferRequest {
  formats.defaultBinary = true;
  if (config.input.length !== 1) {
    throw invalidArg(
      `Raw request must only have 1 input (found 1) to be deduced but got ${config.input.length} inputs in '${modelName}' model configuration`,
    );
  }
  const ci = config.input[0]!;
  const datatype = tensorDataType(ci);
  const batched = config.max_batch_size > 0;
  let dims: number[];
  if (datatype === 'BYTES') {
    if (ci.dims.length !== 1 || ci.dims[0] !== 1) {
      throw invalidArg(`For BYTE datatype raw input '${ci.name}', the model must have input shape [1]`);
    }
    dims = [1];
  } else {
    const size = dataTypeByteSize(datatype);
    const variable = ci.dims.filter((d) => d === -1).length;
    if (variable > 1) {
      throw invalidArg(`The shape of the raw input '${ci.name}' can not be deduced because there are more than one variable-sized dimension`);
    }
    const fixed = ci.dims.reduce((n, d) => (d === -1 ? n : n * d), 1) * size;
    if (fixed === 0 || body.length % fixed !== 0 || (variable === 0 && body.length !== fixed)) {
      throw invalidArg(`The shape of the raw input '${ci.name}' can not be deduced: ${body.length} bytes do not fit dims ${JSON.stringify(ci.dims)}`);
    }
    dims = ci.dims.map((d) => (d === -1 ? body.length / fixed : d));
  }
  // A raw BYTES input is the single element's bytes, without the 4-byte length prefix (as Triton reads it).
  const data = datatype === 'BYTES' ? encodeBytesElements([body]) : body;
  init.inputs.push({ name: ci.name, datatype, shape: batched ? [1, ...dims] : dims, data } satisfies Tensor);
  return { init, formats };
}
