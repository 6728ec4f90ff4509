/**
 * Schema-driven protobuf text-format parser for `config.pbtxt` (spec §5.2): produces the raw,
 * un-normalised config as plain objects keyed by proto field names. Every field is checked against
 * model_config.proto (see ../schema.ts); unknown fields, bad enum names, wrong value types, values
 * out of range and syntax errors throw INVALID_ARG `source:line:col: message (at <field path>)`.
 *
 * Accepted syntax: `key: value`, `key { }`, `key: { }`, `key < >`, `key [ {..}, {..} ]`,
 * `key: [ 1, 2 ]`, repeated fields given several times (lists concatenate), maps as repeated
 * `{ key: .. value: .. }` entries (block or list form; a later key wins), optional `,` / `;`
 * after each field, adjacent string literals concatenated, bools `true/false/True/False/t/f/1/0`,
 * enums by name or number, `-` signs, `inf` / `nan` for floats.
 * Setting two members of a oneof, or a non-repeated field twice, is an error.
 */
import type { EnumDesc, FieldDesc, MessageDesc, ScalarKind, ValueType } from '../schema.js';
import { oneofSiblings, setMapEntry, typeName } from '../schema.js';
import { checkInteger, enumNames, isIntKind, parseIntLiteral, resolveEnum } from '../scalars.js';
import { Tokenizer, showToken, type Token } from './tokenizer.js';
import * as errors from '../config.errors.js';

type Obj = Record<string, unknown>;

const BOOL_TRUE = new Set(['true', 'True', 't']);
const BOOL_FALSE = new Set(['false', 'False', 'f']);

