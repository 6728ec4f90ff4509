/** InferenceRequest / Tensor builders for driving a backend directly (no HTTP): backend-level tests and the engine benches. */
import type { InferenceRequest, Tensor } from '../host/src/contract/types.js';

/** A tensor viewing `data`'s bytes (little-endian typed arrays map directly). */
export function tensor(name: string, datatype: Tensor['datatype'], shape: number[], data: ArrayBufferView): Tensor {
  return { name, datatype, shape, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

let reqId = 0;
/** A validated-looking request for `model` version 1; `extra` overrides any field. */
export function request(model: string, inputs: Tensor[], requestedOutputs: string[], extra: Partial<InferenceRequest> = {}): InferenceRequest {
  return {
    id: `r${++reqId}`,
    model,
    version: 1,
    tenant: '',
    inputs,
    requestedOutputs,
    parameters: {},
    correlationId: 0,
    flags: 0,
    priority: 0,
    timeoutUs: 0,
    batchSize: 1,
    cancelled: false,
    ...extra,
  };
}
