/**
 * The binary descriptors of an execute (and of each response a decoupled guest sends) across the addon's C ABI (native/rust/wasmtime-engine/src/descriptor.rs
 * holds the layout and is authoritative): requests to the sandbox thread, results back — instead
 * of a JSON string built, copied and parsed into trees on both sides for every request.
 * Little-endian; strings are a u32 byte length + UTF-8; tensor data is an index into the buffers
 * that travel beside the descriptor. The field meanings are those of `warden:backend/types`
 * (spec §6.7); conversions of the host's values follow ../convert.ts (`toWitRequest`).
 */
import type * as Wit from '../wit-types/interfaces/warden-backend-types.js';
import { fromWitCallRequest, toWitDataType, witCorrelationId, witParameters } from '../convert.js';
import type { CallRequest } from '../host/inference.js';
import type { WireRequest, WireResponse } from '../wire.js';
import { LittleEndianReader } from '../../le-reader.js';

/** WIT `data-type` cases in declaration order: a datatype's code is its index. */
const DATATYPES: readonly Wit.DataType[] = [
  'bool',
  'uint8',
  'uint16',
  'uint32',
  'uint64',
  'int8',
  'int16',
  'int32',
  'int64',
  'fp16',
  'fp32',
  'fp64',
  'bytes',
  'bf16',
];
const DATATYPE_CODE = new Map(DATATYPES.map((d, i) => [d, i]));
/** WIT `error-code` cases in declaration order. */
const ERROR_CODES: readonly Wit.ErrorCode[] = ['unknown', 'internal', 'not-found', 'invalid-arg', 'unavailable', 'unsupported', 'already-exists', 'cancelled'];

/** Grows as it is written; one per instance, reused (the addon copies the descriptor at once). */
export class DescriptorWriter {
  private buf = Buffer.allocUnsafe(1024);
  private dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  private pos = 0;

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
    this.dv = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }
  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }
  u32(v: number): void {
    this.ensure(4);
    this.dv.setUint32(this.pos, v >>> 0, true);
    this.pos += 4;
  }
  u64(v: bigint): void {
    this.ensure(8);
    this.dv.setBigUint64(this.pos, BigInt.asUintN(64, v), true);
    this.pos += 8;
  }
  i64(v: number | bigint): void {
    this.ensure(8);
    this.dv.setBigInt64(this.pos, typeof v === 'bigint' ? BigInt.asIntN(64, v) : BigInt(Math.trunc(v)), true);
    this.pos += 8;
  }
  f64(v: number): void {
    this.ensure(8);
    this.dv.setFloat64(this.pos, v, true);
    this.pos += 8;
  }
  str(s: string): void {
    this.ensure(4 + s.length * 3);
    const n = this.buf.write(s, this.pos + 4, 'utf8');
    this.dv.setUint32(this.pos, n, true);
    this.pos += 4 + n;
  }
  /** The bytes written since {@link reset} (a view: valid until the next write). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
  reset(): void {
    this.pos = 0;
  }
}

/**
 * Writes the requests descriptor of `wire` into `w` (reset first); input data is appended to
 * `buffers` and referenced by index.
 */
export function encodeRequests(w: DescriptorWriter, wire: readonly WireRequest[], buffers: Uint8Array[]): Uint8Array {
  w.reset();
  w.u32(wire.length);
  for (const r of wire) {
    w.u32(r.handle);
    w.str(r.id);
    const corr = witCorrelationId(r.correlationId);
    if (corr.tag === 'none') w.u8(0);
    else if (corr.tag === 'int') {
      w.u8(1);
      w.u64(corr.val);
    } else {
      w.u8(2);
      w.str(corr.val);
    }
    w.u32(r.flags & 3);
    w.u32(Math.max(0, Math.min(r.priority, 0xffffffff)));
    w.u64(BigInt(Math.max(0, Math.floor(r.timeoutUs))));
    w.u32(r.batchSize);
    w.u32(r.inputs.length);
    for (const t of r.inputs) {
      w.str(t.name);
      w.u8(DATATYPE_CODE.get(toWitDataType(t.datatype)) ?? 0);
      w.u32(t.shape.length);
      for (const d of t.shape) w.i64(d);
      w.u32(buffers.length);
      buffers.push(t.data);
    }
    w.u32(r.requestedOutputs.length);
    for (const o of r.requestedOutputs) w.str(o);
    const params = witParameters(r.parameters);
    w.u32(params.length);
    for (const p of params) {
      w.str(p.key);
      const v = p.value;
      if (v.tag === 'string') {
        w.u8(0);
        w.str(v.val);
      } else if (v.tag === 'int') {
        w.u8(1);
        w.i64(v.val);
      } else if (v.tag === 'bool') {
        w.u8(2);
        w.u8(v.val ? 1 : 0);
      } else {
        w.u8(3);
        w.f64(v.val);
      }
    }
  }
  return w.bytes();
}

/** What an execute returned, decoded from its results descriptor. */
export interface DecodedResults {
  results: Array<{ tag: 'ok'; val: Wit.Response } | { tag: 'err'; val: Wit.Error }>;
  computeStartNs: bigint;
  computeEndNs: bigint;
  /** Fuel consumed, with fuel metering on. */
  fuel?: bigint;
}

/** One decoded `result<response, error>`; output data is a buffer beside the descriptor. */
export type DecodedResult = DecodedResults['results'][number];

