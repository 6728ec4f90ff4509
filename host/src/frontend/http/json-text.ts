/**
 * Request JSON parsing with Triton's limits and exact 64-bit integers (spec §1.8, §1.9):
 * nesting deeper than {@link MAX_JSON_DEPTH} is refused, integers beyond 2^53 are kept exact
 * (as `bigint`, so INT64/UINT64 data such as 2^63−1 is not rounded), and a key met twice in one
 * object keeps its FIRST value, as Triton's parser (rapidjson `FindMember`) reads it; JSON.parse
 * would keep the last. Duplicates can also be reported (`/generate` refuses them). A number
 * literal beyond ±DBL_MAX (`1e400`) is malformed, as rapidjson stops at it ("Number too big to be
 * stored in double"): JSON.parse would make it ±Infinity, which no request may carry in.
 *
 * UTF-16 surrogate escapes are read as rapidjson 1.1 reads them (Triton's parser, without
 * encoding validation): a `\uD800`–`\uDBFF` escape not followed by a `\uDC00`–`\uDFFF` escape is
 * malformed ("The surrogate pair in string is invalid.", at the first escape's backslash), which
 * JSON.parse would accept; a lone `\uDC00`–`\uDFFF` escape is accepted (rapidjson stores its
 * 3-byte form: tensor/bytes.ts writes BYTES elements so).
 *
 * The common case stays on V8's JSON.parse: one byte scan finds the depth, the number of object
 * members, whether any integer literal has 16 or more digits, whether any exponent has 3 or
 * more digits and whether a high surrogate escape lacks its low half (checked only at a `\u`
 * escape, so a body without one costs nothing more); a walk of the parsed value counts its keys.
 * Only when an integer is long, an exponent could overflow, a surrogate escape is unpaired or a
 * key was met twice (fewer keys than members) does the (slower) exact parser run.
 */
import * as httpErrors from './http.errors.js';

/** Triton's maximum JSON nesting depth. */
export const MAX_JSON_DEPTH = 100;

/** A parsed JSON value: like JSON.parse's, with `bigint` for integers outside ±(2^53−1). */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [k: string]: JsonValue };

export interface JsonParseOptions {
  /** Called for a key met again in the same object (`path` = the enclosing keys); the first value is kept. */
  onDuplicateKey?: (key: string, path: readonly string[]) => void;
}

const depthError = () => httpErrors.jsonTooDeep(MAX_JSON_DEPTH);
/** Malformed JSON: Triton's TritonJson parse error, INTERNAL (500) as tritonserver answers it. */
const parseError = (msg: string) => httpErrors.jsonMalformed(msg);

/**
 * One pass over the bytes: nesting depth (outside strings), the number of object members (one
 * ':' outside strings each), whether an integer literal of 16+ digits occurs (2^53 has 16
 * digits; shorter integers are exact as doubles) and whether an exponent of 3+ digits occurs
 * (the only way a literal with fewer than 16 integer digits can pass DBL_MAX ≈ 1.8e308), and
 * whether a `\uD800`–`\uDBFF` escape is not directly followed by a `\uDC00`–`\uDFFF` one
 * (`unpairedSurrogate`: rapidjson refuses it, JSON.parse would not).
 * @throws TritonError INVALID_ARG when the depth exceeds {@link MAX_JSON_DEPTH}
 */
function scan(b: Uint8Array): { longIntegers: boolean; longExponents: boolean; unpairedSurrogate: boolean; members: number } {
  let depth = 0;
  let inString = false;
  let digits = 0;
  let fraction = false;
  let longIntegers = false;
  let exponent = false;
  let exponentDigits = 0;
  let longExponents = false;
  let unpairedSurrogate = false;
  let members = 0;
  // the next '"' and '\\' at or after the scan point (-1: none left), searched natively: a long
  // string (a base64 file of an upload) costs two searches, not a loop over its bytes
  let nextQuote = -2;
  let nextEscape = -2;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (inString) {
      if (c !== 0x5c && c !== 0x22) {
        if (nextQuote !== -1 && nextQuote < i) nextQuote = b.indexOf(0x22, i);
        if (nextEscape !== -1 && nextEscape < i) nextEscape = b.indexOf(0x5c, i);
        const stop = nextEscape !== -1 && (nextQuote === -1 || nextEscape < nextQuote) ? nextEscape : nextQuote;
        if (stop === -1) break; // an unterminated string: JSON.parse reports it
        i = stop - 1; // the loop's i++ lands on it
        continue;
      }
      if (c === 0x5c) {
        // `\u` + [dD][89abAB]..: a high surrogate; its low half must follow as `\u` + [dD][c-fC-F]..
        // (bytes past the end read as undefined, which matches nothing). Hex digits themselves are
        // JSON.parse's to check; on an error it falls back to the exact parser anyway.
        if (b[i + 1] === 0x75 && (b[i + 2]! | 0x20) === 0x64 && isHighNibble(b[i + 3]! | 0x20)) {
          if (!(b[i + 6] === 0x5c && b[i + 7] === 0x75 && (b[i + 8]! | 0x20) === 0x64 && isLowNibble(b[i + 9]! | 0x20))) unpairedSurrogate = true;
        }
        i++;
      } else if (c === 0x22) inString = false;
      continue;
    }
    if (c >= 0x30 && c <= 0x39) {
      if (exponent) {
        if (++exponentDigits >= 3) longExponents = true;
      } else if (!fraction && ++digits >= 16) longIntegers = true;
      continue;
    }
    if (c === 0x2e || c === 0x65 || c === 0x45) {
      fraction = true; // '.', 'e', 'E': the rest of this number is not an integer's digits
      if (c !== 0x2e) {
        exponent = true;
        exponentDigits = 0;
      }
      continue;
    }
    if (c === 0x2b || c === 0x2d) continue; // '+', '-'
    digits = 0;
    fraction = false;
    exponent = false;
    if (c === 0x22) inString = true;
    else if (c === 0x3a) members++;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) throw depthError();
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return { longIntegers, longExponents, unpairedSurrogate, members };
}

