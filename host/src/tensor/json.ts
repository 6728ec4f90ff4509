/**
 * JSON tensor data ↔ raw tensor bytes (spec §1.9 "JSON data element", §1.10 layout).
 *
 * Input rules follow Triton's HTTP frontend: `data` may be nested or flat (only the total element
 * count is checked); integers are narrowed with C-cast semantics (wrap, no range check); BOOL must
 * be JSON true/false; FP16/BF16 cannot be sent as JSON; BYTES elements are JSON strings.
 */
import * as err from './tensor.errors.js';
import { type DataType, dataTypeByteSize } from '../contract/datatypes.js';
import { decodeBytesElements, encodeBytesElements } from './bytes.js';
import { elementReader, elementWriter } from './elements.js';

function flatten(data: unknown, out: unknown[]): void {
  if (Array.isArray(data)) {
    for (const d of data) flatten(d, out);
  } else {
    out.push(data);
  }
}

/** An array none of whose elements is an array. */
function isFlatArray(data: unknown): data is unknown[] {
  if (!Array.isArray(data)) return false;
  for (let i = 0; i < data.length; i++) if (Array.isArray(data[i])) return false;
  return true;
}

const INT_KIND: Partial<Record<DataType, 'signed' | 'unsigned'>> = {
  INT8: 'signed',
  INT16: 'signed',
  INT32: 'signed',
  INT64: 'signed',
  UINT8: 'unsigned',
  UINT16: 'unsigned',
  UINT32: 'unsigned',
  UINT64: 'unsigned',
};

/**
 * Convert an input's JSON `data` into raw bytes.
 * @param data nested or flat JSON array (a bare scalar is accepted as one element)
 * @param expectedElements element count of the declared shape
 * @throws TritonError INVALID_ARG for FP16/BF16 JSON; INTERNAL (500, as Triton's JSON layer) for
 *   elements of the wrong JSON type and for an element count that does not match the shape.
 */
export function jsonToTensorData(data: unknown, datatype: DataType, expectedElements: number, inputName: string): Uint8Array {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw err.jsonHalfUnsupported(datatype, inputName);
  }
  // A flat array (what most clients send) is read as it is; nested data is flattened into a copy.
  let flat: unknown[];
  if (isFlatArray(data)) flat = data;
  else flatten(data, (flat = []));
  if (flat.length !== expectedElements) {
    // Triton's text (server http_server.cc), which names neither the input nor the counts.
    throw err.jsonDataShapeMismatch();
  }
  if (datatype === 'BYTES') {
    for (const e of flat) {
      if (typeof e !== 'string') throw err.jsonDataElementType('string', 'string');
    }
    return encodeBytesElements(flat as string[]);
  }
  const size = dataTypeByteSize(datatype);
  const out = new Uint8Array(flat.length * size);
  const view = new DataView(out.buffer);
  if (datatype === 'BOOL') {
    for (let i = 0; i < flat.length; i++) {
      const e = flat[i];
      if (typeof e !== 'boolean') throw err.jsonDataElementType('boolean', 'boolean');
      out[i] = e ? 1 : 0;
    }
    return out;
  }
  const kind = INT_KIND[datatype];
  const write = elementWriter(datatype);
  for (let i = 0; i < flat.length; i++) {
    let e = flat[i];
    if (typeof e === 'bigint') {
      // An integer beyond 2^53, kept exact by the request parser: 64-bit types store it exactly;
      // it must fit the 64-bit range of its kind (rapidjson's AsInt/AsUInt); narrower integer
      // types take its low bits (C cast); floating-point types round it.
      if (kind) {
        const fits = kind === 'signed' ? e >= -(1n << 63n) && e < 1n << 63n : e >= 0n && e < 1n << 64n;
        if (!fits) throw err.jsonDataElementType(`${kind}-integer`, `${kind}-integer`);
        const off = i * size;
        if (datatype === 'INT64') view.setBigInt64(off, e, true);
        else if (datatype === 'UINT64') view.setBigUint64(off, BigInt.asUintN(64, e), true);
        else e = Number(BigInt.asIntN(64, e) & 0xffffffffn);
        if (datatype === 'INT64' || datatype === 'UINT64') continue;
      } else {
        e = Number(e);
      }
    }
    if (typeof e !== 'number') {
      throw err.jsonDataElementType('number', kind ? `${kind} integer` : 'double');
    }
    if (kind) {
      if (!Number.isInteger(e) || (kind === 'unsigned' && e < 0)) {
        throw err.jsonDataElementType(`${kind}-integer`, `${kind}-integer`);
      }
    }
    if (!write) throw err.jsonDatatypeUnhandled(datatype);
    write(view, i * size, e);
  }
  return out;
}

/** The datatypes whose elements print as JSON numbers that may be non-finite. */
const FLOAT_TYPES: ReadonlySet<DataType> = new Set(['FP16', 'BF16', 'FP32', 'FP64']);

function tokenNumberText(v: number): string {
  // JSON has no NaN/Infinity; Triton (rapidjson) writes them as tokens clients' parsers accept.
  if (Number.isFinite(v)) return String(v);
  return Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
}

