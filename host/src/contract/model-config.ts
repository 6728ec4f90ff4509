/**
 * `ModelConfig` as Triton prints it from `/v2/models/{m}/config` (spec §1.7, §5.3–5.6):
 * snake_case field names, enums as names, 64-bit numbers as JSON numbers for the fields Triton
 * rewrites. After normalisation every field marked "always present" below is filled in.
 *
 * This is the single in-memory representation of a model config in Warden: the pbtxt parser,
 * the load API's JSON `config`, the backends (native backends receive exactly this JSON) and the
 * HTTP frontend all use it.
 */

/** `inference.DataType` names (`TYPE_STRING` is the BYTES type). */
export type ConfigDataType =
  | 'TYPE_INVALID'
  | 'TYPE_BOOL'
  | 'TYPE_UINT8'
  | 'TYPE_UINT16'
  | 'TYPE_UINT32'
  | 'TYPE_UINT64'
  | 'TYPE_INT8'
  | 'TYPE_INT16'
  | 'TYPE_INT32'
  | 'TYPE_INT64'
  | 'TYPE_FP16'
  | 'TYPE_FP32'
  | 'TYPE_FP64'
  | 'TYPE_STRING'
  | 'TYPE_BF16';

export interface ModelTensorReshape {
  shape: number[];
}

/** `ModelInput` (spec §5.4). */
export interface ModelInput {
  name: string;
  data_type: ConfigDataType;
  format: 'FORMAT_NONE' | 'FORMAT_NHWC' | 'FORMAT_NCHW';
  /** Shape without the batch dimension; -1 = variable. */
  dims: number[];
  reshape?: ModelTensorReshape;
  is_shape_tensor: boolean;
  allow_ragged_batch: boolean;
  optional: boolean;
  is_non_linear_format_io: boolean;
}

/** `ModelOutput` (spec §5.4). */
export interface ModelOutput {
  name: string;
  data_type: ConfigDataType;
  dims: number[];
  reshape?: ModelTensorReshape;
  label_filename: string;
  is_shape_tensor: boolean;
  is_non_linear_format_io: boolean;
}

export type InstanceGroupKind = 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';

/** `ModelInstanceGroup` (spec §5.5). After normalisation kind is never KIND_AUTO. */
export interface ModelInstanceGroup {
  name: string;
  kind: InstanceGroupKind;
  count: number;
  gpus: number[];
  /** `device_id` is int64; Triton's JSON prints it as a string (see json.ts). */
  secondary_devices: { kind: string; device_id: number }[];
  profile: string[];
  passive: boolean;
  host_policy: string;
  rate_limiter?: { resources: { name: string; global: boolean; count: number }[]; priority: number };
}

/** `ModelQueuePolicy` (spec §5.6). */
export interface ModelQueuePolicy {
  timeout_action: 'REJECT' | 'DELAY';
  default_timeout_microseconds: number;
  allow_timeout_override: boolean;
  max_queue_size: number;
}

/** `ModelDynamicBatching` (spec §5.6). */
export interface ModelDynamicBatching {
  preferred_batch_size: number[];
  max_queue_delay_microseconds: number;
  preserve_ordering: boolean;
  priority_levels: number;
  default_priority_level: number;
  default_queue_policy?: ModelQueuePolicy;
  priority_queue_policy: Record<string, ModelQueuePolicy>;
}

/** `ModelSequenceBatching.Control` (spec §5.6): how one control value reaches the model. */
export interface ModelSequenceControl {
  kind: 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_CORRID';
  /** `[false_value, true_value]` for START/READY/END as an INT32 tensor. */
  int32_false_true: number[];
  /** `[false_value, true_value]` as an FP32 tensor. */
  fp32_false_true: number[];
  /** `[false_value, true_value]` as a BOOL tensor. */
  bool_false_true: boolean[];
  /** CORRID tensor type (TYPE_UINT64/INT64/UINT32/INT32/STRING). */
  data_type: ConfigDataType;
}

/** `ModelSequenceBatching.ControlInput`: a model input fed with sequence controls. */
export interface ModelSequenceControlInput {
  name: string;
  control: ModelSequenceControl[];
}

/** `ModelSequenceBatching.InitialState`; exactly one of `zero_data` / `data_file` when set. */
export interface ModelSequenceInitialState {
  data_type: ConfigDataType;
  dims: number[];
  zero_data?: boolean;
  /** File under `<model>/initial_state/`. */
  data_file?: string;
  name: string;
}

/** `ModelSequenceBatching.State`: an implicit state input/output pair. */
export interface ModelSequenceState {
  input_name: string;
  output_name: string;
  data_type: ConfigDataType;
  dims: number[];
  initial_state: ModelSequenceInitialState[];
  use_same_buffer_for_input_output: boolean;
  use_growable_memory: boolean;
}

/** `ModelSequenceBatching` (spec §5.6). At most one of `direct` / `oldest` is set. */
export interface ModelSequenceBatching {
  direct?: { max_queue_delay_microseconds: number; minimum_slot_utilization: number };
  oldest?: {
    max_candidate_sequences: number;
    preferred_batch_size: number[];
    max_queue_delay_microseconds: number;
    preserve_ordering: boolean;
  };
  /** µs; normalised to 1,000,000 when 0 / unset. */
  max_sequence_idle_microseconds: number;
  control_input: ModelSequenceControlInput[];
  state: ModelSequenceState[];
  iterative_sequence: boolean;
}

