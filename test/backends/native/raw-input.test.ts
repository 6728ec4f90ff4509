// Raw inputs of the in-process inference API (TRITONSERVER_InferenceRequestAddRawInput): the
// deduction of name, datatype and shape from the target's config, with Triton's rules and texts.
import { describe, expect, it } from 'vitest';
import { resolveRawInputs } from '../../../host/src/backends/native/raw-input.js';
import type { ModelConfig } from '../../../host/src/contract/model-config.js';

const cfg = (maxBatch: number, ...inputs: { name: string; data_type: string; dims: number[] }[]) =>
  ({ name: 'm', max_batch_size: maxBatch, input: inputs, output: [] }) as unknown as ModelConfig;
const raw = (n: number, name = 'x') => ({ name, datatype: 'BYTES' as const, shape: [], data: new Uint8Array(n).fill(7), raw: true });

describe('resolveRawInputs', () => {
  it('takes name and datatype from the config and derives the variable dimension from the byte size', () => {
    const [t] = resolveRawInputs([raw(24)], cfg(0, { name: 'IN', data_type: 'TYPE_FP32', dims: [2, -1] }));
    expect(t).toMatchObject({ name: 'IN', datatype: 'FP32', shape: [2, 3] });
    expect(t!.data.length).toBe(24);
  });

  it('prepends the batch dimension 1 when the model batches, and keeps fixed dims as they are', () => {
    expect(resolveRawInputs([raw(16)], cfg(8, { name: 'IN', data_type: 'TYPE_INT32', dims: [4] }))[0]!.shape).toEqual([1, 4]);
    expect(resolveRawInputs([raw(16)], cfg(8, { name: 'IN', data_type: 'TYPE_INT64', dims: [-1] }))[0]!.shape).toEqual([1, 2]);
  });

  it('BYTES: one element of shape [1], its 4-byte length prepended', () => {
    const [t] = resolveRawInputs([raw(3)], cfg(0, { name: 'S', data_type: 'TYPE_STRING', dims: [1] }));
    expect(t).toMatchObject({ name: 'S', datatype: 'BYTES', shape: [1] });
    expect(Array.from(t!.data)).toEqual([3, 0, 0, 0, 7, 7, 7]);
    expect(() => resolveRawInputs([raw(3)], cfg(0, { name: 'S', data_type: 'TYPE_STRING', dims: [-1] }))).toThrow(
      "For BYTE datatype raw input 'S', the model must have input shape [1]",
    );
  });

  it('refuses what Triton refuses: several config inputs, a raw input beside others, two variable dimensions', () => {
    const two = cfg(0, { name: 'A', data_type: 'TYPE_FP32', dims: [-1] }, { name: 'B', data_type: 'TYPE_FP32', dims: [-1] });
    expect(() => resolveRawInputs([raw(4)], two)).toThrow(
      "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'm' model configuration",
    );
    const one = cfg(0, { name: 'A', data_type: 'TYPE_FP32', dims: [-1] });
    expect(() => resolveRawInputs([raw(4), { ...raw(4, 'y'), raw: false }], one)).toThrow(/found 2/);
    expect(() => resolveRawInputs([raw(4)], cfg(0, { name: 'A', data_type: 'TYPE_FP32', dims: [-1, -1] }))).toThrow(
      "The shape of the raw input 'A' can not be deduced because there are more than one variable-sized dimension",
    );
  });

  it('leaves requests without a raw input untouched', () => {
    const inputs = [{ name: 'A', datatype: 'FP32' as const, shape: [1], data: new Uint8Array(4) }];
    expect(resolveRawInputs(inputs, cfg(0))).toBe(inputs);
  });
});
