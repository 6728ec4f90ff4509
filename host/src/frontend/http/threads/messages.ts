/**
 * The messages of the front-end thread rings (ring.ts): a claimed `/infer` request (front-end
 * thread → main thread) and its answer (main → front-end thread), each in one slot, encoded
 * with explicit lengths. Decoding bounds every length by the message it is read from.
 *
 * Request:  u8 1 | u32 id | i32 version | str model | str? inference-header-content-length |
 *           str? authorization | str client address | u32 n | n body bytes
 * Answer:   u8 1 | u32 id | u16 status | u16 count | count × (str name, str value) | u32 n | n bytes
 * Fallback: u8 2 | u32 id  (the main thread will not serve it: the front-end thread proxies it)
 * where `str` is a u16 byte length and UTF-8 bytes, and `str?` uses length 0xFFFF for absent.
 */
import type { HttpAnswer } from '../routing.js';

export const KIND_INFER = 1;
export const KIND_ANSWER = 1;
export const KIND_FALLBACK = 2;
const ABSENT = 0xffff;
/** Longest string field, bytes (a longer header is not claimed: it goes the proxy way). */
export const MAX_FIELD_BYTES = 4096;

/** A claimed request as the main thread reads it. */
export interface RingRequest {
  id: number;
  model: string;
  version: number;
  headerLength: string | undefined;
  authorization: string | undefined;
  clientAddress: string;
  /** A copy: it outlives the slot. */
  body: Buffer;
}

const strBytes = (s: string | undefined) => (s === undefined ? 2 : 2 + Buffer.byteLength(s));

/** Bytes {@link writeRequest} needs; undefined when a field is over {@link MAX_FIELD_BYTES}. */
export function requestBytes(r: Omit<RingRequest, 'body'>, bodyLength: number): number | undefined {
  for (const s of [r.model, r.headerLength, r.authorization, r.clientAddress]) if (s !== undefined && Buffer.byteLength(s) > MAX_FIELD_BYTES) return undefined;
  return 1 + 4 + 4 + strBytes(r.model) + strBytes(r.headerLength) + strBytes(r.authorization) + strBytes(r.clientAddress) + 4 + bodyLength;
}

function putStr(b: Buffer, off: number, s: string | undefined): number {
  if (s === undefined) {
    b.writeUInt16LE(ABSENT, off);
    return off + 2;
  }
  const n = b.write(s, off + 2, 'utf8');
  b.writeUInt16LE(n, off);
  return off + 2 + n;
}

/** Encode `r` into `b` (exactly {@link requestBytes} long). */
export function writeRequest(b: Buffer, r: Omit<RingRequest, 'body'>, body: Buffer): void {
  b.writeUInt8(KIND_INFER, 0);
  b.writeUInt32LE(r.id >>> 0, 1);
  b.writeInt32LE(r.version, 5);
  let off = putStr(b, 9, r.model);
  off = putStr(b, off, r.headerLength);
  off = putStr(b, off, r.authorization);
  off = putStr(b, off, r.clientAddress);
  b.writeUInt32LE(body.length, off);
  body.copy(b, off + 4);
}

/** A cursor over one message; every read is bounds-checked (a RangeError otherwise). */
class Reader {
  off = 0;
  constructor(private readonly b: Buffer) {}
  u8(): number {
    return this.b.readUInt8((this.off += 1) - 1);
  }
  u16(): number {
    return this.b.readUInt16LE((this.off += 2) - 2);
  }
  u32(): number {
    return this.b.readUInt32LE((this.off += 4) - 4);
  }
  i32(): number {
    return this.b.readInt32LE((this.off += 4) - 4);
  }
  bytes(n: number): Buffer {
    if (this.off + n > this.b.length) throw new RangeError('ring message truncated');
    return this.b.subarray(this.off, (this.off += n));
  }
  str(): string | undefined {
    const n = this.u16();
    return n === ABSENT ? undefined : this.bytes(n).toString('utf8');
  }
}

/** Decode a request message (its body copied out of the slot). @throws RangeError for a malformed message */
export function readRequest(m: Buffer): RingRequest {
  const r = new Reader(m);
  if (r.u8() !== KIND_INFER) throw new RangeError('not a request message');
  const id = r.u32();
  const version = r.i32();
  const model = r.str() ?? '';
  const headerLength = r.str();
  const authorization = r.str();
  const clientAddress = r.str() ?? '';
  const body = Buffer.from(r.bytes(r.u32()));
  return { id, model, version, headerLength, authorization, clientAddress, body };
}