/** Sequential little-endian reads of a descriptor native wrote. */
class DescriptorReader extends LittleEndianReader {
  private readonly b: Buffer;
  private pos = 0;
  constructor(private readonly desc: Uint8Array) {
    super(new DataView(desc.buffer, desc.byteOffset, desc.byteLength));
    this.b = Buffer.from(desc.buffer, desc.byteOffset, desc.byteLength);
  }
  /** Unchecked: a read past the end throws the DataView's RangeError. */
  protected take(n: number): number {
    const at = this.pos;
    this.pos += n;
    return at;
  }
  str(): string {
    const n = this.u32();
    if (this.pos + n > this.desc.length) throw new RangeError('results descriptor truncated');
    const at = this.take(n);
    return this.b.toString('utf8', at, at + n);
  }

  /** One result as descriptor.rs `write_result` lays it out. */
  result(buffers: readonly Uint8Array[]): DecodedResult {
    if (this.u8() !== 0) {
      const code = ERROR_CODES[this.u8()] ?? 'internal';
      return { tag: 'err', val: { code, message: this.str() } };
    }
    const outputs: Wit.Tensor[] = [];
    const no = this.u32();
    for (let k = 0; k < no; k++) {
      const name = this.str();
      const datatype = DATATYPES[this.u8()] ?? 'bool';
      const rank = this.u32();
      const shape = new BigInt64Array(rank);
      for (let d = 0; d < rank; d++) shape[d] = this.i64();
      const data = buffers[this.u32()] ?? new Uint8Array(0);
      outputs.push({ name, datatype, shape, data });
    }
    const parameters: Wit.Parameter[] = [];
    const np = this.u32();
    for (let k = 0; k < np; k++) {
      const key = this.str();
      const tag = this.u8();
      let value: Wit.ParameterValue;
      if (tag === 0) value = { tag: 'string', val: this.str() };
      else if (tag === 1) value = { tag: 'int', val: this.i64() };
      else if (tag === 2) value = { tag: 'bool', val: this.u8() !== 0 };
      else value = { tag: 'double', val: this.f64() };
      parameters.push({ key, value });
    }
    return { tag: 'ok', val: { outputs, parameters } };
  }
}

/**
 * Decodes a results descriptor; output data is `buffers[index]` (moved from native, no copy).
 * @throws RangeError for a truncated or malformed descriptor (a native bug: the caller fails the execute)
 */
export function decodeResults(desc: Uint8Array, buffers: readonly Uint8Array[]): DecodedResults {
  const r = new DescriptorReader(desc);
  const computeStartNs = r.u64();
  const computeEndNs = r.u64();
  const hasFuel = r.u8() !== 0;
  const fuelValue = r.u64();
  const n = r.u32();
  const results: DecodedResults['results'] = [];
  for (let i = 0; i < n; i++) results.push(r.result(buffers));
  return hasFuel ? { results, computeStartNs, computeEndNs, fuel: fuelValue } : { results, computeStartNs, computeEndNs };
}

/**
 * Decodes the descriptor of one response a decoupled guest sent (`host.send-response`,
 * descriptor.rs `result`): the last of `buffers`, which also holds its output data.
 * @throws RangeError for a truncated or malformed descriptor
 */
export function decodeSentResult(buffers: readonly Uint8Array[]): DecodedResult {
  return new DescriptorReader(buffers[buffers.length - 1] ?? new Uint8Array(0)).result(buffers);
}

/**
 * A guest's `inference-request` as the sandbox thread sends it (native inference.rs): JSON `meta`
 * (`model`, `version`, `id`, `requestedOutputs`, `timeoutUs`; 64-bit integers as decimal strings)
 * and the tensors and parameters as a result descriptor in the last buffer.
 * @throws ResponseCheckError for values the server does not carry (an `invalid-arg` for the guest),
 *   RangeError for a malformed descriptor
 */
export function decodeCallRequest(meta: unknown, buffers: readonly Uint8Array[]): CallRequest {
  const m = (meta ?? {}) as Record<string, unknown>;
  const parts = decodeSentResult(buffers);
  if (parts.tag !== 'ok') throw new RangeError('call request descriptor holds an error');
  const bigint = (v: unknown): bigint => {
    const s = typeof v === 'string' && /^-?\d{1,20}$/.test(v) ? v : '0';
    return BigInt(s);
  };
  return fromWitCallRequest({
    modelName: typeof m.model === 'string' ? m.model : '',
    modelVersion: bigint(m.version),
    id: typeof m.id === 'string' ? m.id : '',
    inputs: parts.val.outputs,
    requestedOutputs: Array.isArray(m.requestedOutputs) ? m.requestedOutputs.map(String) : [],
    parameters: parts.val.parameters,
    timeoutUs: BigInt.asUintN(64, bigint(m.timeoutUs)),
  });
}

/**
 * A call's response as the sandbox thread reads it (native inference.rs `response_of`): output
 * metadata and parameters as JSON (a datatype as its code, an integer as a decimal string); each
 * output's data appended to `bufs`, in order.
 */
export function encodeCallOutcome(r: WireResponse, bufs: Uint8Array[]): object {
  const outputs = r.outputs.map((t) => {
    bufs.push(t.data);
    return { name: t.name, datatype: DATATYPE_CODE.get(toWitDataType(t.datatype)) ?? 0, shape: t.shape };
  });
  const parameters = Object.entries(r.parameters ?? {}).map(([key, v]) => {
    if (typeof v === 'string') return { key, string: v };
    if (typeof v === 'boolean') return { key, bool: v };
    if (typeof v === 'bigint' || Number.isSafeInteger(v)) return { key, int: String(v) };
    return { key, double: v };
  });
  return { outputs, parameters };
}
