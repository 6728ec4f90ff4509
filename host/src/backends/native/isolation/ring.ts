/**
 * The isolation ring, Warden's side: requests go to a backend-host process and
 * responses come back as fixed-layout binary records in two single-producer/single-consumer rings
 * in shared memory — no V8 serialisation, no JS in the child (its addon serves the ring natively:
 * native/src/addon/iso_server.cc; the layout is native/src/addon/iso_ring.h, keep them in step).
 *
 * Region layout (little-endian): u32 head at byte 0 (producer), u32 tail at byte 64 (consumer),
 * records from byte 128 over `cap` bytes. A record is u32 len (multiple of 8, ≥ 8, header included),
 * u32 kind, payload; it never crosses the ring's end (a PAD record fills up to it). The producer
 * keeps 8 bytes free, so head === tail means empty.
 *
 * The child is untrusted-ish: everything read from the response ring is bounds-checked against the
 * record and the ring, counts are bounded by the bytes that would hold them before anything is
 * allocated, and any inconsistency throws {@link RingError} (the parent then kills the process).
 */
import type { ParameterValue, Tensor } from '../../../contract/types.js';
import type { BackendRequestFields } from '../../../platform/addon.js';
import { isDataType } from '../../../contract/datatypes.js';
import { LittleEndianReader } from '../../le-reader.js';

export const RING_HEADER_BYTES = 128;
const HEAD = 0;
const TAIL = 64 / 4;

export const enum RecordKind {
  Pad = 0,
  Execute = 1,
  Response = 2,
  Released = 3,
  ExecDone = 4,
}

const PARAM_STRING = 0;
const PARAM_INT = 1;
const PARAM_BOOL = 2;
const PARAM_DOUBLE = 3;

/** A record or ring the backend-host process wrote that cannot be valid. */
export class RingError extends Error {}

const align8 = (n: number) => (n + 7) & ~7;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: false });

/** The records region's capacity for a region of `bytes`. */
export function ringCapacity(bytes: number): number {
  return Math.max(0, (bytes - RING_HEADER_BYTES) & ~7);
}

class RingBase {
  protected readonly idx: Int32Array;
  protected readonly data: Uint8Array;
  protected readonly view: DataView;
  readonly cap: number;
  constructor(region: ArrayBuffer) {
    this.cap = ringCapacity(region.byteLength);
    if (this.cap < 64) throw new RangeError(`a ring region needs at least ${RING_HEADER_BYTES + 64} bytes`);
    this.idx = new Int32Array(region, 0, RING_HEADER_BYTES / 4);
    this.data = new Uint8Array(region, RING_HEADER_BYTES, this.cap);
    this.view = new DataView(region, RING_HEADER_BYTES, this.cap);
  }
  protected head(): number {
    return Atomics.load(this.idx, HEAD) >>> 0;
  }
  protected tail(): number {
    return Atomics.load(this.idx, TAIL) >>> 0;
  }
}

/** Sequential little-endian writes into a reserved record. */
export class RecordWriter {
  constructor(
    private readonly view: DataView,
    private readonly bytes: Uint8Array,
    public pos: number,
  ) {}
  u8(v: number): void {
    this.view.setUint8(this.pos, v);
    this.pos += 1;
  }
  u32(v: number): void {
    this.view.setUint32(this.pos, v, true);
    this.pos += 4;
  }
  /** A non-negative integer below 2^53 as u64. */
  u64(v: number): void {
    this.view.setUint32(this.pos, v % 0x1_0000_0000, true);
    this.view.setUint32(this.pos + 4, Math.floor(v / 0x1_0000_0000), true);
    this.pos += 8;
  }
  i64(v: bigint): void {
    this.view.setBigInt64(this.pos, v, true);
    this.pos += 8;
  }
  f64(v: number): void {
    this.view.setFloat64(this.pos, v, true);
    this.pos += 8;
  }
  /** u32 byte length + UTF-8 (the length measured by {@link strBytes}). */
  str(s: string): void {
    const { written } = utf8.encodeInto(s, this.bytes.subarray(this.pos + 4));
    this.u32(written);
    this.pos += written;
  }
  raw(b: Uint8Array): void {
    this.bytes.set(b, this.pos);
    this.pos += b.length;
  }
  align(): void {
    this.pos = align8(this.pos);
  }
}