/** A lower-cased hex digit `8`, `9`, `a`, `b`: the third digit of `\uD800`–`\uDBFF`. */
const isHighNibble = (c: number): boolean => c === 0x38 || c === 0x39 || c === 0x61 || c === 0x62;
/** A lower-cased hex digit `c`–`f`: the third digit of `\uDC00`–`\uDFFF`. */
const isLowNibble = (c: number): boolean => c >= 0x63 && c <= 0x66;

/** The number of keys over every object in a parsed value (iterative: depth is bounded anyway). */
function countKeys(root: unknown): number {
  let keys = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const e: unknown = v[i];
        if (typeof e === 'object' && e !== null) stack.push(e);
      }
    } else {
      for (const k in v) {
        keys++;
        const e = (v as Record<string, unknown>)[k];
        if (typeof e === 'object' && e !== null) stack.push(e);
      }
    }
  }
  return keys;
}

/**
 * Parse a request's JSON text from its bytes; a key met twice in one object keeps its first value.
 * @throws TritonError INTERNAL (500, as tritonserver): malformed JSON (`failed to parse the request
 *   JSON buffer: ...`, a number beyond ±DBL_MAX and an unpaired high surrogate escape included);
 *   INVALID_ARG: nesting deeper than {@link MAX_JSON_DEPTH}.
 */
