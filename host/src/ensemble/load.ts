/**
 * Loading an ensemble version: there is no backend and there are no instances (spec §5.5, §5.6);
 * the "model" is the plan, checked against the composing models as they are loaded now, and its
 * scheduler runs the steps through the data plane with the owner's principal.
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../contract/model-config.js';
import { TritonError, invalidArg } from '../contract/errors.js';
import { ModelVersion, type ModelVersionOptions } from '../lifecycle/model-version.js';
import { modelNameProblem } from '../contract/names.js';
import { ownerPrincipal } from '../contract/load-context.js';
import type { BackendModel, InferenceServerHandle, ModelKey, Principal } from '../contract/types.js';
import type { ModelStatistics } from '../metrics/stats.js';
import { compileEnsemblePlan, type ComposingModel } from './plan.js';
import { EnsembleScheduler } from './scheduler.js';

/** True for an ensemble config (`platform: "ensemble"` / `ensemble_scheduling`). */
export const isEnsemble = (c: Pick<ModelConfig, 'platform' | 'ensemble_scheduling'>): boolean => c.platform === 'ensemble' || c.ensemble_scheduling !== undefined;

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
    if (problem !== undefined) throw invalidArg(`in ensemble ${config.name}, invalid model name '${step.model_name}' in a step: ${problem}`);
    try {
      if (!server.inferenceTarget) throw new TritonError('UNAVAILABLE', 'no server');
      const t = server.inferenceTarget(principal, step.model_name, step.model_version);
      out.push({ config: t.config, decoupled: t.decoupled, ensemble: t.ensemble });
    } catch (e) {
      if (!(e instanceof TritonError)) throw e;
      if (!missing.includes(step.model_name)) missing.push(step.model_name);
    }
  }
  if (missing.length > 0) throw invalidArg(`ensemble ${config.name} contains models that are not available or ambiguous: ${missing.join(', ')}`);
  return out;
}

/** Nothing to finalize: an ensemble holds no backend state. */
const NO_BACKEND_MODEL: BackendModel = Object.freeze({
  createInstance(): never {
    throw new TritonError('INTERNAL', 'an ensemble has no instances');
  },
  finalize: async () => undefined,
});

/**
 * Build one ensemble version: compile and validate the plan against the composing models, set
 * `model_transaction_policy.decoupled` as Triton does (true iff a decoupled model lies on the
 * data flow), and serve it with an {@link EnsembleScheduler}.
 * @throws TritonError INVALID_ARG (see {@link resolveComposing}, {@link compileEnsemblePlan});
 *   "Response Cache does not currently support model <e> with 'decoupled' transaction policy.
 *   Please disable the response cache." for `response_cache { enable: true }` on an ensemble
 *   that a decoupled step makes decoupled (Triton's text)
 */
export function buildEnsembleVersion(args: {
  key: ModelKey;
  version: number;
  config: ModelConfig;
  server: InferenceServerHandle;
  stats: ModelStatistics;
  logger: Logger;
  options?: ModelVersionOptions;
}): ModelVersion {
  const { key, version, server, stats, logger } = args;
  const composing = resolveComposing(key, args.config, server);
  const plan = compileEnsemblePlan(args.config, composing);
  // Triton validates the ensemble's config again once it is marked decoupled (core Model::Init,
  // model_config_utils.cc), so a decoupled step in a cached ensemble fails the load.
  if (plan.decoupled && args.config.response_cache?.enable) {
    throw invalidArg(
      `Response Cache does not currently support model ${key.name} with 'decoupled' transaction policy. Please disable the response cache.`,
    );
  }
  const config: ModelConfig = { ...args.config, model_transaction_policy: { ...args.config.model_transaction_policy, decoupled: plan.decoupled } };
  const principal = ownerPrincipal(key);
  return new ModelVersion(key.name, version, config, NO_BACKEND_MODEL, [], stats, logger, {
    ...args.options,
    ensemble: plan.cost,
    scheduler: () => new EnsembleScheduler({ name: key.name, plan, server, principal, stats, logger }),
  });
}