/** Bytes {@link RecordWriter.str} takes for `s`. */
export function strBytes(s: string): number {
  return 4 + Buffer.byteLength(s, 'utf8');
}

/** The producing end (Warden → backend-host process). */
export class RingWriter extends RingBase {
  /**
   * Reserve a record of `bytes` (8-aligned, header included), let `fill` write its payload, and
   * publish it. @returns 'ring' when the consumer had consumed everything before (it may be
   * asleep: ring its doorbell), 'busy' when it is still draining (it will see the record), false
   * when the record does not fit now (the consumer has not caught up), 'padded' when the ring is
   * empty but the record does not fit before its end: a pad record now fills the end (ring the
   * doorbell so the consumer skips it; the record fits at the start afterwards — retry)
   * @throws RangeError when it could never fit (larger than the ring)
   */
  write(kind: RecordKind, bytes: number, fill: (w: RecordWriter) => void): 'ring' | 'busy' | 'padded' | false {
    if (bytes + 8 > this.cap) throw new RangeError(`record of ${bytes} bytes is larger than the ring (${this.cap} bytes)`);
    let head = this.head();
    const before = head;
    const tail = this.tail();
    if (head >= this.cap || tail >= this.cap) throw new RingError('ring positions out of range');
    const used = head >= tail ? head - tail : this.cap - tail + head;
    const free = this.cap - used - 8;
    const pad = head + bytes > this.cap ? this.cap - head : 0;
    if (pad + bytes > free) {
      if (pad === 0 || used !== 0) return false;
      this.view.setUint32(head, pad, true);
      this.view.setUint32(head + 4, RecordKind.Pad, true);
      Atomics.store(this.idx, HEAD, 0);
      return 'padded';
    }
    if (pad > 0) {
      this.view.setUint32(head, pad, true);
      this.view.setUint32(head + 4, RecordKind.Pad, true);
      head = 0;
    }
    this.view.setUint32(head, bytes, true);
    this.view.setUint32(head + 4, kind, true);
    const w = new RecordWriter(this.view, this.data, head + 8);
    fill(w);
    if (w.pos - head > bytes) throw new Error(`record overran its ${bytes} bytes`); // a sizing bug, not input
    head += bytes;
    Atomics.store(this.idx, HEAD, head === this.cap ? 0 : head);
    // Sequentially consistent with the consumer's "store tail, then read head" (iso_ring.h).
    return this.tail() === before ? 'ring' : 'busy';
  }
}

/** Bounds-checked sequential reads of one record's payload. */
export class RecordReader extends LittleEndianReader {
  constructor(
    view: DataView,
    private readonly bytes: Uint8Array,
    private pos: number,
    private readonly end: number,
  ) {
    super(view);
  }
  /** @throws RingError for a field past the end of the record */
  protected take(n: number): number {
    const at = this.pos;
    if (n > this.end - at) throw new RingError('record field past the end of its record');
    this.pos += n;
    return at;
  }
  /** Bytes left in the record (bounds counts before anything is allocated for them). */
  get left(): number {
    return this.end - this.pos;
  }
  /** A count of items of at least `minBytes` each. */
  count(minBytes: number): number {
    const n = this.u32();
    if (n * minBytes > this.left) throw new RingError(`count ${n} larger than its record`);
    return n;
  }
  str(): string {
    const n = this.u32();
    const at = this.take(n);
    return fromUtf8.decode(this.bytes.subarray(at, at + n));
  }
  /** A copy of `n` bytes (the ring slot is reused once consumed). */
  copy(n: number): Uint8Array {
    const at = this.take(n);
    return this.bytes.slice(at, at + n);
  }
  align(): void {
    const a = align8(this.pos);
    if (a > this.end) throw new RingError('record field past the end of its record');
    this.pos = a;
  }
}

