/**
 * Tokenizer for protobuf text format as Triton's `config.pbtxt` files use it (spec §5.2):
 * `#` comments, identifiers, decimal / hex / octal integers, floats (exponent, `f` suffix),
 * single- or double-quoted strings with C escapes, and one-character symbols.
 * Positions are 1-based line and column (one column per UTF-16 unit).
 */
import { type ConfigAt, pbtxtNumberInvalid, pbtxtStringInvalid } from '../config.errors.js';

export type TokenKind = 'ident' | 'int' | 'float' | 'string' | 'symbol' | 'eof';

export interface Token {
  kind: TokenKind;
  /** Source text of the token (for strings: the decoded value, see `value`). */
  text: string;
  /** Decoded string value (kind 'string' only). */
  value?: string;
  line: number;
  col: number;
}

const utf8 = new TextEncoder();
// ignoreBOM: keep a leading U+FEFF in string values (the default would silently drop it).
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const isDigit = (c: string) => c >= '0' && c <= '9';
const isHex = (c: string) => /[0-9a-fA-F]/.test(c);
const isIdentStart = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
const isIdentChar = (c: string) => isIdentStart(c) || isDigit(c);

const SIMPLE_ESCAPES: Record<string, number> = {
  a: 7,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  '\\': 92,
  '?': 63,
  "'": 39,
  '"': 34,
};

/** Splits pbtxt text into tokens on demand. Errors are INVALID_ARG `source:line:col: message` (config.errors.ts). */
export class Tokenizer {
  private pos = 0;
  private line = 1;
  private col = 1;
  private peeked: Token | undefined;

  constructor(
    private readonly text: string,
    readonly source: string,
  ) {}

  /** Where an error at `line`:`col` (1-based) of this text is, with the field `path` if known. */
  at(line: number, col: number, path?: string): ConfigAt {
    return { in: { source: this.source, line, col }, path };
  }

  peek(): Token {
    this.peeked ??= this.read();
    return this.peeked;
  }

  next(): Token {
    const t = this.peek();
    this.peeked = undefined;
    return t;
  }

  /** Consume the symbol `s` if it is next. */
  trySymbol(s: string): boolean {
    const t = this.peek();
    if (t.kind === 'symbol' && t.text === s) {
      this.next();
      return true;
    }
    return false;
  }

  private advance(n = 1): void {
    for (let i = 0; i < n; i++) {
      if (this.text[this.pos] === '\n') {
        this.line++;
        this.col = 1;
      } else {
        this.col++;
      }
      this.pos++;
    }
  }

