/**
 * The allowlist of a tenant's model config (DESIGN "Multi-tenancy": every config field a tenant
 * sends is allowlisted with a bound). {@link CONFIG_RULES} has one rule for every field of
 * `inference.ModelConfig` (spec §5.3; `config/schema.ts`), by field path: a field is either
 *
 * - refused (operator-only: native libraries, GPU/CUDA tuning, placement, repository agents,
 *   metrics) — a tenant's config may carry it only at its default value;
 * - a number within an explicit range, whose upper end is a per-tenant {@link TenantConfigBounds}
 *   entry or a fixed number;
 * - a string of at most `max_name_bytes` / `max_string_bytes` / a named bound of UTF-8 bytes;
 * - a list or map of at most a bounded number of entries (each entry checked by the same rule);
 * - a shape (`dims`): at most `max_dims` entries, each in [-1, max_tensor_elements], whose fixed
 *   dims multiply to at most `max_tensor_elements`;
 * - a flag or an enum (nothing to bound), or a count the tenant's quotas bound
 *   (`instance_group.count`: `max_instances_per_model`, 403).
 *
 * A field without a rule (a new proto field nobody classified) is refused. The check runs on the
 * raw config override before an upload is written and on the normalised config before anything is
 * allocated; a violation is INVALID_ARG (HTTP 400) naming the field path and the bound.
 */
import type { ModelConfig } from '../contract/model-config.js';
import { ModelConfigDesc, type FieldDesc, type MessageDesc } from '../config/schema.js';
import type { TenantConfigBounds, TenantQuotas } from './types.js';
import * as errors from './tenancy.errors.js';

/** An upper bound: a tenant's config bound by name, or a fixed number (with what it stands for). */
export type Bound = keyof TenantConfigBounds | { readonly fixed: number; readonly why: string };

/** How one config field is held (see the module comment). At most one of the kinds per rule. */
export interface FieldRule {
  /** Operator-only: refused unless at its default; the text says why. */
  readonly refuse?: string;
  /** A number (each element of a repeated number): smallest allowed value (default 0). */
  readonly min?: number;
  /** A number: largest allowed value. Every numeric field has one (or `quota` or `refuse`). */
  readonly max?: Bound;
  /** A string (each element of a repeated string): most UTF-8 bytes (default `max_string_bytes`). */
  readonly bytes?: Bound;
  /** A repeated field or map: most entries. Every repeated field has one (or `dims`). */
  readonly count?: Bound;
  /** A shape: rank, each dim and the product bounded (see the module comment). */
  readonly dims?: true;
  /** Held by this tenant quota instead (checked with the quotas, 403). */
  readonly quota?: keyof TenantQuotas;
}

const INT32_MAX = 2 ** 31 - 1;
/** A number that allocates nothing and means nothing beyond int32 (a version, a threshold, a flag-like int). */
const INT32: Bound = { fixed: INT32_MAX, why: 'int32 range' };
const NAME: FieldRule = { bytes: 'max_name_bytes' };
const STRING: FieldRule = { bytes: 'max_string_bytes' };
const FREE: FieldRule = {};
const DIMS: FieldRule = { dims: true };
const QUEUE_POLICY = (p: string): Record<string, FieldRule> => ({
  [p]: FREE,
  [`${p}.timeout_action`]: FREE,
  [`${p}.default_timeout_microseconds`]: { max: 'max_timeout_microseconds' },
  [`${p}.allow_timeout_override`]: FREE,
  [`${p}.max_queue_size`]: { max: 'max_queue_size' },
});

/**
 * The rule of every ModelConfig field, by path (field names joined by `.`; list indices and map
 * keys left out). The table in docs/tenancy.md "Config bounds" is this table.
 */
