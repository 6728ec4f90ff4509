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
  /** Sustained inference request rate (token-bucket refill), requests per second; may be fractional. */
  requests_per_second: number;
  /** Token-bucket capacity: requests admitted in a burst above the sustained rate. Count, at least 1. */
  burst: number;
  /** Inference requests of the tenant queued plus executing at once; excess is rejected. Count. */
  max_inflight: number;
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
  requests_per_second: 100,
  burst: 200,
  max_inflight: 64,
});

/** Quota names, in the file's order. */
export const QUOTA_KEYS: readonly (keyof TenantQuotas)[] = Object.freeze(
  Object.keys(DEFAULT_TENANT_QUOTAS) as (keyof TenantQuotas)[],
);

/** Quotas that may be fractional (the others must be integers). */
export const FRACTIONAL_QUOTAS: ReadonlySet<keyof TenantQuotas> = new Set(['requests_per_second']);

/** Smallest allowed value per quota (0 unless listed). */
export const QUOTA_MINIMUMS: Readonly<Partial<Record<keyof TenantQuotas, number>>> = Object.freeze({
  max_execute_ms: 1,
  burst: 1,
});

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
}

/** Default fair-share weight. */
export const DEFAULT_WEIGHT = 1;
/** Largest accepted weight (keeps share arithmetic well inside float precision). */
export const MAX_WEIGHT = 1_000_000;

/** A tenant id, as a regular-expression fragment: 1–64 of `[A-Za-z0-9_-]`, not starting with `-` (nor `.`, which the set excludes). */
export const TENANT_ID_PATTERN = '[A-Za-z0-9_][A-Za-z0-9_-]{0,63}';
/** Valid tenant id (see {@link TENANT_ID_PATTERN}); a tenant's namespace and its directory name. */
export const TENANT_ID_RE = new RegExp(`^${TENANT_ID_PATTERN}$`);