  private skipSpaceAndComments(): void {
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) return;
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f') {
        this.advance();
      } else if (c === '#') {
        while (this.pos < this.text.length && this.text[this.pos] !== '\n') this.advance();
      } else {
        return;
      }
    }
  }

  private read(): Token {
    this.skipSpaceAndComments();
    const line = this.line;
    const col = this.col;
    const start = this.pos;
    const c = this.text[this.pos];
    if (c === undefined) return { kind: 'eof', text: '', line, col };
    if (isIdentStart(c)) {
      while (this.pos < this.text.length && isIdentChar(this.text[this.pos]!)) this.advance();
      return { kind: 'ident', text: this.text.slice(start, this.pos), line, col };
    }
    if (isDigit(c) || (c === '.' && isDigit(this.text[this.pos + 1] ?? ''))) return this.readNumber(line, col);
    if (c === '"' || c === "'") return this.readString(line, col);
    this.advance();
    return { kind: 'symbol', text: c, line, col };
  }

  private readNumber(line: number, col: number): Token {
    const start = this.pos;
    const t = this.text;
    let isFloat = false;
    if (t[this.pos] === '0' && (t[this.pos + 1] === 'x' || t[this.pos + 1] === 'X')) {
      this.advance(2);
      if (!isHex(t[this.pos] ?? '')) throw pbtxtNumberInvalid(this.at(line, col), 'hex');
      while (isHex(t[this.pos] ?? '')) this.advance();
    } else {
      while (isDigit(t[this.pos] ?? '')) this.advance();
      if (t[this.pos] === '.') {
        isFloat = true;
        this.advance();
        while (isDigit(t[this.pos] ?? '')) this.advance();
      }
      if (t[this.pos] === 'e' || t[this.pos] === 'E') {
        isFloat = true;
        this.advance();
        if (t[this.pos] === '+' || t[this.pos] === '-') this.advance();
        if (!isDigit(t[this.pos] ?? '')) throw pbtxtNumberInvalid(this.at(this.line, this.col), 'exponent');
        while (isDigit(t[this.pos] ?? '')) this.advance();
      }
      if (t[this.pos] === 'f' || t[this.pos] === 'F') {
        isFloat = true;
        this.advance();
      }
    }
    const next = t[this.pos] ?? '';
    if (isIdentChar(next) || next === '.') {
      throw pbtxtNumberInvalid(this.at(this.line, this.col), 'identifier', t.slice(start, this.pos + 1));
    }
    const text = t.slice(start, this.pos);
    if (!isFloat && /^0[0-9]+$/.test(text) && /[89]/.test(text)) {
      throw pbtxtNumberInvalid(this.at(line, col), 'octal', text);
    }
    return { kind: isFloat ? 'float' : 'int', text, line, col };
  }

  private readString(line: number, col: number): Token {
    const quote = this.text[this.pos]!;
    const start = this.pos;
    // Fast path: no escapes and no line break before the closing quote — the value is the slice.
    for (let i = start + 1; i < this.text.length; i++) {
      const c = this.text[i];
      if (c === '\\' || c === '\n') break;
      if (c === quote) {
        const value = this.text.slice(start + 1, i);
        if (/[\ud800-\udfff]/.test(value)) break; // astral or lone surrogates: the byte path handles them
        this.col += i + 1 - start;
        this.pos = i + 1;
        return { kind: 'string', text: this.text.slice(start, this.pos), value, line, col };
      }
    }
    this.advance();
    const bytes: number[] = [];
    const pushCodePoint = (cp: number) => {
      for (const b of utf8.encode(String.fromCodePoint(cp))) bytes.push(b);
    };
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined || c === '\n') {
        throw pbtxtStringInvalid(this.at(line, col), 'unterminated');
      }
      if (c === quote) {
        this.advance();
        break;
      }
      if (c !== '\\') {
        const cp = this.text.codePointAt(this.pos)!;
        pushCodePoint(cp);
        this.advance(cp > 0xffff ? 2 : 1);
        continue;
      }
      const escLine = this.line;
      const escCol = this.col;
      this.advance();
      const e = this.text[this.pos] ?? '';
      if (e in SIMPLE_ESCAPES) {
        bytes.push(SIMPLE_ESCAPES[e]!);
        this.advance();
      } else if (e >= '0' && e <= '7') {
        let v = 0;
        for (let i = 0; i < 3 && (this.text[this.pos] ?? '') >= '0' && (this.text[this.pos] ?? '') <= '7'; i++) {
          v = v * 8 + Number(this.text[this.pos]);
          this.advance();
        }
        if (v > 255) throw pbtxtStringInvalid(this.at(escLine, escCol), 'octalRange');
        bytes.push(v);
      } else if (e === 'x' || e === 'X') {
        this.advance();
        let hex = '';
        while (hex.length < 2 && isHex(this.text[this.pos] ?? '')) {
          hex += this.text[this.pos];
          this.advance();
        }
        if (hex === '') throw pbtxtStringInvalid(this.at(escLine, escCol), 'hexDigits');
        bytes.push(parseInt(hex, 16));
      } else if (e === 'u' || e === 'U') {
        const n = e === 'u' ? 4 : 8;
        this.advance();
        const hex = this.text.slice(this.pos, this.pos + n);
        if (hex.length !== n || !/^[0-9a-fA-F]+$/.test(hex)) {
          throw pbtxtStringInvalid(this.at(escLine, escCol), 'unicodeDigits', e);
        }
        this.advance(n);
        let cp = parseInt(hex, 16);
        if (cp >= 0xd800 && cp <= 0xdbff && this.text.startsWith('\\u', this.pos)) {
          const low = parseInt(this.text.slice(this.pos + 2, this.pos + 6), 16);
          if (low >= 0xdc00 && low <= 0xdfff) {
            this.advance(6);
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
        }
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
          throw pbtxtStringInvalid(this.at(escLine, escCol), 'codePoint', `${e}${hex}`);
        }
        pushCodePoint(cp);
      } else {
        throw pbtxtStringInvalid(this.at(escLine, escCol), 'escape', e);
      }
    }
    let value: string;
    try {
      value = strictUtf8.decode(new Uint8Array(bytes));
    } catch {
      throw pbtxtStringInvalid(this.at(line, col), 'utf8');
    }
    return { kind: 'string', text: this.text.slice(start, this.pos), value, line, col };
  }
}

/** How a token reads in an error message. */
export function showToken(t: Token): string {
  return t.kind === 'eof' ? 'end of input' : `'${t.text}'`;
}
