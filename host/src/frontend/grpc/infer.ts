/**
 * `ModelInferRequest` → the data plane's `InferenceRequestInit`, and an `InferenceResponse` →
 * `ModelInferResponse` (grpc_service.proto; KServe v2 gRPC with Triton's extensions). Inputs come
 * from `raw_input_contents` (one entry per input, in order), typed `contents`, or — where enabled —
 * a client shared-memory region; outputs always leave as `raw_output_contents`, in the order of
 * `outputs` (an output written to shared memory has an empty entry there, keeping indexes aligned).
 */
import * as err from '../infer-request.errors.js';
import type { ShmAccess, ShmTarget } from '../../dataplane/shared-memory.js';
import { applyRequestParameter, emptyRequestInit } from '../../dataplane/request-parameters.js';
import type { InferenceRequestInit, InferenceResponse, ParameterValue } from '../../contract/types.js';
import { dataTypeByteSize, elementCount, isDataType } from '../../contract/datatypes.js';
import { contentsCount, contentsToTensorData } from './contents.js';
import type { InferParameter, InferTensorContents, Int64, ModelInferRequest, ModelInferResponse } from './proto.js';

/** A decoded request: the data plane's request, plus where outputs go (shared memory) and the id. */
export interface DecodedGrpcRequest {
  init: InferenceRequestInit;
  /** Outputs the client asked to be written to a shared-memory region. */
  shmOutputs: Map<string, ShmTarget>;
}

/**
 * The model version a request names: '' = the server's choice (-1), else a decimal version.
 * @throws TritonError INVALID_ARG for anything else (Triton's wording)
 */
export function parseModelVersion(v: string | undefined): number {
  if (v === undefined || v === '') return -1;
  if (!/^[0-9]{1,15}$/.test(v)) throw err.versionInvalid(v);
  return Number(v);
}

