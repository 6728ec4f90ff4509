/**
 * Triton datatypes ↔ ONNX Runtime tensor types, and conversions between Warden's raw-byte tensors
 * and onnxruntime-node tensors (zero-copy where alignment allows).
 */
import ort from 'onnxruntime-node';
import type { Tensor } from '../../contract/types.js';
import { decodeBytesElements, encodeBytesElements } from '../../tensor/bytes.js';
import { type DataType, dataTypeByteSize } from '../../contract/datatypes.js';
import { datatypeUnsupported } from './onnxruntime.errors.js';

type OrtType = ort.Tensor.Type;

const TO_ORT: Partial<Record<DataType, OrtType>> = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
  BYTES: 'string',
};

const FROM_ORT = new Map<string, DataType>(Object.entries(TO_ORT).map(([k, v]) => [v, k as DataType]));

/** ONNX type name (as onnxruntime-node reports it) → Triton datatype; undefined if unmapped. */
export function dataTypeFromOrt(t: string): DataType | undefined {
  return FROM_ORT.get(t);
}

type ArrayCtor = new (buf: ArrayBufferLike, off: number, len: number) => ArrayLike<unknown>;
const ARRAY_OF: Partial<Record<OrtType, ArrayCtor>> = {
  bool: Uint8Array,
  uint8: Uint8Array,
  int8: Int8Array,
  uint16: Uint16Array,
  int16: Int16Array,
  uint32: Uint32Array,
  int32: Int32Array,
  uint64: BigUint64Array,
  int64: BigInt64Array,
  float16: Uint16Array,
  float32: Float32Array,
  float64: Float64Array,
};

/**
 * Wrap raw bytes as an ORT tensor of `shape`.
 * @throws TritonError UNSUPPORTED for BF16 (onnxruntime-node has no bfloat16 tensors).
 */
export function toOrtTensor(datatype: DataType, shape: readonly number[], data: Uint8Array): ort.Tensor {
  const type = TO_ORT[datatype];
  if (!type) throw datatypeUnsupported(datatype);
  if (type === 'string') {
    const dec = new TextDecoder();
    return new ort.Tensor(
      'string',
      decodeBytesElements(data).map((e) => dec.decode(e)),
      shape,
    );
  }
  const size = dataTypeByteSize(datatype);
  // Typed arrays need aligned offsets; copy when the bytes are not aligned.
  const bytes = data.byteOffset % size === 0 ? data : new Uint8Array(data); // copy (Buffer#slice would not)
  const Ctor = ARRAY_OF[type]!;
  const arr = new Ctor(bytes.buffer, bytes.byteOffset, bytes.byteLength / size);
  return new ort.Tensor(type, arr as never, shape);
}

/** An ORT output tensor as a Warden tensor (raw little-endian bytes, BYTES length-prefixed). */
export function fromOrtTensor(name: string, datatype: DataType, t: ort.Tensor): Tensor {
  const shape = t.dims.map(Number);
  if (t.type === 'string') {
    return { name, datatype, shape, data: encodeBytesElements(t.data as string[]) };
  }
  const d = t.data as unknown as ArrayBufferView;
  return { name, datatype, shape, data: new Uint8Array(d.buffer, d.byteOffset, d.byteLength) };
}

/** Concatenate the same input of several requests along dim 0 (dynamic batching). */
export function concatBatch(parts: readonly Tensor[]): Tensor {
  if (parts.length === 1) return parts[0]!;
  const first = parts[0]!;
  const total = parts.reduce((n, t) => n + t.data.length, 0);
  const data = new Uint8Array(total);
  let off = 0;
  for (const t of parts) {
    data.set(t.data, off);
    off += t.data.length;
  }
  const batch = parts.reduce((n, t) => n + t.shape[0]!, 0);
  return { ...first, shape: [batch, ...first.shape.slice(1)], data };
}

/** Split a batched output back into per-request tensors of `sizes[i]` rows each. */
export function splitBatch(t: Tensor, sizes: readonly number[]): Tensor[] {
  if (sizes.length === 1) return [t];
  const rows = t.shape[0]!;
  const out: Tensor[] = [];
  if (t.datatype === 'BYTES') {
    const elems = decodeBytesElements(t.data);
    const perRow = rows > 0 ? elems.length / rows : 0;
    let e = 0;
    for (const s of sizes) {
      out.push({ ...t, shape: [s, ...t.shape.slice(1)], data: encodeBytesElements(elems.slice(e, e + s * perRow)) });
      e += s * perRow;
    }
    return out;
  }
  const rowBytes = rows > 0 ? t.data.length / rows : 0;
  let off = 0;
  for (const s of sizes) {
    out.push({ ...t, shape: [s, ...t.shape.slice(1)], data: t.data.subarray(off, off + s * rowBytes) });
    off += s * rowBytes;
  }
  return out;
}
