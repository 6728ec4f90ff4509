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
   * @param storedModels with uploads shared by several replicas: the namespace's other models in
   *   the shared store (the model count is then checked against the fleet, not this replica)
   * @throws TritonError naming the rule the upload breaks
   */
  precheckUpload?(key: ModelKey, configOverride: unknown, storedModels?: number): void;
}
