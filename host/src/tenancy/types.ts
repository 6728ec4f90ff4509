/**
 * The tenants file's data model (DESIGN "Multi-tenancy"): who may call the server, with which
 * role, and under which quotas. Field names are the file's (snake_case), so a `TenantConfig` is a
 * file entry with every default filled in.
 */

/** `admin`: the operator's role, namespace `''`, sees everything. `tenant`: its own namespace only. */
export type TenantRole = 'admin' | 'tenant';

/**
 * Per-tenant limits. Every field is a non-negative finite number; all are integers except
 * `requests_per_second`. A quota of 0 means "none allowed" (e.g. `max_models: 0` forbids uploads),
 * never "unlimited": set a large number for that. Quotas apply to every entry, admins included.
 */
export interface TenantQuotas {
  /** Models (distinct names) the tenant may have in its namespace at once, loaded or stored. Count. */
  max_models: number;
  /** Instances of one model (the sum of its `instance_group[].count`). Count. */
  max_instances_per_model: number;
  /** Instances over all of the tenant's models together. Count. */
  max_instances_total: number;
  /** Memory one sandboxed instance may grow to (wasm linear memory / arena), bytes. */
  max_memory_per_instance_bytes: number;
  /** Memory of all the tenant's instances together, bytes. */
  max_memory_total_bytes: number;
  /** Wall-clock deadline of one execute call, milliseconds; past it the instance is stopped. At least 1. */
  max_execute_ms: number;
  /**
   * Log output one model instance may emit per execute call, bytes; beyond it lines are dropped
   * (the enforcer logs one truncation notice).
   */
  max_log_bytes: number;
  /** Decoded size of all file overrides of one load request together, bytes. */
  max_upload_bytes: number;
  /**
   * Bytes of load requests per minute (HTTP: request bodies as sent, refused from their
   * `Content-Length` before they are read; gRPC: the file overrides), so that a tenant's uploads
   * cannot keep the server parsing, hashing and writing (tenancy/request-rate.ts). Bytes.
   */
  upload_bytes_per_minute: number;
  /** Sustained inference request rate (token-bucket refill), requests per second; may be fractional. */
  requests_per_second: number;
  /** Token-bucket capacity: requests admitted in a burst above the sustained rate. Count, at least 1. */
  burst: number;
  /** Inference requests of the tenant queued plus executing at once; excess is rejected. Count. */
  max_inflight: number;
  /**
   * The tenant's share of the response cache (`--cache-config local,size=N`), bytes: its cached
   * responses form their own LRU of at most this many bytes (and at most N), which only its own
   * insertions evict. 0 = its responses are never cached.
   */
  max_cache_bytes: number;
  /**
   * Sandbox (wasm) executions of the tenant running at once, server-wide (scheduler/tenant-arbiter.ts;
   * never more than half of `--sandbox-execution-slots`). Count, at least 1.
   */
  max_concurrent_executions: number;
  /**
   * Composing inferences one ensemble request may cause in total, nested ensembles and every
   * response of a decoupled step included (ensemble/budget.ts; at most `--ensemble-max-inferences`). Count.
   */
  max_ensemble_inferences: number;
  /** Ensembles nested in one request (a top-level ensemble is depth 1; at most `--ensemble-max-depth`). Count, at least 1. */
  max_ensemble_depth: number;
  /** Composing inferences of one ensemble request in flight at once (at most `--ensemble-max-fanout`). Count, at least 1. */
  max_ensemble_fanout: number;
  /**
   * Tokens one choice of an OpenAI-compatible request may ask for (`max_tokens` /
   * `max_completion_tokens`, frontend/openai/); above it the request is refused with 400. Count, at least 1.
   */
  max_tokens_per_request: number;
}

const MiB = 1024 * 1024;

/** Quotas of an entry that names none (or leaves some out): sized for one small sandboxed model zoo. */
export const DEFAULT_TENANT_QUOTAS: Readonly<TenantQuotas> = Object.freeze({
  max_models: 16,
  max_instances_per_model: 4,
  max_instances_total: 16,
  max_memory_per_instance_bytes: 256 * MiB,
  max_memory_total_bytes: 1024 * MiB,
  max_execute_ms: 10_000,
  max_log_bytes: 64 * 1024,
  max_upload_bytes: 64 * MiB,
  upload_bytes_per_minute: 256 * MiB,
  requests_per_second: 100,
  burst: 200,
  max_inflight: 64,
  max_cache_bytes: 64 * MiB,
  max_concurrent_executions: 4,
  max_ensemble_inferences: 256,
  max_ensemble_depth: 8,
  max_ensemble_fanout: 64,
  max_tokens_per_request: 4096,
});

/** Quota names, in the file's order. */
export const QUOTA_KEYS: readonly (keyof TenantQuotas)[] = Object.freeze(Object.keys(DEFAULT_TENANT_QUOTAS) as (keyof TenantQuotas)[]);

/** Quotas that may be fractional (the others must be integers). */
export const FRACTIONAL_QUOTAS: ReadonlySet<keyof TenantQuotas> = new Set(['requests_per_second']);

/** Smallest allowed value per quota (0 unless listed). */
export const QUOTA_MINIMUMS: Readonly<Partial<Record<keyof TenantQuotas, number>>> = Object.freeze({
  max_execute_ms: 1,
  burst: 1,
  max_concurrent_executions: 1,
  max_ensemble_depth: 1,
  max_ensemble_fanout: 1,
  max_tokens_per_request: 1,
});