/** Bytes {@link writeAnswer} needs for `a` (its body as UTF-8 when a string). */
export function answerBytes(a: HttpAnswer): number {
  let n = 1 + 4 + 2 + 2 + 4 + (typeof a.body === 'string' ? Buffer.byteLength(a.body) : a.body.length);
  for (const k in a.headers) n += strBytes(k) + strBytes(a.headers[k]);
  return n;
}

/** Encode answer `a` to request `id` into `b` (exactly {@link answerBytes} long). */
export function writeAnswerMessage(b: Buffer, id: number, a: HttpAnswer): void {
  b.writeUInt8(KIND_ANSWER, 0);
  b.writeUInt32LE(id >>> 0, 1);
  b.writeUInt16LE(a.status, 5);
  const keys = Object.keys(a.headers);
  b.writeUInt16LE(keys.length, 7);
  let off = 9;
  for (const k of keys) {
    off = putStr(b, off, k);
    off = putStr(b, off, a.headers[k]);
  }
  const bodyLen = typeof a.body === 'string' ? b.write(a.body, off + 4, 'utf8') : a.body.copy(b, off + 4);
  b.writeUInt32LE(bodyLen, off);
}

/** Encode "proxy request `id`" into `b` (5 bytes). */
export function writeFallback(b: Buffer, id: number): void {
  b.writeUInt8(KIND_FALLBACK, 0);
  b.writeUInt32LE(id >>> 0, 1);
}

/** A decoded answer message: `answer` undefined for a fallback. */
export interface RingAnswer {
  id: number;
  answer: HttpAnswer | undefined;
}

/** Decode an answer or fallback message (the body copied out of the slot). @throws RangeError for a malformed message */
export function readAnswer(m: Buffer): RingAnswer {
  const r = new Reader(m);
  const kind = r.u8();
  const id = r.u32();
  if (kind === KIND_FALLBACK) return { id, answer: undefined };
  if (kind !== KIND_ANSWER) throw new RangeError('not an answer message');
  const status = r.u16();
  const count = r.u16();
  const headers: Record<string, string> = {};
  for (let i = 0; i < count; i++) {
    const k = r.str() ?? '';
    headers[k] = r.str() ?? '';
  }
  const body = Buffer.from(r.bytes(r.u32()));
  return { id, answer: { status, headers, body } };
}

/** What a front-end thread starts with (`workerData`). */
export interface FrontendThreadData {
  /** Which thread, 0-based (logs). */
  index: number;
  /** A listening SO_REUSEPORT socket of the public host:port (reusePortListen). */
  fd: number;
  /** Requests to the main thread, and its answers back (ring.ts). */
  toMain: SharedArrayBuffer;
  toThread: SharedArrayBuffer;
  /** The main thread's internal listener (a unix socket) for everything not claimed. */
  socketPath: string;
  /** `--http-max-input-size`, bytes. */
  maxInputSize: number;
  /** Claim plain `/infer` requests (the fast path is on); false: proxy everything. */
  claim: boolean;
  /** `--http-restricted-api`'s `inference` restriction: a request without it is proxied (Fastify answers 403). */
  claimRestriction?: { header: string; value: string };
  /** `--http-max-connections` across all listeners: the shared counts (connection-budget.ts). */
  connections: SharedArrayBuffer;
  /** Fastify's HTTP server settings, mirrored so both listeners time out and keep alive alike. */
  server: { keepAliveTimeout: number; requestTimeout: number; headersTimeout: number; connectionsCheckingInterval: number; maxConnections: number };
}

/** Port messages, main thread → front-end thread. */
export type ToThread =
  /** An answer too large for a slot (or a full ring). */
  | { t: 'answer'; id: number; status: number; headers: Record<string, string>; body: Uint8Array | string }
  /** The main thread will not serve request `id` (its ring was full): proxy it. */
  | { t: 'fallback'; id: number }
  /** Stop accepting, finish what is in flight, then report 'drained'. */
  | { t: 'drain' }
  /** Test hook: the thread throws from its event loop (restart-on-death). */
  | { t: 'crash' };

/** Port messages, front-end thread → main thread. */
export type FromThread = { t: 'listening' } | { t: 'cancel'; id: number } | { t: 'drained' };
