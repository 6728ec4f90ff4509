/**
 * BYTES tensor element codec (spec §1.10): each element is a 4-byte little-endian uint32 length
 * followed by that many raw bytes, concatenated with no alignment.
 */
import { invalidArg } from '../core/errors.js';

const utf8 = new TextEncoder();

/** Serialise elements (strings are UTF-8 encoded) into the length-prefixed BYTES layout. */
export function encodeBytesElements(elements: readonly (string | Uint8Array)[]): Uint8Array {
  const parts = elements.map((e) => (typeof e === 'string' ? utf8.encode(e) : e));
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
    if (off + 4 > buf.length) throw invalidArg(`incomplete BYTES element length in ${what}`);
    const len = view.getUint32(off, true);
    off += 4;
    if (off + len > buf.length) {
      throw invalidArg(`BYTES element of ${len} bytes runs past the end of ${what}`);
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
    if (off + 4 > buf.length) throw invalidArg(`incomplete BYTES element length in ${what}`);
    off += 4 + view.getUint32(off, true);
    if (off > buf.length) throw invalidArg(`BYTES element runs past the end of ${what}`);
    n++;
  }
  return n;
}
