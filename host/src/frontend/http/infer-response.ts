/**
 * Encoding of inference responses (spec §1.13) with the binary tensor data extension (spec §2):
 * JSON outputs carry `data`; binary outputs carry `parameters.binary_data_size` and their bytes
 * follow the JSON, in the order of the response's `outputs` array.
 */
import type { InferenceResponse, ParameterValue } from '../../core/types.js';
import { tensorDataToJsonText } from '../../tensor/json.js';
import type { OutputFormats } from './infer-request.js';

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

/**
 * Encode one response for `/infer`.
 * @param version the version that actually served the request (printed as a string)
 */
export function encodeInferResponse(
  modelName: string,
  version: number,
  id: string,
  response: InferenceResponse,
  formats: OutputFormats,
): EncodedResponse {
  let json = '{';
  if (id) json += `"id":${JSON.stringify(id)},`;
  json += `"model_name":${JSON.stringify(modelName)},"model_version":"${version}"`;
  if (response.parameters && Object.keys(response.parameters).length > 0) json += `,"parameters":${parametersText(response.parameters)}`;
  const binaries: Uint8Array[] = [];
  const outs: string[] = [];
  for (const t of response.outputs) {
    const binary = formats.perOutput.get(t.name) ?? formats.defaultBinary;
    let o = `{"name":${JSON.stringify(t.name)},"datatype":"${t.datatype}","shape":[${t.shape.join(',')}]`;
    if (binary) {
      o += `,"parameters":{"binary_data_size":${t.data.length}}}`;
      if (t.data.length > 0) binaries.push(t.data);
    } else {
      o += `,"data":${tensorDataToJsonText(t.data, t.datatype)}}`;
    }
    outs.push(o);
  }
  json += `,"outputs":[${outs.join(',')}]}`;
  if (binaries.length === 0 && !response.outputs.some((t) => formats.perOutput.get(t.name) ?? formats.defaultBinary)) {
    return { body: json };
  }
  const header = Buffer.from(json, 'utf8');
  return { body: Buffer.concat([header, ...binaries]), headerLength: header.length };
}
