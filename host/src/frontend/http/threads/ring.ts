/**
 * A single-producer / single-consumer ring of fixed slots in a SharedArrayBuffer, one per
 * direction between a front-end thread and the main thread (the protocol bench/hop.ts measures): the consumer drains every ready slot per wake-up, then sleeps in
 * `Atomics.waitAsync`; the producer calls `Atomics.notify` only when the consumer said it sleeps
 * (a seq-cst flag written before the consumer's last look, so a wake-up is never lost).
 *
 * Layout: 4 Int32 control words ([0] messages produced, [1] messages consumed, [2] consumer
 * sleeping, [3] closed), then {@link RING_SLOTS} slots of {@link SLOT_BYTES}: a u32 length and
 * the message. A message longer than {@link SLOT_PAYLOAD} is never written: the caller takes its
 * other way (a proxied request, a posted answer). A pending `Atomics.waitAsync` does not keep a
 * thread alive: both ends hold an HTTP server (a ref'd handle) while their ring is open.
 */

/** Slots per ring. */
export const RING_SLOTS = 64;
/** Bytes per slot, length word included. */
export const SLOT_BYTES = 16 * 1024;
/** The longest message one slot holds, bytes. */
export const SLOT_PAYLOAD = SLOT_BYTES - 4;
const CTRL_BYTES = 16;
const PRODUCED = 0;
const CONSUMED = 1;
const SLEEPING = 2;
const CLOSED = 3;

/** `Atomics.waitAsync` (ES2024; Node 20 has it, this project's TypeScript lib does not declare it). */
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

/** A new ring's memory: 16 bytes of control words and {@link RING_SLOTS} × {@link SLOT_BYTES} (1 MiB). */
export function ringMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(CTRL_BYTES + RING_SLOTS * SLOT_BYTES);
}

/** Views of a ring's control words and of each of its slots (either end). */
function ringViews(sab: SharedArrayBuffer): { ctrl: Int32Array; slots: Buffer[] } {
  const slots: Buffer[] = [];
  for (let i = 0; i < RING_SLOTS; i++) slots.push(Buffer.from(sab, CTRL_BYTES + i * SLOT_BYTES, SLOT_BYTES));
  return { ctrl: new Int32Array(sab, 0, 4), slots };
}

/** The producing end. */
export class RingWriter {
  private readonly ctrl: Int32Array;
  private readonly slots: Buffer[];

  constructor(sab: SharedArrayBuffer) {
    ({ ctrl: this.ctrl, slots: this.slots } = ringViews(sab));
  }

  /**
   * Write one message of `length` bytes: `fill` gets the slot's payload (a Buffer of exactly
   * `length` bytes, valid only during the call) and must write all of it.
   * @returns false, writing nothing, when the message is longer than {@link SLOT_PAYLOAD}, the
   *   ring is full or closed
   */
  write(length: number, fill: (payload: Buffer) => void): boolean {
    const ctrl = this.ctrl;
    if (length > SLOT_PAYLOAD || length < 0 || Atomics.load(ctrl, CLOSED) !== 0) return false;
    const produced = Atomics.load(ctrl, PRODUCED);
    if (produced - Atomics.load(ctrl, CONSUMED) >= RING_SLOTS) return false;
    const slot = this.slots[produced % RING_SLOTS]!;
    slot.writeUInt32LE(length, 0);
    fill(slot.subarray(4, 4 + length));
    Atomics.store(ctrl, PRODUCED, (produced + 1) | 0);
    if (Atomics.load(ctrl, SLEEPING) === 1) Atomics.notify(ctrl, PRODUCED);
    return true;
  }
}

/** The consuming end: {@link RingReader.start} runs until {@link RingReader.close}. */
export class RingReader {
  private readonly ctrl: Int32Array;
  private readonly slots: Buffer[];
  private head = 0;

  constructor(sab: SharedArrayBuffer) {
    ({ ctrl: this.ctrl, slots: this.slots } = ringViews(sab));
  }

  /**
   * Call `onMessage` with every message, in order, until closed. The Buffer is the slot itself:
   * it is reused once `onMessage` returns, so copy what must outlive the call. An exception from
   * `onMessage` is reported to `onError` and the next message follows.
   */
  async start(onMessage: (m: Buffer) => void, onError: (e: unknown) => void): Promise<void> {
    const ctrl = this.ctrl;
    while (Atomics.load(ctrl, CLOSED) === 0) {
      let produced = Atomics.load(ctrl, PRODUCED);
      while (this.head !== produced) {
        for (; this.head !== produced; this.head = (this.head + 1) | 0) {
          const slot = this.slots[this.head % RING_SLOTS]!;
          const len = slot.readUInt32LE(0);
          try {
            onMessage(slot.subarray(4, 4 + Math.min(len, SLOT_PAYLOAD)));
          } catch (e) {
            onError(e);
          }
        }
        Atomics.store(ctrl, CONSUMED, this.head);
        produced = Atomics.load(ctrl, PRODUCED);
      }
      Atomics.store(ctrl, SLEEPING, 1);
      if (Atomics.load(ctrl, PRODUCED) === this.head && Atomics.load(ctrl, CLOSED) === 0) {
        const w = waitAsync(ctrl, PRODUCED, this.head);
        if (w.async) await w.value;
      }
      Atomics.store(ctrl, SLEEPING, 0);
    }
  }

  /** Stop the reader (it returns after the batch it is in) and refuse further writes. */
  close(): void {
    closeRing(this.ctrl.buffer as SharedArrayBuffer);
  }
}

/** Mark a ring closed from either end: writes are refused and a sleeping reader wakes and returns. */
export function closeRing(sab: SharedArrayBuffer): void {
  const ctrl = new Int32Array(sab, 0, 4);
  Atomics.store(ctrl, CLOSED, 1);
  Atomics.add(ctrl, PRODUCED, 0);
  Atomics.notify(ctrl, PRODUCED);
}
