/**
 * The execution plan of an ensemble (`platform: "ensemble"`, `ensemble_scheduling`, spec §5.6),
 * compiled once per ensemble version at load from the ensemble's config and its composing models'
 * configs, with Triton's `ValidateEnsembleConfig` / `ValidateTensorMapping` checks and wording.
 *
 * The structural checks that need no composing model (steps named, maps not empty, every ensemble
 * input used, every output written, no tensor written twice, data flow without cycles) run earlier,
 * in config/validate.ts; these are the ones that need the composing models' configs.
 */
import type { ConfigDataType, ModelConfig, ModelEnsembleStep } from '../contract/model-config.js';
import * as err from './ensemble.errors.js';

/** What the plan needs of a composing model (the version a step names, as loaded). */
export interface ComposingModel {
  config: ModelConfig;
  decoupled: boolean;
  /** For a composing ensemble: its {@link EnsembleCost}; undefined for any other model. */
  ensemble?: EnsembleCost;
}

/**
 * What one request of an ensemble costs at least, known at load (DESIGN "Multi-tenancy": an
 * ensemble request is charged for the inferences it turns into): `inferences` = composing requests
 * it sends when every decoupled step answers once (a nested ensemble's own composing requests
 * included), `depth` = ensembles nested in it, itself being 1.
 */
export interface EnsembleCost {
  inferences: number;
  depth: number;
}

/** One step of a compiled plan. */
export interface PlanStep {
  /** Index in `ensemble_scheduling.step`. */
  index: number;
  modelName: string;
  /** -1 = highest ready version at request time. */
  modelVersion: number;
  /** [model input name, ensemble tensor name] pairs. */
  inputs: [string, string][];
  /** [model output name, ensemble tensor name] pairs. */
  outputs: [string, string][];
  /** The composing model is decoupled (0..N responses per request). */
  decoupled: boolean;
  /** The composing model batches (`max_batch_size` > 0). */
  batching: boolean;
  /** Config `dims` of each composing-model input the step maps (for the batch reshape: ensemble/batch-dims.ts). */
  inputDims: Map<string, number[]>;
}

/** A compiled ensemble. */
export interface EnsemblePlan {
  steps: PlanStep[];
  /** Steps that read each ensemble tensor. */
  consumers: Map<string, PlanStep[]>;
  /** Ensemble output names (config order). */
  outputs: string[];
  /** The ensemble batches (`max_batch_size` > 0). */
  batching: boolean;
  /** Each ensemble output's config shape (`reshape.shape` if reshaped, else `dims`), for the batch reshape. */
  outputDims: Map<string, number[]>;
  /**
   * Triton's rule: an ensemble is decoupled iff a decoupled composing model lies on its data flow
   * (`model_transaction_policy.decoupled` is then set on the ensemble's config).
   */
  decoupled: boolean;
  /**
   * `ensemble_scheduling.max_inflight_requests`: the most requests one ensemble request may have
   * in flight at each step (0 = unlimited); bounds how far a decoupled step's responses run ahead
   * of the steps downstream.
   */
  maxInflightRequests: number;
  /** The least one request costs (see {@link EnsembleCost}). */
  cost: EnsembleCost;
}

/** Shape / type of an ensemble tensor and the model it is inferred from (Triton's TensorNode). */
interface TensorNode {
  model: string;
  type: ConfigDataType;
  dims: number[];
  /** dims with a leading -1 when the model batches. */
  fullDims: number[];
  decoupled: boolean;
  label: number;
  visited: boolean;
  prev: TensorNode[];
  next: TensorNode[];
  /** Shared by the outputs of one step (they get one decouple label). */
  sibling?: { label: number; visited: boolean };
}

const node = (model: string, batching: boolean, type: ConfigDataType, dims: number[]): TensorNode => ({
  model,
  type,
  dims,
  fullDims: batching ? [-1, ...dims] : [...dims],
  decoupled: false,
  label: 0,
  visited: false,
  prev: [],
  next: [],
});

const sameDims = (a: number[], b: number[]): boolean => a.length === b.length && a.every((x, i) => x === -1 || b[i] === -1 || x === b[i]);

function checkConsistent(lhs: TensorNode, rhs: TensorNode, prefix: string): void {
  if (lhs.type !== rhs.type) {
    throw err.tensorTypeInconsistent(prefix, lhs.type, lhs.model, rhs.type, rhs.model);
  }
  if (!sameDims(lhs.dims, rhs.dims) && !sameDims(lhs.fullDims, rhs.fullDims)) {
    throw err.tensorShapeInconsistent(prefix, lhs.fullDims, lhs.model, rhs.fullDims, rhs.model);
  }
}

