/**
 * Conversions between the host's request/response objects and the WIT types of
 * `warden:backend/types` (as jco represents them), and the checks a sandboxed backend's
 * responses must pass before they leave the sandbox (spec §1.12, §6.7): output names in the
 * config, datatypes as configured, shapes matching `dims` (+ batch dim), data sizes matching
 * shapes, BYTES elements well-formed, response parameters not reserved.
 */
import type { ErrorCode } from '../../contract/errors.js';
import type { ParameterValue } from '../../contract/types.js';
import { dataTypeByteSize, isDataType, type DataType } from '../../contract/datatypes.js';
import type { OutputSpec, WireError, WireRequest, WireResponse, WireTensor } from './wire.js';
import type { CallRequest } from './host/inference.js';
import type * as Wit from './wit-types/interfaces/warden-backend-types.js';
import type * as WitInference from './wit-types/interfaces/warden-backend-inference.js';

/** Protocol datatype → WIT `data-type` case. */
export function toWitDataType(dt: DataType): Wit.DataType {
  return dt.toLowerCase() as Wit.DataType;
}

/** WIT `data-type` case → protocol datatype (undefined for anything else). */
export function fromWitDataType(dt: unknown): DataType | undefined {
  if (typeof dt !== 'string') return undefined;
  const up = dt.toUpperCase();
  return isDataType(up) ? up : undefined;
}

const ERROR_CODES = new Set(['unknown', 'internal', 'not-found', 'invalid-arg', 'unavailable', 'unsupported', 'already-exists', 'cancelled']);

/** A WIT `error` from the guest → wire error (unknown codes become INTERNAL; message capped at 4 KiB). */
export function fromWitError(e: unknown): WireError {
  const obj = (e ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof obj.code === 'string' && ERROR_CODES.has(obj.code) ? (obj.code.toUpperCase().replace('-', '_') as ErrorCode) : 'INTERNAL';
  let message = typeof obj.message === 'string' ? obj.message : 'backend error without a message';
  if (message.length > 4096) message = `${message.slice(0, 4096)}... (truncated)`;
  return { code, message };
}

/** A host error → WIT `error` (the inverse of {@link fromWitError}: `NOT_FOUND` → `not-found`). */
export function toWitError(e: WireError): Wit.Error {
  return { code: e.code.toLowerCase().replace('_', '-') as Wit.ErrorCode, message: e.message };
}

/** Host request parameters → WIT `parameter`s (safe integers and bigints as `int`, other numbers as `double`). */
export function witParameters(params: Record<string, ParameterValue>): Wit.Parameter[] {
  const out: Wit.Parameter[] = [];
  for (const [key, v] of Object.entries(params)) {
    let value: Wit.ParameterValue;
    if (typeof v === 'string') value = { tag: 'string', val: v };
    else if (typeof v === 'boolean') value = { tag: 'bool', val: v };
    else if (typeof v === 'bigint') value = { tag: 'int', val: v };
    else if (Number.isSafeInteger(v)) value = { tag: 'int', val: BigInt(v) };
    else value = { tag: 'double', val: v };
    out.push({ key, value });
  }
  return out;
}

/** Host correlation id → WIT `correlation-id` (0 and "" are `none`). */
export function witCorrelationId(id: number | bigint | string): Wit.CorrelationId {
  if (typeof id === 'string') return id === '' ? { tag: 'none' } : { tag: 'string', val: id };
  const n = BigInt(id);
  return n === 0n ? { tag: 'none' } : { tag: 'int', val: BigInt.asUintN(64, n) };
}

/** Host request → WIT `request` (tensor bytes are not copied here; jco copies them into the guest). */
export function toWitRequest(r: WireRequest): Wit.Request {
  return {
    handle: r.handle,
    id: r.id,
    correlationId: witCorrelationId(r.correlationId),
    flags: { sequenceStart: (r.flags & 1) !== 0, sequenceEnd: (r.flags & 2) !== 0 },
    priority: Math.max(0, Math.min(r.priority, 0xffffffff)) >>> 0,
    timeoutUs: BigInt(Math.max(0, Math.floor(r.timeoutUs))),
    batchSize: r.batchSize >>> 0,
    inputs: r.inputs.map((t) => ({
      name: t.name,
      datatype: toWitDataType(t.datatype),
      shape: BigInt64Array.from(t.shape, (d) => BigInt(d)),
      data: t.data,
    })),
    requestedOutputs: r.requestedOutputs,
    parameters: witParameters(r.parameters),
  };
}

/** A response that fails the checks. */
export class ResponseCheckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResponseCheckError';
  }
}

/** Largest element count accepted for one output (2^40). */
const MAX_ELEMENTS = 2 ** 40;

function checkBytesElements(data: Uint8Array, count: number, name: string): void {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let off = 0;
  for (let i = 0; i < count; i++) {
    if (off + 4 > data.length) throw new ResponseCheckError(`output '${name}': BYTES data holds fewer than the ${count} elements its shape says`);
    const len = dv.getUint32(off, true);
    off += 4 + len;
    if (off > data.length) throw new ResponseCheckError(`output '${name}': BYTES element ${i} overruns the data`);
  }
  if (off !== data.length) throw new ResponseCheckError(`output '${name}': BYTES data has ${data.length - off} bytes after its ${count} elements`);
}

/** Context of the checks: the model's outputs and batching, and the request's. */
export interface ResponseCheckContext {
  outputs: Map<string, OutputSpec>;
  maxBatchSize: number;
  batchSize: number;
  requestedOutputs: string[];
}

