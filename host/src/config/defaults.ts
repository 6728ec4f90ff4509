/**
 * Proto3 default filling in model_config.proto declaration order (spec §1.7): the shape protobuf's
 * JSON printer gives with `always_print_primitive_fields` — every scalar, repeated and map field
 * present (defaults `""`, `0`, `false`, first enum name, `[]`, `{}`), singular sub-messages and
 * oneof members only when set. Also a structural check: unknown keys, wrong value types and two
 * members of one oneof throw INVALID_ARG with the field path.
 */
import type { FieldDesc, MessageDesc, ValueType } from './schema.js';
import { oneofSiblings, setMapEntry } from './schema.js';
import { checkScalarValue, describe, scalarDefault } from './scalars.js';
import * as errors from './config.errors.js';

type Obj = Record<string, unknown>;

/** `config`: Warden's in-memory form. `json`: Triton's `/config` JSON (int64 strings where Triton keeps them). */
export type DefaultsMode = 'config' | 'json';

function isPlainObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Where the structural check is: the field `path` ('' for the whole). */
const at = (path: string): errors.ConfigAt => ({ in: 'check', path });

function value(t: ValueType, v: unknown, f: FieldDesc, path: string, mode: DefaultsMode): unknown {
  if (t.kind === 'message') return withDefaults(v, t.messageType, path, mode);
  if (t.kind === 'enum') {
    if (typeof v !== 'string' || !t.enumType.values.some(([n]) => n === v)) {
      throw errors.enumValueInvalid(at(path), t.enumType.name, describe(v));
    }
    return v;
  }
  checkScalarValue(t.kind, v, at(path));
  if (mode === 'json') {
    const n = v as number;
    if ((t.kind === 'float' || t.kind === 'double') && !Number.isFinite(n)) {
      return Number.isNaN(n) ? 'NaN' : n > 0 ? 'Infinity' : '-Infinity';
    }
    if (f.jsonAsString) return String(n);
  }
  return v;
}

/**
 * A new object of message type `desc` with every default filled in, keys in declaration order.
 * @param path field path of `obj` for error messages ('' for the root).
 * @throws TritonError INVALID_ARG on unknown fields, wrongly typed values or a oneof set twice.
 */
export function withDefaults(obj: unknown, desc: MessageDesc, path = '', mode: DefaultsMode = 'config'): Obj {
  if (!isPlainObject(obj)) throw errors.unexpectedValue(at(path), `an object for ${desc.name}`, describe(obj));
  for (const k of Object.keys(obj)) {
    const f = desc.byName.get(k);
    if (!f || f.name !== k) throw errors.fieldUnknown(at(path), k, desc.name);
  }
  const out: Obj = {};
  for (const f of desc.fields) {
    const fpath = path ? `${path}.${f.name}` : f.name;
    const v = obj[f.name];
    if (f.mapKey !== undefined) {
      if (v === undefined) {
        out[f.name] = {};
        continue;
      }
      if (!isPlainObject(v)) throw errors.unexpectedValue(at(fpath), 'an object (map)', describe(v));
      const m: Obj = {};
      for (const [k, x] of Object.entries(v)) {
        if (f.mapKey === 'uint64' && (!/^(0|[1-9][0-9]*)$/.test(k) || !Number.isSafeInteger(Number(k)))) {
          throw errors.mapKeyNotUnsigned(at(fpath), k);
        }
        setMapEntry(m, k, value(f.type, x, f, `${fpath}[${JSON.stringify(k)}]`, mode));
      }
      out[f.name] = m;
    } else if (f.repeated) {
      if (v === undefined) {
        out[f.name] = [];
        continue;
      }
      if (!Array.isArray(v)) throw errors.unexpectedValue(at(fpath), 'an array', describe(v));
      out[f.name] = v.map((x, i) => value(f.type, x, f, `${fpath}[${i}]`, mode));
    } else if (v !== undefined) {
      const other = oneofSiblings(desc, f).find((s) => obj[s.name] !== undefined);
      if (other) throw errors.oneofConflict(at(fpath), f.name, other.name, f.oneof!, desc.name);
      out[f.name] = value(f.type, v, f, fpath, mode);
    } else if (f.type.kind !== 'message' && f.oneof === undefined) {
      const d = f.type.kind === 'enum' ? f.type.enumType.values[0]![0] : scalarDefault(f.type.kind);
      out[f.name] = mode === 'json' && f.jsonAsString ? String(d) : d;
    }
  }
  return out;
}

/** True when `obj` holds only proto3 defaults (protobuf would serialise it to 0 bytes). */
export function isAllDefault(obj: Obj, desc: MessageDesc): boolean {
  for (const f of desc.fields) {
    const v = obj[f.name];
    if (v === undefined) continue;
    if (f.mapKey !== undefined) {
      if (Object.keys(v as Obj).length) return false;
    } else if (f.repeated) {
      if ((v as unknown[]).length) return false;
    } else if (f.type.kind === 'message' || f.oneof !== undefined) {
      return false; // a set sub-message or oneof member always serialises
    } else if (f.type.kind === 'enum') {
      if (v !== f.type.enumType.values[0]![0]) return false;
    } else if (v !== scalarDefault(f.type.kind) && !(typeof v === 'number' && v === 0)) {
      return false;
    }
  }
  return true;
}