/** The consuming end (backend-host process → Warden). */
export class RingReader extends RingBase {
  /**
   * Call `onRecord` for every record published so far, in order, consuming each after its call.
   * @throws RingError for positions or lengths no valid producer writes (nothing past them is read)
   */
  drain(onRecord: (kind: number, r: RecordReader) => void): void {
    let tail = this.tail();
    for (;;) {
      const head = this.head();
      if (tail === head) return;
      if (head >= this.cap || tail >= this.cap || (head & 7) !== 0 || (tail & 7) !== 0) throw new RingError('ring positions out of range');
      const avail = head > tail ? head - tail : this.cap - tail;
      if (avail < 8) throw new RingError('truncated record header');
      const len = this.view.getUint32(tail, true);
      const kind = this.view.getUint32(tail + 4, true);
      if (len < 8 || (len & 7) !== 0 || len > avail) throw new RingError(`record length ${len} out of range`);
      if (kind !== RecordKind.Pad) onRecord(kind, new RecordReader(this.view, this.data, tail + 8, tail + len));
      tail = tail + len === this.cap ? 0 : tail + len;
      Atomics.store(this.idx, TAIL, tail);
    }
  }
}

// ---------------------------------------------------------------- Execute records (Warden → child)

/** What an Execute record carries per request (an InferenceRequest's backend-visible fields). */
export interface RingRequest extends BackendRequestFields {
  inputs: readonly Tensor[];
  requestedOutputs: readonly string[];
  parameters: Record<string, ParameterValue>;
}

function paramBytes(v: ParameterValue): number {
  if (typeof v === 'string') return 1 + strBytes(v);
  if (typeof v === 'boolean') return 2;
  return 9;
}

/**
 * Size of an Execute record (header included) for `requests`.
 * @throws RangeError for a numeric correlation id that is not an unsigned 64-bit integer
 */
export function executeRecordBytes(requests: readonly RingRequest[]): number {
  let n = 8 + 12;
  for (const r of requests) {
    if (typeof r.correlationId !== 'string') u64Of(r.correlationId, 'correlationId');
    n += 4 + strBytes(r.id) + 1 + (typeof r.correlationId === 'string' ? strBytes(r.correlationId) : 8) + 4 + 8 + 8 + 1;
    n += 4;
    for (const t of r.inputs) n = align8(n + strBytes(t.name) + strBytes(t.datatype) + 4 + 8 * t.shape.length + 8) + t.data.length;
    n += 4;
    for (const o of r.requestedOutputs) n += strBytes(o);
    n += 4;
    for (const k of Object.keys(r.parameters)) n += strBytes(k) + paramBytes(r.parameters[k]!);
  }
  return align8(n);
}

function u64Of(v: number | bigint, what: string): bigint {
  const b = typeof v === 'bigint' ? v : Number.isInteger(v) && v >= 0 ? BigInt(v) : -1n;
  if (b < 0n || b > 0xffff_ffff_ffff_ffffn) throw new RangeError(`${what} must be a non-negative integer below 2^64`);
  return b;
}

/** Write an Execute record's payload (sized by {@link executeRecordBytes}). */
export function writeExecute(w: RecordWriter, instance: number, job: number, requests: readonly RingRequest[]): void {
  w.u32(instance);
  w.u32(job);
  w.u32(requests.length);
  for (const r of requests) {
    w.u32(r.token);
    w.str(r.id);
    if (typeof r.correlationId === 'string') {
      w.u8(1);
      w.str(r.correlationId);
    } else {
      w.u8(0);
      w.i64(BigInt.asIntN(64, u64Of(r.correlationId, 'correlationId')));
    }
    w.u32(r.flags >>> 0);
    w.u64(r.timeoutUs);
    w.u64(r.priority);
    w.u8(r.cancelled ? 1 : 0);
    w.u32(r.inputs.length);
    for (const t of r.inputs) {
      w.str(t.name);
      w.str(t.datatype);
      w.u32(t.shape.length);
      for (const d of t.shape) w.i64(BigInt(d));
      w.u64(t.data.length);
      w.align();
      w.raw(t.data);
    }
    w.u32(r.requestedOutputs.length);
    for (const o of r.requestedOutputs) w.str(o);
    const keys = Object.keys(r.parameters);
    w.u32(keys.length);
    for (const k of keys) {
      w.str(k);
      const v = r.parameters[k]!;
      if (typeof v === 'string') {
        w.u8(PARAM_STRING);
        w.str(v);
      } else if (typeof v === 'boolean') {
        w.u8(PARAM_BOOL);
        w.u8(v ? 1 : 0);
      } else if (typeof v === 'bigint') {
        w.u8(PARAM_INT);
        w.i64(BigInt.asIntN(64, v));
      } else if (Number.isInteger(v) && Math.abs(v) < 9.2e18) {
        w.u8(PARAM_INT);
        w.i64(BigInt(v));
      } else {
        w.u8(PARAM_DOUBLE);
        w.f64(v);
      }
    }
  }
}

