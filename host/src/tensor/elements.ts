/**
 * One element of a fixed-size datatype read from or written into tensor bytes (spec §1.10:
 * row-major, little-endian); written from whatever the element came as (a JSON number, a gRPC
 * typed-contents value).
 */
import type { DataType } from '../contract/datatypes.js';
import { bf16ToNumber, halfToNumber } from './half.js';

/**
 * Writes `value` at byte `offset`: integers of up to 32 bits and floating-point types take
 * `Number(value)` (integers wrap, C-cast semantics), 64-bit integers `BigInt(value)`, BOOL 1 for a
 * truthy value and 0 otherwise.
 * @throws RangeError / SyntaxError from `BigInt` for a 64-bit value that is not an integer
 */
export type ElementWriter = (view: DataView, offset: number, value: number | bigint | string | boolean) => void;

const WRITERS = new Map<DataType, ElementWriter>([
  ['BOOL', (d, o, v) => d.setUint8(o, v ? 1 : 0)],
  ['INT8', (d, o, v) => d.setInt8(o, Number(v))],
  ['UINT8', (d, o, v) => d.setUint8(o, Number(v))],
  ['INT16', (d, o, v) => d.setInt16(o, Number(v), true)],
  ['UINT16', (d, o, v) => d.setUint16(o, Number(v), true)],
  ['INT32', (d, o, v) => d.setInt32(o, Number(v), true)],
  ['UINT32', (d, o, v) => d.setUint32(o, Number(v), true)],
  ['INT64', (d, o, v) => d.setBigInt64(o, BigInt(v), true)],
  ['UINT64', (d, o, v) => d.setBigUint64(o, BigInt(v), true)],
  ['FP32', (d, o, v) => d.setFloat32(o, Number(v), true)],
  ['FP64', (d, o, v) => d.setFloat64(o, Number(v), true)],
]);

/** The writer of `datatype`'s elements; undefined for BYTES, FP16 and BF16 (no fixed-size JS number form). */
export function elementWriter(datatype: DataType): ElementWriter | undefined {
  return WRITERS.get(datatype);
}

/** Reads the element at byte `offset`: a number (BOOL 0 or 1; FP16 and BF16 widened), a bigint for 64-bit integers. */
export type ElementReader = (view: DataView, offset: number) => number | bigint;

const READERS = new Map<DataType, ElementReader>([
  ['BOOL', (d, o) => d.getUint8(o)],
  ['INT8', (d, o) => d.getInt8(o)],
  ['UINT8', (d, o) => d.getUint8(o)],
  ['INT16', (d, o) => d.getInt16(o, true)],
  ['UINT16', (d, o) => d.getUint16(o, true)],
  ['INT32', (d, o) => d.getInt32(o, true)],
  ['UINT32', (d, o) => d.getUint32(o, true)],
  ['INT64', (d, o) => d.getBigInt64(o, true)],
  ['UINT64', (d, o) => d.getBigUint64(o, true)],
  ['FP16', (d, o) => halfToNumber(d.getUint16(o, true))],
  ['BF16', (d, o) => bf16ToNumber(d.getUint16(o, true))],
  ['FP32', (d, o) => d.getFloat32(o, true)],
  ['FP64', (d, o) => d.getFloat64(o, true)],
]);

/** The reader of `datatype`'s elements; undefined for BYTES (variable-size, see bytes.ts). */
export function elementReader(datatype: DataType): ElementReader | undefined {
  return READERS.get(datatype);
}
