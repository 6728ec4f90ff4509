/**
 * The `inference.ModelConfig` protobuf schema (model_config.proto, package `inference`; spec §5.3)
 * as data: every message, field, enum and oneof Triton's configs can contain, in declaration
 * order (the order protobuf's JSON printer uses, so Warden's `/config` JSON has Triton's key order).
 *
 * The pbtxt parser/printer, the JSON reader/writer and the normaliser are all driven by this table;
 * adding a field to Triton's proto means adding one line here.
 */

/** Protobuf scalar kinds used by ModelConfig. 64-bit integers are JS numbers (|v| <= 2^53-1). */
export type ScalarKind = 'string' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float' | 'double';

/** A protobuf enum: value names in declaration order with their numbers. */
export interface EnumDesc {
  /** Full name, e.g. `inference.DataType`. */
  readonly name: string;
  readonly values: readonly (readonly [name: string, num: number])[];
}

/** What a field (or a map value) holds. */
export type ValueType =
  { readonly kind: ScalarKind } | { readonly kind: 'enum'; readonly enumType: EnumDesc } | { readonly kind: 'message'; readonly messageType: MessageDesc };

/** One field of a message. */
export interface FieldDesc {
  /** Proto field name (snake_case), also the key in Warden's in-memory config and JSON. */
  readonly name: string;
  /** protobuf's lowerCamelCase JSON name (accepted on input, like protobuf's JSON parser). */
  readonly jsonName: string;
  readonly number: number;
  readonly type: ValueType;
  readonly repeated: boolean;
  /** For `map<K, V>` fields: the key kind (the value is `type`). Maps are JS objects keyed by string. */
  readonly mapKey?: 'string' | 'uint64';
  /** Name of the oneof this field belongs to. */
  readonly oneof?: string;
  /**
   * 64-bit field Triton does NOT rewrite to a JSON number in `ModelConfigToJson` (it stays a
   * string, as protobuf prints int64): graph_spec dims and secondary_devices.device_id.
   */
  readonly jsonAsString?: boolean;
  /** Other accepted input names (e.g. an older proto's name for the same field number). */
  readonly aliases?: readonly string[];
}

/** A protobuf message type. */
export interface MessageDesc {
  /** Name as Triton's error messages and protobuf use it, e.g. `ModelInput`, `ModelSequenceBatching.Control`. */
  readonly name: string;
  readonly fields: readonly FieldDesc[];
  /** Field lookup by proto name, JSON name and aliases. */
  readonly byName: ReadonlyMap<string, FieldDesc>;
}

const enumDesc = (name: string, names: string[]): EnumDesc => ({
  name,
  values: names.map((n, i) => [n, i] as const),
});

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

interface FieldSpec {
  name: string;
  number: number;
  type: ScalarKind | EnumDesc | MessageDesc;
  repeated?: boolean;
  mapKey?: 'string' | 'uint64';
  oneof?: string;
  jsonAsString?: boolean;
  aliases?: string[];
}

function toValueType(t: FieldSpec['type']): ValueType {
  if (typeof t === 'string') return { kind: t };
  if ('values' in t) return { kind: 'enum', enumType: t };
  return { kind: 'message', messageType: t };
}

function message(name: string, specs: FieldSpec[]): MessageDesc {
  const fields: FieldDesc[] = specs.map((s) => ({
    name: s.name,
    jsonName: camel(s.name),
    number: s.number,
    type: toValueType(s.type),
    repeated: s.repeated === true || s.mapKey !== undefined,
    mapKey: s.mapKey,
    oneof: s.oneof,
    jsonAsString: s.jsonAsString,
    aliases: s.aliases,
  }));
  const byName = new Map<string, FieldDesc>();
  for (const f of fields) {
    byName.set(f.name, f);
    byName.set(f.jsonName, f);
    for (const a of f.aliases ?? []) byName.set(a, f);
  }
  return { name, fields, byName };
}

const rep = true;

// ---- enums -------------------------------------------------------------------------------------

