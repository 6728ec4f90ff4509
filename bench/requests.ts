/** Request bodies the benchmark suites share (JSON outputs, so every suite measures the same path). */
import type { HttpRequestSpec } from './ctx.js';

const json = (path: string, body: unknown): HttpRequestSpec => ({
  path,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** The 16 FP32 values identity requests carry (exact in FP32, so answers compare exactly). */
export const IDENTITY_INPUT: readonly number[] = Array.from({ length: 16 }, (_, i) => i * 0.5 - 3);

/** An identity model (INPUT0 → OUTPUT0, FP32 [-1], max_batch_size 0) on 16 FP32 values. */
export function identityRequest(model: string): HttpRequestSpec {
  return json(`/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT0', shape: [16], datatype: 'FP32', data: IDENTITY_INPUT }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }],
  });
}

/** Triton's ONNX `simple` model on INT32 [1,16] inputs. */
export function simpleRequest(): HttpRequestSpec {
  return json('/v2/models/simple/infer', {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, () => 1) },
    ],
    outputs: [
      { name: 'OUTPUT0', parameters: { binary_data: false } },
      { name: 'OUTPUT1', parameters: { binary_data: false } },
    ],
  });
}
