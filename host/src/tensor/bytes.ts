/**
 * BYTES tensor element codec (spec §1.10): each element is a 4-byte little-endian uint32 length
 * followed by that many raw bytes, concatenated with no alignment.
 */
import { bytesElementPastEnd, bytesLengthIncomplete } from './tensor.errors.js';

const utf8 = new TextEncoder();

/** ES2024's `String.prototype.isWellFormed` (V8 11.3, Node 20), absent from the ES2022 lib types. */
type MaybeWellFormed = string & { isWellFormed(): boolean };

/**
 * The bytes of a string element: UTF-8, except that a lone surrogate (left by a `\uDC00`–`\uDFFF`
 * escape in request JSON) becomes its own 3-byte form (`\udc00` → ED B0 80), as Triton's parser
 * (rapidjson, without encoding validation) stores it; TextEncoder would write U+FFFD instead.
 */
function elementBytes(s: string): Uint8Array {
  if ((s as MaybeWellFormed).isWellFormed()) return utf8.encode(s);
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let cp = s.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length) {
      const low = s.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    if (cp < 0x80) out.push(cp);
    else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
    else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
    else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
  }
  return Uint8Array.from(out);
}

/**
 * Serialise elements into the length-prefixed BYTES layout. Strings are UTF-8 encoded, a lone
 * surrogate as its 3-byte form (see {@link elementBytes}).
 */
export function encodeBytesElements(elements: readonly (string | Uint8Array)[]): Uint8Array {
  const parts = elements.map((e) => (typeof e === 'string' ? elementBytes(e) : e));
  let total = 0;
  for (const p of parts) total += 4 + p.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let off = 0;
  for (const p of parts) {
    view.setUint32(off, p.length, true);
    out.set(p, off + 4);
    off += 4 + p.length;
  }
  return out;
}

/**
 * Split a BYTES buffer into its elements (views into `buf`, no copies).
 * @throws TritonError INVALID_ARG if a length prefix runs past the end of the buffer.
 */
export function decodeBytesElements(buf: Uint8Array, what = 'tensor'): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let off = 0;
  while (off < buf.length) {
    if (off + 4 > buf.length) throw bytesLengthIncomplete(what);
    const len = view.getUint32(off, true);
    off += 4;
    if (off + len > buf.length) {
      throw bytesElementPastEnd(what, len);
    }
    out.push(buf.subarray(off, off + len));
    off += len;
  }
  return out;
}

/**
 * Count BYTES elements, validating the framing.
 * @throws TritonError INVALID_ARG on a truncated buffer.
 */
export function countBytesElements(buf: Uint8Array, what = 'tensor'): number {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let off = 0;
  let n = 0;
  while (off < buf.length) {
    if (off + 4 > buf.length) throw bytesLengthIncomplete(what);
    off += 4 + view.getUint32(off, true);
    if (off > buf.length) throw bytesElementPastEnd(what);
    n++;
  }
  return n;
}