/**
 * Longest JSON text of one element of each fixed-size datatype as {@link tensorDataToJsonElements}
 * prints it (e.g. INT32 `-2147483648`; FP16/BF16/FP32 widened to double, and a double prints in at
 * most 25 characters, `-0.0000012345678901234567`), plus its separating comma.
 */
const MAX_ELEMENT_TEXT: Record<Exclude<DataType, 'BYTES'>, number> = {
  BOOL: 6,
  INT8: 5,
  UINT8: 4,
  INT16: 7,
  UINT16: 6,
  INT32: 12,
  UINT32: 11,
  INT64: 21,
  UINT64: 21,
  FP16: 26,
  BF16: 26,
  FP32: 26,
  FP64: 26,
};

/**
 * Upper bound of the byte length of {@link tensorDataToJsonText}'s output for `data`, computed
 * without rendering (O(1); BYTES: every byte may print as a 6-byte `\u00XX` escape, plus quotes
 * and a comma per element). Used to refuse oversized JSON responses before building them.
 */
export function jsonTextMaxBytes(data: Uint8Array, datatype: DataType): number {
  if (datatype === 'BYTES') return 2 + data.length * 6; // each 4-byte length prefix covers its element's 3 bytes of quotes and comma
  return 2 + Math.ceil(data.length / dataTypeByteSize(datatype)) * MAX_ELEMENT_TEXT[datatype];
}

/**
 * Render raw tensor bytes as the text of a flat JSON array (e.g. `[1,2,3]`), ready to splice into
 * a response. 64-bit integers keep full precision; FP32 is widened to double as Triton does;
 * BYTES elements become JSON strings of their raw bytes (decoded as UTF-8); BOOL → true/false.
 * @throws TritonError INVALID_ARG on a truncated BYTES buffer or a byte size not a multiple of the element size.
 */
export function tensorDataToJsonText(data: Uint8Array, datatype: DataType): string {
  const Ctor = LITTLE_ENDIAN ? TYPED_VIEW[datatype] : undefined;
  if (Ctor !== undefined) {
    const size = Ctor.BYTES_PER_ELEMENT;
    if (data.length % size === 0) {
      // One native join over a typed view: the same text as the per-element path (ToString of
      // each element; NaN/Infinity/-Infinity are the tokens Triton writes, -0 prints as 0), without
      // a string and an array slot per element.
      // An unaligned view is copied (`new Uint8Array` copies; a Buffer's `slice` would not).
      const src = data.byteOffset % size === 0 ? data : new Uint8Array(data);
      return `[${new Ctor(src.buffer, src.byteOffset, src.length / size).join(',')}]`;
    }
  }
  return `[${tensorDataToJsonElements(data, datatype).join(',')}]`;
}

/** Whether this host stores typed-array elements little-endian, as tensor bytes are laid out (spec §1.10). */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Typed arrays whose `join(',')` prints each element exactly as {@link tensorDataToJsonElements} does. */
const TYPED_VIEW: Partial<Record<DataType, { new (b: ArrayBufferLike, off: number, n: number): { join(sep: string): string }; BYTES_PER_ELEMENT: number }>> = {
  INT8: Int8Array,
  UINT8: Uint8Array,
  INT16: Int16Array,
  UINT16: Uint16Array,
  INT32: Int32Array,
  UINT32: Uint32Array,
  INT64: BigInt64Array,
  UINT64: BigUint64Array,
  FP32: Float32Array,
  FP64: Float64Array,
};

/**
 * The JSON text of each element of a tensor (see {@link tensorDataToJsonText}).
 * @param nonFinite how NaN/±Infinity print: Triton's tokens (default) or `null` (strict JSON)
 */
export function tensorDataToJsonElements(data: Uint8Array, datatype: DataType, nonFinite: 'tokens' | 'null' = 'tokens'): string[] {
  if (datatype === 'BYTES') {
    const dec = new TextDecoder();
    return decodeBytesElements(data, 'output').map((e) => JSON.stringify(dec.decode(e)));
  }
  const numberText = nonFinite === 'null' ? (v: number) => (Number.isFinite(v) ? String(v) : 'null') : tokenNumberText;
  const size = dataTypeByteSize(datatype);
  if (data.length % size !== 0) {
    throw err.outputBytesNotElements(data.length, datatype, size);
  }
  const n = data.length / size;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const read = elementReader(datatype)!;
  const text: (v: number | bigint) => string =
    datatype === 'BOOL' ? (v) => (v ? 'true' : 'false') : FLOAT_TYPES.has(datatype) ? (v) => numberText(v as number) : String;
  const parts = new Array<string>(n);
  for (let i = 0; i < n; i++) parts[i] = text(read(view, i * size));
  return parts;
}

/**
 * Tensor bytes as JS values (numbers, booleans, strings; non-finite numbers become null).
 * 64-bit integers beyond 2^53 lose precision here: print with {@link tensorDataToJsonElements}.
 */
export function tensorDataToValues(data: Uint8Array, datatype: DataType): unknown[] {
  if (datatype === 'BYTES') {
    const dec = new TextDecoder();
    return decodeBytesElements(data, 'output').map((e) => dec.decode(e));
  }
  return JSON.parse(`[${tensorDataToJsonElements(data, datatype, 'null').join(',')}]`) as unknown[];
}
