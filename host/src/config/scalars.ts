/**
 * Scalar value rules shared by the pbtxt parser/printer and the JSON reader (spec §5.2, §1.7):
 * integer ranges per protobuf type, the 2^53 limit of Warden's number representation, enum
 * name/number resolution. The checks throw the catalogue's errors (config.errors.ts) framed by the
 * caller's {@link ConfigAt}: `file:line:col` or the reader, and the field path.
 */
import type { EnumDesc, ScalarKind } from './schema.js';
import { type ConfigAt, integerInexact, integerOutOfRange, unexpectedValue } from './config.errors.js';

type IntKind = 'int32' | 'uint32' | 'int64' | 'uint64';

const INT_LIMITS: Record<IntKind, readonly [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** True for the integer kinds. */
export function isIntKind(k: ScalarKind): k is IntKind {
  return k === 'int32' || k === 'uint32' || k === 'int64' || k === 'uint64';
}

/**
 * Check an exact integer against the protobuf range of `kind` and Warden's exact-number limit
 * (|v| <= 2^53-1 for 64-bit kinds).
 * @returns the value as a JS number.
 * @throws TritonError INVALID_ARG framed by `at` when out of range or beyond the limit.
 */
export function checkInteger(kind: IntKind, v: bigint, at: ConfigAt): number {
  const [lo, hi] = INT_LIMITS[kind];
  if (v < lo || v > hi) throw integerOutOfRange(at, v, kind);
  if (v > SAFE || v < -SAFE) throw integerInexact(at, v, kind, 'config');
  return Number(v);
}

/** Parse an integer literal as protobuf's text tokenizer reads it: decimal, `0x` hex, `0` octal. */
export function parseIntLiteral(text: string): bigint | undefined {
  if (/^0[xX][0-9a-fA-F]+$/.test(text)) return BigInt(text);
  if (/^0[0-7]+$/.test(text)) return BigInt('0o' + text.slice(1));
  if (/^(0|[1-9][0-9]*)$/.test(text)) return BigInt(text);
  return undefined;
}

/**
 * Check a JS number destined for an integer field (JSON input, printer input).
 * @throws TritonError INVALID_ARG framed by `at` when not an integer, inexact or out of range.
 */
function checkIntegerNumber(kind: IntKind, v: number, at: ConfigAt): void {
  if (!Number.isInteger(v)) throw unexpectedValue(at, `an integer for ${kind}`, String(v));
  if (!Number.isSafeInteger(v)) throw integerInexact(at, v, kind, 'number');
  checkInteger(kind, BigInt(v), at);
}

/** Enum value by name (exact, or case-insensitive as Triton's JSON parser) or by number. */
export function resolveEnum(e: EnumDesc, v: string | number, caseInsensitive = false): string | undefined {
  if (typeof v === 'number') return e.values.find(([, n]) => n === v)?.[0];
  const exact = e.values.find(([n]) => n === v);
  if (exact || !caseInsensitive) return exact?.[0];
  const upper = v.toUpperCase();
  return e.values.find(([n]) => n.toUpperCase() === upper)?.[0];
}

/** The comma-separated list of an enum's names, for error messages. */
export function enumNames(e: EnumDesc): string {
  return e.values.map(([n]) => n).join(', ');
}

/** The proto3 default of a scalar kind (`''`, `false`, `0`). */
export function scalarDefault(kind: ScalarKind): string | boolean | number {
  if (kind === 'string') return '';
  if (kind === 'bool') return false;
  return 0;
}

const SCALAR_TYPES: Record<'string' | 'bool' | 'float' | 'double', { readonly js: string; readonly name: string }> = {
  string: { js: 'string', name: 'a string' },
  bool: { js: 'boolean', name: 'a boolean' },
  float: { js: 'number', name: 'a number' },
  double: { js: 'number', name: 'a number' },
};

/**
 * Check that a JS value has the shape Warden's in-memory config uses for `kind`
 * (string / boolean / exact integer in range / number).
 * @throws TritonError INVALID_ARG framed by `at` when it has not.
 */
export function checkScalarValue(kind: ScalarKind, v: unknown, at: ConfigAt): void {
  if (isIntKind(kind)) {
    if (typeof v !== 'number') throw unexpectedValue(at, 'an integer', describe(v));
    checkIntegerNumber(kind, v, at);
    return;
  }
  const t = SCALAR_TYPES[kind];
  if (typeof v !== t.js) throw unexpectedValue(at, t.name, describe(v));
}

/** Short description of a JS value for error messages. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  return String(v);
}
