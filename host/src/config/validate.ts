/**
 * Validation of a normalised model configuration (spec §5.3–§5.7), ported from Triton core
 * (src/model_config_utils.cc: ValidateModelConfig, ValidateInstanceGroup, ValidateModelIOConfig,
 * ValidateIOShape, ValidateBatchIO, Get{Boolean,Typed}SequenceControlProperties,
 * ValidateEnsembleSchedulingConfig, ValidateModelMetrics) with Triton's error wording. Every error
 * is a TritonError INVALID_ARG. Warden additionally rejects duplicate input / output names.
 */
import type { TritonError } from '../contract/errors.js';
import type { ConfigDataType, ModelConfig, ModelInput, ModelOutput, ModelSequenceBatching, ModelSequenceControl } from '../contract/model-config.js';
import { instanceKindAuto } from './config.errors.js';
import * as errors from './validate.errors.js';

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

/** Triton `ValidateIOShape` of input or output `io` of model `model`. */
function validateIOShape(io: ModelInput | ModelOutput, kind: 'input' | 'output', maxBatchSize: number, model: string): TritonError | undefined {
  if (!io.name) return errors.ioFieldMissing(kind, io.name, 'name', model);
  if (io.data_type === 'TYPE_INVALID') return errors.ioFieldMissing(kind, io.name, 'data_type', model);
  if (io.dims.length === 0) return errors.ioFieldMissing(kind, io.name, 'dims', model);
  if (io.reshape && io.reshape.shape.length === 0 && maxBatchSize === 0) return errors.ioReshapeScalar(kind, io.name, model);
  for (const d of io.dims) {
    if (d < 1 && d !== WILDCARD_DIM) return errors.ioDimInvalid(kind, io.name, false, model);
  }
  if (io.reshape) {
    for (const d of io.reshape.shape) {
      if (d < 1 && d !== WILDCARD_DIM) return errors.ioDimInvalid(kind, io.name, true, model);
    }
    const dimsSize = elementCount(io.dims);
    const reshapeSize = elementCount(io.reshape.shape);
    // An empty reshape (scalar) expects dims with element count 1.
    if (dimsSize !== reshapeSize && (reshapeSize !== 0 || dimsSize !== 1)) return errors.ioReshapeMismatch(kind, io.name, 'size', model);
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
      if (a.length !== b.length) return errors.ioReshapeMismatch(kind, io.name, 'variable-size dimensions', model);
      if (a.some((x, i) => x !== b[i])) return errors.ioReshapeMismatch(kind, io.name, 'size', model);
    }
  }
  return undefined;
}

function validateNonLinearFormatIO(io: ModelInput | ModelOutput, platform: string, kind: 'input' | 'output', model: string): TritonError | undefined {
  if (!io.is_non_linear_format_io) return undefined;
  if (platform !== TENSORRT_PLAN) return errors.ioTensorRtOnly('non-linear', model);
  if (io.dims.length !== 3) return errors.ioNeeds3Dims(kind === 'input' ? 'non-linear input' : 'non-linear output', model);
  return undefined;
}