/**
 * Bounds on a tenant's model configs (DESIGN "Multi-tenancy": every config field a tenant sends is
 * allowlisted with a bound). Every field is a non-negative safe integer; a config over a bound is
 * refused at load with INVALID_ARG naming the field path and the bound. The table of which config
 * field each bound covers is `host/src/tenancy/config-allowlist.ts` (and docs/tenancy.md).
 */
export interface TenantConfigBounds {
  /** `dynamic_batching.priority_levels` (and the size of `priority_queue_policy`). Count. */
  max_priority_levels: number;
  /** `max_queue_size` of every queue policy. Requests (0, "unlimited", stays allowed: `max_inflight` still caps). */
  max_queue_size: number;
  /** `default_timeout_microseconds` of every queue policy, µs. */
  max_timeout_microseconds: number;
  /** `max_queue_delay_microseconds` of dynamic_batching and sequence_batching.direct/oldest, µs. */
  max_queue_delay_microseconds: number;
  /** `sequence_batching.max_sequence_idle_microseconds`, µs. */
  max_sequence_idle_microseconds: number;
  /** `sequence_batching.oldest.max_candidate_sequences`. Count (slots per instance). */
  max_candidate_sequences: number;
  /** `max_batch_size` (also the slots per instance of a direct sequence batcher), and warmup `batch_size`. */
  max_batch_size: number;
  /** Entries of each `preferred_batch_size` list. Count. */
  max_preferred_batch_sizes: number;
  /** `input` entries (also batch_input, warmup inputs, ensemble input_map). Count. */
  max_inputs: number;
  /** `output` entries (also batch_output, ensemble output_map). Count. */
  max_outputs: number;
  /** Rank of every `dims` / `reshape.shape` (tensors, states, warmup). Count. */
  max_dims: number;
  /** Each dim, and the product of a shape's fixed dims (-1 counts as 1). Elements. */
  max_tensor_elements: number;
  /** `ensemble_scheduling.step` entries. Count. */
  max_ensemble_steps: number;
  /** `parameters` entries. Count. */
  max_parameters: number;
  /** Each `parameters` value (`string_value`), UTF-8 bytes. */
  max_parameter_value_bytes: number;
  /** Every name (model, tensors, groups, steps, map keys, parameter keys), UTF-8 bytes. */
  max_name_bytes: number;
  /** Every other string (file names, platform, backend), UTF-8 bytes. */
  max_string_bytes: number;
  /** Every other list or map (instance groups, control inputs, states, versions, ...). Entries. */
  max_list_entries: number;
  /** `model_warmup`: the sum over its entries of `max(1, count)`. Runs. */
  max_warmup_runs: number;
}

/** Bounds of an entry that names none (or leaves some out): ample for ordinary models, far below harm. */
export const DEFAULT_CONFIG_BOUNDS: Readonly<TenantConfigBounds> = Object.freeze({
  max_priority_levels: 16,
  max_queue_size: 4096,
  max_timeout_microseconds: 60_000_000,
  max_queue_delay_microseconds: 1_000_000,
  max_sequence_idle_microseconds: 60_000_000,
  max_candidate_sequences: 64,
  max_batch_size: 256,
  max_preferred_batch_sizes: 16,
  max_inputs: 64,
  max_outputs: 64,
  max_dims: 16,
  max_tensor_elements: 16 * MiB,
  max_ensemble_steps: 16,
  max_parameters: 32,
  max_parameter_value_bytes: 4096,
  max_name_bytes: 128,
  max_string_bytes: 1024,
  max_list_entries: 64,
  max_warmup_runs: 16,
});

/** Config bound names, in the file's order. */
export const CONFIG_BOUND_KEYS: readonly (keyof TenantConfigBounds)[] = Object.freeze(Object.keys(DEFAULT_CONFIG_BOUNDS) as (keyof TenantConfigBounds)[]);

/** One tenant, as parsed from the tenants file with defaults filled in. Immutable once parsed. */
export interface TenantConfig {
  /** Tenant id = its namespace (admins' principals use namespace `''`). `[A-Za-z0-9_-]{1,64}`, not starting with `-`. */
  readonly id: string;
  readonly role: TenantRole;
  /**
   * Hashes of the tenant's bearer tokens: `sha256:` + 64 lowercase hex digits (SHA-256 of the
   * token's UTF-8 bytes). Empty = the tenant authenticates by JWT only.
   */
  readonly tokens: readonly string[];
  /** Fair-share weight when tenants contend for the scheduler: relative, > 0, default 1. */
  readonly weight: number;
  /** Names of operator models (namespace `''`) this tenant may see and infer. */
  readonly shared_models: readonly string[];
  /** May upload ONNX Runtime models besides wasm (default false: wasm only). */
  readonly allow_onnx: boolean;
  readonly quotas: Readonly<TenantQuotas>;
  /** Bounds on the fields of the model configs this tenant uploads (see {@link TenantConfigBounds}). */
  readonly config_bounds: Readonly<TenantConfigBounds>;
  /**
   * Creation identity (`warden tenants add` writes 32 random hex digits): the tenant's stored
   * uploads belong to this identity, so a tenant removed and added again under the same id (a new
   * uid) starts with none of the old one's models, even when the server was down in between.
   * Absent (hand-written entries): uploads are tied to the id alone.
   */
  readonly uid?: string;
}

/** Default fair-share weight. */
export const DEFAULT_WEIGHT = 1;
/** Largest accepted weight (keeps share arithmetic well inside float precision). */
export const MAX_WEIGHT = 1_000_000;