/** Triton's ValidateTensorMapping for one step against its composing model's config. */
function mapStep(ensemble: string, step: ModelEnsembleStep, model: ComposingModel, tensors: Map<string, TensorNode>): void {
  const c = model.config;
  const batching = c.max_batch_size > 0;
  const inputNames = new Set(c.input.map((i) => i.name));
  for (const [modelInput, tensor] of Object.entries(step.input_map)) {
    if (!inputNames.has(modelInput)) {
      throw err.mapToMissingInput(ensemble, tensor, modelInput, step.model_name);
    }
  }
  for (const input of c.input) {
    const tensor = step.input_map[input.name];
    if (tensor === undefined) {
      if (input.optional) continue;
      throw err.inputNotMapped(ensemble, input.name, c.name);
    }
    const mine = node(step.model_name, batching, input.data_type, input.dims);
    const known = tensors.get(tensor);
    if (known) checkConsistent(known, mine, `in ensemble ${ensemble}, ensemble tensor ${tensor}: `);
    else tensors.set(tensor, mine);
  }
  const outputNames = new Set(c.output.map((o) => o.name));
  for (const [modelOutput, tensor] of Object.entries(step.output_map)) {
    if (!outputNames.has(modelOutput)) {
      throw err.mapFromMissingOutput(ensemble, tensor, modelOutput, step.model_name);
    }
  }
  const sibling = { label: 0, visited: false };
  for (const [modelOutput, tensor] of Object.entries(step.output_map)) {
    const output = c.output.find((o) => o.name === modelOutput)!;
    const mine = node(step.model_name, batching, output.data_type, output.dims);
    let t = tensors.get(tensor);
    if (t) checkConsistent(t, mine, `in ensemble ${ensemble}, ensemble tensor ${tensor}: `);
    else tensors.set(tensor, (t = mine));
    t.sibling = sibling;
  }
  for (const tensor of Object.values(step.output_map)) {
    const out = tensors.get(tensor)!;
    out.decoupled = model.decoupled;
    for (const inTensor of Object.values(step.input_map)) {
      const prev = tensors.get(inTensor)!;
      out.prev.push(prev);
      prev.next.push(out);
    }
  }
}

/**
 * Compile and validate an ensemble whose config already passed config/validate.ts.
 * @param composing the loaded config of the model each step names (same order as the steps)
 * @throws TritonError INVALID_ARG with Triton's messages: "ensemble <e> allows maximum batch size
 *   N, but it contains model <m> which only allows maximum batch size to be M", "in ensemble <e>,
 *   ensemble tensor <t> is mapping to non-existing input <i> in model <m>", "... is not mapped to
 *   any ensemble tensors", "... is mapped from non-existing output ...", "... inconsistent data
 *   type: ...", "... inconsistent shape: ...", "in ensemble <e>, step of model '<m>' receives
 *   inputs originated from different decoupled models"
 */
export function compileEnsemblePlan(config: ModelConfig, composing: readonly ComposingModel[]): EnsemblePlan {
  const name = config.name;
  const steps = config.ensemble_scheduling!.step;
  const batching = config.max_batch_size > 0;
  const tensors = new Map<string, TensorNode>();
  const dimsOf = (t: { dims: number[]; reshape?: { shape: number[] } }) => t.reshape?.shape ?? t.dims;
  for (const input of config.input) tensors.set(input.name, node(name, batching, input.data_type, dimsOf(input)));
  const sink = node(name, false, 'TYPE_INVALID' as ConfigDataType, []);
  for (const output of config.output) {
    const t = node(name, batching, output.data_type, dimsOf(output));
    tensors.set(output.name, t);
    sink.prev.push(t);
    t.next.push(sink);
  }
  steps.forEach((step, i) => {
    const model = composing[i]!;
    const mbs = model.config.max_batch_size;
    if (mbs !== 0 && mbs < config.max_batch_size) {
      throw err.stepBatchTooSmall(name, config.max_batch_size, step.model_name, mbs);
    }
    mapStep(name, step, model, tensors);
  });

  // Decoupled data flow (Triton's labelling walk): a step may not mix tensors that originate from
  // different decoupled models' responses.
  let label = 0;
  const queue: TensorNode[] = [];
  for (const input of config.input) {
    const t = tensors.get(input.name)!;
    t.visited = true;
    queue.push(t);
  }
  while (queue.length > 0) {
    const current = queue.shift()!;
    for (const next of current.next) {
      if (next.visited || !next.prev.every((p) => p.visited)) continue;
      const prevLabel = next.prev[0]!.label;
      if (next.prev.some((p) => p.label !== prevLabel)) {
        throw err.mixedDecoupledInputs(name, next.model);
      }
      if (next.sibling) {
        if (next.sibling.visited) next.label = next.sibling.label;
        else {
          next.label = next.decoupled ? ++label : prevLabel;
          next.sibling.label = next.label;
          next.sibling.visited = true;
        }
      } else {
        next.label = next.decoupled ? ++label : prevLabel;
      }
      next.visited = true;
      queue.push(next);
    }
  }

  const planSteps: PlanStep[] = steps.map((s, index) => ({
    index,
    modelName: s.model_name,
    modelVersion: s.model_version,
    inputs: Object.entries(s.input_map),
    outputs: Object.entries(s.output_map),
    decoupled: composing[index]!.decoupled,
    batching: composing[index]!.config.max_batch_size > 0,
    inputDims: new Map(composing[index]!.config.input.filter((i) => s.input_map[i.name] !== undefined).map((i) => [i.name, i.dims])),
  }));
  const consumers = new Map<string, PlanStep[]>();
  for (const s of planSteps) {
    for (const [, t] of s.inputs) {
      const list = consumers.get(t) ?? [];
      if (!list.includes(s)) list.push(s);
      consumers.set(t, list);
    }
  }
  return {
    steps: planSteps,
    consumers,
    outputs: config.output.map((o) => o.name),
    batching,
    outputDims: new Map(config.output.map((o) => [o.name, dimsOf(o)])),
    decoupled: label !== 0,
    maxInflightRequests: config.ensemble_scheduling!.max_inflight_requests ?? 0,
    cost: {
      inferences: composing.reduce((n, c) => n + 1 + (c.ensemble?.inferences ?? 0), 0),
      depth: 1 + composing.reduce((d, c) => Math.max(d, c.ensemble?.depth ?? 0), 0),
    },
  };
}
