/**
 * Validation of a normalised model configuration (spec §5.3–§5.7), ported from Triton core
 * (src/model_config_utils.cc: ValidateModelConfig, ValidateInstanceGroup, ValidateModelIOConfig,
 * ValidateIOShape, ValidateBatchIO, Get{Boolean,Typed}SequenceControlProperties,
 * ValidateEnsembleSchedulingConfig, ValidateModelMetrics) with Triton's error wording. Every error
 * is a TritonError INVALID_ARG. Warden additionally rejects duplicate input / output names.
 */
import { invalidArg } from '../contract/errors.js';
import type { ConfigDataType, ModelConfig, ModelInput, ModelOutput, ModelSequenceBatching, ModelSequenceControl } from '../contract/model-config.js';

/** Options of {@link validateModelConfig}. */
export interface ValidateOptions {
  /** Usable GPUs (ids 0..gpuCount-1); default 0: every KIND_GPU group is rejected. */
  gpuCount?: number;
  /** Model directory name; when given, `config.name` must equal it. */
  directoryName?: string;
}

const WILDCARD_DIM = -1;
const ENSEMBLE = 'ensemble';
const TENSORRT_PLAN = 'tensorrt_plan';

type BackendType = 'tensorflow' | 'tensorrt' | 'onnxruntime' | 'pytorch' | 'unknown';

/** Triton `GetBackendType`. */
function backendType(backend: string): BackendType {
  switch (backend) {
    case 'tensorflow':
    case 'tensorrt':
    case 'onnxruntime':
    case 'pytorch':
      return backend;
    default:
      return 'unknown';
  }
}

/**
 * Triton `GetBackendTypeFromPlatform`. Warden also maps `libtorch` (Triton's alternate PyTorch
 * platform name) and `torch_aoti` to pytorch: Triton's own pair check rejects those with the
 * `pytorch` backend, which its auto-complete produces — accepting them keeps Warden a superset.
 */
function platformBackendType(platform: string): BackendType {
  switch (platform) {
    case 'tensorflow_graphdef':
    case 'tensorflow_savedmodel':
      return 'tensorflow';
    case TENSORRT_PLAN:
      return 'tensorrt';
    case 'onnxruntime_onnx':
      return 'onnxruntime';
    case 'pytorch_libtorch':
    case 'libtorch':
    case 'torch_aoti':
      return 'pytorch';
    default:
      return 'unknown';
  }
}

function fail(msg: string): never {
  throw invalidArg(msg);
}

/** Triton `GetElementCount`: product of `dims`, -1 if any is variable, 0 for an empty shape. */
function elementCount(dims: readonly number[]): number {
  if (dims.length === 0) return 0;
  let n = 1;
  for (const d of dims) {
    if (d === WILDCARD_DIM) return -1;
    n *= d;
  }
  return n;
}

/** Triton `ValidateIOShape`; `prefix` is "model input " / "model output ". */
function validateIOShape(io: ModelInput | ModelOutput, maxBatchSize: number, prefix: string): string | undefined {
  if (!io.name) return `${prefix}must specify 'name'`;
  const p = `${prefix}'${io.name}' `;
  if (io.data_type === 'TYPE_INVALID') return `${p}must specify 'data_type'`;
  if (io.dims.length === 0) return `${p}must specify 'dims'`;
  if (io.reshape && io.reshape.shape.length === 0 && maxBatchSize === 0) {
    return `${p}cannot have empty reshape for non-batching model as scalar tensors are not supported`;
  }
  for (const d of io.dims) {
    if (d < 1 && d !== WILDCARD_DIM) return `${p}dimension must be integer >= 1, or ${WILDCARD_DIM} to indicate a variable-size dimension`;
  }
  if (io.reshape) {
    for (const d of io.reshape.shape) {
      if (d < 1 && d !== WILDCARD_DIM) {
        return `${p}reshape dimensions must be integer >= 1, or ${WILDCARD_DIM} to indicate a variable-size dimension`;
      }
    }
    const dimsSize = elementCount(io.dims);
    const reshapeSize = elementCount(io.reshape.shape);
    // An empty reshape (scalar) expects dims with element count 1.
    if (dimsSize !== reshapeSize && (reshapeSize !== 0 || dimsSize !== 1)) return `${p}has different size for dims and reshape`;
    if (dimsSize === -1) {
      const chunks = (dims: readonly number[]) => {
        const out: number[] = [];
        let cur = 1;
        for (const d of dims) {
          if (d !== WILDCARD_DIM) cur *= d;
          else {
            out.push(cur);
            cur = 1;
          }
        }
        out.push(cur);
        return out;
      };
      const a = chunks(io.dims);
      const b = chunks(io.reshape.shape);
      if (a.length !== b.length) return `${p}has different number of variable-size dimensions for dims and reshape`;
      if (a.some((x, i) => x !== b[i])) return `${p}has different size for dims and reshape`;
    }
  }
  return undefined;
}

