/**
 * The model lifecycle (Triton's `ModelLifeCycle`, model_lifecycle.cc): one record per model with
 * one state record per version (`model-state.ts`), the operations that move it — load and unload —
 * and the queries the data plane and the index make.
 *
 * Operations on one model are serialised (its record's chain); different models load
 * concurrently. A load locates the files through the sources (`model-source.ts`), builds every
 * version (`version-builder.ts`), then swaps: requests in flight on the old versions finish and
 * new requests never see a gap; a failed (re)load leaves what was serving in place. An unload
 * stops new requests at once and retires the versions in the background (in-flight requests
 * finish first).
 */
import type { Logger } from 'pino';
import { instanceCount } from '../contract/admission.js';
import type { ModelConfig } from '../contract/model-config.js';
import { TritonError, asTritonError } from '../contract/errors.js';
import type { ModelKey } from '../contract/types.js';
import { ModelLog } from '../metrics/model-log.js';
import { carriesFiles, isLoggedBySource, type LoadOptions, type LocatedModel, type ModelFiles, type ModelSource } from './model-source.js';
import {
  forgetStates,
  hasFailedVersion,
  holdsName,
  isEmptyEntry,
  isServing,
  markFailed,
  markLoading,
  markRetired,
  modelKeyId,
  newEntry,
  servingVersions,
  swapIn,
  takeForUnload,
  type ModelEntry,
} from './model-state.js';
import type { ModelVersion } from './model-version.js';
import type { VersionBuilder } from './version-builder.js';
import * as lifecycleErrors from './lifecycle.errors.js';

/** What the unload API may carry. */
export interface UnloadOptions {
  /**
   * Also delete the model's stored upload (a tenant's uploads are kept across unloads and restarts
   * otherwise), once its versions have retired.
   */
  deleteFiles?: boolean;
}

export interface LifecycleOptions {
  logger: Logger;
  /** Asked in order for a load's files ({@link ModelSource.locate}). */
  sources: readonly ModelSource[];
  builder: VersionBuilder;
}

export class ModelLifecycle {
  private readonly entries = new Map<string, ModelEntry>();
  private stopped = false;
  /** The drain bound of the shutdown in progress (what is left of --exit-timeout-secs). */
  private shutdownDrainMs: number | undefined;

  /** Told which versions of a model serve after each swap and unload ({@link onServing}). */
  private readonly servingListeners: ((key: ModelKey, serving: readonly ModelVersion[]) => void)[] = [];

  constructor(private readonly opts: LifecycleOptions) {}

  /**
   * Registers `listener`, called in the model's turn each time its serving versions change: after
   * a load swapped new versions in (with them), and as an unload starts (with none). The native
   * data path publishes the serving version's route from here.
   */
  onServing(listener: (key: ModelKey, serving: readonly ModelVersion[]) => void): void {
    this.servingListeners.push(listener);
  }

  private notifyServing(entry: ModelEntry): void {
    if (this.servingListeners.length === 0) return;
    const serving = servingVersions(entry);
    for (const l of this.servingListeners) l(entry.key, serving);
  }

  /** Set by {@link shutdown}: loads are refused from then on. */
  get closed(): boolean {
    return this.stopped;
  }

  /** The record of `key`, if there is one (read it; only this module changes it). */
  entry(key: ModelKey): ModelEntry | undefined {
    return this.entries.get(modelKeyId(key));
  }

  /** Every record, of one namespace or (undefined) all, in the order they were created. */
  models(namespace?: string): ModelEntry[] {
    const all = [...this.entries.values()];
    return namespace === undefined ? all : all.filter((e) => e.key.namespace === namespace);
  }

  /**
   * Load or reload a model; resolves once the new versions serve.
   * @throws TritonError UNAVAILABLE "server is shutting down"; what the sources refuse a load with
   *   (nothing changes then); INTERNAL "failed to load '<m>', failed to poll from model repository"
   *   when no source holds the model; the load's failure otherwise, the model being UNAVAILABLE with
   *   that reason unless older versions serve
   */
  load(key: ModelKey, options: LoadOptions = {}): Promise<void> {
    if (this.stopped) return Promise.reject(lifecycleErrors.shuttingDown());
    return this.serialise(key, async (entry) => {
      try {
        return await this.loadInTurn(entry, options);
      } finally {
        entry.admitted = undefined;
      }
    });
  }

  /**
   * Unload every version of a model: resolves once the model stops taking new requests; in-flight
   * requests finish in the background before the versions finalize and the files are released.
   * Unloading a model that is not loaded succeeds.
   */
  unload(key: ModelKey, options: UnloadOptions = {}): Promise<void> {
    return new Promise<void>((stoppedTaking, reject) => {
      this.serialise(key, async (entry) => {
        const { retiring, files } = takeForUnload(entry);
        this.notifyServing(entry);
        stoppedTaking();
        await Promise.all(
          retiring.map(async (v) => {
            await v.retire(this.stopped && this.shutdownDrainMs !== undefined ? this.shutdownDrainMs : undefined);
            markRetired(entry, v.version);
          }),
        );
        // An operator upload is ephemeral: gone once its versions retired. A tenant's stays stored
        // (a later load without files serves it again) unless deleting was asked for.
        const due = new Set<ModelSource>();
        if (files) {
          files.release();
          due.add(files.source);
        }
        if (options.deleteFiles) for (const s of this.opts.sources) due.add(s);
        for (const s of due) await s.cleanUp?.(entry.key, options.deleteFiles === true);
      }).catch(reject);
    });
  }

