/**
 * Encoding of inference responses (spec §1.13) with the binary tensor data extension (spec §2):
 * JSON outputs carry `data`; binary outputs carry `parameters.binary_data_size` and their bytes
 * follow the JSON, in the order of the response's `outputs` array.
 */
import type { InferenceResponse, ParameterValue } from '../../contract/types.js';
import { jsonTextMaxBytes, tensorDataToJsonText } from '../../tensor/json.js';
import type { OutputFormats } from './infer-request.js';
import { DEFAULT_HTTP_LIMITS } from './limits.js';
import { jsonResponseTooLarge } from './http.errors.js';

export interface EncodedResponse {
  /** JSON text, or JSON header + binary tensors. */
  body: Buffer | string;
  /** Set when binary outputs are present: the byte length of the JSON header. */
  headerLength?: number;
}

/** Response `parameters` as JSON text; a bigint (an int64 beyond 2^53) is written exactly. */
function parametersText(p: Record<string, ParameterValue>): string {
  const members = Object.entries(p).map(([k, v]) => `${JSON.stringify(k)}:${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`);
  return `{${members.join(',')}}`;
}

/** Whether an output's data is printed in the JSON (not binary, not placed in client shared memory). */
function printsAsJson(name: string, formats: OutputFormats): boolean {
  return !formats.shm?.has(name) && !(formats.perOutput.get(name) ?? formats.defaultBinary);
}

/**
 * Refuse a response whose JSON outputs could print to more than `maxJsonBytes` bytes, before any
 * of it is rendered (worst-case estimate from element count and datatype: jsonTextMaxBytes).
 * @returns the tensor bytes of the outputs printed as JSON (what printing them costs grows with)
 * @throws TritonError INVALID_ARG (HTTP 400) naming the output and pointing to the binary data
 *   extension (spec §2).
 */
export function checkJsonOutputSize(modelName: string, response: InferenceResponse, formats: OutputFormats, maxJsonBytes: number): number {
  let total = 0;
  let tensorBytes = 0;
  let largest: { name: string; bytes: number } | undefined;
  for (const t of response.outputs) {
    if (!printsAsJson(t.name, formats)) continue;
    tensorBytes += t.data.byteLength;
    const bytes = jsonTextMaxBytes(t.data, t.datatype);
    total += bytes;
    if (!largest || bytes > largest.bytes) largest = { name: t.name, bytes };
  }
  if (total > maxJsonBytes) {
    throw jsonResponseTooLarge(modelName, total, maxJsonBytes, largest!.name);
  }
  return tensorBytes;
}

/**
 * Encode one response for `/infer`.
 * @param version the version that actually served the request (printed as a string)
 * @param maxJsonBytes `--http-max-json-output-bytes`: checked by {@link checkJsonOutputSize} first
 * @throws TritonError INVALID_ARG if the JSON outputs could exceed `maxJsonBytes`
 */
export function encodeInferResponse(
  modelName: string,
  version: number,
  id: string,
  response: InferenceResponse,
  formats: OutputFormats,
  maxJsonBytes = DEFAULT_HTTP_LIMITS.maxJsonOutputBytes,
): EncodedResponse {
  checkJsonOutputSize(modelName, response, formats, maxJsonBytes);
  return renderInferResponse(modelName, version, id, response, formats);
}

/**
 * {@link encodeInferResponse} for a response whose size {@link checkJsonOutputSize} has already
 * accepted (the `/infer` handler checks once, then renders here or on a codec worker).
 * @throws TritonError INVALID_ARG on a malformed output buffer (tensorDataToJsonText)
 */
export function renderInferResponse(modelName: string, version: number, id: string, response: InferenceResponse, formats: OutputFormats): EncodedResponse {
  let json = '{';
  if (id) json += `"id":${JSON.stringify(id)},`;
  json += `"model_name":${JSON.stringify(modelName)},"model_version":"${version}"`;
  if (response.parameters && Object.keys(response.parameters).length > 0) json += `,"parameters":${parametersText(response.parameters)}`;
  const binaries: Uint8Array[] = [];
  let anyBinary = false; // a binary output, even an empty one, makes the body binary (Inference-Header-Content-Length)
  let sep = '';
  json += ',"outputs":[';
  for (const t of response.outputs) {
    const binary = formats.perOutput.get(t.name) ?? formats.defaultBinary;
    let o = `{"name":${JSON.stringify(t.name)},"datatype":"${t.datatype}","shape":[${t.shape.join(',')}]`;
    const shm = formats.shm?.get(t.name);
    if (shm) {
      // Written to the client's region (spec §3.3): the output names it, and has no data here.
      o += `,"parameters":{"shared_memory_region":${JSON.stringify(shm.region)},"shared_memory_byte_size":${t.data.length}${shm.offset ? `,"shared_memory_offset":${shm.offset}` : ''}}}`;
    } else if (binary) {
      anyBinary = true;
      o += `,"parameters":{"binary_data_size":${t.data.length}}}`;
      if (t.data.length > 0) binaries.push(t.data);
    } else {
      o += `,"data":${tensorDataToJsonText(t.data, t.datatype)}}`;
    }
    json += sep + o;
    sep = ',';
  }
  json += ']}';
  if (!anyBinary) return { body: json };
  const header = Buffer.from(json, 'utf8');
  return { body: Buffer.concat([header, ...binaries]), headerLength: header.length };
}