export const CONFIG_RULES: Readonly<Record<string, FieldRule>> = Object.freeze({
  name: NAME,
  platform: STRING,
  // The backend allowlist (wasm; onnxruntime where allowed) and the `runtime` refusal are the
  // server's upload rules (lifecycle/admission.ts); here only their length.
  backend: STRING,
  runtime: STRING,
  version_policy: FREE,
  'version_policy.latest': FREE,
  'version_policy.latest.num_versions': { max: 'max_list_entries' },
  'version_policy.all': FREE,
  'version_policy.specific': FREE,
  'version_policy.specific.versions': { count: 'max_list_entries', max: INT32 },
  max_batch_size: { max: 'max_batch_size' },
  input: { count: 'max_inputs' },
  'input.name': NAME,
  'input.data_type': FREE,
  'input.format': FREE,
  'input.dims': DIMS,
  'input.reshape': FREE,
  'input.reshape.shape': DIMS,
  'input.is_shape_tensor': FREE,
  'input.allow_ragged_batch': FREE,
  'input.optional': FREE,
  'input.is_non_linear_format_io': FREE,
  output: { count: 'max_outputs' },
  'output.name': NAME,
  'output.data_type': FREE,
  'output.dims': DIMS,
  'output.reshape': FREE,
  'output.reshape.shape': DIMS,
  'output.label_filename': STRING,
  'output.is_shape_tensor': FREE,
  'output.is_non_linear_format_io': FREE,
  batch_input: { count: 'max_inputs' },
  'batch_input.kind': FREE,
  'batch_input.target_name': { count: 'max_list_entries', bytes: 'max_name_bytes' },
  'batch_input.data_type': FREE,
  'batch_input.source_input': { count: 'max_list_entries', bytes: 'max_name_bytes' },
  batch_output: { count: 'max_outputs' },
  'batch_output.target_name': { count: 'max_list_entries', bytes: 'max_name_bytes' },
  'batch_output.kind': FREE,
  'batch_output.source_input': { count: 'max_list_entries', bytes: 'max_name_bytes' },
  optimization: FREE,
  'optimization.graph': FREE,
  'optimization.graph.level': { min: -1, max: INT32 },
  'optimization.priority': { refuse: "thread priority is the operator's" },
  'optimization.cuda': { refuse: "CUDA graph settings are the operator's" },
  'optimization.execution_accelerators': { refuse: "execution accelerators are the operator's" },
  'optimization.input_pinned_memory': FREE,
  'optimization.input_pinned_memory.enable': FREE,
  'optimization.output_pinned_memory': FREE,
  'optimization.output_pinned_memory.enable': FREE,
  'optimization.gather_kernel_buffer_threshold': { max: INT32 },
  'optimization.eager_batching': FREE,
  dynamic_batching: FREE,
  'dynamic_batching.preferred_batch_size': { count: 'max_preferred_batch_sizes', max: 'max_batch_size' },
  'dynamic_batching.max_queue_delay_microseconds': { max: 'max_queue_delay_microseconds' },
  'dynamic_batching.preserve_ordering': FREE,
  'dynamic_batching.priority_levels': { max: 'max_priority_levels' },
  'dynamic_batching.default_priority_level': { max: 'max_priority_levels' },
  ...QUEUE_POLICY('dynamic_batching.default_queue_policy'),
  ...QUEUE_POLICY('dynamic_batching.priority_queue_policy'),
  'dynamic_batching.priority_queue_policy': { count: 'max_priority_levels' },
  sequence_batching: FREE,
  'sequence_batching.direct': FREE,
  'sequence_batching.direct.max_queue_delay_microseconds': { max: 'max_queue_delay_microseconds' },
  'sequence_batching.direct.minimum_slot_utilization': { max: { fixed: 1, why: 'a fraction' } },
  'sequence_batching.oldest': FREE,
  'sequence_batching.oldest.max_candidate_sequences': { max: 'max_candidate_sequences' },
  'sequence_batching.oldest.preferred_batch_size': { count: 'max_preferred_batch_sizes', max: 'max_batch_size' },
  'sequence_batching.oldest.max_queue_delay_microseconds': { max: 'max_queue_delay_microseconds' },
  'sequence_batching.oldest.preserve_ordering': FREE,
  'sequence_batching.max_sequence_idle_microseconds': { max: 'max_sequence_idle_microseconds' },
  'sequence_batching.control_input': { count: 'max_list_entries' },
  'sequence_batching.control_input.name': NAME,
  'sequence_batching.control_input.control': { count: 'max_list_entries' },
  'sequence_batching.control_input.control.kind': FREE,
  'sequence_batching.control_input.control.int32_false_true': { count: { fixed: 2, why: '[false, true]' }, min: -INT32_MAX - 1, max: INT32 },
  'sequence_batching.control_input.control.fp32_false_true': {
    count: { fixed: 2, why: '[false, true]' },
    min: -Number.MAX_VALUE,
    max: { fixed: Number.MAX_VALUE, why: 'finite' },
  },
  'sequence_batching.control_input.control.bool_false_true': { count: { fixed: 2, why: '[false, true]' } },
  'sequence_batching.control_input.control.data_type': FREE,
  'sequence_batching.state': { count: 'max_list_entries' },
  'sequence_batching.state.input_name': NAME,
  'sequence_batching.state.output_name': NAME,
  'sequence_batching.state.data_type': FREE,
  'sequence_batching.state.dims': DIMS,
  'sequence_batching.state.initial_state': { count: 'max_list_entries' },
  'sequence_batching.state.initial_state.data_type': FREE,
  'sequence_batching.state.initial_state.dims': DIMS,
  'sequence_batching.state.initial_state.zero_data': FREE,
  'sequence_batching.state.initial_state.data_file': STRING,
  'sequence_batching.state.initial_state.name': NAME,
  'sequence_batching.state.use_same_buffer_for_input_output': FREE,
  'sequence_batching.state.use_growable_memory': FREE,
  'sequence_batching.iterative_sequence': FREE,
  ensemble_scheduling: FREE,
  'ensemble_scheduling.step': { count: 'max_ensemble_steps' },
  'ensemble_scheduling.step.model_name': NAME,
  'ensemble_scheduling.step.model_version': { min: -1, max: INT32 },
  'ensemble_scheduling.step.input_map': { count: 'max_inputs', bytes: 'max_name_bytes' },
  'ensemble_scheduling.step.output_map': { count: 'max_outputs', bytes: 'max_name_bytes' },
  'ensemble_scheduling.step.model_namespace': { refuse: "steps resolve in the ensemble owner's namespace" },
  'ensemble_scheduling.max_inflight_requests': { max: INT32 },
  instance_group: { count: 'max_list_entries' },
  'instance_group.name': NAME,
  'instance_group.kind': FREE,
  'instance_group.count': { quota: 'max_instances_per_model' },
  'instance_group.rate_limiter': { refuse: "rate-limiter resources are the operator's" },
  'instance_group.gpus': { count: 'max_list_entries', max: INT32 },
  'instance_group.secondary_devices': { refuse: "device placement is the operator's" },
  'instance_group.profile': { refuse: "TensorRT profiles are the operator's" },
  'instance_group.passive': FREE,
  'instance_group.host_policy': { refuse: "host policies are the operator's" },
  default_model_filename: STRING,
  cc_model_filenames: { count: 'max_list_entries', bytes: 'max_string_bytes' },
  metric_tags: { refuse: "metrics are the operator's" },
  parameters: { count: 'max_parameters' },
  'parameters.string_value': { bytes: 'max_parameter_value_bytes' },
  model_warmup: { count: 'max_list_entries' },
  'model_warmup.name': NAME,
  'model_warmup.batch_size': { max: 'max_batch_size' },
  'model_warmup.inputs': { count: 'max_inputs' },
  'model_warmup.inputs.data_type': FREE,
  'model_warmup.inputs.dims': DIMS,
  'model_warmup.inputs.zero_data': FREE,
  'model_warmup.inputs.random_data': FREE,
  'model_warmup.inputs.input_data_file': STRING,
  'model_warmup.count': { max: 'max_warmup_runs' },
  model_operations: { refuse: 'custom op libraries are native code' },
  model_transaction_policy: FREE,
  'model_transaction_policy.decoupled': FREE,
  model_repository_agents: { refuse: "repository agents are the operator's" },
  response_cache: FREE,
  'response_cache.enable': FREE,
  model_metrics: { refuse: "metrics are the operator's" },
});