/** `BatchInput` (spec §5.3): an extra input the backend derives from the batch. */
export interface BatchInput {
  kind:
    | 'BATCH_ELEMENT_COUNT'
    | 'BATCH_ACCUMULATED_ELEMENT_COUNT'
    | 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO'
    | 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE'
    | 'BATCH_ITEM_SHAPE'
    | 'BATCH_ITEM_SHAPE_FLATTEN';
  target_name: string[];
  data_type: ConfigDataType;
  source_input: string[];
}

/** `BatchOutput` (spec §5.3). */
export interface BatchOutput {
  target_name: string[];
  kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE';
  source_input: string[];
}

/** `ModelOptimizationPolicy.ExecutionAccelerators.Accelerator`. */
export interface ModelExecutionAccelerator {
  name: string;
  parameters: Record<string, string>;
}

/** `ModelOptimizationPolicy.Cuda.GraphSpec` (TensorRT CUDA graphs). */
export interface ModelCudaGraphSpec {
  batch_size: number;
  input: Record<string, { dim: number[] }>;
  graph_lower_bound?: { batch_size: number; input: Record<string, { dim: number[] }> };
}

/** `ModelOptimizationPolicy` (spec §5.3). Both pinned-memory flags are set by normalisation. */
export interface ModelOptimizationPolicy {
  graph?: { level: number };
  priority: 'PRIORITY_DEFAULT' | 'PRIORITY_MAX' | 'PRIORITY_MIN';
  cuda?: { graphs: boolean; busy_wait_events: boolean; graph_spec: ModelCudaGraphSpec[]; output_copy_stream: boolean };
  execution_accelerators?: {
    gpu_execution_accelerator: ModelExecutionAccelerator[];
    cpu_execution_accelerator: ModelExecutionAccelerator[];
  };
  input_pinned_memory?: { enable: boolean };
  output_pinned_memory?: { enable: boolean };
  gather_kernel_buffer_threshold: number;
  eager_batching: boolean;
}

/** `ModelEnsembling.Step` (spec §5.6). */
export interface ModelEnsembleStep {
  model_name: string;
  /** -1 = latest. */
  model_version: number;
  /** composing-model input name → ensemble tensor name. */
  input_map: Record<string, string>;
  /** composing-model output name → ensemble tensor name. */
  output_map: Record<string, string>;
  model_namespace: string;
}

/** `ModelEnsembling` (spec §5.6). */
export interface ModelEnsembling {
  step: ModelEnsembleStep[];
  /** 0 = unlimited (older protos call field 2 `max_inflight_responses`). */
  max_inflight_requests: number;
}

/** `ModelWarmup.Input`; at most one of zero_data / random_data / input_data_file. */
export interface ModelWarmupInput {
  data_type: ConfigDataType;
  dims: number[];
  zero_data?: boolean;
  random_data?: boolean;
  /** File under `<model>/warmup/`. */
  input_data_file?: string;
}

/** `ModelWarmup` (spec §5.3). */
export interface ModelWarmup {
  name: string;
  batch_size: number;
  inputs: Record<string, ModelWarmupInput>;
  count: number;
}

/** `ModelRepositoryAgents.Agent`. */
export interface ModelRepositoryAgent {
  name: string;
  parameters: Record<string, string>;
}

/** `ModelMetrics` (histogram bucket overrides). */
export interface ModelMetrics {
  metric_control: {
    metric_identifier?: { family: string };
    histogram_options?: { buckets: number[] };
  }[];
}

/** `ModelParameter`: free-form backend parameters, e.g. `execute_delay_ms`. */
export interface ModelParameter {
  string_value: string;
}

/** `ModelVersionPolicy` oneof (spec §5.3). Exactly one key is present. */
export type ModelVersionPolicy = { latest: { num_versions: number } } | { all: Record<string, never> } | { specific: { versions: number[] } };

/**
 * The normalised model configuration. Fields without `?` are always present after
 * normalisation; optional ones appear only when set (oneofs, sub-messages).
 */
export interface ModelConfig {
  name: string;
  platform: string;
  backend: string;
  runtime: string;
  version_policy: ModelVersionPolicy;
  /** 0 = no batching; >= 1 = first dim of every input/output is the batch. */
  max_batch_size: number;
  input: ModelInput[];
  output: ModelOutput[];
  batch_input: BatchInput[];
  batch_output: BatchOutput[];
  /**
   * Always present after normalisation except for ensembles (`platform: "ensemble"`), for which
   * Triton neither fills nor prints it.
   */
  optimization?: ModelOptimizationPolicy;
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: ModelSequenceBatching;
  ensemble_scheduling?: ModelEnsembling;
  instance_group: ModelInstanceGroup[];
  default_model_filename: string;
  cc_model_filenames: Record<string, string>;
  metric_tags: Record<string, string>;
  parameters: Record<string, ModelParameter>;
  model_warmup: ModelWarmup[];
  model_operations?: { op_library_filename: string[] };
  model_transaction_policy?: { decoupled: boolean };
  model_repository_agents?: { agents: ModelRepositoryAgent[] };
  response_cache?: { enable: boolean };
  model_metrics?: ModelMetrics;
}