export function parseRequestJson(bytes: Uint8Array, opts: JsonParseOptions = {}): JsonValue {
  const { longIntegers, longExponents, unpairedSurrogate, members } = scan(bytes);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (!longIntegers && !longExponents && !unpairedSurrogate && !opts.onDuplicateKey) {
    let v: JsonValue;
    try {
      v = JSON.parse(text) as JsonValue;
    } catch {
      // Malformed: the exact parser reports it in rapidjson's words (Triton's parser).
      return new ExactParser(text, opts).parse();
    }
    // Every member became a key unless one was met twice (JSON.parse kept the last value).
    if (members === 0 || countKeys(v) === members) return v;
  }
  return new ExactParser(text, opts).parse();
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;

/**
 * A strict RFC 8259 parser keeping big integers exact, keeping a duplicate key's first value and
 * reporting it, and refusing a number beyond ±DBL_MAX and an unpaired high surrogate escape as
 * rapidjson does.
 */
class ExactParser {
  private i = 0;
  private readonly path: string[] = [];
  constructor(
    private readonly s: string,
    private readonly opts: JsonParseOptions,
  ) {}

  parse(): JsonValue {
    this.ws();
    if (this.i >= this.s.length) this.fail('The document is empty.');
    const v = this.value(1);
    this.ws();
    if (this.i < this.s.length) this.fail('The document root must not be followed by other values.');
    return v;
  }

  /**
   * A parse error as Triton's TritonJson writes rapidjson's: `<GetParseError_En text> at <byte
   * offset>` (common triton_json.h); the texts are rapidjson's English messages.
   */
  private fail(what: string): never {
    throw parseError(`${what} at ${Buffer.byteLength(this.s.slice(0, this.i))}`);
  }

  private ws(): void {
    while (this.i < this.s.length && WS.has(this.s.charCodeAt(this.i))) this.i++;
  }

  private value(depth: number): JsonValue {
    this.ws();
    const c = this.s[this.i];
    switch (c) {
      case '{':
        if (depth > MAX_JSON_DEPTH) throw depthError();
        return this.object(depth);
      case '[':
        if (depth > MAX_JSON_DEPTH) throw depthError();
        return this.array(depth);
      case '"':
        return this.string();
      case 't':
        return this.literal('true', true);
      case 'f':
        return this.literal('false', false);
      case 'n':
        return this.literal('null', null);
      default:
        return this.number();
    }
  }

  private literal<T>(word: string, v: T): T {
    // rapidjson reports a broken literal where it stops matching.
    for (let k = 0; k < word.length; k++) {
      if (this.s[this.i + k] !== word[k]) {
        this.i += k;
        this.fail('Invalid value.');
      }
    }
    this.i += word.length;
    return v;
  }

  private number(): number | bigint {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.s);
    if (!m || m[0].length === 0) {
      if (this.s[this.i] === '-') this.i++; // rapidjson: a '-' without digits fails after the sign
      this.fail('Invalid value.');
    }
    // rapidjson's kParseErrorNumberMissFraction / kParseErrorNumberMissExponent, where the digits should be.
    const after = this.i + m[0].length;
    if (m[1] === undefined && this.s[after] === '.') {
      this.i = after + 1;
      this.fail('Miss fraction part in number.');
    }
    if (m[2] === undefined && (this.s[after] === 'e' || this.s[after] === 'E')) {
      this.i = after + 1 + (this.s[after + 1] === '+' || this.s[after + 1] === '-' ? 1 : 0);
      this.fail('Miss exponent in number.');
    }
    const n = Number(m[0]);
    // rapidjson's kParseErrorNumberTooBig (Triton's parser), reported at the literal's start
    if (!Number.isFinite(n)) this.fail('Number too big to be stored in double.');
    this.i += m[0].length;
    if (m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(n)) return BigInt(m[0]);
    return n;
  }

  private string(): string {
    // From the opening quote to the closing one; JSON.parse decodes the escapes.
    const start = this.i++;
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      if (Number.isNaN(c)) this.fail('Missing a closing quotation mark in string.');
      if (c === 0x5c) {
        // An escape rapidjson refuses is reported at its backslash.
        const e = this.s[this.i + 1] ?? '';
        if (e === 'u') {
          const hex = this.s.slice(this.i + 2, this.i + 6);
          if (!HEX4.test(hex)) this.fail('Incorrect hex digit after \\u escape in string.');
          const unit = parseInt(hex, 16);
          if (unit >= 0xd800 && unit <= 0xdbff) {
            // rapidjson's ParseStringToStream: a high surrogate takes the next `\u` escape as its
            // low half; every failure is reported at the first escape's backslash. A lone low
            // surrogate passes (JSON.parse keeps it as it is).
            if (this.s[this.i + 6] !== '\\' || this.s[this.i + 7] !== 'u') this.fail('The surrogate pair in string is invalid.');
            const low = this.s.slice(this.i + 8, this.i + 12);
            if (!HEX4.test(low)) this.fail('Incorrect hex digit after \\u escape in string.');
            const lowUnit = parseInt(low, 16);
            if (lowUnit < 0xdc00 || lowUnit > 0xdfff) this.fail('The surrogate pair in string is invalid.');
            this.i += 12;
            continue;
          }
          this.i += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(e) || e === '') this.fail('Invalid escape character in string.');
        this.i += 2;
      } else if (c === 0x22) break;
      else if (c < 0x20) this.fail(c === 0 ? 'Missing a closing quotation mark in string.' : 'Invalid encoding in string.');
      else this.i++;
    }
    this.i++;
    try {
      return JSON.parse(this.s.slice(start, this.i)) as string;
    } catch {
      return this.fail('Invalid escape character in string.');
    }
  }

  /** Past an array's or object's opening bracket: true (and past `close`) when it is empty. */
  private emptyAfterOpen(close: ']' | '}'): boolean {
    this.i++;
    this.ws();
    if (this.s[this.i] !== close) return false;
    this.i++;
    return true;
  }

  /** After an element or member: true past a comma, false past `close`; fails with `missing` at anything else. */
  private moreBefore(close: ']' | '}', missing: string): boolean {
    this.ws();
    const c = this.s[this.i++];
    if (c === close) return false;
    if (c !== ',') {
      this.i--;
      this.fail(missing);
    }
    return true;
  }

  private array(depth: number): JsonValue[] {
    const out: JsonValue[] = [];
    if (this.emptyAfterOpen(']')) return out;
    do {
      out.push(this.value(depth + 1));
    } while (this.moreBefore(']', "Missing a comma or ']' after an array element."));
    return out;
  }

  private object(depth: number): { [k: string]: JsonValue } {
    const out: { [k: string]: JsonValue } = {};
    if (this.emptyAfterOpen('}')) return out;
    do {
      this.ws();
      if (this.s[this.i] !== '"') this.fail('Missing a name for object member.');
      const key = this.string();
      this.ws();
      if (this.s[this.i++] !== ':') {
        this.i--;
        this.fail('Missing a colon after a name of object member.');
      }
      this.path.push(key);
      const v = this.value(depth + 1);
      this.path.pop();
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        // The first value wins, as rapidjson's FindMember reads it (Triton).
        this.opts.onDuplicateKey?.(key, this.path);
      } else {
        // defineProperty: `__proto__` is a plain key, as with JSON.parse.
        Object.defineProperty(out, key, { value: v, writable: true, enumerable: true, configurable: true });
      }
    } while (this.moreBefore('}', "Missing a comma or '}' after an object member."));
    return out;
  }
}