export const DataTypeEnum = enumDesc('inference.DataType', [
  'TYPE_INVALID',
  'TYPE_BOOL',
  'TYPE_UINT8',
  'TYPE_UINT16',
  'TYPE_UINT32',
  'TYPE_UINT64',
  'TYPE_INT8',
  'TYPE_INT16',
  'TYPE_INT32',
  'TYPE_INT64',
  'TYPE_FP16',
  'TYPE_FP32',
  'TYPE_FP64',
  'TYPE_STRING',
  'TYPE_BF16',
]);
export const InstanceGroupKindEnum = enumDesc('inference.ModelInstanceGroup.Kind', ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL']);
export const SecondaryDeviceKindEnum = enumDesc('inference.ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind', ['KIND_NVDLA']);
export const InputFormatEnum = enumDesc('inference.ModelInput.Format', ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW']);
export const BatchInputKindEnum = enumDesc('inference.BatchInput.Kind', [
  'BATCH_ELEMENT_COUNT',
  'BATCH_ACCUMULATED_ELEMENT_COUNT',
  'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
  'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE',
  'BATCH_ITEM_SHAPE',
  'BATCH_ITEM_SHAPE_FLATTEN',
]);
export const BatchOutputKindEnum = enumDesc('inference.BatchOutput.Kind', ['BATCH_SCATTER_WITH_INPUT_SHAPE']);
export const ModelPriorityEnum = enumDesc('inference.ModelOptimizationPolicy.ModelPriority', ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN']);
export const TimeoutActionEnum = enumDesc('inference.ModelQueuePolicy.TimeoutAction', ['REJECT', 'DELAY']);
export const ControlKindEnum = enumDesc('inference.ModelSequenceBatching.Control.Kind', [
  'CONTROL_SEQUENCE_START',
  'CONTROL_SEQUENCE_READY',
  'CONTROL_SEQUENCE_END',
  'CONTROL_SEQUENCE_CORRID',
]);

// ---- messages (inner types first) --------------------------------------------------------------

const RateLimiterResource = message('ModelRateLimiter.Resource', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'global', number: 2, type: 'bool' },
  { name: 'count', number: 3, type: 'uint32' },
]);
const ModelRateLimiter = message('ModelRateLimiter', [
  { name: 'resources', number: 1, type: RateLimiterResource, repeated: rep },
  { name: 'priority', number: 2, type: 'uint32' },
]);
const SecondaryDevice = message('ModelInstanceGroup.SecondaryDevice', [
  { name: 'kind', number: 1, type: SecondaryDeviceKindEnum },
  { name: 'device_id', number: 2, type: 'int64', jsonAsString: true },
]);
export const ModelInstanceGroupDesc = message('ModelInstanceGroup', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'kind', number: 4, type: InstanceGroupKindEnum },
  { name: 'count', number: 2, type: 'int32' },
  { name: 'rate_limiter', number: 6, type: ModelRateLimiter },
  { name: 'gpus', number: 3, type: 'int32', repeated: rep },
  { name: 'secondary_devices', number: 8, type: SecondaryDevice, repeated: rep },
  { name: 'profile', number: 5, type: 'string', repeated: rep },
  { name: 'passive', number: 7, type: 'bool' },
  { name: 'host_policy', number: 9, type: 'string' },
]);
const ModelTensorReshape = message('ModelTensorReshape', [{ name: 'shape', number: 1, type: 'int64', repeated: rep }]);
export const ModelInputDesc = message('ModelInput', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'data_type', number: 2, type: DataTypeEnum },
  { name: 'format', number: 3, type: InputFormatEnum },
  { name: 'dims', number: 4, type: 'int64', repeated: rep },
  { name: 'reshape', number: 5, type: ModelTensorReshape },
  { name: 'is_shape_tensor', number: 6, type: 'bool' },
  { name: 'allow_ragged_batch', number: 7, type: 'bool' },
  { name: 'optional', number: 8, type: 'bool' },
  { name: 'is_non_linear_format_io', number: 9, type: 'bool' },
]);
export const ModelOutputDesc = message('ModelOutput', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'data_type', number: 2, type: DataTypeEnum },
  { name: 'dims', number: 3, type: 'int64', repeated: rep },
  { name: 'reshape', number: 5, type: ModelTensorReshape },
  { name: 'label_filename', number: 4, type: 'string' },
  { name: 'is_shape_tensor', number: 6, type: 'bool' },
  { name: 'is_non_linear_format_io', number: 7, type: 'bool' },
]);
const BatchInput = message('BatchInput', [
  { name: 'kind', number: 1, type: BatchInputKindEnum },
  { name: 'target_name', number: 2, type: 'string', repeated: rep },
  { name: 'data_type', number: 3, type: DataTypeEnum },
  { name: 'source_input', number: 4, type: 'string', repeated: rep },
]);
const BatchOutput = message('BatchOutput', [
  { name: 'target_name', number: 1, type: 'string', repeated: rep },
  { name: 'kind', number: 2, type: BatchOutputKindEnum },
  { name: 'source_input', number: 3, type: 'string', repeated: rep },
]);
const VersionLatest = message('ModelVersionPolicy.Latest', [{ name: 'num_versions', number: 1, type: 'uint32' }]);
const VersionAll = message('ModelVersionPolicy.All', []);
const VersionSpecific = message('ModelVersionPolicy.Specific', [{ name: 'versions', number: 1, type: 'int64', repeated: rep }]);
const ModelVersionPolicy = message('ModelVersionPolicy', [
  { name: 'latest', number: 1, type: VersionLatest, oneof: 'policy_choice' },
  { name: 'all', number: 2, type: VersionAll, oneof: 'policy_choice' },
  { name: 'specific', number: 3, type: VersionSpecific, oneof: 'policy_choice' },
]);
const OptGraph = message('ModelOptimizationPolicy.Graph', [{ name: 'level', number: 1, type: 'int32' }]);
const GraphSpecShape = message('ModelOptimizationPolicy.Cuda.GraphSpec.Shape', [{ name: 'dim', number: 1, type: 'int64', repeated: rep, jsonAsString: true }]);
const GraphSpecLowerBound = message('ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound', [
  { name: 'batch_size', number: 1, type: 'int32' },
  { name: 'input', number: 2, type: GraphSpecShape, mapKey: 'string' },
]);
const GraphSpec = message('ModelOptimizationPolicy.Cuda.GraphSpec', [
  { name: 'batch_size', number: 1, type: 'int32' },
  { name: 'input', number: 2, type: GraphSpecShape, mapKey: 'string' },
  { name: 'graph_lower_bound', number: 3, type: GraphSpecLowerBound },
]);
const OptCuda = message('ModelOptimizationPolicy.Cuda', [
  { name: 'graphs', number: 1, type: 'bool' },
  { name: 'busy_wait_events', number: 2, type: 'bool' },
  { name: 'graph_spec', number: 3, type: GraphSpec, repeated: rep },
  { name: 'output_copy_stream', number: 4, type: 'bool' },
]);
const Accelerator = message('ModelOptimizationPolicy.ExecutionAccelerators.Accelerator', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'parameters', number: 2, type: 'string', mapKey: 'string' },
]);
const ExecutionAccelerators = message('ModelOptimizationPolicy.ExecutionAccelerators', [
  { name: 'gpu_execution_accelerator', number: 1, type: Accelerator, repeated: rep },
  { name: 'cpu_execution_accelerator', number: 2, type: Accelerator, repeated: rep },
]);
const PinnedMemoryBuffer = message('ModelOptimizationPolicy.PinnedMemoryBuffer', [{ name: 'enable', number: 1, type: 'bool' }]);
export const ModelOptimizationPolicyDesc = message('ModelOptimizationPolicy', [
  { name: 'graph', number: 1, type: OptGraph },
  { name: 'priority', number: 2, type: ModelPriorityEnum },
  { name: 'cuda', number: 3, type: OptCuda },
  { name: 'execution_accelerators', number: 4, type: ExecutionAccelerators },
  { name: 'input_pinned_memory', number: 5, type: PinnedMemoryBuffer },
  { name: 'output_pinned_memory', number: 6, type: PinnedMemoryBuffer },
  { name: 'gather_kernel_buffer_threshold', number: 7, type: 'uint32' },
  { name: 'eager_batching', number: 8, type: 'bool' },
]);
const ModelQueuePolicy = message('ModelQueuePolicy', [
  { name: 'timeout_action', number: 1, type: TimeoutActionEnum },
  { name: 'default_timeout_microseconds', number: 2, type: 'uint64' },
  { name: 'allow_timeout_override', number: 3, type: 'bool' },
  { name: 'max_queue_size', number: 4, type: 'uint32' },
]);
export const ModelDynamicBatchingDesc = message('ModelDynamicBatching', [
  { name: 'preferred_batch_size', number: 1, type: 'int32', repeated: rep },
  { name: 'max_queue_delay_microseconds', number: 2, type: 'uint64' },
  { name: 'preserve_ordering', number: 3, type: 'bool' },
  { name: 'priority_levels', number: 4, type: 'uint64' },
  { name: 'default_priority_level', number: 5, type: 'uint64' },
  { name: 'default_queue_policy', number: 6, type: ModelQueuePolicy },
  { name: 'priority_queue_policy', number: 7, type: ModelQueuePolicy, mapKey: 'uint64' },
]);
const SeqControl = message('ModelSequenceBatching.Control', [
  { name: 'kind', number: 1, type: ControlKindEnum },
  { name: 'int32_false_true', number: 2, type: 'int32', repeated: rep },
  { name: 'fp32_false_true', number: 3, type: 'float', repeated: rep },
  { name: 'bool_false_true', number: 5, type: 'bool', repeated: rep },
  { name: 'data_type', number: 4, type: DataTypeEnum },
]);
const SeqControlInput = message('ModelSequenceBatching.ControlInput', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'control', number: 2, type: SeqControl, repeated: rep },
]);
const SeqInitialState = message('ModelSequenceBatching.InitialState', [
  { name: 'data_type', number: 1, type: DataTypeEnum },
  { name: 'dims', number: 2, type: 'int64', repeated: rep },
  { name: 'zero_data', number: 3, type: 'bool', oneof: 'state_data' },
  { name: 'data_file', number: 4, type: 'string', oneof: 'state_data' },
  { name: 'name', number: 5, type: 'string' },
]);
const SeqState = message('ModelSequenceBatching.State', [
  { name: 'input_name', number: 1, type: 'string' },
  { name: 'output_name', number: 2, type: 'string' },
  { name: 'data_type', number: 3, type: DataTypeEnum },
  { name: 'dims', number: 4, type: 'int64', repeated: rep },
  { name: 'initial_state', number: 5, type: SeqInitialState, repeated: rep },
  { name: 'use_same_buffer_for_input_output', number: 6, type: 'bool' },
  { name: 'use_growable_memory', number: 7, type: 'bool' },
]);
const StrategyDirect = message('ModelSequenceBatching.StrategyDirect', [
  { name: 'max_queue_delay_microseconds', number: 1, type: 'uint64' },
  { name: 'minimum_slot_utilization', number: 2, type: 'float' },
]);
const StrategyOldest = message('ModelSequenceBatching.StrategyOldest', [
  { name: 'max_candidate_sequences', number: 1, type: 'int32' },
  { name: 'preferred_batch_size', number: 2, type: 'int32', repeated: rep },
  { name: 'max_queue_delay_microseconds', number: 3, type: 'uint64' },
  { name: 'preserve_ordering', number: 4, type: 'bool' },
]);
export const ModelSequenceBatchingDesc = message('ModelSequenceBatching', [
  { name: 'direct', number: 3, type: StrategyDirect, oneof: 'strategy_choice' },
  { name: 'oldest', number: 4, type: StrategyOldest, oneof: 'strategy_choice' },
  { name: 'max_sequence_idle_microseconds', number: 1, type: 'uint64' },
  { name: 'control_input', number: 2, type: SeqControlInput, repeated: rep },
  { name: 'state', number: 5, type: SeqState, repeated: rep },
  { name: 'iterative_sequence', number: 6, type: 'bool' },
]);
const EnsembleStep = message('ModelEnsembling.Step', [
  { name: 'model_name', number: 1, type: 'string' },
  { name: 'model_version', number: 2, type: 'int64' },
  { name: 'input_map', number: 3, type: 'string', mapKey: 'string' },
  { name: 'output_map', number: 4, type: 'string', mapKey: 'string' },
  { name: 'model_namespace', number: 5, type: 'string' },
]);
export const ModelEnsemblingDesc = message('ModelEnsembling', [
  { name: 'step', number: 1, type: EnsembleStep, repeated: rep },
  // Field 2 was named `max_inflight_responses` in earlier protos; both names are accepted.
  { name: 'max_inflight_requests', number: 2, type: 'uint32', aliases: ['max_inflight_responses'] },
]);
const ModelParameter = message('ModelParameter', [{ name: 'string_value', number: 1, type: 'string' }]);
const WarmupInput = message('ModelWarmup.Input', [
  { name: 'data_type', number: 1, type: DataTypeEnum },
  { name: 'dims', number: 2, type: 'int64', repeated: rep },
  { name: 'zero_data', number: 3, type: 'bool', oneof: 'input_data_type' },
  { name: 'random_data', number: 4, type: 'bool', oneof: 'input_data_type' },
  { name: 'input_data_file', number: 5, type: 'string', oneof: 'input_data_type' },
]);
const ModelWarmup = message('ModelWarmup', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'batch_size', number: 2, type: 'uint32' },
  { name: 'inputs', number: 3, type: WarmupInput, mapKey: 'string' },
  { name: 'count', number: 4, type: 'uint32' },
]);
const ModelOperations = message('ModelOperations', [{ name: 'op_library_filename', number: 1, type: 'string', repeated: rep }]);
const ModelTransactionPolicy = message('ModelTransactionPolicy', [{ name: 'decoupled', number: 1, type: 'bool' }]);
const RepositoryAgent = message('ModelRepositoryAgents.Agent', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'parameters', number: 2, type: 'string', mapKey: 'string' },
]);
const ModelRepositoryAgents = message('ModelRepositoryAgents', [{ name: 'agents', number: 1, type: RepositoryAgent, repeated: rep }]);
const ModelResponseCache = message('ModelResponseCache', [{ name: 'enable', number: 1, type: 'bool' }]);
const MetricIdentifier = message('ModelMetrics.MetricControl.MetricIdentifier', [{ name: 'family', number: 1, type: 'string' }]);
const HistogramOptions = message('ModelMetrics.MetricControl.HistogramOptions', [{ name: 'buckets', number: 1, type: 'double', repeated: rep }]);
const MetricControl = message('ModelMetrics.MetricControl', [
  { name: 'metric_identifier', number: 1, type: MetricIdentifier },
  { name: 'histogram_options', number: 2, type: HistogramOptions, oneof: 'metric_options' },
]);
const ModelMetrics = message('ModelMetrics', [{ name: 'metric_control', number: 1, type: MetricControl, repeated: rep }]);

