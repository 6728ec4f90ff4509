/**
 * Helpers shared by the TypeScript sample backends (componentize-js guests of
 * `warden:backend/sandboxed-backend`): errors, model-config access, tensor views.
 * Every datatype name, error code and record shape comes from the WIT-generated declarations.
 */
import type { DataType, Error as WitError, ErrorCode, Request, Tensor } from 'warden:backend/types@0.1.1';

/** The subset of the model configuration JSON (spec §1.7) the samples read. */
export interface ConfigTensor {
  name: string;
  data_type: string;
  dims: number[];
}
export interface ModelConfigJson {
  name: string;
  max_batch_size: number;
  input: ConfigTensor[];
  output: ConfigTensor[];
  parameters?: Record<string, { string_value: string }>;
  model_transaction_policy?: { decoupled?: boolean };
}

/** A WIT `error` to throw from a function returning `result<_, error>` (componentize-js turns it into `err`). */
export function witError(code: ErrorCode, message: string): WitError {
  return { code, message };
}

/** Config `data_type` (`TYPE_FP32`, `TYPE_STRING`) → WIT `data-type` (`fp32`, `bytes`). */
export function configDataType(t: string): DataType {
  const name = t === 'TYPE_STRING' ? 'bytes' : t.replace(/^TYPE_/, '').toLowerCase();
  const all: DataType[] = ['bool', 'uint8', 'uint16', 'uint32', 'uint64', 'int8', 'int16', 'int32', 'int64', 'fp16', 'fp32', 'fp64', 'bytes', 'bf16'];
  if (!all.includes(name as DataType)) throw witError('invalid-arg', `unsupported data_type ${t}`);
  return name as DataType;
}

/** Parses the config JSON handed to `model.create`. */
export function parseConfig(json: string): ModelConfigJson {
  return JSON.parse(json) as ModelConfigJson;
}

/** The input `name` of a request; INVALID_ARG if missing or of another datatype. */
export function input(req: Request, name: string, datatype: DataType): Tensor {
  const t = req.inputs.find((i) => i.name === name);
  if (!t) throw witError('invalid-arg', `request is missing input '${name}'`);
  if (t.datatype !== datatype) throw witError('invalid-arg', `input '${name}' has datatype ${t.datatype}, expected ${datatype}`);
  return t;
}

/** Number of elements of a shape. */
export function elementCount(shape: BigInt64Array): number {
  let n = 1;
  for (const d of shape) n *= Number(d);
  return n;
}

/** The tensor's bytes as a typed array (copied if the bytes are not aligned for it). */
export function view<T extends Float32Array | Int32Array | Uint32Array>(
  ctor: { new (b: ArrayBuffer, off: number, len: number): T; BYTES_PER_ELEMENT: number },
  data: Uint8Array,
): T {
  const n = data.byteLength / ctor.BYTES_PER_ELEMENT;
  if (data.byteOffset % ctor.BYTES_PER_ELEMENT === 0) return new ctor(data.buffer as ArrayBuffer, data.byteOffset, n);
  const copy = data.slice();
  return new ctor(copy.buffer as ArrayBuffer, 0, n);
}

/** A typed array's bytes as a WIT `list<u8>`. */
export function bytesOf(a: Float32Array | Int32Array | Uint32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Runs `f` per request, turning a thrown WIT error into that request's `err` result. */
export function perRequest<R>(requests: Request[], f: (r: Request) => R): ({ tag: 'ok'; val: R } | { tag: 'err'; val: WitError })[] {
  return requests.map((r) => {
    try {
      return { tag: 'ok', val: f(r) };
    } catch (e) {
      const err = e as Partial<WitError>;
      if (typeof err?.code === 'string' && typeof err.message === 'string') return { tag: 'err', val: err as WitError };
      throw e;
    }
  });
}
