/**
 * Dependencies between models (Triton's `DependencyGraph`, model_repository_manager.cc): an
 * ensemble loads after the models its steps name, and unloads with them when asked
 * (`unload_dependents`). Loads that start-up, restore and poll schedule are ordered the same way:
 * an ensemble among them starts the models it names first, in its own slot, so no ensemble is
 * checked before its steps have loaded, in every control mode.
 *
 * A step name resolves in the ensemble's namespace: the tenant's own model of that name, else the
 * operator's (sharing is checked by the data plane when the plan is compiled). Waits between
 * ensemble loads are tracked so that a cycle fails ("circular dependency between ensembles")
 * instead of hanging.
 */
import { TritonError } from '../contract/errors.js';
import { modelNameProblem } from '../contract/names.js';
import type { ModelKey } from '../contract/types.js';
import { composingNames, isEnsemble } from '../ensemble/load.js';
import { isServing, modelKeyId, servingVersions, type ModelEntry } from './model-state.js';
import { ensembleCycle } from './lifecycle.errors.js';

/** What the dependency tracking reads and drives (the repository manager over its lifecycle and sources). */
export interface DependencyHost {
  /** The record of a model, if any (`lifecycle.ts#entry`). */
  entry(key: ModelKey): ModelEntry | undefined;
  /** Every record. */
  models(): Iterable<ModelEntry>;
  /** Load a model as start-up, poll or an ensemble does (no control-mode check). */
  load(key: ModelKey): Promise<void>;
  /** Explicit mode: an ensemble's load also loads the step models that are not loaded. */
  readonly explicit: boolean;
  /** Whether a load of `key` without files would find it (`ModelSource.holds`). */
  holds(key: ModelKey): Promise<boolean>;
}

/** A model of the operator's namespace (the repositories on disk). */
export const operatorKey = (name: string): ModelKey => ({ namespace: '', name });

export class ModelDependencies {
  /** Ensemble loads in progress → the models (key ids) they are waiting for. */
  private readonly waits = new Map<string, Set<string>>();
  /**
   * Loads a start-up, restore or poll has scheduled but not started (key id → start). An ensemble
   * that names one starts it at once and waits for it.
   */
  private readonly deferred = new Map<string, () => Promise<void>>();

  constructor(private readonly host: DependencyHost) {}

  /**
   * Load `keys`, at most `concurrency` at once, each scheduled until it starts: an ensemble among
   * them that names another starts that one first ({@link prepareSteps}). Failures go to
   * `onError`; this never rejects.
   */
  async loadAll(keys: readonly ModelKey[], concurrency: number, onError: (key: ModelKey, e: unknown) => void): Promise<void> {
    const queue = [...keys];
    for (const key of keys) {
      const id = modelKeyId(key);
      this.deferred.set(id, () => {
        this.deferred.delete(id);
        return this.host.load(key).catch((e: unknown) => onError(key, e));
      });
    }
    const worker = async (): Promise<void> => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        // Undefined once an ensemble started it.
        await this.deferred.get(modelKeyId(key))?.();
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, keys.length)) }, worker));
  }

  /**
   * Wait for (explicit mode: load) the models an ensemble's steps name, in the ensemble's
   * namespace — a tenant's own model, else the operator's. A load in progress is waited for; one
   * scheduled and not started starts now, in this slot.
   * @throws TritonError INVALID_ARG "circular dependency between ensembles: <m> -> ... -> <e> -> <m>"
   */
  async prepareSteps(ensemble: ModelKey, names: readonly string[]): Promise<void> {
    const me = modelKeyId(ensemble);
    await Promise.all(
      names.map(async (name) => {
        const candidates: ModelKey[] = [{ namespace: ensemble.namespace, name }];
        if (ensemble.namespace !== '') candidates.push(operatorKey(name));
        for (const key of candidates) {
          const id = modelKeyId(key);
          if (id === me || this.waitsFor(id, me)) {
            throw ensembleCycle(name, ensemble.name);
          }
          let entry = this.host.entry(key);
          const waits = this.waits.get(me) ?? new Set<string>();
          this.waits.set(me, waits.add(id));
          try {
            // Scheduled by start-up, restore or poll but not started: load it now, in this slot.
            const deferred = this.deferred.get(id);
            if (deferred) await deferred();
            else if (entry) await entry.chain;
            entry = this.host.entry(key);
            if (entry && isServing(entry)) return;
            // Explicit mode loads a step model that is not loaded (a tenant's from its stored
            // uploads; only the operator's namespace loads from the repositories).
            if (this.host.explicit && key.namespace === ensemble.namespace && (await this.loadable(key))) {
              // A dependency that failed is reported by the resolution afterwards ("not
              // available"), except a cycle, which is the real reason.
              const loaded = await this.host.load(key).then(
                () => true,
                (e: unknown) => {
                  if (e instanceof TritonError && e.message.startsWith('circular dependency between ensembles')) throw e;
                  return false;
                },
              );
              if (loaded) return;
            }
          } finally {
            waits.delete(id);
            if (waits.size === 0) this.waits.delete(me);
          }
        }
      }),
    );
  }

  /**
   * The loaded ensembles that use `key` in a step, directly or through other ensembles (Triton's
   * dependents, unloaded by `TRITONSERVER_ServerUnloadModelAndDependents` and HTTP/gRPC unload
   * with `unload_dependents`). A step name resolves as at load: the ensemble's own namespace
   * first, else the operator's; only ensembles in `key`'s namespace are returned.
   */
  dependentsOf(key: ModelKey): ModelKey[] {
    const found = new Map<string, ModelKey>();
    const queue = [key];
    while (queue.length > 0) {
      const target = queue.shift()!;
      for (const e of this.host.models()) {
        if (e.key.namespace !== key.namespace || found.has(modelKeyId(e.key)) || modelKeyId(e.key) === modelKeyId(key)) continue;
        const uses = servingVersions(e).some(
          (v) => isEnsemble(v.config) && composingNames(v.config).includes(target.name) && this.resolvesTo(e.key.namespace, target),
        );
        if (!uses) continue;
        found.set(modelKeyId(e.key), e.key);
        queue.push(e.key);
      }
    }
    return [...found.values()];
  }

  /** Whether step name `target.name` in namespace `namespace` resolves to `target`. */
  private resolvesTo(namespace: string, target: ModelKey): boolean {
    if (target.namespace === namespace) return true;
    if (target.namespace !== '') return false;
    const own = this.host.entry({ namespace, name: target.name });
    return !own || !isServing(own);
  }

  /** Whether a load of `key` has files to load (a valid name some source holds). */
  private async loadable(key: ModelKey): Promise<boolean> {
    if (modelNameProblem(key.name) !== undefined) return false;
    return this.host.holds(key);
  }

  /** Whether the ensemble load `from` (transitively) waits for the model `to`. */
  private waitsFor(from: string, to: string, seen = new Set<string>()): boolean {
    if (seen.has(from)) return false;
    seen.add(from);
    for (const next of this.waits.get(from) ?? []) if (next === to || this.waitsFor(next, to, seen)) return true;
    return false;
  }
}
