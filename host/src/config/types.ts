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

/** `ModelSequenceBatching` (spec §5.6); kept structurally, the sequence batcher comes later. */
export interface ModelSequenceBatching {
  max_sequence_idle_microseconds: number;
  control_input: unknown[];
  state: unknown[];
  iterative_sequence: boolean;
  direct?: { max_queue_delay_microseconds: number; minimum_slot_utilization: number };
  oldest?: {
    max_candidate_sequences: number;
    preferred_batch_size: number[];
    max_queue_delay_microseconds: number;
    preserve_ordering: boolean;
  };
}

/** `ModelParameter`: free-form backend parameters, e.g. `execute_delay_ms`. */
export interface ModelParameter {
  string_value: string;
}

/** `ModelVersionPolicy` oneof (spec §5.3). Exactly one key is present. */
export type ModelVersionPolicy =
  | { latest: { num_versions: number } }
  | { all: Record<string, never> }
  | { specific: { versions: number[] } };

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
  batch_input: unknown[];
  batch_output: unknown[];
  optimization: Record<string, unknown>;
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: ModelSequenceBatching;
  ensemble_scheduling?: Record<string, unknown>;
  instance_group: ModelInstanceGroup[];
  default_model_filename: string;
  cc_model_filenames: Record<string, string>;
  metric_tags: Record<string, string>;
  parameters: Record<string, ModelParameter>;
  model_warmup: unknown[];
  model_operations?: { op_library_filename: string[] };
  model_transaction_policy?: { decoupled: boolean };
  model_repository_agents?: { agents: unknown[] };
  response_cache?: { enable: boolean };
  model_metrics?: Record<string, unknown>;
}