/** A field at its default (unset): the only value a refused field may have. */
function isDefault(f: FieldDesc, v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (f.mapKey !== undefined) return typeof v === 'object' && Object.keys(v as object).length === 0;
  if (f.repeated) return Array.isArray(v) && v.length === 0;
  switch (f.type.kind) {
    case 'message':
      return false;
    case 'enum':
      return v === f.type.enumType.values[0]![0] || v === 0;
    case 'string':
      return v === '';
    case 'bool':
      return v === false;
    default:
      return v === 0;
  }
}

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Shows a map key in a path: `parameters["k"]` (keys are bounded before they are shown). */
const keyPath = (path: string, key: string): string => `${path}[${JSON.stringify(key)}]`;

/** Holds one config to one tenant's bounds; throws on the first violation. */
class Checker {
  constructor(
    private readonly model: string,
    private readonly bounds: Readonly<TenantConfigBounds>,
  ) {}

  private limit(b: Bound): { value: number; source: string } {
    return typeof b === 'string' ? { value: this.bounds[b], source: `config bound ${b}` } : { value: b.fixed, source: b.why };
  }

  /** `path` over bound `b`: `amount` its value, or a phrase ("has 3 entries"). */
  private over(path: string, amount: number | string, b: Bound): never {
    const { value, source } = this.limit(b);
    throw errors.configOverBound(this.model, path, amount, value, source, typeof b === 'string');
  }