/** A synthetic `{key, value}` entry message for a map field. */
interface MapEntry {
  key: FieldDesc;
  value: FieldDesc;
}
const entryCache = new WeakMap<FieldDesc, MapEntry>();
function mapEntryOf(f: FieldDesc): MapEntry {
  let e = entryCache.get(f);
  if (!e) {
    const mk = (name: string, number: number, type: ValueType): FieldDesc => ({
      name,
      jsonName: name,
      number,
      type,
      repeated: false,
    });
    e = { key: mk('key', 1, { kind: f.mapKey! }), value: mk('value', 2, f.type) };
    entryCache.set(f, e);
  }
  return e;
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

class Parser {
  constructor(private readonly tok: Tokenizer) {}

  /** Where token `t` is, in the field `path` if known. */
  private at(t: Token, path?: string): errors.ConfigAt {
    return this.tok.at(t.line, t.col, path);
  }

  /** Parse fields until `close` (a symbol) or end of input when `close` is undefined. */
  parseMessage(desc: MessageDesc, path: string, close?: { symbol: string; open: Token; what: string }): Obj {
    const obj: Obj = {};
    for (;;) {
      const t = this.tok.peek();
      if (close) {
        if (t.kind === 'symbol' && t.text === close.symbol) {
          this.tok.next();
          return obj;
        }
        if (t.kind === 'eof') {
          throw errors.pbtxtUnclosed(this.at(t), close.symbol, close.what, close.open);
        }
      } else if (t.kind === 'eof') {
        return obj;
      }
      this.parseField(desc, obj, path);
      // Optional field separator.
      if (!this.tok.trySymbol(',')) this.tok.trySymbol(';');
    }
  }

  private parseField(desc: MessageDesc, obj: Obj, path: string): void {
    const nameTok = this.tok.next();
    if (nameTok.kind !== 'ident') {
      if (nameTok.kind === 'symbol' && nameTok.text === '[') {
        throw errors.pbtxtExtensionSyntax(this.at(nameTok, path), desc.name);
      }
      throw errors.unexpectedValue(this.at(nameTok, path), `a field name in ${desc.name}`, showToken(nameTok));
    }
    const f = desc.byName.get(nameTok.text);
    if (!f || (f.name !== nameTok.text && !f.aliases?.includes(nameTok.text))) {
      throw errors.fieldUnknown(this.at(nameTok, path), nameTok.text, desc.name);
    }
    const fpath = join(path, f.name);
    if (!f.repeated) {
      if (Object.prototype.hasOwnProperty.call(obj, f.name)) {
        throw errors.fieldRepeated(this.at(nameTok, fpath), f.name, desc.name);
      }
      const other = oneofSiblings(desc, f).find((s) => Object.prototype.hasOwnProperty.call(obj, s.name));
      if (other) {
        throw errors.oneofConflict(this.at(nameTok, fpath), f.name, other.name, f.oneof!, desc.name);
      }
    }

    const isMessageLike = f.type.kind === 'message' || f.mapKey !== undefined;
    const colon = this.tok.trySymbol(':');
    if (!isMessageLike && !colon) {
      throw errors.unexpectedValue(this.at(this.tok.peek(), fpath), `':' after field name '${f.name}'`, showToken(this.tok.peek()));
    }
    const listOpen = this.tok.peek();
    if (listOpen.kind === 'symbol' && listOpen.text === '[') {
      if (!f.repeated) throw errors.pbtxtListNotRepeated(this.at(listOpen, fpath), f.name);
      this.tok.next();
      if (this.tok.trySymbol(']')) {
        this.ensureCollection(obj, f);
        return;
      }
      for (;;) {
        this.parseOneValue(f, obj, fpath, nameTok);
        if (this.tok.trySymbol(']')) return;
        const sep = this.tok.next();
        if (!(sep.kind === 'symbol' && sep.text === ',')) {
          throw errors.unexpectedValue(this.at(sep, fpath), `',' or ']' in the list of '${f.name}'`, showToken(sep));
        }
      }
    }
    this.parseOneValue(f, obj, fpath, nameTok);
  }

  private ensureCollection(obj: Obj, f: FieldDesc): void {
    if (obj[f.name] === undefined) obj[f.name] = f.mapKey !== undefined ? {} : [];
  }

  /** Parse one value of field `f` (an element if repeated, an entry if a map) into `obj`. */
  private parseOneValue(f: FieldDesc, obj: Obj, fpath: string, nameTok: Token): void {
    if (f.mapKey !== undefined) {
      this.ensureCollection(obj, f);
      const map = obj[f.name] as Obj;
      const entry = mapEntryOf(f);
      const { open, close } = this.openBrace(f, fpath);
      const epath = `${fpath}[#${Object.keys(map).length}]`;
      let key: unknown;
      let value: unknown;
      for (;;) {
        const t = this.tok.peek();
        if (t.kind === 'symbol' && t.text === close) {
          this.tok.next();
          break;
        }
        if (t.kind === 'eof') throw errors.pbtxtUnclosed(this.at(t), close, `the entry of '${f.name}'`, open);
        const n = this.tok.next();
        if (n.kind !== 'ident' || (n.text !== 'key' && n.text !== 'value')) {
          throw errors.pbtxtMapEntryField(this.at(n, epath), showToken(n), f.name);
        }
        const which = n.text === 'key' ? entry.key : entry.value;
        if ((which === entry.key ? key : value) !== undefined) {
          throw errors.fieldRepeated(this.at(n, epath), n.text);
        }
        const msgValue = which.type.kind === 'message';
        if (!this.tok.trySymbol(':') && !msgValue) {
          throw errors.unexpectedValue(this.at(this.tok.peek(), epath), `':' after '${n.text}'`, showToken(this.tok.peek()));
        }
        if (which === entry.key) {
          key = this.parseSingle(which.type, `${epath}.key`);
        } else {
          value = this.parseSingle(which.type, `${epath}.value`);
        }
        if (!this.tok.trySymbol(',')) this.tok.trySymbol(';');
      }
      const k = key === undefined ? (f.mapKey === 'string' ? '' : '0') : String(key);
      setMapEntry(map, k, value !== undefined ? value : f.type.kind === 'message' ? {} : defaultScalar(f.type));
      return;
    }
    let path = fpath;
    if (f.repeated) {
      this.ensureCollection(obj, f);
      path = `${fpath}[${(obj[f.name] as unknown[]).length}]`;
    }
    const v = this.parseSingle(f.type, path, nameTok);
    if (f.repeated) (obj[f.name] as unknown[]).push(v);
    else obj[f.name] = v;
  }

  private openBrace(f: FieldDesc, path: string): { open: Token; close: string } {
    const open = this.tok.next();
    if (open.kind === 'symbol' && (open.text === '{' || open.text === '<')) {
      return { open, close: open.text === '{' ? '}' : '>' };
    }
    const what = f.mapKey !== undefined ? 'map entry' : typeName(f.type);
    throw errors.unexpectedValue(this.at(open, path), `'{' to start a ${what} value for '${f.name}'`, showToken(open));
  }

  /** Parse a single (non-list) value of type `t`. */
  private parseSingle(t: ValueType, path: string, nameTok?: Token): unknown {
    if (t.kind === 'message') {
      const open = this.tok.next();
      if (!(open.kind === 'symbol' && (open.text === '{' || open.text === '<'))) {
        throw errors.unexpectedValue(this.at(open, path), `'{' to start a ${t.messageType.name} value`, showToken(open));
      }
      const close = open.text === '{' ? '}' : '>';
      return this.parseMessage(t.messageType, path, { symbol: close, open, what: `'${nameTok?.text ?? path}'` });
    }
    if (t.kind === 'enum') return this.parseEnum(t.enumType, path);
    return this.parseScalar(t.kind, path);
  }

  private parseEnum(e: EnumDesc, path: string): string {
    const start = this.tok.peek();
    const neg = this.tok.trySymbol('-');
    const t = this.tok.next();
    if (t.kind === 'ident' && !neg) {
      const name = resolveEnum(e, t.text);
      if (name === undefined) throw errors.enumValueInvalid(this.at(t, path), e.name, t.text, enumNames(e));
      return name;
    }
    if (t.kind === 'int') {
      const v = parseIntLiteral(t.text)!;
      const num = Number(neg ? -v : v);
      const name = resolveEnum(e, num);
      if (name === undefined) throw errors.enumValueInvalid(this.at(start, path), e.name, num, enumNames(e));
      return name;
    }
    throw errors.unexpectedValue(this.at(t, path), `an enum value of ${e.name}`, showToken(t));
  }

  private parseScalar(kind: ScalarKind, path: string): unknown {
    const start = this.tok.peek();
    if (kind === 'string') {
      const t = this.tok.next();
      if (t.kind !== 'string') throw errors.unexpectedValue(this.at(t, path), 'a string', showToken(t));
      let s = t.value!;
      while (this.tok.peek().kind === 'string') s += this.tok.next().value!;
      return s;
    }
    if (kind === 'bool') {
      const t = this.tok.next();
      if (t.kind === 'ident' && BOOL_TRUE.has(t.text)) return true;
      if (t.kind === 'ident' && BOOL_FALSE.has(t.text)) return false;
      if (t.kind === 'int' && (t.text === '1' || t.text === '0')) return t.text === '1';
      throw errors.unexpectedValue(this.at(t, path), 'a boolean (true/false)', showToken(t));
    }
    const neg = this.tok.trySymbol('-');
    const t = this.tok.next();
    if (isIntKind(kind)) {
      if (t.kind === 'float') throw errors.unexpectedValue(this.at(t, path), `an integer for ${kind}`, `'${neg ? '-' : ''}${t.text}'`);
      if (t.kind !== 'int') throw errors.unexpectedValue(this.at(t, path), `an integer for ${kind}`, showToken(t));
      const v = parseIntLiteral(t.text)!;
      const r = checkInteger(kind, neg ? -v : v, this.at(start, path));
      return r === 0 ? 0 : r;
    }
    // float / double
    let v: number;
    if (t.kind === 'float') v = Number(t.text.replace(/[fF]$/, ''));
    else if (t.kind === 'int') v = Number(parseIntLiteral(t.text)!);
    else if (t.kind === 'ident' && /^(inf|infinity)$/i.test(t.text)) v = Infinity;
    else if (t.kind === 'ident' && /^nan$/i.test(t.text)) v = NaN;
    else throw errors.unexpectedValue(this.at(t, path), `a number for ${kind}`, showToken(t));
    if (Number.isNaN(v) && t.kind === 'float') throw errors.pbtxtNumberInvalid(this.at(t, path), 'malformed', t.text);
    return neg ? -v : v;
  }
}

function defaultScalar(t: ValueType): unknown {
  if (t.kind === 'enum') return t.enumType.values[0]![0];
  if (t.kind === 'string') return '';
  if (t.kind === 'bool') return false;
  return 0;
}

/**
 * Parse protobuf text of message type `desc` (ModelConfig by default at the call sites).
 * @param source file name used in error messages (default `config.pbtxt`).
 * @throws TritonError INVALID_ARG with `source:line:col: message (at field.path)`.
 */
export function parsePbtxt(text: string, desc: MessageDesc, source = 'config.pbtxt'): Obj {
  const tok = new Tokenizer(text, source);
  return new Parser(tok).parseMessage(desc, '');
}