/** Triton `ValidateModelIOConfig` (inputs, outputs, batch inputs/outputs), plus duplicate names. */
function validateIO(c: ModelConfig): void {
  const model = c.name;
  const check = (e: TritonError | undefined): void => {
    if (e !== undefined) throw e;
  };
  for (const [kind, list] of [
    ['input', c.input],
    ['output', c.output],
  ] as const) {
    for (const io of list) {
      check(validateIOShape(io, kind, c.max_batch_size, model));
      const format = 'format' in io ? io.format : undefined;
      if ((format === 'FORMAT_NHWC' || format === 'FORMAT_NCHW') && io.dims.length !== 3) throw errors.ioNeeds3Dims('NHWC/NCHW', model);
      if (c.platform !== TENSORRT_PLAN && io.is_shape_tensor) throw errors.ioTensorRtOnly('shape tensors', model);
      check(validateNonLinearFormatIO(io, c.platform, kind, model));
    }
  }
  const names = (kind: 'input' | 'output', list: readonly (ModelInput | ModelOutput)[]): Set<string> => {
    const seen = new Set<string>();
    for (const io of list) {
      if (seen.has(io.name)) throw errors.ioRepeated(kind, io.name, model);
      seen.add(io.name);
    }
    return seen;
  };
  const inputs = names('input', c.input);
  const outputs = names('output', c.output);
  // Triton ValidateBatchIO
  for (const b of c.batch_input) {
    if (b.source_input.length !== 1) throw errors.batchIoSourceCount('input', b.kind, b.source_input.length, model);
    if (b.data_type !== 'TYPE_INT32' && b.data_type !== 'TYPE_FP32') throw errors.batchInputDataType(model);
    for (const s of b.source_input) if (!inputs.has(s)) throw errors.batchIoNameUnknown('source input', s, model);
  }
  for (const b of c.batch_output) {
    if (b.source_input.length !== 1) throw errors.batchIoSourceCount('output', b.kind, b.source_input.length, model);
    for (const s of b.source_input) if (!inputs.has(s)) throw errors.batchIoNameUnknown('source input', s, model);
    const targets = new Set<string>();
    for (const t of b.target_name) {
      if (!outputs.has(t)) throw errors.batchIoNameUnknown('target output', t, model);
      if (targets.has(t)) throw errors.batchOutputTargetRepeated(t, model);
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
    if (!ci.name) throw errors.controlTensorInvalid(model);
    if (seenTensors.has(ci.name)) throw errors.controlTensorInvalid(model, ci.name);
    seenTensors.add(ci.name);
    for (const ctl of ci.control) {
      if (ctl.kind !== kind) continue;
      if (found) throw errors.controlKindRepeated(kind, model);
      const ni = ctl.int32_false_true.length;
      const nf = ctl.fp32_false_true.length;
      const nb = ctl.bool_false_true.length;
      if (typed) {
        if (ni > 0 || nf > 0 || nb > 0) throw errors.controlValuesInvalid('unexpected', kind, model);
        found = { tensor: ci.name, dataType: ctl.data_type };
        continue;
      }
      if (ni === 0 && nf === 0 && nb === 0) throw errors.controlValuesInvalid('missing', kind, model);
      if ((ni && nf) || (ni && nb) || (nf && nb)) throw errors.controlValuesInvalid('several', kind, model);
      if (ni && ni !== 2) throw errors.controlValuesInvalid('int32_false_true', kind, model);
      if (nf && nf !== 2) throw errors.controlValuesInvalid('fp32_false_true', kind, model);
      if (nb && nb !== 2) throw errors.controlValuesInvalid('bool_false_true', kind, model);
      found = { tensor: ci.name, dataType: ni ? 'TYPE_INT32' : nf ? 'TYPE_FP32' : 'TYPE_BOOL' };
    }
  }
  return found;
}

/** Triton `ValidateEnsembleSchedulingConfig`: step fields and the tensor data-flow graph. */
function validateEnsemble(c: ModelConfig): void {
  const name = c.name;
  if (c.platform !== ENSEMBLE) throw errors.ensembleSchedulingMismatch(name, true);
  if (c.instance_group.length !== 0) throw errors.ensembleFieldSet('instance group', name);
  if (c.optimization !== undefined) throw errors.ensembleFieldSet('optimization', name);
  if (c.model_warmup.length !== 0) throw errors.ensembleFieldSet('model_warmup', name);
  const steps = c.ensemble_scheduling!.step;
  if (steps.length === 0) throw errors.ensembleFieldMissing('step', name);

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
    if (!step.model_name) throw errors.ensembleFieldMissing('model_name', name, idx);
    if (Object.keys(step.input_map).length === 0) throw errors.ensembleFieldMissing('input_map', name, idx);
    if (Object.keys(step.output_map).length === 0) throw errors.ensembleFieldMissing('output_map', name, idx);
    const produced: Node[] = [];
    for (const t of Object.values(step.output_map)) {
      const existing = tensors.get(t);
      if (existing) {
        if (existing.isOutput) throw errors.ensembleTensorWrittenTwice(t, name, idx);
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
    if (!t) throw errors.ensembleIoUnused('input', input.name, name);
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
    if (!t) throw errors.ensembleIoUnused('output', output.name, name);
    if (!t.ready) {
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
      throw errors.ensembleOutputNotWritten(output.name, name, last.name !== t.name ? last.name : undefined);
    }
    outputs.add(output.name);
  }
  for (const [tname, t] of tensors) {
    if (outputs.has(tname)) continue;
    if (!t.ready || t.next.length === 0) throw errors.ensembleTensorUnused(tname, name);
  }
}

/** Triton `ValidateInstanceGroup`. */
function validateInstanceGroups(c: ModelConfig, gpuCount: number): void {
  if (c.ensemble_scheduling) return;
  const model = c.name;
  if (c.instance_group.length === 0) throw errors.instanceGroupsMissing(model);
  const supported = Array.from({ length: Math.max(0, gpuCount) }, (_, i) => i);
  for (const g of c.instance_group) {
    if (g.kind === 'KIND_MODEL' || g.kind === 'KIND_CPU') {
      if (g.gpus.length > 0) throw errors.instanceGpusInvalid(g.name, model, g.kind, 'some');
    } else if (g.kind === 'KIND_GPU') {
      if (g.gpus.length === 0) throw errors.instanceGpusInvalid(g.name, model, g.kind, supported.length === 0 ? 'unavailable' : 'none');
      for (const id of g.gpus) {
        if (!supported.includes(id)) throw errors.instanceGpuUnsupported(g.name, model, id, supported);
      }
    } else {
      throw instanceKindAuto(`instance group ${g.name} of model ${model}`);
    }
    if (c.platform !== TENSORRT_PLAN && g.profile.length > 0) throw errors.instanceProfileInvalid(g.name, model, c.platform, 'platform');
    for (const p of g.profile) {
      if (p === '') throw errors.instanceProfileInvalid(g.name, model, c.platform, 'empty');
      if (!/^\s*[-+]?\d/.test(p)) throw errors.instanceProfileInvalid(g.name, model, c.platform, 'unparsable', p);
      if (parseInt(p, 10) < 0) throw errors.instanceProfileInvalid(g.name, model, c.platform, 'negative', p);
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
  if (!name) throw errors.fieldMissing('model configuration', 'name');
  if (!c.backend) {
    if (c.platform !== ENSEMBLE) throw errors.platformUnexpected(c.platform, name);
  } else if (c.platform === ENSEMBLE) {
    throw errors.ensembleHasBackend(name, c.platform);
  }
  const bt = backendType(c.backend);
  if (bt !== 'unknown' && bt !== platformBackendType(c.platform)) throw errors.platformBackendMismatch(c.platform, c.backend);
  if (c.max_batch_size < 0) throw errors.maxBatchSizeNegative(name);
  if (!c.version_policy) throw errors.versionPolicyMissing(name);

  const db = c.dynamic_batching;
  if (db) {
    for (const size of db.preferred_batch_size) {
      if (size <= 0) throw errors.preferredBatchSizeInvalid('dynamic', false, name);
      if (size > c.max_batch_size) throw errors.preferredBatchSizeInvalid('dynamic', true, name);
    }
    const levels = db.priority_levels;
    if (levels !== 0) {
      if (db.default_priority_level === 0 || db.default_priority_level > levels) throw errors.priorityLevelOutOfRange('default', levels, name);
      for (const key of Object.keys(db.priority_queue_policy)) {
        const level = Number(key);
        if (level === 0 || level > levels) throw errors.priorityLevelOutOfRange('queue policy', levels, name);
      }
    }
    if (db.preserve_ordering) {
      if (levels > 1) throw errors.preserveOrderingConflict(name, 'priority levels');
      const policies = [db.default_queue_policy, ...Object.values(db.priority_queue_policy)];
      for (const p of policies) {
        if (p && p.default_timeout_microseconds !== 0 && p.timeout_action === 'DELAY') throw errors.preserveOrderingConflict(name, 'DELAY');
      }
    }
  }

  const sb = c.sequence_batching;
  if (sb) {
    if (c.response_cache?.enable) throw errors.responseCacheUnsupported(name, 'sequence batching');
    sequenceControl(sb, name, 'CONTROL_SEQUENCE_START', false);
    sequenceControl(sb, name, 'CONTROL_SEQUENCE_END', false);
    sequenceControl(sb, name, 'CONTROL_SEQUENCE_READY', false);
    const corrid = sequenceControl(sb, name, 'CONTROL_SEQUENCE_CORRID', true);
    if (corrid && !['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING'].includes(corrid.dataType))
      throw errors.corridDataTypeInvalid(name);
    if (sb.oldest) {
      for (const size of sb.oldest.preferred_batch_size) {
        if (size <= 0) throw errors.preferredBatchSizeInvalid('sequence', false, name);
        if (size > c.max_batch_size) throw errors.preferredBatchSizeInvalid('sequence', true, name);
      }
    }
    if (sb.direct) {
      const u = sb.direct.minimum_slot_utilization;
      if (!(u >= 0 && u <= 1)) throw errors.slotUtilizationOutOfRange(name);
    }
  }

  if (c.ensemble_scheduling) validateEnsemble(c);
  else if (c.platform === ENSEMBLE) throw errors.ensembleSchedulingMismatch(name, false);

  if (c.model_transaction_policy?.decoupled && c.response_cache?.enable) throw errors.responseCacheUnsupported(name, 'decoupled');

  if (c.model_metrics) {
    for (const mc of c.model_metrics.metric_control) {
      if (!mc.metric_identifier) throw errors.fieldMissing('metric control', 'metric_identifier');
      if (!mc.metric_identifier.family) throw errors.fieldMissing('metric identifier', 'family', undefined, true);
      if (!mc.histogram_options) throw errors.fieldMissing('metric control', 'histogram_options');
      if (mc.histogram_options.buckets.length === 0) throw errors.fieldMissing('histogram options', 'buckets', undefined, true);
    }
  }

  validateInstanceGroups(c, opts.gpuCount ?? 0);
  validateIO(c);

  if (opts.directoryName !== undefined && name !== opts.directoryName) {
    throw errors.directoryNameMismatch(opts.directoryName, name);
  }
}
