/**
 * fast-check arbitraries for raw configs, generated from the schema: any subset of fields, any
 * valid value of each type (full Unicode strings, full int ranges, 64-bit up to 2^53-1, doubles
 * including NaN/±Infinity/-0), at most one member per oneof, maps with arbitrary keys.
 */
import fc from 'fast-check';
import type { FieldDesc, MessageDesc, ScalarKind, ValueType } from '../../host/src/config/schema.js';

function scalar(kind: ScalarKind): fc.Arbitrary<unknown> {
  switch (kind) {
    case 'string':
      return fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('', 'INPUT0', 'a"b\\c\n\t\u0001\u007f', '__proto__', '\ufeffbom'));
    case 'bool':
      return fc.boolean();
    case 'int32':
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case 'uint32':
      return fc.integer({ min: 0, max: 2 ** 32 - 1 });
    case 'int64':
      return fc.oneof(fc.maxSafeInteger(), fc.constantFrom(-1, 0, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER));
    case 'uint64':
      return fc.oneof(fc.maxSafeNat(), fc.constant(Number.MAX_SAFE_INTEGER));
    case 'float':
    case 'double':
      return fc.double();
  }
}

function value(t: ValueType, depth: number): fc.Arbitrary<unknown> {
  if (t.kind === 'enum') return fc.constantFrom(...t.enumType.values.map(([n]) => n));
  if (t.kind === 'message') return messageArbitrary(t.messageType, depth + 1);
  return scalar(t.kind);
}

function field(f: FieldDesc, depth: number): fc.Arbitrary<unknown> {
  const v = value(f.type, depth);
  if (f.mapKey !== undefined) {
    const key = f.mapKey === 'uint64' ? fc.maxSafeNat().map(String) : (scalar('string') as fc.Arbitrary<string>);
    return fc.uniqueArray(fc.tuple(key, v), { maxLength: 3, selector: ([k]) => k }).map((entries) => {
      const m: Record<string, unknown> = {};
      for (const [k, x] of entries) Object.defineProperty(m, k, { value: x, enumerable: true, writable: true, configurable: true });
      return m;
    });
  }
  if (f.repeated) return fc.array(v, { maxLength: depth > 2 ? 1 : 3 });
  return v;
}

const cache = new Map<string, fc.Arbitrary<Record<string, unknown>>>();

/** Arbitrary raw message of type `desc` (a subset of its fields, oneofs respected). */
export function messageArbitrary(desc: MessageDesc, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const key = `${desc.name}@${Math.min(depth, 3)}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of desc.fields) model[f.name] = field(f, depth);
  const arb = fc.record(model, { requiredKeys: [] }).map((obj) => {
    const o = obj as Record<string, unknown>;
    const seen = new Set<string>();
    for (const f of desc.fields) {
      if (f.oneof === undefined || o[f.name] === undefined) continue;
      if (seen.has(f.oneof)) delete o[f.name];
      seen.add(f.oneof);
    }
    return o;
  });
  cache.set(key, arb);
  return arb;
}