function validateNonLinearFormatIO(io: ModelInput | ModelOutput, platform: string, isInput: boolean): string | undefined {
  if (!io.is_non_linear_format_io) return undefined;
  if (platform !== TENSORRT_PLAN) return 'Non-linear IO format is only supported for the TensorRT platform';
  if (io.dims.length !== 3) return `Non-linear IO format ${isInput ? 'input' : 'output'} requires 3 dims`;
  return undefined;
}

/** Triton `ValidateModelIOConfig` (inputs, outputs, batch inputs/outputs), plus duplicate names. */
function validateIO(c: ModelConfig): void {
  const suffix = ` for ${c.name}`;
  const check = (e: string | undefined) => e !== undefined && fail(e + suffix);
  for (const io of c.input) {
    check(validateIOShape(io, c.max_batch_size, 'model input '));
    if ((io.format === 'FORMAT_NHWC' || io.format === 'FORMAT_NCHW') && io.dims.length !== 3) {
      check('model input NHWC/NCHW require 3 dims');
    }
    if (c.platform !== TENSORRT_PLAN && io.is_shape_tensor) check('shape tensors are only supported for TensorRT platform');
    check(validateNonLinearFormatIO(io, c.platform, true));
  }
  for (const io of c.output) {
    check(validateIOShape(io, c.max_batch_size, 'model output '));
    if (c.platform !== TENSORRT_PLAN && io.is_shape_tensor) check('shape tensors are only supported for TensorRT platform');
    check(validateNonLinearFormatIO(io, c.platform, false));
  }
  const inputs = new Set<string>();
  for (const io of c.input) {
    if (inputs.has(io.name)) fail(`model input '${io.name}' is specified more than once for ${c.name}`);
    inputs.add(io.name);
  }
  const outputs = new Set<string>();
  for (const io of c.output) {
    if (outputs.has(io.name)) fail(`model output '${io.name}' is specified more than once for ${c.name}`);
    outputs.add(io.name);
  }
  // Triton ValidateBatchIO
  for (const b of c.batch_input) {
    if (b.source_input.length !== 1) check(`batch input kind '${b.kind}' expects 1 source input, got ${b.source_input.length}`);
    if (b.data_type !== 'TYPE_INT32' && b.data_type !== 'TYPE_FP32') check('batch input data type must be TYPE_INT32 or TYPE_FP32');
    for (const s of b.source_input) if (!inputs.has(s)) check(`unknown source input name '${s}'`);
  }
  for (const b of c.batch_output) {
    if (b.source_input.length !== 1) check(`batch output kind '${b.kind}' expects 1 source input, got ${b.source_input.length}`);
    for (const s of b.source_input) if (!inputs.has(s)) check(`unknown source input name '${s}'`);
    const targets = new Set<string>();
    for (const t of b.target_name) {
      if (!outputs.has(t)) check(`unknown target output name '${t}'`);
      if (targets.has(t)) check(`target output name '${t}' can only be specified once`);
      targets.add(t);
    }
  }
}

type ControlKind = ModelSequenceControl['kind'];

/**
 * Triton `GetBooleanSequenceControlProperties` / `GetTypedSequenceControlProperties` (not
 * required): checks one control kind. Returns the tensor name and data type, if configured.
 */
