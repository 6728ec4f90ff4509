/**
 * Tenant quotas at load (DESIGN "Multi-tenancy"): before any file of a tenant's model is handed
 * to a backend or any instance exists, its config is held to the tenant's quotas — models,
 * instances per model and in total, memory per instance, execute deadline and log budget. The
 * total memory quota (`max_memory_total_bytes`) bounds what the tenant's live sandboxes hold, at
 * every sandbox start (the tenant's budget in the wasm backend); here a model's one instance
 * must fit in it. Sandboxed (wasm) models get the tenant's limits written into their config parameters
 * (`memory_limit_bytes`, `execute_timeout_ms`, `log_limit_bytes`, each the smaller of what the
 * model asks and what the tenant may have), so the backend enforces them and `/config` shows them.
 * Operator models (namespace '') pass through to the server's own rules. Before the quotas, every
 * field of a tenant's config is held to the allowlist and the tenant's config bounds
 * (`config-allowlist.ts`; INVALID_ARG naming the field and the bound).
 */
import { modelConfigFromJson } from '../config/json.js';
import type { ModelConfig } from '../contract/model-config.js';
import { DEFAULT_WASM_LIMITS, modelLimits, PARAM_LOG, PARAM_MEMORY, PARAM_TIMEOUT, type WasmLimits } from '../backends/wasm/limits.js';
import { instanceCount, requestedInstances, type ModelAdmission, type StoredUsage } from '../contract/admission.js';
import type { ModelKey, ModelOrigin } from '../contract/types.js';
import { checkTenantModelConfig } from './config-allowlist.js';
import type { TenantConfig } from './types.js';
import * as tenancyErrors from './tenancy.errors.js';

/** What a tenant's other models already hold (the model being loaded excluded). */
export interface TenantUsage {
  /** Distinct models in the namespace (loaded or loading). */
  models: number;
  /** Their instances. */
  instances: number;
  /** Their configured sandbox memory (instances × per-instance limit), bytes; not a quota (live sandboxes are budgeted). */
  memoryBytes: number;
}

export interface TenantAdmissionOptions {
  /** The server's own rules (caps, upload backends), applied to every model first. */
  server: ModelAdmission;
  tenants: { get(id: string): TenantConfig | undefined };
  /** Usage of `namespace` by models other than `exclude`. */
  usage(namespace: string, exclude: string): TenantUsage;
  /** The server-wide sandbox caps (tenant limits can only be lower). */
  wasmCaps?: WasmLimits;
}

/** The sandbox memory one instance of `config` may use under `caps`, bytes (0 for non-wasm models). */
export function sandboxMemoryOf(config: ModelConfig, caps: WasmLimits = DEFAULT_WASM_LIMITS): number {
  return config.backend === 'wasm' ? modelLimits(config, caps).memoryBytes : 0;
}

export class TenantAdmission implements ModelAdmission {
  constructor(private readonly opts: TenantAdmissionOptions) {}

