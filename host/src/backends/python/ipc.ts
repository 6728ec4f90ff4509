/**
 * Control messages between Warden and a Python stub process (spec §7; Warden's own wire, not
 * Triton's): `[u32 LE length][UTF-8 JSON]` over a Unix socket pair (the stub's fd 3), optionally
 * followed by `\n` and a binary tail that carries small tensors inline (`wire.ts`; JSON text from
 * either encoder never holds a raw newline, so the first one ends the JSON). Larger tensors go
 * through shared memory (`shm.ts`). The stub is trusted operator code but may be buggy, so frames
 * are bounded and a malformed frame ends the connection.
 */

/** Largest control message either side sends: 16 MiB (the stub's `MAX_MESSAGE`). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Where a decoded message keeps its frame's binary tail (absent when the frame has none). */
export const TAIL = Symbol('tail');

/** A decoded control message; `[TAIL]` holds the frame's inline tensor bytes. */
export type Message = Record<string, unknown> & { [TAIL]?: Buffer };

/**
 * One frame holding `msg` as JSON, then `tail` (inline tensor bytes, concatenated) when given.
 * @throws Error if the frame's body is over {@link MAX_MESSAGE_BYTES}.
 */
export function encodeFrame(msg: unknown, tail?: InlineTail): Buffer {
  const text = JSON.stringify(msg);
  const jsonLength = Buffer.byteLength(text, 'utf8');
  const tailLength = tail && tail.length > 0 ? 1 + tail.length : 0;
  const length = jsonLength + tailLength;
  if (length > MAX_MESSAGE_BYTES) throw new Error(`control message of ${length} bytes exceeds ${MAX_MESSAGE_BYTES}`);
  const frame = Buffer.allocUnsafe(4 + length);
  frame.writeUInt32LE(length, 0);
  frame.write(text, 4, 'utf8');
  if (tailLength) {
    let at = 4 + jsonLength;
    frame[at++] = 0x0a;
    for (const [offset, part] of tail!.parts) frame.set(part, at + offset);
  }
  return frame;
}

/** Alignment of inline tensors in a frame's tail (bytes; the widest numpy dtype Triton has). */
export const INLINE_ALIGN = 8;

/**
 * Tensor bytes gathered for one frame's tail: each part starts at an {@link INLINE_ALIGN}-aligned
 * offset (numpy views of any dtype are aligned once the stub copies the tail into a fresh buffer).
 */
export class InlineTail {
  readonly parts: [number, Uint8Array][] = [];
  length = 0;

  /** Append `data`; @returns its offset in the tail. */
  add(data: Uint8Array): number {
    const offset = Math.ceil(this.length / INLINE_ALIGN) * INLINE_ALIGN;
    this.parts.push([offset, data]);
    this.length = offset + data.byteLength;
    return offset;
  }
}

/**
 * Splits a byte stream into decoded JSON messages (a frame's tail, if any, under `[TAIL]`). `push`
 * returns the messages completed by a chunk. @throws Error on a frame over the bound or a body
 * that is not a JSON object.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = -1;

  constructor(private readonly maxBytes = MAX_MESSAGE_BYTES) {}

  push(chunk: Buffer): Message[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Message[] = [];
    for (;;) {
      if (this.need < 0) {
        if (this.buffered < 4) break;
        this.need = this.take(4).readUInt32LE(0);
        if (this.need > this.maxBytes) throw new Error(`control message of ${this.need} bytes exceeds ${this.maxBytes}`);
      }
      if (this.buffered < this.need) break;
      const body = this.take(this.need);
      this.need = -1;
      const nl = body.indexOf(0x0a);
      const msg: unknown = JSON.parse(body.toString('utf8', 0, nl < 0 ? body.length : nl));
      if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) throw new Error('control message is not a JSON object');
      if (nl >= 0) (msg as Message)[TAIL] = body.subarray(nl + 1);
      out.push(msg as Message);
    }
    return out;
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const head = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
    return head;
  }
}