function sequenceControl(
  batcher: ModelSequenceBatching,
  model: string,
  kind: ControlKind,
  typed: boolean,
): { tensor: string; dataType: ConfigDataType } | undefined {
  const seenTensors = new Set<string>();
  let found: { tensor: string; dataType: ConfigDataType } | undefined;
  for (const ci of batcher.control_input) {
    if (!ci.name) fail(`sequence batching control tensor must have a name for ${model}`);
    if (seenTensors.has(ci.name)) fail(`sequence batching control tensor '${ci.name}' is specified for multiple control kinds for ${model}`);
    seenTensors.add(ci.name);
    for (const ctl of ci.control) {
      if (ctl.kind !== kind) continue;
      if (found) fail(`sequence batching specifies multiple ${kind} tensors for ${model}`);
      const ni = ctl.int32_false_true.length;
      const nf = ctl.fp32_false_true.length;
      const nb = ctl.bool_false_true.length;
      if (typed) {
        if (ni > 0 || nf > 0 || nb > 0) {
          fail(`sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${model}`);
        }
        found = { tensor: ci.name, dataType: ctl.data_type };
        continue;
      }
      if (ni === 0 && nf === 0 && nb === 0) {
        fail(`sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${model}`);
      }
      if ((ni && nf) || (ni && nb) || (nf && nb)) {
        fail(`sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for ${kind} for ${model}`);
      }
      if (ni && ni !== 2) fail(`sequence batching control 'int32_false_true' must have exactly 2 entries for ${kind} for ${model}`);
      if (nf && nf !== 2) fail(`sequence batching control 'fp32_false_true' must have exactly 2 entries for ${kind} for ${model}`);
      if (nb && nb !== 2) fail(`sequence batching control 'bool_false_true' must have exactly 2 entries for ${kind} for ${model}`);
      found = { tensor: ci.name, dataType: ni ? 'TYPE_INT32' : nf ? 'TYPE_FP32' : 'TYPE_BOOL' };
    }
  }
  return found;
}

/** Triton `ValidateEnsembleSchedulingConfig`: step fields and the tensor data-flow graph. */
function validateEnsemble(c: ModelConfig): void {
  const name = c.name;
  if (c.platform !== ENSEMBLE) fail(`ensemble scheduling cannot be set for model '${name}' whose platform is not ${ENSEMBLE}`);
  if (c.instance_group.length !== 0) fail(`instance group should not be specified for ensemble '${name}'`);
  if (c.optimization !== undefined) fail(`optimization should not be specified for ensemble '${name}'`);
  if (c.model_warmup.length !== 0) fail(`model_warmup can not be specified for ensemble '${name}'`);
  const steps = c.ensemble_scheduling!.step;
  if (steps.length === 0) fail(`must specify 'step' for ensemble '${name}'`);

  interface Node {
    name: string;
    isOutput: boolean;
    ready: boolean;
    prev: Node[];
    next: Node[];
  }
  const tensors = new Map<string, Node>();
  const node = (n: string, isOutput: boolean): Node => {
    let t = tensors.get(n);
    if (!t) {
      t = { name: n, isOutput, ready: false, prev: [], next: [] };
      tensors.set(n, t);
    }
    return t;
  };
  steps.forEach((step, idx) => {
    if (!step.model_name) fail(`must specify 'model_name' in step ${idx} of ensemble '${name}'`);
    if (Object.keys(step.input_map).length === 0) fail(`must specify 'input_map' in step ${idx} of ensemble '${name}'`);
    if (Object.keys(step.output_map).length === 0) fail(`must specify 'output_map' in step ${idx} of ensemble '${name}'`);
    const produced: Node[] = [];
    for (const t of Object.values(step.output_map)) {
      const existing = tensors.get(t);
      if (existing) {
        if (existing.isOutput) fail(`ensemble tensor '${t}' can appear in an output map only once for ensemble '${name}' step ${idx}`);
        existing.isOutput = true;
      }
      produced.push(node(t, true));
    }
    for (const t of Object.values(step.input_map)) {
      const consumed = node(t, false);
      for (const out of produced) {
        out.prev.push(consumed);
        consumed.next.push(out);
      }
    }
  });
  const queue: Node[] = [];
  for (const input of c.input) {
    const t = tensors.get(input.name);
    if (!t) fail(`ensemble input '${input.name}' for ensemble ${name}' is not used`);
    t.ready = true;
    queue.push(t);
  }
  while (queue.length) {
    const r = queue.shift()!;
    for (const n of r.next) {
      if (n.ready) continue;
      n.ready = n.prev.every((p) => p.ready);
      if (n.ready) queue.push(n);
    }
  }
  const outputs = new Set<string>();
  for (const output of c.output) {
    const t = tensors.get(output.name);
    if (!t) fail(`ensemble output '${output.name}' for ensemble ${name}' is not used`);
    if (!t.ready) {
      let msg = `output '${output.name}' for ensemble '${name}' is not written`;
      let last = t;
      const seen = new Set<string>();
      let prev: Node[] | undefined = t.prev;
      while (prev && prev.length) {
        const nodes: Node[] = prev;
        prev = undefined;
        for (const p of nodes) {
          if (!p.ready && !seen.has(p.name)) {
            seen.add(p.name);
            last = p;
            prev = p.prev;
            break;
          }
        }
      }
      if (last.name !== t.name) msg += `: at least one of its depending tensors, '${last.name}', is not connected`;
      fail(msg);
    }
    outputs.add(output.name);
  }
  for (const [tname, t] of tensors) {
    if (outputs.has(tname)) continue;
    if (!t.ready || t.next.length === 0) fail(`ensemble tensor '${tname}' is unused in ensemble '${name}'`);
  }
}