/** An int64 field (decimal string) as a safe JS integer, or undefined when it is not one. */
function int64(v: Int64 | undefined): number | undefined {
  const n = typeof v === 'number' ? v : v !== undefined && /^-?[0-9]{1,20}$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** An `InferParameter` as a JS value: 64-bit integers beyond 2^53 stay exact as bigint. */
export function parameterValue(p: InferParameter, key: string): ParameterValue {
  switch (p.parameter_choice) {
    case 'bool_param':
      return p.bool_param === true;
    case 'string_param':
      return p.string_param ?? '';
    case 'double_param':
      return p.double_param ?? 0;
    case 'int64_param':
    case 'uint64_param': {
      const raw = p[p.parameter_choice] ?? 0;
      return int64(raw) ?? BigInt(raw);
    }
    default:
      throw err.parameterNoValue(key);
  }
}

/** A response / request parameter as an `InferParameter` (integers are int64, other numbers double). */
export function toInferParameter(v: ParameterValue): InferParameter {
  if (typeof v === 'boolean') return { bool_param: v };
  if (typeof v === 'string') return { string_param: v };
  if (typeof v === 'bigint') return { int64_param: String(v) };
  return Number.isInteger(v) ? { int64_param: String(v) } : { double_param: v };
}

/** The shared-memory parameters of one tensor, or undefined when it names no region. @throws TritonError INVALID_ARG */
function shmParameters(params: Record<string, InferParameter>, what: string): ShmTarget | undefined {
  const region = params.shared_memory_region;
  if (region === undefined) return undefined;
  if (region.parameter_choice !== 'string_param') throw err.shmRegionNotString(what);
  const size = params.shared_memory_byte_size;
  if (size === undefined) throw err.shmByteSizeMissing(what);
  const byteSize = size.parameter_choice === 'int64_param' || size.parameter_choice === 'uint64_param' ? int64(size[size.parameter_choice]) : undefined;
  const off = params.shared_memory_offset;
  const offset =
    off === undefined ? 0 : off.parameter_choice === 'int64_param' || off.parameter_choice === 'uint64_param' ? int64(off[off.parameter_choice]) : undefined;
  if (byteSize === undefined || byteSize < 0) throw err.shmParamNotCount('shared_memory_byte_size', what);
  if (offset === undefined || offset < 0) throw err.shmParamNotCount('shared_memory_offset', what);
  return { region: region.string_param ?? '', offset, byteSize };
}

/**
 * Decode a `ModelInferRequest` for the version that serves it.
 * @param shm client shared memory (undefined = disabled: a shared-memory parameter gets `shmDisabled()`)
 * @throws TritonError INVALID_ARG for a malformed request (unknown datatype, bad shape, wrong number
 *   of raw contents, data given twice or not at all, duplicate outputs, bad parameters)
 */
export function decodeModelInferRequest(
  req: ModelInferRequest,
  model: string,
  version: number,
  shm: ShmAccess | undefined,
  shmDisabled: () => Error,
): DecodedGrpcRequest {
  const init = emptyRequestInit(model, version);
  init.id = req.id ?? '';
  for (const [key, p] of Object.entries(req.parameters)) applyRequestParameter(init, key, parameterValue(p, key));
  const raw = req.raw_input_contents;
  // As Triton's infer_handler.cc (InferGRPCToInput): raw contents are taken in order by the inputs
  // that have neither a shared-memory region nor typed contents; contents left over are ignored.
  let rawIndex = 0;
  req.inputs.forEach((t) => {
    const name = t.name ?? '';
    if (!isDataType(t.datatype)) throw err.inputDatatypeInvalid(name);
    const datatype = t.datatype;
    const shape = t.shape.map((d) => {
      const n = int64(d);
      if (n === undefined || n < 0) throw err.shapeDimNegative(name);
      return n;
    });
    const n = elementCount(shape);
    if (!Number.isSafeInteger(n) || (datatype !== 'BYTES' && !Number.isSafeInteger(n * dataTypeByteSize(datatype)))) {
      throw err.shapeOverflow(shape, name);
    }
    const region = shmParameters(t.parameters, `input '${name}'`);
    const typed = contentsCount(t.contents) > 0;
    if (region !== undefined && typed) throw err.inputContentsAndShm(name, model);
    let data: Uint8Array;
    if (region !== undefined) {
      if (!shm) throw shmDisabled();
      data = shm.read(region);
    } else if (typed) {
      if (raw.length > 0) throw err.inputContentsAndRaw(name, model);
      data = contentsToTensorData(t.contents as InferTensorContents, datatype, n, name);
    } else if (rawIndex < raw.length) {
      data = raw[rawIndex++]!;
    } else {
      throw err.inputDataMissing(name, model);
    }
    init.inputs.push({ name, datatype, shape, data });
  });
  const shmOutputs = new Map<string, ShmTarget>();
  const requested = new Set<string>();
  for (const o of req.outputs) {
    const name = o.name ?? '';
    if (requested.has(name)) throw err.outputRepeated(name);
    requested.add(name);
    init.requestedOutputs.push(name);
    const target = shmParameters(o.parameters, `output '${name}'`);
    if (target !== undefined) {
      if (!shm) throw shmDisabled();
      shm.hold(target);
      shmOutputs.set(name, target);
    }
    const k = o.parameters.classification;
    if (k !== undefined) {
      const count = k.parameter_choice === 'int64_param' || k.parameter_choice === 'uint64_param' ? int64(k[k.parameter_choice]) : undefined;
      if (count === undefined || count < 0) throw err.classificationNotCount(name);
      ((init.classification ??= new Map()) as Map<string, number>).set(name, count);
    }
  }
  return { init, shmOutputs };
}

/**
 * Encode one response. Outputs listed in `written` were copied to shared memory: they carry the
 * region's parameters and an empty raw entry.
 * @param final for a stream: adds `triton_final_response` (a decoupled model's responses)
 */
export function encodeModelInferResponse(
  model: string,
  version: number,
  id: string,
  response: InferenceResponse | null,
  written: ReadonlyMap<string, ShmTarget> | undefined,
  final?: boolean,
): ModelInferResponse {
  const out: ModelInferResponse = { model_name: model, model_version: String(version), id, outputs: [], raw_output_contents: [] };
  const params: Record<string, InferParameter> = {};
  for (const [k, v] of Object.entries(response?.parameters ?? {})) params[k] = toInferParameter(v);
  if (final !== undefined) params.triton_final_response = { bool_param: final };
  if (Object.keys(params).length > 0) out.parameters = params;
  for (const t of response?.outputs ?? []) {
    const target = written?.get(t.name);
    const o = { name: t.name, datatype: t.datatype, shape: t.shape.map(String) } as ModelInferResponse['outputs'][number];
    if (target) {
      o.parameters = {
        shared_memory_region: { string_param: target.region },
        shared_memory_byte_size: { int64_param: String(t.data.length) },
        ...(target.offset !== 0 ? { shared_memory_offset: { int64_param: String(target.offset) } } : {}),
      };
      out.raw_output_contents.push(new Uint8Array(0));
    } else {
      // A tensor with an owner is released once this returns, before grpc-js serializes: copy it.
      out.raw_output_contents.push(t.owner ? Buffer.from(t.data) : t.data);
    }
    out.outputs.push(o);
  }
  return out;
}

/**
 * The request without the gRPC frontend's own reserved parameter (`triton_enable_empty_final_response`).
 * @returns the request, and whether an empty final response was asked for
 * @throws TritonError INVALID_ARG when it is not a bool_param (Triton's wording)
 */
export function stripReserved(req: ModelInferRequest): ModelInferRequest & { emptyFinal?: boolean } {
  const p = req.parameters.triton_enable_empty_final_response;
  if (p === undefined) return req;
  if (p.parameter_choice !== 'bool_param') throw err.emptyFinalResponseNotBool();
  const parameters = { ...req.parameters };
  delete parameters.triton_enable_empty_final_response;
  return { ...req, parameters, emptyFinal: p.bool_param === true };
}
