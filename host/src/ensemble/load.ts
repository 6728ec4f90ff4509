/**
 * Loading an ensemble version: there is no backend and there are no instances (spec §5.5, §5.6);
 * the "model" is the plan, checked against the composing models as they are loaded now. The
 * lifecycle serves it as any version; its scheduler (`createScheduler`'s ensemble kind, an
 * `EnsembleScheduler`) runs the steps through the data plane with the owner's principal.
 */
import type { ModelConfig } from '../contract/model-config.js';
import { TritonError } from '../contract/errors.js';
import * as err from './ensemble.errors.js';
import { modelNameProblem } from '../contract/names.js';
import { ownerPrincipal } from '../contract/load-context.js';
import type { InferenceServerHandle, ModelKey } from '../contract/types.js';
import { compileEnsemblePlan, type ComposingModel, type EnsemblePlan } from './plan.js';

/** True for an ensemble config (`platform: "ensemble"` / `ensemble_scheduling`). */
export const isEnsemble = (c: Pick<ModelConfig, 'platform' | 'ensemble_scheduling'>): boolean =>
  c.platform === 'ensemble' || c.ensemble_scheduling !== undefined;

/** The distinct model names an ensemble's steps use. */
export function composingNames(config: ModelConfig): string[] {
  return [...new Set((config.ensemble_scheduling?.step ?? []).map((s) => s.model_name))];
}

/**
 * The composing models as `server` resolves them for the ensemble's owner, one per step.
 * @throws TritonError INVALID_ARG "ensemble <e> contains models that are not available or
 *   ambiguous: <m>, ..." (Triton's wording) for steps whose model (version) is not ready
 */
export function resolveComposing(key: ModelKey, config: ModelConfig, server: InferenceServerHandle): ComposingModel[] {
  const principal = ownerPrincipal(key);
  const missing: string[] = [];
  const out: ComposingModel[] = [];
  for (const step of config.ensemble_scheduling!.step) {
    const problem = modelNameProblem(step.model_name);
    if (problem !== undefined) throw err.stepModelNameInvalid(config.name, step.model_name, problem);
    try {
      if (!server.inferenceTarget) throw err.noServer();
      const t = server.inferenceTarget(principal, step.model_name, step.model_version);
      out.push({ config: t.config, decoupled: t.decoupled, ensemble: t.ensemble });
    } catch (e) {
      if (!(e instanceof TritonError)) throw e;
      if (!missing.includes(step.model_name)) missing.push(step.model_name);
    }
  }
  if (missing.length > 0) throw err.stepsUnavailable(config.name, missing);
  return out;
}

/**
 * Compile one ensemble version: check the plan against the composing models and set
 * `model_transaction_policy.decoupled` as Triton does (true iff a decoupled model lies on the data
 * flow). The version is then served with the returned config and an `EnsembleScheduler` (`scheduler.ts`)
 * over the plan.
 * @throws TritonError INVALID_ARG (see {@link resolveComposing}, {@link compileEnsemblePlan});
 *   "Response Cache does not currently support model <e> with 'decoupled' transaction policy.
 *   Please disable the response cache." for `response_cache { enable: true }` on an ensemble
 *   that a decoupled step makes decoupled (Triton's text)
 */
export function compileEnsemble(key: ModelKey, loaded: ModelConfig, server: InferenceServerHandle): { config: ModelConfig; plan: EnsemblePlan } {
  const composing = resolveComposing(key, loaded, server);
  const plan = compileEnsemblePlan(loaded, composing);
  // Triton validates the ensemble's config again once it is marked decoupled (core Model::Init,
  // model_config_utils.cc), so a decoupled step in a cached ensemble fails the load.
  if (plan.decoupled && loaded.response_cache?.enable) {
    throw err.cacheDecoupled(key.name);
  }
  const config: ModelConfig = { ...loaded, model_transaction_policy: { ...loaded.model_transaction_policy, decoupled: plan.decoupled } };
  return { config, plan };
}
