/**
 * The load-admission contract: the policy the repository manager asks before a model is loaded
 * (the server's caps and upload rules in lifecycle/admission.ts, a tenant's quotas and config
 * bounds in tenancy/admission.ts).
 */
import type { ModelConfig } from './model-config.js';
import type { ModelKey, ModelOrigin } from './types.js';

/** Total instance count of a config's instance groups (a count < 1 counts as 1, as normalisation makes it). */
export function instanceCount(config: Pick<ModelConfig, 'instance_group'>): number {
  let n = 0;
  for (const g of config.instance_group) n += Math.max(1, Number.isSafeInteger(g.count) ? g.count : Number.MAX_SAFE_INTEGER);
  return n;
}

/**
 * The instances a raw config override asks for (the load API's `parameters.config`, before
 * normalisation): each `instance_group` counts its `count` (at least 1); no groups = 1 instance,
 * as auto-complete gives a model without any.
 */
export function requestedInstances(configOverride: unknown): number {
  const groups = (configOverride as { instance_group?: unknown } | null)?.instance_group;
  if (!Array.isArray(groups) || groups.length === 0) return 1;
  return groups.reduce<number>((sum, g) => {
    const c = Number((g as { count?: unknown } | null)?.count ?? 1);
    return sum + (Number.isFinite(c) && c > 1 ? c : 1);
  }, 0);
}

/** What a namespace holds in the shared upload store besides one model: models, and the instances their configs ask for. */
export interface StoredUsage {
  readonly models: number;
  readonly instances: number;
}

/**
 * Decides whether a model may be loaded. The repository manager calls {@link admit} on the
 * normalised config, and again on the config after backend-side auto-complete.
 */
export interface ModelAdmission {
  /**
   * @param versions how many versions of the model this load creates (each has the config's instances)
   * @returns the config to load (unchanged, or with limits the policy imposes written into it)
   * @throws TritonError naming the rule the config breaks; nothing was allocated
   */
  admit(key: ModelKey, origin: ModelOrigin, config: ModelConfig, versions: number): ModelConfig;
  /**
   * Checks that need no files, run before an upload is written (quotas are refused before
   * anything touches disk); {@link admit} still checks the normalised config afterwards.
   * @param configOverride the load API's `parameters.config` JSON, as sent
   * @param stored with uploads shared by several replicas: what the namespace's other models in the
   *   shared store hold (model and instance counts are then checked against the fleet)
   * @throws TritonError naming the rule the upload breaks
   */
  precheckUpload?(key: ModelKey, configOverride: unknown, stored?: StoredUsage): void;
}
