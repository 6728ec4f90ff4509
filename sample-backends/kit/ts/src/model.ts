/**
 * {{name}}: softmax over an FP32 vector, `OUTPUT0[i] = exp(INPUT0[i] / T) / sum_j exp(INPUT0[j] / T)`,
 * with the temperature `T` from the model configuration's `temperature` parameter (default 1).
 * Computed with the maximum subtracted first, so large inputs do not overflow.
 */
import type { InstanceContext, ModelContext } from 'warden:backend/backend@0.1.1';
import type { Request, Response, Tensor } from 'warden:backend/types@0.1.1';
import { bytesOf, input, parseConfig, perRequest, view, witError } from './guest.js';

class Model {
  constructor(readonly temperature: number) {}

  /** Reads and checks the configuration once, when the model loads. */
  static create(ctx: ModelContext): Model {
    const config = parseConfig(ctx.config);
    const text = config.parameters?.['temperature']?.string_value ?? '1';
    const temperature = Number(text);
    if (!Number.isFinite(temperature) || temperature <= 0) {
      throw witError('invalid-arg', `model '${ctx.name}': parameter temperature must be a positive number, got '${text}'`);
    }
    return new Model(temperature);
  }
}

/** Softmax of `x / t` into a new array. */
function softmax(x: Float32Array, t: number): Float32Array {
  const out = new Float32Array(x.length);
  let max = -Infinity;
  for (const v of x) if (v > max) max = v;
  let sum = 0;
  for (let i = 0; i < x.length; i++) {
    const e = Math.exp((x[i]! - max) / t);
    out[i] = e;
    sum += e;
  }
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / sum;
  return out;
}

class Instance {
  constructor(readonly model: Model) {}

  static create(model: Model, _ctx: InstanceContext): Instance {
    return new Instance(model);
  }

  /** One response per request, in order; a thrown WIT error becomes that request's error. */
  execute(requests: Request[]) {
    return perRequest(requests, (req): Response => {
      const x = input(req, 'INPUT0', 'fp32');
      if (x.data.byteLength === 0) throw witError('invalid-arg', 'INPUT0 is empty: softmax needs at least one value');
      const y = softmax(view(Float32Array, x.data), this.model.temperature);
      const outputs: Tensor[] = [{ name: 'OUTPUT0', datatype: 'fp32', shape: x.shape, data: bytesOf(y) }];
      return { outputs: outputs.filter((t) => req.requestedOutputs.includes(t.name)), parameters: [] };
    });
  }
}

export const backend = { Model, Instance };
