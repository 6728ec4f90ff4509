/**
 * Validation (spec §5.3–§5.7): each rule ported from Triton core's ValidateModelConfig,
 * ValidateInstanceGroup and ValidateModelIOConfig, with Triton's wording, plus valid configs
 * that must pass.
 */
import { describe, expect, it } from 'vitest';
import { normalizeModelConfig, parseModelConfigPbtxt as parse, validateModelConfig, type ValidateOptions } from '../../host/src/config/index.js';
import { expectTritonError, fixture } from './helpers.js';

const BASE = `
  name: "m"
  backend: "onnxruntime"
  platform: "onnxruntime_onnx"
  max_batch_size: 8
  input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
  output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;
const SEQ_BASE = `${BASE} sequence_batching { control_input [`;

function check(text: string, opts: ValidateOptions & { gpuCount?: number } = {}): void {
  const c = normalizeModelConfig(parse(text), { modelName: 'm', gpuCount: opts.gpuCount ?? 0 });
  validateModelConfig(c, opts);
}

describe('valid configurations pass', () => {
  it('accepts the base config, every-field on a 2-GPU host, and a well-formed ensemble', () => {
    check(BASE);
    check(`${BASE} dynamic_batching { preferred_batch_size: [ 2, 8 ] priority_levels: 2 default_priority_level: 2 priority_queue_policy { key: 1 value {} } }`);
    check(`${BASE} instance_group { kind: KIND_GPU gpus: [ 1 ] }`, { gpuCount: 2 });
    const every = normalizeModelConfig(parse(fixture('every-field.pbtxt')), { modelName: 'every_field', gpuCount: 2 });
    validateModelConfig(every, { gpuCount: 2, directoryName: 'every_field' });
    check(`
      name: "m" platform: "ensemble" max_batch_size: 8
      input [ { name: "RAW" data_type: TYPE_FP32 dims: [ 4 ] } ]
      output [ { name: "RESULT" data_type: TYPE_FP32 dims: [ 4 ] } ]
      ensemble_scheduling { step [
        { model_name: "pre" model_version: -1 input_map { key: "I" value: "RAW" } output_map { key: "O" value: "mid" } },
        { model_name: "net" model_version: 1 input_map { key: "I" value: "mid" } output_map { key: "O" value: "RESULT" } }
      ] }`);
    check(`${BASE} input [ { name: "S" data_type: TYPE_INT32 dims: [ 1 ] reshape: { shape: [ ] } } ]`);
    check(`${BASE} input [ { name: "V" data_type: TYPE_INT32 dims: [ 2, 4, -1, 6 ] reshape: { shape: [ 8, -1, 1, 6 ] } } ]`);
  });
});

type Case = [title: string, text: string, message: string, opts?: ValidateOptions & { gpuCount?: number }];

const CASES: Case[] = [
  ['max_batch_size < 0', BASE.replace('max_batch_size: 8', 'max_batch_size: -1'), "'max_batch_size' must be non-negative value for m"],
  ['no backend', 'name: "m" platform: "custom_thing"', "unexpected platform type 'custom_thing' for m"],
  ['platform/backend pair', BASE.replace('"onnxruntime_onnx"', '"tensorrt_plan"'), "unexpected 'platform' and 'backend' pair, got:tensorrt_plan, onnxruntime"],
  ['ensemble with backend', 'name: "m" platform: "ensemble" backend: "python"', "Ensemble model 'm' must have platform type 'ensemble' and empty backend type"],
  ['ensemble without scheduling', 'name: "m" platform: "ensemble"', 'ensemble scheduling must be set for ensemble m whose platform is ensemble'],
  ['preferred size 0', `${BASE} dynamic_batching { preferred_batch_size: [ 0 ] }`, 'dynamic batching preferred size must be positive for m'],
  ['preferred size > mbs', `${BASE} dynamic_batching { preferred_batch_size: [ 16 ] }`, 'dynamic batching preferred size must be <= max batch size for m'],
  ['default priority 0', `${BASE} dynamic_batching { priority_levels: 3 }`, 'default priority level must be in range [1, 3] for m'],
  [
    'default priority too big',
    `${BASE} dynamic_batching { priority_levels: 3 default_priority_level: 4 }`,
    'default priority level must be in range [1, 3] for m',
  ],
  [
    'priority policy level',
    `${BASE} dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 3 value {} } }`,
    'priority queue policy must have priority level in range [1, 2] for m',
  ],
  [
    'preserve ordering + priorities',
    `${BASE} dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1 }`,
    "Only one priority level is allowed when 'preserve_ordering' is true for m",
  ],
  [
    'preserve ordering + DELAY',
    `${BASE} dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 10 } }`,
    "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for m",
  ],
  [
    'decoupled + response cache',
    `${BASE} model_transaction_policy { decoupled: true } response_cache { enable: true }`,
    "Response Cache does not currently support model m with 'decoupled' transaction policy. Please disable the response cache.",
  ],
  [
    'sequence + response cache',
    `${BASE} sequence_batching {} response_cache { enable: true }`,
    'Response Cache does not currently support model m with sequence batching scheduler. Please disable the response cache.',
  ],
  [
    'control without values',
    `${SEQ_BASE} { name: "S" control { kind: CONTROL_SEQUENCE_START } } ] }`,
    "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START for m",
  ],
  [
    'control with two value types',
    `${SEQ_BASE} { name: "S" control { kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1] fp32_false_true: [0, 1] } } ] }`,
    "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for CONTROL_SEQUENCE_END for m",
  ],
  [
    'control with 3 values',
    `${SEQ_BASE} { name: "S" control { kind: CONTROL_SEQUENCE_READY int32_false_true: [0, 1, 2] } } ] }`,
    "sequence batching control 'int32_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_READY for m",
  ],
  [
    'bool control with 1 value',
    `${SEQ_BASE} { name: "S" control { kind: CONTROL_SEQUENCE_READY bool_false_true: [true] } } ] }`,
    "sequence batching control 'bool_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_READY for m",
  ],
  [
    'two START tensors',
    `${SEQ_BASE} { name: "S" control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } }, { name: "T" control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } } ] }`,
    'sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for m',
  ],
  [
    'tensor for two controls',
    `${SEQ_BASE} { name: "S" control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } }, { name: "S" control { kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1] } } ] }`,
    "sequence batching control tensor 'S' is specified for multiple control kinds for m",
  ],
  [
    'unnamed control tensor',
    `${SEQ_BASE} { control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } } ] }`,
    'sequence batching control tensor must have a name for m',
  ],
  [
    'CORRID with values',
    `${SEQ_BASE} { name: "C" control { kind: CONTROL_SEQUENCE_CORRID int32_false_true: [0, 1] } } ] }`,
    "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for m",
  ],
  [
    'CORRID data type',
    `${SEQ_BASE} { name: "C" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } } ] }`,
    'unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING',
  ],
  [
    'oldest preferred > mbs',
    `${BASE} sequence_batching { oldest { preferred_batch_size: [ 9 ] } }`,
    'sequence batching preferred batch size must be <= max batch size for m',
  ],
  [
    'oldest preferred 0',
    `${BASE} sequence_batching { oldest { preferred_batch_size: [ 0 ] } }`,
    'sequence batching preferred batch size must be positive for m',
  ],
  [
    'slot utilization',
    `${BASE} sequence_batching { direct { minimum_slot_utilization: 1.5 } }`,
    'sequence batching minimum slot utilization must be in range (0.0, 1.0] for m',
  ],
  ['input without name', `${BASE} input { data_type: TYPE_FP32 dims: [1] }`, "model input must specify 'name' for m"],
  ['input without data_type', `${BASE} input { name: "X" dims: [1] }`, "model input 'X' must specify 'data_type' for m"],
  ['input without dims', `${BASE} input { name: "X" data_type: TYPE_FP32 }`, "model input 'X' must specify 'dims' for m"],
  [
    'output dim 0',
    `${BASE} output { name: "Y" data_type: TYPE_FP32 dims: [ 0 ] }`,
    "model output 'Y' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for m",
  ],
  [
    'reshape dim -2',
    `${BASE} input { name: "X" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ -2 ] } }`,
    "model input 'X' reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension for m",
  ],
  [
    'reshape size mismatch',
    `${BASE} input { name: "X" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 3 ] } }`,
    "model input 'X' has different size for dims and reshape for m",
  ],
  [
    'reshape variable chunks',
    `${BASE} input { name: "X" data_type: TYPE_FP32 dims: [ 2, -1 ] reshape { shape: [ -1, 2, -1 ] } }`,
    "model input 'X' has different number of variable-size dimensions for dims and reshape for m",
  ],
  [
    'empty reshape, no batching',
    `${BASE.replace('max_batch_size: 8', 'max_batch_size: 0')} input { name: "X" data_type: TYPE_FP32 dims: [ 1 ] reshape { } }`,
    "model input 'X' cannot have empty reshape for non-batching model as scalar tensors are not supported for m",
  ],
  ['NHWC needs 3 dims', `${BASE} input { name: "X" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 4, 4 ] }`, 'model input NHWC/NCHW require 3 dims for m'],
  [
    'shape tensor on ONNX',
    `${BASE} output { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] is_shape_tensor: true }`,
    'shape tensors are only supported for TensorRT platform for m',
  ],
  [
    'non-linear IO on ONNX',
    `${BASE} input { name: "X" data_type: TYPE_FP32 dims: [ 1, 2, 3 ] is_non_linear_format_io: true }`,
    'Non-linear IO format is only supported for the TensorRT platform for m',
  ],
  ['duplicate input', `${BASE} input { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }`, "model input 'IN' is specified more than once for m"],
  ['duplicate output', `${BASE} output { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }`, "model output 'OUT' is specified more than once for m"],
  [
    'batch input data type',
    `${BASE} batch_input { kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_FP64 source_input: "IN" }`,
    'batch input data type must be TYPE_INT32 or TYPE_FP32 for m',
  ],
  [
    'batch input source count',
    `${BASE} batch_input { kind: BATCH_ITEM_SHAPE data_type: TYPE_INT32 source_input: [ "IN", "IN" ] }`,
    "batch input kind 'BATCH_ITEM_SHAPE' expects 1 source input, got 2 for m",
  ],
  ['batch input unknown source', `${BASE} batch_input { data_type: TYPE_INT32 source_input: "NOPE" }`, "unknown source input name 'NOPE' for m"],
  ['batch output unknown target', `${BASE} batch_output { target_name: "NOPE" source_input: "IN" }`, "unknown target output name 'NOPE' for m"],
  [
    'batch output repeated target',
    `${BASE} batch_output { target_name: [ "OUT", "OUT" ] source_input: "IN" }`,
    "target output name 'OUT' can only be specified once for m",
  ],
  ['KIND_GPU without GPUs', `${BASE} instance_group { kind: KIND_GPU }`, 'instance group m_0 of model m has kind KIND_GPU but no GPUs are available'],
  [
    'KIND_GPU unknown gpu',
    `${BASE} instance_group { kind: KIND_GPU gpus: [ 2 ] }`,
    'instance group m_0 of model m specifies invalid or unsupported gpu id 2. GPUs with at least the minimum required CUDA compute compatibility of 6.000000 are: 0, 1',
    { gpuCount: 2 },
  ],
  [
    'KIND_CPU with gpus',
    `${BASE} instance_group { kind: KIND_CPU gpus: [ 0 ] }`,
    'instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs',
  ],
  [
    'KIND_AUTO with missing gpu ⇒ CPU with gpus',
    `${BASE} instance_group { gpus: [ 0 ] }`,
    'instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs',
  ],
  [
    'KIND_MODEL with gpus',
    `${BASE} instance_group { kind: KIND_MODEL gpus: [ 0 ] }`,
    'instance group m_0 of model m has kind KIND_MODEL but specifies one or more GPUs',
  ],
  [
    'profile on ONNX',
    `${BASE} instance_group { kind: KIND_CPU profile: [ "0" ] }`,
    'instance group m_0 of model m and platform onnxruntime_onnx specifies profile field which is only supported for TensorRT models',
  ],
  [
    'negative TRT profile',
    'name: "m" backend: "tensorrt" platform: "tensorrt_plan" instance_group { kind: KIND_CPU profile: [ "-1" ] }',
    'instance group m_0 of model m and platform tensorrt_plan specifies invalid profile -1. The field should contain the string representation of a non-negative integer.',
  ],
  [
    'metric control without identifier',
    `${BASE} model_metrics { metric_control { histogram_options { buckets: [ 1 ] } } }`,
    "metric control must specify 'metric_identifier'",
  ],
  [
    'metric identifier without family',
    `${BASE} model_metrics { metric_control { metric_identifier {} histogram_options { buckets: [ 1 ] } } }`,
    "metric identifier must specify non-empty 'family'",
  ],
  [
    'metric control without histogram',
    `${BASE} model_metrics { metric_control { metric_identifier { family: "f" } } }`,
    "metric control must specify 'histogram_options'",
  ],
  [
    'histogram without buckets',
    `${BASE} model_metrics { metric_control { metric_identifier { family: "f" } histogram_options {} } }`,
    "histogram options must specify non-empty 'buckets'",
  ],
  [
    'directory name',
    BASE.replace('name: "m"', 'name: "other"'),
    "unexpected directory name 'm' for model 'other', directory name must equal model name",
    { directoryName: 'm' },
  ],
];

const ENS = (steps: string, io = 'input [ { name: "RAW" data_type: TYPE_FP32 dims: [ 1 ] } ] output [ { name: "RESULT" data_type: TYPE_FP32 dims: [ 1 ] } ]') =>
  `name: "m" platform: "ensemble" ${io} ensemble_scheduling { ${steps} }`;
const STEP = (m: string, i: string, o: string) => `step { model_name: "${m}" input_map { key: "I" value: "${i}" } output_map { key: "O" value: "${o}" } }`;

const ENSEMBLE_CASES: Case[] = [
  ['no steps', ENS(''), "must specify 'step' for ensemble 'm'"],
  [
    'ensemble with instance group',
    `${ENS(STEP('a', 'RAW', 'RESULT'))} instance_group { kind: KIND_CPU }`,
    "instance group should not be specified for ensemble 'm'",
  ],
  ['ensemble with optimization', `${ENS(STEP('a', 'RAW', 'RESULT'))} optimization {}`, "optimization should not be specified for ensemble 'm'"],
  ['ensemble with warmup', `${ENS(STEP('a', 'RAW', 'RESULT'))} model_warmup { name: "w" }`, "model_warmup can not be specified for ensemble 'm'"],
  [
    'step without model',
    ENS('step { input_map { key: "I" value: "RAW" } output_map { key: "O" value: "RESULT" } }'),
    "must specify 'model_name' in step 0 of ensemble 'm'",
  ],
  ['step without input_map', ENS('step { model_name: "a" output_map { key: "O" value: "RESULT" } }'), "must specify 'input_map' in step 0 of ensemble 'm'"],
  ['step without output_map', ENS('step { model_name: "a" input_map { key: "I" value: "RAW" } }'), "must specify 'output_map' in step 0 of ensemble 'm'"],
  [
    'tensor written twice',
    ENS(`${STEP('a', 'RAW', 'RESULT')} ${STEP('b', 'RAW', 'RESULT')}`),
    "ensemble tensor 'RESULT' can appear in an output map only once for ensemble 'm' step 1",
  ],
  ['unused ensemble input', ENS(STEP('a', 'OTHER', 'RESULT')), "ensemble input 'RAW' for ensemble m' is not used"],
  [
    'output not written',
    ENS(`${STEP('a', 'RAW', 'x')} ${STEP('b', 'y', 'RESULT')}`),
    "output 'RESULT' for ensemble 'm' is not written: at least one of its depending tensors, 'y', is not connected",
  ],
  ['unused intermediate', ENS(`${STEP('a', 'RAW', 'RESULT')} ${STEP('b', 'RAW', 'dangling')}`), "ensemble tensor 'dangling' is unused in ensemble 'm'"],
  [
    'ensemble scheduling on another platform',
    `${BASE} ensemble_scheduling { ${STEP('a', 'IN', 'OUT')} }`,
    "ensemble scheduling cannot be set for model 'm' whose platform is not ensemble",
  ],
];

describe('validation errors (Triton wording)', () => {
  for (const [title, text, message, opts] of [...CASES, ...ENSEMBLE_CASES]) {
    it(title, () => {
      expectTritonError(() => check(text, opts), message);
    });
  }

  it('rejects a config without name or version policy when given un-normalised input', () => {
    const c = normalizeModelConfig(parse(BASE), { modelName: 'm', gpuCount: 0 });
    expectTritonError(() => validateModelConfig({ ...c, name: '' }), "model configuration must specify 'name'");
    expectTritonError(() => validateModelConfig({ ...c, version_policy: undefined as never }), "must specify 'version policy' for m");
    expectTritonError(() => validateModelConfig({ ...c, instance_group: [] }), "must specify one or more 'instance group's for m");
    expectTritonError(
      () => validateModelConfig({ ...c, instance_group: [{ ...c.instance_group[0]!, kind: 'KIND_AUTO' }] }),
      'instance group m of model m has unexpected kind KIND_AUTO',
    );
  });

  it('accepts libtorch / torch_aoti platforms with the pytorch backend (superset of Triton)', () => {
    check('name: "m" backend: "pytorch" platform: "libtorch"');
    check('name: "m" backend: "pytorch" platform: "torch_aoti"');
    expect(() => check('name: "m" backend: "pytorch" platform: "onnxruntime_onnx"')).toThrow(/unexpected 'platform' and 'backend' pair/);
  });
});