/** Triton `ValidateInstanceGroup`. */
function validateInstanceGroups(c: ModelConfig, gpuCount: number): void {
  if (c.ensemble_scheduling) return;
  if (c.instance_group.length === 0) fail(`must specify one or more 'instance group's for ${c.name}`);
  const supported = Array.from({ length: Math.max(0, gpuCount) }, (_, i) => i);
  for (const g of c.instance_group) {
    const where = `instance group ${g.name} of model ${c.name}`;
    if (g.kind === 'KIND_MODEL') {
      if (g.gpus.length > 0) fail(`${where} has kind KIND_MODEL but specifies one or more GPUs`);
    } else if (g.kind === 'KIND_GPU') {
      if (g.gpus.length === 0) {
        fail(supported.length === 0 ? `${where} has kind KIND_GPU but no GPUs are available` : `${where} has kind KIND_GPU but specifies no GPUs`);
      }
      for (const id of g.gpus) {
        if (!supported.includes(id)) {
          fail(
            `${where} specifies invalid or unsupported gpu id ${id}. GPUs with at least the minimum required CUDA compute compatibility of 6.000000 are: ${supported.join(', ')}`,
          );
        }
      }
    } else if (g.kind === 'KIND_CPU') {
      if (g.gpus.length > 0) fail(`${where} has kind KIND_CPU but specifies one or more GPUs`);
    } else {
      throw invalidArg(`${where} has unexpected kind KIND_AUTO`);
    }
    if (c.platform !== TENSORRT_PLAN && g.profile.length > 0) {
      fail(`${where} and platform ${c.platform} specifies profile field which is only supported for TensorRT models`);
    }
    for (const p of g.profile) {
      if (p === '') fail('profile name must not be empty');
      if (!/^\s*[-+]?\d/.test(p)) fail(`unable to parse '${p}': stoi`);
      if (parseInt(p, 10) < 0) {
        fail(
          `${where} and platform ${c.platform} specifies invalid profile ${p}. The field should contain the string representation of a non-negative integer.`,
        );
      }
    }
  }
}

/**
 * Validate a normalised configuration (spec §5.3–§5.7) with Triton's wording.
 * @throws TritonError INVALID_ARG describing the first problem found.
 */