  /**
   * @returns the config to load: for a tenant's wasm model, with the tenant's limits in its parameters
   * @throws TritonError from the server's rules; AccessError `forbidden` naming the quota a tenant's model exceeds
   */
  /** Model count and the instance counts the raw config asks for (each group at least 1), before any file is written. */
  precheckUpload(key: ModelKey, configOverride: unknown, stored?: StoredUsage): void {
    if (key.namespace === '') return;
    const tenant = this.opts.tenants.get(key.namespace);
    if (!tenant) throw tenancyErrors.tenantUnknown(key.namespace);
    const q = tenant.quotas;
    const here = this.opts.usage(key.namespace, key.name);
    // With shared uploads, model and instance counts hold across replicas: the stored models count.
    const used = { ...here, models: Math.max(here.models, stored?.models ?? 0), instances: Math.max(here.instances, stored?.instances ?? 0) };
    // The allowlist with the tenant's config bounds, on the override as sent (unset fields are
    // skipped; one that does not parse is reported by the load itself).
    if (configOverride !== undefined) {
      let raw: Partial<ModelConfig> | undefined;
      try {
        raw = modelConfigFromJson(configOverride);
      } catch {
        raw = undefined;
      }
      if (raw) checkTenantModelConfig(key.name, raw, tenant.config_bounds);
    }
    if (used.models + 1 > q.max_models) {
      throw tenancyErrors.overQuota(key.name, tenant.id, used.models + 1, 'models', q.max_models, 'max_models');
    }
    const groups = (configOverride as { instance_group?: unknown } | null)?.instance_group;
    if (!Array.isArray(groups) && stored === undefined) return;
    const n = requestedInstances(configOverride);
    if (n > q.max_instances_per_model) {
      throw tenancyErrors.overQuota(key.name, tenant.id, n, 'instances of one model', q.max_instances_per_model, 'max_instances_per_model');
    }
    if (used.instances + n > q.max_instances_total) {
      throw tenancyErrors.overQuota(key.name, tenant.id, used.instances + n, 'instances', q.max_instances_total, 'max_instances_total');
    }
  }

  admit(key: ModelKey, origin: ModelOrigin, config: ModelConfig, versions = 1): ModelConfig {
    if (key.namespace === '') return this.opts.server.admit(key, origin, config, versions);
    const tenant = this.opts.tenants.get(key.namespace);
    if (!tenant) throw tenancyErrors.tenantUnknown(key.namespace);
    // Every field against the allowlist and this tenant's bounds first (INVALID_ARG), then the
    // server's caps and upload rules, then the quotas (403).
    checkTenantModelConfig(key.name, config, tenant.config_bounds);
    const admitted = this.opts.server.admit(key, origin, config, versions);
    const q = tenant.quotas;
    const used = this.opts.usage(key.namespace, key.name);
    const over = (what: string, asked: number, limit: number, quota: string) => tenancyErrors.overQuota(key.name, tenant.id, asked, what, limit, quota);
    if (used.models + 1 > q.max_models) throw over('models', used.models + 1, q.max_models, 'max_models');
    const perVersion = instanceCount(admitted);
    if (perVersion > q.max_instances_per_model) throw over('instances of one model', perVersion, q.max_instances_per_model, 'max_instances_per_model');
    const n = perVersion * versions;
    if (used.instances + n > q.max_instances_total) throw over('instances', used.instances + n, q.max_instances_total, 'max_instances_total');
    if (admitted.backend !== 'wasm') return admitted;
    const server = this.opts.wasmCaps ?? DEFAULT_WASM_LIMITS;
    const caps: WasmLimits = {
      ...server,
      maxMemoryBytes: Math.min(server.maxMemoryBytes, q.max_memory_per_instance_bytes),
      maxExecuteMs: Math.min(server.maxExecuteMs, q.max_execute_ms),
      maxLogBytes: Math.min(server.maxLogBytes, q.max_log_bytes),
    };
    if (caps.maxMemoryBytes < 65536 || caps.maxLogBytes < 1) throw tenancyErrors.sandboxQuotaTooSmall(tenant.id);
    const limits = modelLimits(admitted, caps);
    // max_memory_total_bytes bounds the memory of the tenant's live sandboxes (its budget in the
    // wasm backend, ../backends/wasm/memory-budget.ts): a load only needs one sandbox to fit.
    if (limits.memoryBytes > q.max_memory_total_bytes)
      throw over('bytes of sandbox memory', limits.memoryBytes, q.max_memory_total_bytes, 'max_memory_total_bytes');
    return {
      ...admitted,
      parameters: {
        ...admitted.parameters,
        [PARAM_MEMORY]: { string_value: String(limits.memoryBytes) },
        [PARAM_TIMEOUT]: { string_value: String(limits.executeMs) },
        [PARAM_LOG]: { string_value: String(limits.logBytes) },
      },
    };
  }
}