  /**
   * Forget the states of a model nothing serves (a removed tenant's, after its unload): the record
   * then holds nothing and is dropped, unless a newer load is queued. Runs in the model's turn.
   */
  forget(key: ModelKey): Promise<void> {
    return this.serialise(key, async (entry) => {
      if (isServing(entry)) return; // loaded again meanwhile (a new tenant of the same id)
      forgetStates(entry);
    });
  }

  /**
   * Refuse loads from now on, unload every model (in-flight requests finish, within `drainMs`
   * when given) and wait for every operation.
   */
  async shutdown(drainMs?: number): Promise<void> {
    this.shutdownDrainMs = drainMs;
    this.stopped = true;
    await Promise.all([...this.entries.values()].map((e) => this.unload(e.key)));
    await Promise.all([...this.entries.values()].map((e) => e.chain));
  }

  /**
   * The version that serves a request.
   * @param version -1 = highest ready version
   * @throws TritonError NOT_FOUND for an unknown model or version, UNAVAILABLE if not ready.
   */
  getVersion(key: ModelKey, version: number): ModelVersion {
    const name = key.name;
    const entry = this.entries.get(modelKeyId(key));
    if (!entry || entry.slots.size === 0) throw lifecycleErrors.modelNotFound(name);
    if (version < 0) {
      let best: ModelVersion | undefined;
      for (const s of entry.slots.values()) if (s.version && (!best || s.version.version > best.version)) best = s.version;
      if (!best) throw lifecycleErrors.noAvailableVersion(name);
      return best;
    }
    const slot = entry.slots.get(version);
    if (slot?.version) return slot.version;
    if (slot) throw lifecycleErrors.versionNotReady(name, version);
    throw lifecycleErrors.versionNotFound(name, version);
  }

  /**
   * Every serving version with its model's key, ascending by version: of one model (`key`), or of
   * every model in `namespace` (undefined = every namespace).
   */
  serving(scope: { key: ModelKey } | { namespace?: string } = {}): { key: ModelKey; version: ModelVersion }[] {
    let entries: ModelEntry[];
    if ('key' in scope) entries = [this.entry(scope.key)].filter((e): e is ModelEntry => !!e);
    else entries = this.models(scope.namespace);
    return entries.flatMap((e) => servingVersions(e).map((version) => ({ key: e.key, version })));
  }

  /**
   * What a namespace's models hold, for quotas: distinct models serving or loading, and the
   * instances and sandbox memory of their serving versions (`memoryOf` gives one instance's bytes
   * from its config; a load in progress counts what it was admitted with). `exclude` = a model name
   * left out (the one being loaded).
   */
  usageOf(namespace: string, exclude: string, memoryOf: (config: ModelConfig) => number): { models: number; instances: number; memoryBytes: number } {
    let models = 0;
    let instances = 0;
    let memoryBytes = 0;
    for (const e of this.entries.values()) {
      if (e.key.namespace !== namespace || e.key.name === exclude) continue;
      // Serving or being loaded counts; unloaded or failed models hold nothing.
      const serving = servingVersions(e);
      if (serving.length === 0 && !e.admitted) continue;
      models++;
      const held = serving.length > 0 ? serving.map((v) => ({ config: v.config, versions: 1 })) : [e.admitted!];
      for (const { config, versions } of held) {
        const n = instanceCount(config) * versions;
        instances += n;
        memoryBytes += n * memoryOf(config);
      }
    }
    return { models, instances, memoryBytes };
  }

  /**
   * The log of model `key` (metrics/model-log.ts): what its backends wrote since its first load,
   * kept across reloads and unloads until the record is dropped or forgotten.
   * @throws TritonError NOT_FOUND "Request for unknown model: '<m>' is not found" (a model never
   *   loaded, or a forgotten one: the text any unknown model gets)
   */
  modelLog(key: ModelKey): ModelLog {
    const log = this.entry(key)?.log;
    if (!log) throw lifecycleErrors.modelNotFound(key.name);
    return log;
  }

  /** Whether a model is known at all (a version serving, loading, failed or unloaded). */
  isKnown(key: ModelKey): boolean {
    const entry = this.entry(key);
    return !!entry && entry.slots.size > 0;
  }

