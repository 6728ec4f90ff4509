/**
 * add_sub: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, element-wise, with the tensor
 * names and semantics of Triton's `simple` example model. The datatype (FP32 or INT32) comes
 * from the model config; INPUT0 and INPUT1 must have the same shape. Served as `add_sub_wasm`.
 */
import type { InstanceContext, ModelContext } from 'warden:backend/backend@0.1.1';
import type { Request, Response, Tensor } from 'warden:backend/types@0.1.1';
import { bytesOf, configDataType, input, parseConfig, perRequest, view, witError } from './guest.js';

type Kind = 'fp32' | 'int32';

class Model {
  constructor(readonly kind: Kind) {}

  static create(ctx: ModelContext): Model {
    const config = parseConfig(ctx.config);
    const names = (ts: { name: string }[]) =>
      ts
        .map((t) => t.name)
        .sort()
        .join(',');
    if (names(config.input) !== 'INPUT0,INPUT1' || names(config.output) !== 'OUTPUT0,OUTPUT1') {
      throw witError('invalid-arg', `add_sub model '${ctx.name}' needs inputs INPUT0, INPUT1 and outputs OUTPUT0, OUTPUT1`);
    }
    const types = new Set([...config.input, ...config.output].map((t) => configDataType(t.data_type)));
    const kind = [...types][0];
    if (types.size !== 1 || (kind !== 'fp32' && kind !== 'int32')) {
      throw witError('invalid-arg', `add_sub model '${ctx.name}': all tensors must be TYPE_FP32, or all TYPE_INT32`);
    }
    return new Model(kind);
  }
}

function compute(kind: Kind, a: Tensor, b: Tensor): [Uint8Array, Uint8Array] {
  if (kind === 'fp32') {
    const x = view(Float32Array, a.data);
    const y = view(Float32Array, b.data);
    const sum = new Float32Array(x.length);
    const diff = new Float32Array(x.length);
    for (let i = 0; i < x.length; i++) {
      sum[i] = x[i]! + y[i]!;
      diff[i] = x[i]! - y[i]!;
    }
    return [bytesOf(sum), bytesOf(diff)];
  }
  const x = view(Int32Array, a.data);
  const y = view(Int32Array, b.data);
  const sum = new Int32Array(x.length);
  const diff = new Int32Array(x.length);
  for (let i = 0; i < x.length; i++) {
    sum[i] = (x[i]! + y[i]!) | 0;
    diff[i] = (x[i]! - y[i]!) | 0;
  }
  return [bytesOf(sum), bytesOf(diff)];
}

class Instance {
  constructor(readonly model: Model) {}

  static create(model: Model, _ctx: InstanceContext): Instance {
    return new Instance(model);
  }

  execute(requests: Request[]) {
    const kind = this.model.kind;
    return perRequest(requests, (req): Response => {
      const a = input(req, 'INPUT0', kind);
      const b = input(req, 'INPUT1', kind);
      if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])) {
        throw witError('invalid-arg', `INPUT0 shape [${a.shape.join(',')}] and INPUT1 shape [${b.shape.join(',')}] differ`);
      }
      const [sum, diff] = compute(kind, a, b);
      const outputs = (
        [
          { name: 'OUTPUT0', datatype: kind, shape: a.shape, data: sum },
          { name: 'OUTPUT1', datatype: kind, shape: a.shape, data: diff },
        ] satisfies Tensor[]
      ).filter((t) => req.requestedOutputs.includes(t.name));
      return { outputs, parameters: [] };
    });
  }
}

export const backend = { Model, Instance };