// ---------------------------------------------------------------- records from the child

/** A response record: outputs (copied out of the ring), an error, or neither (flags only). */
export interface RingResponse {
  token: number;
  final: boolean;
  error?: { code: number; message: string };
  outputs?: Tensor[];
  parameters?: Record<string, ParameterValue>;
}

export interface RingExecDone {
  job: number;
  error?: { code: number; message: string };
  reported: boolean;
  computeStartNs: bigint;
  computeEndNs: bigint;
  returnedNs: bigint;
}

const FINAL = 1; // TRITONSERVER_RESPONSE_COMPLETE_FINAL
const MAX_DIMS = 64;

/** A Response record's payload. @throws RingError for anything out of bounds or invalid */
export function readResponse(r: RecordReader): RingResponse {
  const token = r.u32();
  const flags = r.u32();
  const what = r.u8();
  const out: RingResponse = { token, final: (flags & FINAL) !== 0 };
  if (what === 1) {
    const code = r.u32();
    out.error = { code, message: r.str() };
    return out;
  }
  if (what === 0) return out;
  if (what !== 2) throw new RingError(`response kind ${what}`);
  const n = r.count(4 + 4 + 4 + 8);
  const outputs: Tensor[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const name = r.str();
    const datatype = r.str();
    if (!isDataType(datatype)) throw new RingError(`output '${name}': datatype '${datatype}'`);
    const dims = r.count(8);
    if (dims > MAX_DIMS) throw new RingError(`output '${name}': ${dims} dimensions`);
    const shape: number[] = new Array(dims);
    for (let k = 0; k < dims; k++) {
      const d = r.i64();
      if (d < 0n || d > BigInt(Number.MAX_SAFE_INTEGER)) throw new RingError(`output '${name}': dimension ${d}`);
      shape[k] = Number(d);
    }
    const size = r.u64();
    r.align();
    if (size > BigInt(r.left)) throw new RingError(`output '${name}': ${size} bytes past the end of its record`);
    outputs[i] = { name, datatype, shape, data: r.copy(Number(size)) };
  }
  out.outputs = outputs;
  const np = r.count(4 + 1 + 1);
  if (np > 0) {
    const params: Record<string, ParameterValue> = {};
    for (let i = 0; i < np; i++) {
      const key = r.str();
      const type = r.u8();
      let v: ParameterValue;
      if (type === PARAM_STRING) v = r.str();
      else if (type === PARAM_BOOL) v = r.u8() !== 0;
      else if (type === PARAM_DOUBLE) v = r.f64();
      else if (type === PARAM_INT) {
        const x = r.i64();
        // as the in-process path: exact as a number up to 2^53, else its decimal text
        v = x >= -(1n << 53n) && x <= 1n << 53n ? Number(x) : x.toString();
      } else throw new RingError(`parameter '${key}': type ${type}`);
      params[key] = v;
    }
    out.parameters = params;
  }
  return out;
}

/** An ExecDone record's payload. @throws RingError */
export function readExecDone(r: RecordReader): RingExecDone {
  const job = r.u32();
  let error: RingExecDone['error'];
  if (r.u8() !== 0) {
    const code = r.u32();
    error = { code, message: r.str() };
  }
  const reported = r.u8() !== 0;
  return { job, error, reported, computeStartNs: r.u64(), computeEndNs: r.u64(), returnedNs: r.u64() };
}
