/**
 * Minimal reader/writer for the WebAssembly binary encoding (LEB128 integers, names, sections):
 * just what the sandbox needs to read a component's import/export names and to rewrite a core
 * module's memory limits before compiling it. Every read is bounds-checked; malformed input
 * throws {@link WasmFormatError}.
 */

/** Malformed or unsupported WebAssembly binary. */
export class WasmFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WasmFormatError';
  }
}

/** A forward-only cursor over a byte buffer. */
export class Reader {
  pos: number;
  constructor(
    readonly bytes: Uint8Array,
    start = 0,
    readonly end = bytes.length,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  byte(): number {
    if (this.pos >= this.end) throw new WasmFormatError(`unexpected end of data at byte ${this.pos}`);
    return this.bytes[this.pos++]!;
  }

  /** Unsigned LEB128 of at most `bits` bits (32 or 64); returned as a number (exact below 2^53). */
  uleb(bits = 32): number {
    let result = 0;
    let mul = 1;
    const maxBytes = Math.ceil(bits / 7);
    for (let i = 0; i < maxBytes; i++) {
      const b = this.byte();
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    throw new WasmFormatError(`LEB128 integer too long at byte ${this.pos}`);
  }

  /** A length-prefixed UTF-8 name. */
  name(): string {
    const len = this.uleb();
    const start = this.pos;
    this.skip(len);
    return new TextDecoder('utf-8', { fatal: true }).decode(this.bytes.subarray(start, start + len));
  }

  skip(n: number): void {
    if (n < 0 || this.pos + n > this.end) throw new WasmFormatError(`section or field overruns the data at byte ${this.pos}`);
    this.pos += n;
  }
}

/** Unsigned LEB128 encoding of a non-negative integer below 2^53. */
export function encodeUleb(n: number): number[] {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`cannot encode ${n} as unsigned LEB128`);
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

/** One top-level section: id and the byte range of its contents. */
export interface Section {
  id: number;
  /** Offset of the section id byte. */
  start: number;
  /** Offset of the first content byte. */
  contentStart: number;
  /** Offset after the last content byte. */
  end: number;
}

/** Bytes in one wasm page (the default page size; custom page sizes are refused). */
export const WASM_PAGE_BYTES = 65536;

export const MAGIC = [0x00, 0x61, 0x73, 0x6d];
/** Preamble version of core modules (`01 00 00 00`). */
export const CORE_VERSION = [0x01, 0x00, 0x00, 0x00];
/** Layer field of a component's preamble (`01 00`, after a 2-byte version that still moves between
 *  component-model drafts, so the version is not checked here: wasmtime and jco check it). */
const COMPONENT_LAYER = [0x01, 0x00];

/** What a binary's preamble says it is. */
export function binaryKind(bytes: Uint8Array): 'module' | 'component' | 'unknown' {
  if (bytes.length < 8 || MAGIC.some((b, i) => bytes[i] !== b)) return 'unknown';
  const v = [...bytes.subarray(4, 8)];
  if (v.every((b, i) => b === CORE_VERSION[i])) return 'module';
  if (v[2] === COMPONENT_LAYER[0] && v[3] === COMPONENT_LAYER[1]) return 'component';
  return 'unknown';
}

/** Splits a module or component into its top-level sections (after the 8-byte preamble). */
export function sections(bytes: Uint8Array): Section[] {
  const r = new Reader(bytes, 8);
  const out: Section[] = [];
  while (!r.done) {
    const start = r.pos;
    const id = r.byte();
    const size = r.uleb();
    const contentStart = r.pos;
    r.skip(size);
    out.push({ id, start, contentStart, end: r.pos });
  }
  return out;
}

/** Component section ids that hold a whole core module (1) or a nested component (4). */
const CORE_MODULE_SECTION = 1;
const NESTED_COMPONENT_SECTION = 4;
/** Core module section id of the memory section. */
const MEMORY_SECTION = 5;
/** Deepest nesting of components followed (the binary format has no limit; ours refuses deeper). */
const MAX_NESTING = 32;

/**
 * Linear memories a module or component *defines* (memory section entries of every core module,
 * nested components included; imported memories are not counted): what one instance of each core
 * module allocates. Counts exactly what the wasmtime engine's native `count_memories` counts
 * (wasmparser's memory sections); only section headers are read, so a 12 MB component costs
 * microseconds.
 * @throws WasmFormatError for a malformed binary, or components nested deeper than 32
 */
export function definedMemories(bytes: Uint8Array, depth = 0): number {
  if (depth > MAX_NESTING) throw new WasmFormatError(`components nested deeper than ${MAX_NESTING}`);
  const kind = binaryKind(bytes);
  if (kind === 'unknown') throw new WasmFormatError('not a WebAssembly module or component');
  let n = 0;
  for (const s of sections(bytes)) {
    if (kind === 'module') {
      if (s.id === MEMORY_SECTION) n += new Reader(bytes, s.contentStart, s.end).uleb();
    } else if (s.id === CORE_MODULE_SECTION || s.id === NESTED_COMPONENT_SECTION) {
      n += definedMemories(bytes.subarray(s.contentStart, s.end), depth + 1);
    }
  }
  return n;
}