  /**
   * Whether a model holds its name for lookups (DESIGN "Multi-tenancy"): a version serving, being
   * loaded, or failed to load. A model whose versions were all unloaded (or are draining after an
   * unload) does not, so a tenant's unloaded model never hides an operator model shared with the
   * tenant under the same name.
   */
  holdsName(key: ModelKey): boolean {
    const entry = this.entry(key);
    return !!entry && holdsName(entry);
  }

  /**
   * Strict readiness (DESIGN "Multi-tenancy"): every operator model (namespace `''`) whose latest
   * load came from the operator's repositories is READY. Versions unloaded on purpose do not
   * count, nor do uploads (load API file overrides) or tenants' models: an upload that fails must
   * never take the replica out of service.
   */
  allReady(): boolean {
    for (const e of this.entries.values()) {
      if (e.key.namespace !== '' || e.attemptOrigin?.kind !== 'repository') continue;
      if (hasFailedVersion(e)) return false;
    }
    return true;
  }

  /** A load in the model's turn. */
  private async loadInTurn(entry: ModelEntry, options: LoadOptions): Promise<void> {
    const { key } = entry;
    const { name } = key;
    const log = this.opts.logger.child(key.namespace === '' ? { model: name } : { model: name, namespace: key.namespace });
    // Failures before a load starts are logged like the others (at the default level, with the reason).
    const refuse = (e: TritonError, text?: string): TritonError => {
      log.error({ reason: e.message }, text ?? loadFailureText(name, e.message));
      return e;
    };
    if (carriesFiles(options) && options.configOverride === undefined) {
      throw refuse(lifecycleErrors.overridesNeedConfig(name));
    }
    // A source's refusal (uploads refused, a tenant's quota or config bounds, a bad upload) is a
    // failed load too, logged with its reason unless the source logged it.
    const located = await this.locate(key, options).catch((e: unknown) => {
      throw isLoggedBySource(e) ? e : refuse(asTritonError(e));
    });
    // The log line is Triton's (core model_repository_manager.cc Poll); so is the answer, an
    // INTERNAL error (LoadUnloadModel, when the poll found nothing).
    if (!located) throw refuse(lifecycleErrors.pollFailed(name), `failed to poll model '${name}': model not found in any model repository.`);
    entry.attemptOrigin = located.origin;
    let files: ModelFiles | undefined;
    let loaded: Map<number, ModelVersion>;
    let served: ModelFiles;
    try {
      files = await located.open();
      const built = await this.opts.builder.build(
        key,
        files,
        {
          admitted: (config, versions) => (entry.admitted = { config, versions }),
          loading: (vs) => markLoading(entry, vs),
          modelLog: (entry.log ??= new ModelLog()),
        },
        log,
      );
      await files.commit().catch(async (e: unknown) => {
        await Promise.all([...built.values()].map((m) => m.finalize()));
        throw e;
      });
      loaded = built;
      served = files;
    } catch (e) {
      await files?.abandon();
      const err = files ? files.publicError(asTritonError(e)) : asTritonError(e);
      markFailed(entry, err.message);
      log.error({ reason: err.message }, loadFailureText(name, err.message));
      throw err;
    }
    // Swap: new versions serve from now on; old ones drain and finalize in the background, then
    // their files are released (cleaned up in this model's turn).
    const old = swapIn(entry, loaded, served);
    this.notifyServing(entry);
    void Promise.all(old.retiring.map((v) => v.retire())).then(() => {
      const released = old.files;
      if (released?.release()) void this.serialise(key, async () => released.source.cleanUp?.(key, false));
    });
    log.info({ versions: [...loaded.keys()] }, 'successfully loaded');
  }

  /** The first source that holds the model ({@link ModelSource.locate}). */
  private async locate(key: ModelKey, options: LoadOptions): Promise<LocatedModel | undefined> {
    for (const source of this.opts.sources) {
      const located = await source.locate(key, options);
      if (located) return located;
    }
    return undefined;
  }

  /** Run `op` in the model's turn (after every operation queued on it before). */
  private serialise<T>(key: ModelKey, op: (entry: ModelEntry) => Promise<T>): Promise<T> {
    const id = modelKeyId(key);
    let entry = this.entries.get(id);
    if (!entry) {
      entry = newEntry(key);
      this.entries.set(id, entry);
    }
    const e = entry;
    const run = e.chain.then(
      () => op(e),
      () => op(e),
    );
    // A record that holds nothing once its last queued operation is done (a failed load or an
    // unload of a name that never existed) is dropped, so the index never grows bogus names.
    const tail: Promise<unknown> = run
      .catch(() => undefined)
      .then(() => {
        if (e.chain === tail && this.entries.get(id) === e && isEmptyEntry(e)) this.entries.delete(id);
      });
    e.chain = tail;
    return run;
  }
}

/**
 * The log line of a failed load, in Triton's words (core model_lifecycle.cc: "failed to load
 * '<model>' ...: <reason>"); a reason that already starts so is the line itself.
 */
function loadFailureText(name: string, reason: string): string {
  return reason.startsWith(`failed to load '${name}'`) ? reason : `failed to load '${name}': ${reason}`;
}