/**
 * Checks and converts a guest's WIT `response` (spec §1.12: outputs not requested are dropped;
 * outputs must be config outputs with the configured datatype and a matching shape; data sizes
 * must match shapes).
 * @throws ResponseCheckError describing the first problem.
 */
export function fromWitResponse(resp: unknown, ctx: ResponseCheckContext): WireResponse {
  const r = resp as Partial<Wit.Response> | undefined;
  if (!r || !Array.isArray(r.outputs) || !Array.isArray(r.parameters)) throw new ResponseCheckError('malformed response');
  const outputs: WireTensor[] = [];
  const seen = new Set<string>();
  for (const t of r.outputs) {
    const spec = ctx.outputs.get(t.name);
    if (!spec) throw new ResponseCheckError(`unexpected output '${t.name}': not an output of the model configuration`);
    if (seen.has(t.name)) throw new ResponseCheckError(`output '${t.name}' appears twice in one response`);
    seen.add(t.name);
    const datatype = fromWitDataType(t.datatype);
    if (datatype !== spec.datatype) {
      throw new ResponseCheckError(`output '${t.name}' has datatype ${datatype ?? String(t.datatype)}, the model configuration says ${spec.datatype}`);
    }
    const shape: number[] = [];
    for (const d of t.shape) {
      if (d < 0n || d > BigInt(MAX_ELEMENTS)) throw new ResponseCheckError(`output '${t.name}' has an invalid dimension ${d}`);
      shape.push(Number(d));
    }
    const expected = ctx.maxBatchSize > 0 ? [ctx.batchSize, ...spec.dims] : spec.dims;
    const shapeOk = shape.length === expected.length && shape.every((d, i) => expected[i] === -1 || expected[i] === d);
    if (!shapeOk) {
      throw new ResponseCheckError(`output '${t.name}' has shape [${shape.join(',')}], the model configuration expects [${expected.join(',')}]`);
    }
    let count = 1;
    for (const d of shape) {
      count *= d;
      if (count > MAX_ELEMENTS) throw new ResponseCheckError(`output '${t.name}' has too many elements`);
    }
    if (datatype === 'BYTES') {
      checkBytesElements(t.data, count, t.name);
    } else if (t.data.length !== count * dataTypeByteSize(datatype)) {
      throw new ResponseCheckError(
        `output '${t.name}' has ${t.data.length} bytes of data, its shape [${shape.join(',')}] of ${datatype} needs ${count * dataTypeByteSize(datatype)}`,
      );
    }
    if (ctx.requestedOutputs.includes(t.name)) outputs.push({ name: t.name, datatype, shape, data: t.data });
  }
  let parameters: Record<string, ParameterValue> | undefined;
  for (const p of r.parameters) {
    if (p.key.startsWith('triton_')) throw new ResponseCheckError(`response parameter '${p.key}': keys starting with 'triton_' are reserved`);
    let v: ParameterValue;
    switch (p.value.tag) {
      case 'int':
        if (p.value.val > BigInt(Number.MAX_SAFE_INTEGER) || p.value.val < BigInt(Number.MIN_SAFE_INTEGER)) {
          throw new ResponseCheckError(`response parameter '${p.key}': integer ${p.value.val} is outside the range this server carries`);
        }
        v = Number(p.value.val);
        break;
      default:
        v = p.value.val;
    }
    (parameters ??= {})[p.key] = v;
  }
  return parameters ? { outputs, parameters } : { outputs };
}

/** A WIT `parameter` list → host request parameters (integers beyond 2^53 stay bigints). */
export function fromWitParameters(params: readonly Wit.Parameter[]): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  for (const p of params) {
    const v = p.value.val;
    out[p.key] = typeof v === 'bigint' && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  return out;
}

/**
 * A guest's `inference-request` (`warden:backend/inference`, jco's representation) → the host's
 * call request. Tensor bytes are not copied.
 * @throws ResponseCheckError for a datatype that is none of the 14, or a dimension or version
 *   outside what the server carries (the caller turns it into an `invalid-arg` error)
 */
export function fromWitCallRequest(r: WitInference.InferenceRequest): CallRequest {
  const version = r.modelVersion;
  if (version < -1n || version > BigInt(Number.MAX_SAFE_INTEGER)) throw new ResponseCheckError(`model version ${version} is out of range`);
  return {
    model: r.modelName,
    version: Number(version),
    id: r.id,
    inputs: r.inputs.map((t) => {
      const datatype = fromWitDataType(t.datatype);
      if (!datatype) throw new ResponseCheckError(`input '${t.name}' has an unknown datatype`);
      const shape = Array.from(t.shape, (d) => {
        if (d < 0n || d > BigInt(MAX_ELEMENTS)) throw new ResponseCheckError(`input '${t.name}' has an invalid dimension ${d}`);
        return Number(d);
      });
      return { name: t.name, datatype, shape, data: t.data };
    }),
    requestedOutputs: r.requestedOutputs,
    parameters: fromWitParameters(r.parameters),
    timeoutUs: r.timeoutUs > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(r.timeoutUs),
  };
}

/** A host response → WIT `response`, as the guest receives it from a call (tensor bytes not copied here). */
export function toWitResponse(r: WireResponse): Wit.Response {
  return {
    outputs: r.outputs.map((t) => ({
      name: t.name,
      datatype: toWitDataType(t.datatype),
      shape: BigInt64Array.from(t.shape, (d) => BigInt(d)),
      data: t.data,
    })),
    parameters: witParameters(r.parameters ?? {}),
  };
}