export function validateModelConfig(config: ModelConfig, opts: ValidateOptions = {}): void {
  const c = config;
  const name = c.name;
  if (!name) fail("model configuration must specify 'name'");
  if (!c.backend) {
    if (c.platform !== ENSEMBLE) fail(`unexpected platform type '${c.platform}' for ${name}`);
  } else if (c.platform === ENSEMBLE) {
    fail(`Ensemble model '${name}' must have platform type '${c.platform}' and empty backend type`);
  }
  const bt = backendType(c.backend);
  if (bt !== 'unknown' && bt !== platformBackendType(c.platform)) {
    fail(`unexpected 'platform' and 'backend' pair, got:${c.platform}, ${c.backend}`);
  }
  if (c.max_batch_size < 0) fail(`'max_batch_size' must be non-negative value for ${name}`);
  if (!c.version_policy) fail(`must specify 'version policy' for ${name}`);

  const db = c.dynamic_batching;
  if (db) {
    for (const size of db.preferred_batch_size) {
      if (size <= 0) fail(`dynamic batching preferred size must be positive for ${name}`);
      if (size > c.max_batch_size) fail(`dynamic batching preferred size must be <= max batch size for ${name}`);
    }
    const levels = db.priority_levels;
    if (levels !== 0) {
      if (db.default_priority_level === 0 || db.default_priority_level > levels) {
        fail(`default priority level must be in range [1, ${levels}] for ${name}`);
      }
      for (const key of Object.keys(db.priority_queue_policy)) {
        const level = Number(key);
        if (level === 0 || level > levels) fail(`priority queue policy must have priority level in range [1, ${levels}] for ${name}`);
      }
    }
    if (db.preserve_ordering) {
      if (levels > 1) fail(`Only one priority level is allowed when 'preserve_ordering' is true for ${name}`);
      const policies = [db.default_queue_policy, ...Object.values(db.priority_queue_policy)];
      for (const p of policies) {
        if (p && p.default_timeout_microseconds !== 0 && p.timeout_action === 'DELAY') {
          fail(`Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${name}`);
        }
      }
    }
  }

  const sb = c.sequence_batching;
  if (sb) {
    if (c.response_cache?.enable) {
      fail(`Response Cache does not currently support model ${name} with sequence batching scheduler. Please disable the response cache.`);
    }
    sequenceControl(sb, name, 'CONTROL_SEQUENCE_START', false);
    sequenceControl(sb, name, 'CONTROL_SEQUENCE_END', false);
    sequenceControl(sb, name, 'CONTROL_SEQUENCE_READY', false);
    const corrid = sequenceControl(sb, name, 'CONTROL_SEQUENCE_CORRID', true);
    if (corrid && !['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING'].includes(corrid.dataType)) {
      fail(
        `unexpected data type for control CONTROL_SEQUENCE_CORRID for ${name}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`,
      );
    }
    if (sb.oldest) {
      for (const size of sb.oldest.preferred_batch_size) {
        if (size <= 0) fail(`sequence batching preferred batch size must be positive for ${name}`);
        if (size > c.max_batch_size) fail(`sequence batching preferred batch size must be <= max batch size for ${name}`);
      }
    }
    if (sb.direct) {
      const u = sb.direct.minimum_slot_utilization;
      if (!(u >= 0 && u <= 1)) fail(`sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${name}`);
    }
  }

  if (c.ensemble_scheduling) validateEnsemble(c);
  else if (c.platform === ENSEMBLE) fail(`ensemble scheduling must be set for ensemble ${name} whose platform is ${ENSEMBLE}`);

  if (c.model_transaction_policy?.decoupled && c.response_cache?.enable) {
    fail(`Response Cache does not currently support model ${name} with 'decoupled' transaction policy. Please disable the response cache.`);
  }

  if (c.model_metrics) {
    for (const mc of c.model_metrics.metric_control) {
      if (!mc.metric_identifier) fail("metric control must specify 'metric_identifier'");
      if (!mc.metric_identifier.family) fail("metric identifier must specify non-empty 'family'");
      if (!mc.histogram_options) fail("metric control must specify 'histogram_options'");
      if (mc.histogram_options.buckets.length === 0) fail("histogram options must specify non-empty 'buckets'");
    }
  }

  validateInstanceGroups(c, opts.gpuCount ?? 0);
  validateIO(c);

  if (opts.directoryName !== undefined && name !== opts.directoryName) {
    fail(`unexpected directory name '${opts.directoryName}' for model '${name}', directory name must equal model name`);
  }
}
