/**
 * `InferTensorContents` (grpc_service.proto): an input's elements as typed lists, the alternative
 * to `raw_input_contents`. One list per datatype family, as Triton reads them: `bool_contents`
 * (BOOL), `int_contents` (INT8/16/32), `int64_contents` (INT64), `uint_contents` (UINT8/16/32),
 * `uint64_contents` (UINT64), `fp32_contents`, `fp64_contents`, `bytes_contents` (BYTES). FP16 and
 * BF16 have no list: they must come as raw bytes.
 */
import { contentsCountMismatch, contentsNoList, contentsOtherLists } from '../infer-request.errors.js';
import { encodeBytesElements } from '../../tensor/bytes.js';
import { elementWriter } from '../../tensor/elements.js';
import { dataTypeByteSize, type DataType } from '../../contract/datatypes.js';
import type { InferTensorContents } from './proto.js';

const LIST: Record<DataType, keyof InferTensorContents | undefined> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
  FP16: undefined,
  BF16: undefined,
};

/** Number of elements the contents hold in any list (0 = no contents given). */
export function contentsCount(c: InferTensorContents | undefined): number {
  if (!c) return 0;
  return (Object.values(c) as unknown[]).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 0), 0);
}

/**
 * The tensor bytes (row-major, little-endian; BYTES as 4-byte length + bytes) of typed contents.
 * @param elements the element count of the input's shape
 * @throws TritonError INVALID_ARG for FP16/BF16, for elements in a list other than the datatype's,
 *   or for a count that differs from the shape's
 */
export function contentsToTensorData(c: InferTensorContents, datatype: DataType, elements: number, name: string): Uint8Array {
  const field = LIST[datatype];
  if (field === undefined) throw contentsNoList(datatype, name);
  const values = c[field] as unknown[];
  if (values.length !== contentsCount(c)) throw contentsOtherLists(name, datatype, String(field));
  if (values.length !== elements) {
    throw contentsCountMismatch(String(field), name, elements, values.length);
  }
  if (datatype === 'BYTES') return encodeBytesElements(values as Buffer[]);
  const size = dataTypeByteSize(datatype);
  const out = new Uint8Array(elements * size);
  const view = new DataView(out.buffer);
  // LIST names a list only for the datatypes elementWriter writes (and BYTES, encoded above).
  const write = elementWriter(datatype)!;
  for (let i = 0; i < elements; i++) write(view, i * size, values[i] as number | string | boolean);
  return out;
}
