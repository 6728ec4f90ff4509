/**
 * Control messages between Warden and a Python stub process (spec §7; Warden's own wire, not
 * Triton's): `[u32 LE length][UTF-8 JSON]` over a Unix socket pair (the stub's fd 3). Tensor bytes
 * never travel here (they go through shared memory, `shm.ts`). The stub is trusted operator code
 * but may be buggy, so frames are bounded and a malformed frame ends the connection.
 */

/** Largest control message either side sends: 16 MiB (the stub's `MAX_MESSAGE`). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** One frame holding `msg` as JSON. @throws Error if the JSON is over {@link MAX_MESSAGE_BYTES}. */
export function encodeFrame(msg: unknown): Buffer {
  const text = JSON.stringify(msg);
  const length = Buffer.byteLength(text, 'utf8');
  if (length > MAX_MESSAGE_BYTES) throw new Error(`control message of ${length} bytes exceeds ${MAX_MESSAGE_BYTES}`);
  const frame = Buffer.allocUnsafe(4 + length);
  frame.writeUInt32LE(length, 0);
  frame.write(text, 4, 'utf8');
  return frame;
}

/**
 * Splits a byte stream into decoded JSON messages. `push` returns the messages completed by a
 * chunk. @throws Error on a frame over the bound or a body that is not a JSON object.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = -1;

  constructor(private readonly maxBytes = MAX_MESSAGE_BYTES) {}

  push(chunk: Buffer): Record<string, unknown>[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Record<string, unknown>[] = [];
    for (;;) {
      if (this.need < 0) {
        if (this.buffered < 4) break;
        this.need = this.take(4).readUInt32LE(0);
        if (this.need > this.maxBytes) throw new Error(`control message of ${this.need} bytes exceeds ${this.maxBytes}`);
      }
      if (this.buffered < this.need) break;
      const body = this.take(this.need);
      this.need = -1;
      const msg: unknown = JSON.parse(body.toString('utf8'));
      if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) throw new Error('control message is not a JSON object');
      out.push(msg as Record<string, unknown>);
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