/** `inference.ModelConfig` (spec §5.3). */
export const ModelConfigDesc = message('ModelConfig', [
  { name: 'name', number: 1, type: 'string' },
  { name: 'platform', number: 2, type: 'string' },
  { name: 'backend', number: 17, type: 'string' },
  { name: 'runtime', number: 25, type: 'string' },
  { name: 'version_policy', number: 3, type: ModelVersionPolicy },
  { name: 'max_batch_size', number: 4, type: 'int32' },
  { name: 'input', number: 5, type: ModelInputDesc, repeated: rep },
  { name: 'output', number: 6, type: ModelOutputDesc, repeated: rep },
  { name: 'batch_input', number: 20, type: BatchInput, repeated: rep },
  { name: 'batch_output', number: 21, type: BatchOutput, repeated: rep },
  { name: 'optimization', number: 12, type: ModelOptimizationPolicyDesc },
  { name: 'dynamic_batching', number: 11, type: ModelDynamicBatchingDesc, oneof: 'scheduling_choice' },
  { name: 'sequence_batching', number: 13, type: ModelSequenceBatchingDesc, oneof: 'scheduling_choice' },
  { name: 'ensemble_scheduling', number: 15, type: ModelEnsemblingDesc, oneof: 'scheduling_choice' },
  { name: 'instance_group', number: 7, type: ModelInstanceGroupDesc, repeated: rep },
  { name: 'default_model_filename', number: 8, type: 'string' },
  { name: 'cc_model_filenames', number: 9, type: 'string', mapKey: 'string' },
  { name: 'metric_tags', number: 10, type: 'string', mapKey: 'string' },
  { name: 'parameters', number: 14, type: ModelParameter, mapKey: 'string' },
  { name: 'model_warmup', number: 16, type: ModelWarmup, repeated: rep },
  { name: 'model_operations', number: 18, type: ModelOperations },
  { name: 'model_transaction_policy', number: 19, type: ModelTransactionPolicy },
  { name: 'model_repository_agents', number: 23, type: ModelRepositoryAgents },
  { name: 'response_cache', number: 24, type: ModelResponseCache },
  { name: 'model_metrics', number: 26, type: ModelMetrics },
]);

/** Every message type reachable from ModelConfig (used by tests and generators). */
export function allMessages(root: MessageDesc = ModelConfigDesc): MessageDesc[] {
  const seen = new Set<MessageDesc>();
  const walk = (m: MessageDesc): void => {
    if (seen.has(m)) return;
    seen.add(m);
    for (const f of m.fields) if (f.type.kind === 'message') walk(f.type.messageType);
  };
  walk(root);
  return [...seen];
}

/** The other members of `field`'s oneof (empty if it is in none). */
export function oneofSiblings(msg: MessageDesc, field: FieldDesc): FieldDesc[] {
  if (field.oneof === undefined) return [];
  return msg.fields.filter((f) => f.oneof === field.oneof && f !== field);
}

/** Human name of a field's type, for error messages (e.g. `int64`, `inference.DataType`, `ModelInput`). */
export function typeName(t: ValueType): string {
  if (t.kind === 'enum') return t.enumType.name;
  if (t.kind === 'message') return t.messageType.name;
  return t.kind;
}

/**
 * Set a map entry as an own property (safe for keys such as `__proto__`, which a plain
 * assignment would treat as the prototype).
 */
export function setMapEntry(map: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
}
