/**
 * identity: OUTPUTk = INPUTk for every datatype, BYTES included (Triton's identity backend,
 * as a sandboxed component). Inputs and outputs are paired by position in the model config; each
 * pair must have the same datatype. Served as model `identity_wasm`.
 */
import { log } from 'warden:backend/host@0.1.1';
import type { InstanceContext, ModelContext } from 'warden:backend/backend@0.1.1';
import type { Request, Response } from 'warden:backend/types@0.1.1';
import { configDataType, parseConfig, perRequest, witError } from './guest.js';

class Model {
  constructor(readonly outputFor: Map<string, string>) {}

  static create(ctx: ModelContext): Model {
    const config = parseConfig(ctx.config);
    if (config.input.length !== config.output.length || config.input.length === 0) {
      throw witError('invalid-arg', `identity model '${ctx.name}' needs as many outputs as inputs (got ${config.input.length} and ${config.output.length})`);
    }
    const outputFor = new Map<string, string>();
    config.input.forEach((inp, i) => {
      const out = config.output[i]!;
      if (configDataType(inp.data_type) !== configDataType(out.data_type)) {
        throw witError('invalid-arg', `identity model '${ctx.name}': input '${inp.name}' is ${inp.data_type} but output '${out.name}' is ${out.data_type}`);
      }
      outputFor.set(inp.name, out.name);
    });
    log('verbose', `identity model '${ctx.name}' version ${ctx.version} created with ${outputFor.size} tensor pairs`);
    return new Model(outputFor);
  }
}

class Instance {
  constructor(readonly model: Model) {}

  static create(model: Model, _ctx: InstanceContext): Instance {
    return new Instance(model);
  }

  execute(requests: Request[]) {
    return perRequest(requests, (req): Response => ({
      outputs: req.inputs
        .map((t) => ({ ...t, name: this.model.outputFor.get(t.name) ?? '' }))
        .filter((t) => t.name !== '' && req.requestedOutputs.includes(t.name)),
      parameters: [],
    }));
  }
}

export const backend = { Model, Instance };
