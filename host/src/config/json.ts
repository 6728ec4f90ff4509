/**
 * ModelConfig ⇄ JSON (spec §1.7, §3.1).
 *
 * - {@link modelConfigFromJson}: the load API's `config` parameter, as Triton's
 *   `JsonToModelConfig` reads it (protobuf JSON parser with case-insensitive enums, unknown fields
 *   rejected): proto or lowerCamelCase field names, enums by name (any case) or number, integers as
 *   numbers or decimal strings, floats also as "NaN"/"Infinity", `null` = field not set.
 * - {@link modelConfigToJson}: the `/config` body / `TRITONBACKEND_ModelConfig` JSON, as Triton's
 *   `ModelConfigToJson` prints it: snake_case, all primitive fields, enums as names, 64-bit fields
 *   as JSON numbers except those Triton leaves as strings.
 */
import { isAllDefault, withDefaults } from './defaults.js';
import type { FieldDesc, MessageDesc, ScalarKind, ValueType } from './schema.js';
import { ModelConfigDesc, oneofSiblings, setMapEntry } from './schema.js';
import { checkInteger, describe, enumNames, isIntKind, resolveEnum } from './scalars.js';
import type { ModelConfig } from '../contract/model-config.js';
import * as errors from './config.errors.js';

type Obj = Record<string, unknown>;

/** Where the JSON reader is: the field `path` ('' for the whole). */
const at = (path: string): errors.ConfigAt => ({ in: 'json', path });

function isPlainObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function scalarFromJson(kind: ScalarKind, v: unknown, path: string): unknown {
  if (kind === 'string') {
    if (typeof v !== 'string') throw errors.unexpectedValue(at(path), 'a string', describe(v));
    return v;
  }
  if (kind === 'bool') {
    if (typeof v !== 'boolean') throw errors.unexpectedValue(at(path), 'true or false', describe(v));
    return v;
  }
  if (isIntKind(kind)) {
    let big: bigint;
    if (typeof v === 'number') {
      if (!Number.isInteger(v)) throw errors.unexpectedValue(at(path), `an integer for ${kind}`, String(v));
      if (!Number.isSafeInteger(v)) throw errors.integerInexact(at(path), v, kind, 'json');
      big = BigInt(v);
    } else if (typeof v === 'string' && /^-?(0|[1-9][0-9]*)$/.test(v)) {
      big = BigInt(v);
    } else {
      throw errors.unexpectedValue(at(path), `an integer for ${kind} (number or decimal string)`, describe(v));
    }
    const r = checkInteger(kind, big, at(path));
    return r === 0 ? 0 : r;
  }
  // float / double
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    if (v === 'NaN') return NaN;
    if (v === 'Infinity') return Infinity;
    if (v === '-Infinity') return -Infinity;
    if (/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) return Number(v);
  }
  throw errors.unexpectedValue(at(path), `a number for ${kind}`, describe(v));
}

function valueFromJson(t: ValueType, v: unknown, path: string): unknown {
  if (v === null) throw errors.nullNotAllowed(at(path));
  if (t.kind === 'message') return messageFromJson(v, t.messageType, path);
  if (t.kind === 'enum') {
    const name = typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v)) ? resolveEnum(t.enumType, v, true) : undefined;
    if (name === undefined) throw errors.enumValueInvalid(at(path), t.enumType.name, describe(v), enumNames(t.enumType));
    return name;
  }
  return scalarFromJson(t.kind, v, path);
}

function messageFromJson(json: unknown, desc: MessageDesc, path: string): Obj {
  if (!isPlainObject(json)) throw errors.unexpectedValue(at(path), `a JSON object for ${desc.name}`, describe(json));
  const out: Obj = {};
  const setBy = new Map<FieldDesc, string>();
  for (const [key, v] of Object.entries(json)) {
    const f = desc.byName.get(key);
    if (!f) throw errors.fieldUnknown(at(path), key, desc.name);
    const fpath = path ? `${path}.${f.name}` : f.name;
    const prev = setBy.get(f);
    if (prev !== undefined) throw errors.fieldGivenTwice(at(fpath), f.name, prev, key);
    setBy.set(f, key);
    if (v === null) continue; // protobuf JSON: null means "not set"
    if (!f.repeated) {
      const other = oneofSiblings(desc, f).find((s) => out[s.name] !== undefined);
      if (other) throw errors.oneofConflict(at(fpath), f.name, other.name, f.oneof!, desc.name);
    }
    if (f.mapKey !== undefined) {
      if (!isPlainObject(v)) throw errors.unexpectedValue(at(fpath), 'a JSON object (map)', describe(v));
      const m: Obj = {};
      for (const [k, x] of Object.entries(v)) {
        let key = k;
        if (f.mapKey === 'uint64') {
          if (!/^(0|[1-9][0-9]*)$/.test(k)) throw errors.mapKeyNotUnsigned(at(fpath), k);
          key = String(checkInteger('uint64', BigInt(k), at(fpath)));
        }
        setMapEntry(m, key, valueFromJson(f.type, x, `${fpath}[${JSON.stringify(k)}]`));
      }
      out[f.name] = m;
    } else if (f.repeated) {
      if (!Array.isArray(v)) throw errors.unexpectedValue(at(fpath), 'a JSON array', describe(v));
      out[f.name] = v.map((x, i) => valueFromJson(f.type, x, `${fpath}[${i}]`));
    } else {
      out[f.name] = valueFromJson(f.type, v, fpath);
    }
  }
  return out;
}

/**
 * Read a JSON ModelConfig (spec §3.1 load API `config`; also the backend-side auto-complete JSON).
 * @param json the parsed value, or a JSON text.
 * @returns the raw (un-normalised) config: only the fields given.
 * @throws TritonError INVALID_ARG on malformed JSON, unknown fields, wrong types, values beyond
 *   the field's range (or beyond 2^53-1), bad enum names, two members of a oneof.
 */
export function modelConfigFromJson(json: unknown): Partial<ModelConfig> {
  let value = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json);
    } catch (e) {
      throw errors.configJsonMalformed((e as Error).message);
    }
  }
  return messageFromJson(value, ModelConfigDesc, '') as Partial<ModelConfig>;
}

/**
 * The JSON text Triton prints for a (normalised) config from `GET /v2/models/{m}/config` and hands
 * backends through `TRITONBACKEND_ModelConfig` (spec §1.7). Keys in model_config.proto order;
 * `secondary_devices[].device_id` and CUDA `graph_spec` dims stay strings (Triton does not rewrite
 * them); an all-default config prints as the empty string, as in Triton.
 * @throws TritonError INVALID_ARG if `config` is structurally invalid.
 */
export function modelConfigToJson(config: Partial<ModelConfig>): string {
  if (isAllDefault(withDefaults(config, ModelConfigDesc, '', 'config'), ModelConfigDesc)) return '';
  return JSON.stringify(withDefaults(config, ModelConfigDesc, '', 'json'));
}
