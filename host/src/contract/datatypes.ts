/**
 * Triton datatypes (spec §1.9): protocol names, config enum names, C enum values, element sizes.
 */
import type { ModelInput, ModelOutput } from './model-config.js';

/** Protocol datatype names as used over HTTP and in the C API string form. */
export type DataType = 'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64' | 'INT8' | 'INT16' | 'INT32' | 'INT64' | 'FP16' | 'FP32' | 'FP64' | 'BYTES' | 'BF16';

/** Protocol names in `TRITONSERVER_DataType` order; index = C enum value (0 is INVALID). */
export const DATATYPES_BY_ENUM: readonly (DataType | 'INVALID')[] = [
  'INVALID',
  'BOOL',
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'FP32',
  'FP64',
  'BYTES',
  'BF16',
];

const BYTE_SIZE: Record<DataType, number> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
  BYTES: 0,
  BF16: 2,
};

/** True if `s` is a protocol datatype name (case-sensitive, as Triton's `StringToDataType`). */
export function isDataType(s: unknown): s is DataType {
  return typeof s === 'string' && Object.prototype.hasOwnProperty.call(BYTE_SIZE, s);
}

/** Bytes per element; 0 for BYTES (variable size), as `TRITONSERVER_DataTypeByteSize`. */
export function dataTypeByteSize(dt: DataType): number {
  return BYTE_SIZE[dt];
}

/** C enum value (`TRITONSERVER_DataType`) of a protocol datatype. */
export function dataTypeEnum(dt: DataType): number {
  return DATATYPES_BY_ENUM.indexOf(dt);
}

/** Config enum name (`TYPE_FP32`, `TYPE_STRING` for BYTES) → protocol name; undefined if unknown/INVALID. */
export function fromConfigDataType(configType: string): DataType | undefined {
  if (configType === 'TYPE_STRING') return 'BYTES';
  const name = configType.startsWith('TYPE_') ? configType.slice(5) : '';
  return isDataType(name) && name !== 'BYTES' ? name : undefined;
}

/** Protocol name → config enum name (`BYTES` → `TYPE_STRING`). */
export function toConfigDataType(dt: DataType): string {
  return dt === 'BYTES' ? 'TYPE_STRING' : `TYPE_${dt}`;
}

/** Number of elements in a shape (product of dims; 1 for a scalar `[]`). Dims must be >= 0. */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Config data type → protocol datatype (TYPE_STRING → BYTES). */
export function tensorDataType(t: ModelInput | ModelOutput): DataType {
  return fromConfigDataType(t.data_type) ?? 'BYTES';
}
