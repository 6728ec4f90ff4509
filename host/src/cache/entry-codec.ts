/**
 * A cached response as bytes (the Redis cache's values): `WRC1`, a 4-byte big-endian header
 * length, a JSON header (per output: name, datatype, shape, byte length; the response parameters,
 * bigints as decimal strings), then the outputs' bytes in order. Decoding checks every field and
 * refuses anything malformed or larger than a bound: what Redis returns is not trusted further
 * than its size.
 */
import type { InferenceResponse, ParameterValue, Tensor } from '../contract/types.js';
import { isDataType } from '../contract/datatypes.js';

const MAGIC = Buffer.from('WRC1');

interface Header {
  o: { n: string; d: string; s: number[]; b: number }[];
  p?: Record<string, ParameterValue | { bigint: string }>;
}

/** `response` as one buffer (its output bytes copied). */
export function encodeEntry(response: InferenceResponse): Buffer {
  const header: Header = { o: response.outputs.map((t) => ({ n: t.name, d: t.datatype, s: t.shape, b: t.data.length })) };
  if (response.parameters) {
    header.p = {};
    for (const [k, v] of Object.entries(response.parameters)) header.p[k] = typeof v === 'bigint' ? { bigint: v.toString() } : v;
  }
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  MAGIC.copy(prefix, 0);
  prefix.writeUInt32BE(json.length, 4);
  return Buffer.concat([prefix, json, ...response.outputs.map((t) => t.data)]);
}

const isShape = (s: unknown): s is number[] => Array.isArray(s) && s.every((d) => Number.isSafeInteger(d) && d >= 0);

/**
 * The response in `buf`, or undefined when `buf` is longer than `maxBytes` or is not an entry
 * {@link encodeEntry} wrote. Output data are views of `buf`.
 */
export function decodeEntry(buf: Buffer, maxBytes: number): InferenceResponse | undefined {
  if (buf.length > maxBytes || buf.length < 8 || !buf.subarray(0, 4).equals(MAGIC)) return undefined;
  const headerEnd = 8 + buf.readUInt32BE(4);
  if (headerEnd > buf.length) return undefined;
  let header: Header;
  try {
    header = JSON.parse(buf.toString('utf8', 8, headerEnd)) as Header;
  } catch {
    return undefined;
  }
  if (!header || !Array.isArray(header.o)) return undefined;
  const outputs: Tensor[] = [];
  let at = headerEnd;
  for (const o of header.o) {
    if (!o || typeof o.n !== 'string' || !isDataType(o.d) || !isShape(o.s) || !Number.isSafeInteger(o.b) || o.b < 0) return undefined;
    if (at + o.b > buf.length) return undefined;
    outputs.push({ name: o.n, datatype: o.d, shape: o.s, data: new Uint8Array(buf.buffer, buf.byteOffset + at, o.b) });
    at += o.b;
  }
  if (at !== buf.length) return undefined;
  let parameters: Record<string, ParameterValue> | undefined;
  if (header.p !== undefined) {
    if (typeof header.p !== 'object' || header.p === null) return undefined;
    parameters = {};
    for (const [k, v] of Object.entries(header.p)) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') parameters[k] = v;
      else if (v && typeof v === 'object' && typeof v.bigint === 'string' && /^-?\d+$/.test(v.bigint)) parameters[k] = BigInt(v.bigint);
      else return undefined;
    }
  }
  return { outputs, parameters };
}