  message(desc: MessageDesc, obj: Record<string, unknown>, rulePath: string, path: string): void {
    for (const f of desc.fields) {
      const v = obj[f.name];
      if (v === undefined) continue;
      const rp = rulePath ? `${rulePath}.${f.name}` : f.name;
      const p = path ? `${path}.${f.name}` : f.name;
      const rule = CONFIG_RULES[rp];
      if (rule === undefined || rule.refuse !== undefined) {
        if (!isDefault(f, v)) throw errors.configFieldRefused(this.model, p, rule?.refuse ?? 'not on the allowlist');
        continue;
      }
      if (rule.quota !== undefined) continue;
      if (f.mapKey !== undefined) {
        const entries = Object.entries(v as Record<string, unknown>);
        if (rule.count !== undefined && entries.length > this.limit(rule.count).value) this.over(p, `has ${entries.length} entries`, rule.count);
        for (const [k, val] of entries) {
          const kb = utf8Bytes(k);
          if (kb > this.bounds.max_name_bytes) this.over(p, `has a key of ${kb} bytes`, 'max_name_bytes');
          this.value(f, rule, val, rp, keyPath(p, k));
        }
      } else if (f.repeated) {
        const list = v as unknown[];
        if (rule.dims) {
          this.dims(list, p);
          continue;
        }
        if (rule.count !== undefined && list.length > this.limit(rule.count).value) this.over(p, `has ${list.length} entries`, rule.count);
        list.forEach((e, i) => this.value(f, rule, e, rp, `${p}[${i}]`));
      } else {
        this.value(f, rule, v, rp, p);
      }
    }
  }

  private value(f: FieldDesc, rule: FieldRule, v: unknown, rp: string, p: string): void {
    switch (f.type.kind) {
      case 'message':
        this.message(f.type.messageType, v as Record<string, unknown>, rp, p);
        return;
      case 'enum':
      case 'bool':
        return;
      case 'string': {
        const b = rule.bytes ?? 'max_string_bytes';
        const n = utf8Bytes(String(v));
        if (n > this.limit(b).value) this.over(p, `has ${n} bytes`, b);
        return;
      }
      default: {
        const n = Number(v);
        const min = rule.min ?? 0;
        if (!Number.isFinite(n)) throw errors.configNumberUnbounded(this.model, p, false);
        if (n < min) throw errors.configBelowMinimum(this.model, p, n, min);
        if (rule.max === undefined) throw errors.configNumberUnbounded(this.model, p, true);
        if (n > this.limit(rule.max).value) this.over(p, n, rule.max);
      }
    }
  }

  /** Rank, each dim in [-1, max_tensor_elements], and the product of the fixed dims. */
  private dims(dims: readonly unknown[], p: string): void {
    if (dims.length > this.bounds.max_dims) this.over(p, `has ${dims.length} dims`, 'max_dims');
    let product = 1;
    dims.forEach((d, i) => {
      const n = Number(d);
      if (!Number.isInteger(n) || n < -1) throw errors.configBelowMinimum(this.model, `${p}[${i}]`, String(d), -1);
      if (n > this.bounds.max_tensor_elements) this.over(`${p}[${i}]`, n, 'max_tensor_elements');
      if (n > 0) product *= n;
    });
    if (product > this.bounds.max_tensor_elements) this.over(p, `has ${product} elements`, 'max_tensor_elements');
  }

  /** Across fields: the warmup runs the config asks for. */
  warmup(config: Partial<ModelConfig>): void {
    let runs = 0;
    for (const w of config.model_warmup ?? []) runs += Math.max(1, Number(w.count) || 0);
    if (runs > this.bounds.max_warmup_runs) this.over('model_warmup', `asks for ${runs} runs`, 'max_warmup_runs');
  }
}

/**
 * Holds a tenant's model config to the allowlist and the tenant's bounds (DESIGN
 * "Multi-tenancy"). Works on a normalised config and on a raw one (unset fields are skipped).
 * @param model the model's name, for the message
 * @throws TritonError INVALID_ARG `model '<m>': <field path> <value> exceeds this tenant's bound
 *   <n> (config bound <name>)`, or `<field path> may not be set in a tenant's model config (<why>)`
 */
export function checkTenantModelConfig(model: string, config: Partial<ModelConfig>, bounds: Readonly<TenantConfigBounds>): void {
  const c = new Checker(model, bounds);
  c.message(ModelConfigDesc, config as Record<string, unknown>, '', '');
  c.warmup(config);
}
