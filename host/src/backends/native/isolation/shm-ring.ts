/**
 * Tensors through shared memory between Warden and a backend-host process (issue 12 point 2).
 * Each direction has its own region (`shmCreate` / `shmOpen` of the addon) used as a ring: the
 * writer copies a tensor in and sends only [offset, length]; the reader copies it out when the
 * message arrives, in message order, and acknowledges the writer's position (`end`) on its next
 * message, which frees everything before it. A tensor that does not fit (ring full, or larger
 * than the region) travels inline in the IPC message instead.
 */
import type { Tensor } from '../../../core/types.js';

/** A tensor as it crosses: inline bytes, or where it lies in the sender's ring. */
export interface WireTensor {
  name: string;
  datatype: Tensor['datatype'];
  shape: number[];
  data?: Uint8Array;
  at?: [offset: number, length: number];
}

/** Bytes moved each way (for tests and logs). */
export interface TransportStats {
  shmBytes: number;
  inlineBytes: number;
}

/** The writing end of a ring. Positions are monotonic byte counts (offset = position mod size). */
export class ShmWriter {
  private head = 0;
  private tail = 0;
  constructor(private readonly buf: Uint8Array) {}

  /** The position after everything written so far (what the reader acknowledges). */
  get end(): number {
    return this.head;
  }

  /** Copy `data` in; its [offset, length], or undefined when it does not fit now. */
  put(data: Uint8Array): [number, number] | undefined {
    const n = data.length;
    const cap = this.buf.length;
    if (n === 0) return [0, 0];
    if (n > cap) return undefined;
    let start = this.head;
    let pos = start % cap;
    if (pos + n > cap) {
      start += cap - pos; // keep tensors contiguous: skip the ring's tail end
      pos = 0;
    }
    if (start + n - this.tail > cap) return undefined;
    this.buf.set(data, pos);
    this.head = start + n;
    return [pos, n];
  }

  /** The reader consumed everything before `end`. */
  ack(end: number | undefined): void {
    if (end !== undefined && end > this.tail && end <= this.head) this.tail = end;
  }
}

/** The reading end of a ring. */
export class ShmReader {
  /** The writer's position up to which everything was copied out (sent back as the ack). */
  consumed = 0;
  constructor(private readonly buf: Uint8Array) {}

  /** A copy of the bytes at [offset, length] (the ring slot is reused once acknowledged). */
  take(at: [number, number]): Uint8Array {
    const [offset, length] = at;
    if (!(offset >= 0 && length >= 0 && offset + length <= this.buf.length)) throw new RangeError('shared memory slot out of range');
    return this.buf.slice(offset, offset + length);
  }

  /** Everything the message that ended at `end` carried was copied out. */
  done(end: number | undefined): void {
    if (end !== undefined && end > this.consumed) this.consumed = end;
  }
}

/** Tensors for a message: through `writer` when they fit, else inline. */
export function encodeTensors(tensors: readonly Tensor[], writer: ShmWriter | undefined, stats: TransportStats): WireTensor[] {
  return tensors.map((t) => {
    const at = writer?.put(t.data);
    if (at) {
      stats.shmBytes += t.data.length;
      return { name: t.name, datatype: t.datatype, shape: t.shape, at };
    }
    stats.inlineBytes += t.data.length;
    return { name: t.name, datatype: t.datatype, shape: t.shape, data: t.data };
  });
}

/** Tensors out of a message (copies; call `reader.done(end)` after the whole message). */
export function decodeTensors(wire: readonly WireTensor[], reader: ShmReader | undefined): Tensor[] {
  return wire.map((w) => {
    let data: Uint8Array;
    if (w.at) {
      if (!reader) throw new RangeError('tensor in shared memory, but no region is mapped');
      data = reader.take(w.at);
    } else {
      data = w.data ?? new Uint8Array(0);
    }
    return { name: w.name, datatype: w.datatype, shape: w.shape, data };
  });
}
