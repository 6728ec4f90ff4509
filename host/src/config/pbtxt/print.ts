/**
 * Protobuf text-format printer for configs (spec §5.2). Prints every field present in the object
 * (defaults included) in model_config.proto declaration order, so that
 * `parsePbtxt(printPbtxt(c))` deep-equals `c` for any config the parser can produce. Repeated
 * scalars print as `dims: [ 16 ]`, repeated messages as `input [ {..}, {..} ]`, maps as one
 * `key`/`value` block per entry; empty collections print as `[]` so they survive a round trip.
 */
import type { FieldDesc, MessageDesc, ValueType } from '../schema.js';
import { checkScalarValue, describe, resolveEnum } from '../scalars.js';
import * as errors from '../config.errors.js';

type Obj = Record<string, unknown>;

/** Quote a string for text format: `"`, `\` and control characters escaped, other text as UTF-8. */
export function quoteString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (cp < 0x20 || cp === 0x7f) out += '\\' + cp.toString(8).padStart(3, '0');
    else if (cp >= 0xd800 && cp <= 0xdfff)
      out += '\\uFFFD'; // lone surrogate: not representable in UTF-8
    else out += ch;
  }
  return out + '"';
}

/** A float/double in text format (`nan`, `inf`, `-inf`, `-0` kept). */
function formatFloat(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  if (Object.is(v, -0)) return '-0';
  return String(v);
}

/** Where the printer is: the field `path`. */
const at = (path: string): errors.ConfigAt => ({ in: 'print', path });

function formatScalar(t: ValueType, v: unknown, path: string): string {
  if (t.kind === 'message') throw errors.printMessageAsScalar(at(path));
  if (t.kind === 'enum') {
    const name = typeof v === 'string' || typeof v === 'number' ? resolveEnum(t.enumType, v) : undefined;
    if (name === undefined) throw errors.enumValueInvalid(at(path), t.enumType.name, describe(v));
    return name;
  }
  checkScalarValue(t.kind, v, at(path));
  if (t.kind === 'string') return quoteString(v as string);
  if (t.kind === 'bool') return v ? 'true' : 'false';
  if (t.kind === 'float' || t.kind === 'double') return formatFloat(v as number);
  return String(v);
}

function isPlainObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

class Printer {
  readonly lines: string[] = [];

  message(obj: unknown, desc: MessageDesc, indent: string, path: string): void {
    if (!isPlainObject(obj)) throw errors.unexpectedValue(at(path || desc.name), `an object for ${desc.name}`, describe(obj));
    for (const k of Object.keys(obj)) {
      const f = desc.byName.get(k);
      if (!f || f.name !== k) throw errors.fieldUnknown(at(path || desc.name), k, desc.name);
    }
    for (const f of desc.fields) {
      const v = obj[f.name];
      if (v === undefined) continue;
      this.field(f, v, indent, path ? `${path}.${f.name}` : f.name);
    }
  }

  private field(f: FieldDesc, v: unknown, ind: string, path: string): void {
    if (f.mapKey !== undefined) return this.map(f, v, ind, path);
    if (f.repeated) {
      if (!Array.isArray(v)) throw errors.unexpectedValue(at(path), 'an array', describe(v));
      if (f.type.kind !== 'message') {
        const items = v.map((x, i) => formatScalar(f.type, x, `${path}[${i}]`));
        this.lines.push(items.length ? `${ind}${f.name}: [ ${items.join(', ')} ]` : `${ind}${f.name}: []`);
        return;
      }
      if (v.length === 0) {
        this.lines.push(`${ind}${f.name} []`);
        return;
      }
      const elementType = f.type.messageType;
      this.lines.push(`${ind}${f.name} [`);
      v.forEach((el, i) => {
        this.block(elementType, el, `${ind}  `, `${path}[${i}]`, '', i < v.length - 1 ? ',' : '');
      });
      this.lines.push(`${ind}]`);
      return;
    }
    if (f.type.kind === 'message') {
      this.block(f.type.messageType, v, ind, path, `${f.name} `, '');
      return;
    }
    this.lines.push(`${ind}${f.name}: ${formatScalar(f.type, v, path)}`);
  }

  /** `<prefix>{ ... }<suffix>`, or `<prefix>{}` when the message has no fields set. */
  private block(desc: MessageDesc, v: unknown, ind: string, path: string, prefix: string, suffix: string): void {
    const start = this.lines.length;
    this.lines.push(`${ind}${prefix}{`);
    this.message(v, desc, `${ind}  `, path);
    if (this.lines.length === start + 1) this.lines[start] = `${ind}${prefix}{}${suffix}`;
    else this.lines.push(`${ind}}${suffix}`);
  }

  private map(f: FieldDesc, v: unknown, ind: string, path: string): void {
    if (!isPlainObject(v)) throw errors.unexpectedValue(at(path), 'an object (map)', describe(v));
    const entries = Object.entries(v);
    if (entries.length === 0) {
      this.lines.push(`${ind}${f.name} []`);
      return;
    }
    for (const [k, val] of entries) {
      const epath = `${path}[${JSON.stringify(k)}]`;
      let key: string;
      if (f.mapKey === 'uint64') {
        if (!/^(0|[1-9][0-9]*)$/.test(k) || !Number.isSafeInteger(Number(k))) throw errors.mapKeyNotUnsigned(at(epath), k);
        key = k;
      } else {
        key = quoteString(k);
      }
      this.lines.push(`${ind}${f.name} {`);
      this.lines.push(`${ind}  key: ${key}`);
      if (f.type.kind === 'message') this.block(f.type.messageType, val, `${ind}  `, epath, 'value ', '');
      else this.lines.push(`${ind}  value: ${formatScalar(f.type, val, epath)}`);
      this.lines.push(`${ind}}`);
    }
  }
}

/**
 * Print `obj` (message type `desc`) as protobuf text.
 * @throws TritonError INVALID_ARG if `obj` has unknown fields or values of the wrong type.
 */
export function printPbtxt(obj: unknown, desc: MessageDesc): string {
  const p = new Printer();
  p.message(obj, desc, '', '');
  return p.lines.length ? p.lines.join('\n') + '\n' : '';
}
