/**
 * The model repository manager (Triton's `ModelRepositoryManager`): model control modes none /
 * poll / explicit (spec §5.8), start-up, poll, the repository extension's index / load / unload
 * (spec §3.1), and the tenants file's removals (DESIGN "Multi-tenancy"). It composes:
 *
 * - `lifecycle.ts`: each model's record and state machine (`model-state.ts`), load and unload
 *   serialised per model, the queries the data plane makes;
 * - `version-builder.ts`: config, admission, backend, instances, the `ModelVersion`;
 * - `model-source.ts`: where files come from, asked in order — the upload store
 *   (`upload-source.ts`), then the operator's repositories (`repository-source.ts`);
 * - `dependencies.ts`: ensembles after their steps, dependents, start-up and poll ordering.
 */
import type { Logger } from 'pino';
import type { ResponseCacheStore } from '../cache/response-cache-store.js';
import type { ModelAdmission } from '../contract/admission.js';
import { TritonError, asTritonError } from '../contract/errors.js';
import { NO_SERVER } from '../contract/load-context.js';
import type { ModelConfig } from '../contract/model-config.js';
import type { BackendResolver, InferenceServerHandle, ModelKey } from '../contract/types.js';
import type { ModelLog } from '../metrics/model-log.js';
import type { ServerMetrics } from '../metrics/prometheus.js';
import type { UploadStore } from '../repository/upload-store.js';
import type { FileOverrides, HeldBlob } from '../repository/overrides.js';
import type { ExecutionArbiter, TenantFairness } from '../scheduler/index.js';
import type { TraceManager } from '../trace/trace-manager.js';
import { ServerAdmission } from './admission.js';
import { ModelDependencies, operatorKey } from './dependencies.js';
import { ModelLifecycle, type UnloadOptions } from './lifecycle.js';
import type { CatalogEntry, LoadOptions, ModelSource } from './model-source.js';
import { modelKeyId, type ModelState } from './model-state.js';

/** How long a model the shared upload store does not hold is not asked for again, ms. */
const ABSENT_MS = 2_000;
/** Most remembered misses (a flood of unknown names clears them rather than growing). */
const MAX_ABSENT = 10_000;
import type { ModelVersion } from './model-version.js';
import { RepositorySource } from './repository-source.js';
import type { SharedUploads } from '../repository/object-store/shared-uploads.js';
import type { ModelRepository } from '../repository/model-repository.js';
import { UploadSource } from './upload-source.js';
import { VersionBuilder } from './version-builder.js';
import { explicitOnly } from './lifecycle.errors.js';

export type { LoadOptions } from './model-source.js';
export type { UnloadOptions } from './lifecycle.js';
export { modelKeyId, type ModelState } from './model-state.js';
export { operatorKey } from './dependencies.js';
export { instanceSpecs } from './version-builder.js';

export type ModelControlMode = 'none' | 'poll' | 'explicit';

/** One entry of `POST /v2/repository/index`. */
export interface IndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

export interface RepositoryManagerOptions {
  /** The operator's repositories, local or remote, in `--model-repository` order. */
  repositories: readonly ModelRepository[];
  controlMode: ModelControlMode;
  resolvers: BackendResolver[];
  autoCompleteConfig: boolean;
  /** `--model-config-name`. */
  configName?: string;
  logger: Logger;
  metrics: ServerMetrics;
  /** Caps and the upload trust rules, checked before a backend sees a config (default: {@link ServerAdmission} with its defaults). */
  admission?: ModelAdmission;
  /** The server-wide arbiter every model's scheduler asks before dispatching (default: admits everything). */
  arbiter?: ExecutionArbiter;
  /** How schedulers share a model between tenants (weights from the tenants file). */
  fairness?: TenantFairness;
  /**
   * Root of the upload store (load API file overrides); none = uploads refused. Tenants' uploads
   * are durable there, the operator namespace's are removed at unload and at start.
   */
  uploadDirectory?: string;
  /**
   * `--upload-store=s3://...`: tenants' uploads shared by every replica (the local upload store
   * becomes their working copy). Undefined = local only.
   */
  sharedUploads?: SharedUploads;
  /** `--max-upload-bytes`: the largest stored model fetched from {@link sharedUploads}. */
  maxUploadBytes?: number;
  /** `--model-load-thread-count`: models loaded at once by startup (default 4, as Triton). */
  loadThreadCount?: number;
  /** `--exit-timeout-secs` in ms: bound on a retiring version's drain (default: none). */
  drainTimeoutMs?: number;
  /** Request tracing (spec §3.5). */
  tracer?: TraceManager;
  /** The response cache (`--cache-config local,...` or `redis,...`) models with `response_cache { enable: true }` use. */
  responseCache?: ResponseCacheStore;
  /**
   * Multi-tenant mode: the tenants of the tenants file now, id → creation identity (`uid`,
   * undefined for an entry without one); see {@link ModelRepositoryManager.reconcileTenants}.
   * Absent (single-user mode): tenant namespaces are never reconciled.
   */
  tenants?: () => ReadonlyMap<string, string | undefined>;
}

export class ModelRepositoryManager {
  private readonly lifecycle: ModelLifecycle;
  private readonly dependencies: ModelDependencies;
  private readonly uploads: UploadSource;
  /** Asked in order for a load's files; those with a catalog make the index, start-up and poll. */
  private readonly sources: readonly ModelSource[];
  private pollTimer: NodeJS.Timeout | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  /** Loads on demand in progress, by key id (concurrent requests for one model share one load). */
  private readonly onDemand = new Map<string, Promise<boolean>>();
  /** Key ids the shared store did not hold, until when (ms): a miss is not asked again at once. */
  private readonly absent = new Map<string, number>();
  private server: InferenceServerHandle = NO_SERVER;
  /** The tenants (id → uid) as last reconciled ({@link reconcileTenants}). */
  private knownTenants = new Map<string, string | undefined>();
  /** The reconciliation in progress (they run one at a time). */
  private reconciling: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: RepositoryManagerOptions) {
    const admission: ModelAdmission = opts.admission ?? new ServerAdmission();
    this.knownTenants = new Map(opts.tenants?.() ?? []);
    this.uploads = new UploadSource({
      root: opts.uploadDirectory,
      logger: opts.logger,
      precheck: (key, configOverride, stored) => admission.precheckUpload?.(key, configOverride, stored),
      tenants: opts.tenants,
      shared: opts.sharedUploads,
      maxUploadBytes: opts.maxUploadBytes,
    });
    this.sources = [this.uploads, new RepositorySource(opts.repositories, opts.logger)];
    this.dependencies = new ModelDependencies({
      entry: (key) => this.lifecycle.entry(key),
      models: () => this.lifecycle.models(),
      load: (key) => this.load(key, {}, true),
      explicit: opts.controlMode === 'explicit',
      holds: (key) => this.holds(key),
    });
    const builder = new VersionBuilder({
      resolvers: opts.resolvers,
      autoCompleteConfig: opts.autoCompleteConfig,
      configName: opts.configName,
      admission,
      metrics: opts.metrics,
      arbiter: opts.arbiter,
      fairness: opts.fairness,
      tracer: opts.tracer,
      responseCache: opts.responseCache,
      drainTimeoutMs: opts.drainTimeoutMs,
      multiTenant: opts.tenants !== undefined,
      server: () => this.server,
      prepareSteps: (ensemble, names) => this.dependencies.prepareSteps(ensemble, names),
    });
    this.lifecycle = new ModelLifecycle({ logger: opts.logger, sources: this.sources, builder });
    opts.metrics.setPendingSource(() =>
      this.lifecycle.serving().map(({ key, version: v }) => ({ model: v.name, version: String(v.version), tenant: key.namespace, count: v.pendingCount })),
    );
    opts.metrics.setInstanceSource(() =>
      this.lifecycle.serving().map(({ key, version: v }) => ({ model: v.name, version: String(v.version), tenant: key.namespace, ...v.usage() })),
    );
  }

  /** {@link ModelLifecycle.onServing}: told which versions of a model serve after each change. */
  onServing(listener: (key: ModelKey, serving: readonly ModelVersion[]) => void): void {
    this.lifecycle.onServing(listener);
  }

  get controlMode(): ModelControlMode {
    return this.opts.controlMode;
  }

  /** The upload store (undefined when uploads are refused). */
  get uploadStore(): UploadStore | undefined {
    return this.uploads.store;
  }

  /** The data plane backends reach for in-process inference (set once, by the server). */
  attachServer(server: InferenceServerHandle): void {
    this.server = server;
  }

  /**
   * Initial load: everything the sources list (modes none / poll, or explicit with `*`), or the
   * `--load-model` names (explicit); beside it, what the sources restore (a tenant's stored
   * uploads). Failures leave models UNAVAILABLE; those of the listed models are returned, not
   * thrown; a restore's are logged.
   * @throws Error if a repository cannot be read
   */
  async startup(loadModels: readonly string[]): Promise<{ name: string; error: TritonError }[]> {
    const restoring = this.restore();
    const found = await this.catalog('');
    const all = this.opts.controlMode !== 'explicit' || loadModels.includes('*');
    const names = all ? [...found.keys()] : [...loadModels];
    const failures: { name: string; error: TritonError }[] = [];
    // At most --model-load-thread-count loads at once (an ensemble's dependencies it starts itself
    // run within its own slot).
    await this.dependencies.loadAll(names.map(operatorKey), this.opts.loadThreadCount ?? 4, (key, e) =>
      failures.push({ name: key.name, error: asTritonError(e) }),
    );
    await restoring;
    return failures;
  }

  /** Start-up of each source ({@link ModelSource.restore}), then the loads of what it restores, all at once. */
  private async restore(): Promise<void> {
    await Promise.all(
      this.sources.map(async (source) => {
        const models = (await source.restore?.(this.opts.tenants ? this.knownTenants : undefined)) ?? [];
        await this.dependencies.loadAll(models, Math.max(1, models.length), (key, e) => {
          this.opts.logger.error({ model: key.name, namespace: key.namespace, reason: asTritonError(e).message }, 'failed to restore uploaded model');
        });
      }),
    );
  }

  /** Start polling the repositories every `seconds` (poll mode). */
  startPolling(seconds: number): void {
    const tick = async (): Promise<void> => {
      try {
        await this.poll();
      } catch (e) {
        this.opts.logger.error({ err: e }, 'repository poll failed');
      }
      if (!this.lifecycle.closed) this.pollTimer = setTimeout(tick, seconds * 1000);
    };
    this.pollTimer = setTimeout(tick, seconds * 1000);
  }

  /**
   * Follow the shared upload store every `seconds` (`--upload-store-poll-secs`): see {@link syncUploads}.
   * The bound on a change reaching this replica is `seconds` plus the model's load time.
   */
  startUploadSync(seconds: number): void {
    if (!this.opts.sharedUploads) return;
    const tick = async (): Promise<void> => {
      try {
        await this.syncUploads();
      } catch (e) {
        this.opts.logger.error({ reason: asTritonError(e).message }, 'shared upload store sync failed');
      }
      if (!this.lifecycle.closed) this.syncTimer = setTimeout(tick, seconds * 1000);
    };
    this.syncTimer = setTimeout(tick, seconds * 1000);
  }

  /**
   * Bring the tenant models loaded here in line with the shared upload store: a model deleted
   * there (by any replica) is unloaded and its local copy removed; a model uploaded again is
   * reloaded (a failed reload keeps the old versions serving). Models not loaded here are left to
   * load on demand ({@link loadOnDemand}).
   * @throws TritonError when the store cannot be listed (nothing changes then)
   */
  async syncUploads(): Promise<void> {
    const loaded: { key: ModelKey; stamp: string }[] = [];
    for (const entry of this.lifecycle.models()) {
      const stamp = entry.files?.source === this.uploads ? entry.files.stamp : undefined;
      if (entry.key.namespace !== '' && stamp !== undefined) loaded.push({ key: entry.key, stamp });
    }
    const { gone, changed } = await this.uploads.sync(loaded);
    await Promise.all([
      ...gone.map((key) => this.unload(key, true, { deleteFiles: true })),
      ...changed.map((key) => this.load(key, {}, true).catch(() => undefined)),
    ]);
  }

  /**
   * Load a tenant model that the shared upload store holds and this replica has not loaded (the
   * first request for it on this replica). Concurrent callers share one load; a model the store
   * does not hold is not asked for again within {@link ABSENT_MS}.
   * @returns true when the model was loaded here now
   * @throws TritonError the load's failure (as a load request would get it)
   */
  loadOnDemand(key: ModelKey): Promise<boolean> {
    if (!this.opts.sharedUploads || key.namespace === '') return Promise.resolve(false);
    const entry = this.lifecycle.entry(key);
    if (entry && entry.slots.size > 0) return Promise.resolve(false);
    const id = modelKeyId(key);
    if ((this.absent.get(id) ?? 0) > Date.now()) return Promise.resolve(false);
    let pending = this.onDemand.get(id);
    if (!pending) {
      pending = (async () => {
        if (!(await this.uploads.holds(key))) {
          if (this.absent.size > MAX_ABSENT) this.absent.clear();
          this.absent.set(id, Date.now() + ABSENT_MS);
          return false;
        }
        await this.lifecycle.load(key, {});
        return true;
      })().finally(() => this.onDemand.delete(id));
      this.onDemand.set(id, pending);
    }
    return pending;
  }

  /**
   * Rescan (poll mode): load new models, unload removed ones, reload changed ones (their stamp,
   * {@link CatalogEntry.stamp}, differs from the serving files'). A failed reload keeps the old
   * versions serving. Models serving files no poll follows (uploads) are left alone.
   */
  async poll(): Promise<void> {
    const found = await this.catalog('');
    const changed: ModelKey[] = [];
    for (const [name, listed] of found) {
      const key = operatorKey(name);
      const entry = this.lifecycle.entry(key);
      if (entry?.files && entry.files.stamp === undefined) continue;
      const stamp = await listed.stamp();
      if (!entry || entry.files?.stamp !== stamp) changed.push(key);
    }
    const jobs: Promise<unknown>[] = [this.dependencies.loadAll(changed, Math.max(1, changed.length), () => undefined)];
    for (const entry of this.lifecycle.models('')) {
      if (!entry.files || entry.files.stamp === undefined) continue;
      if (!found.has(entry.key.name)) jobs.push(this.unload(entry.key, true));
    }
    await Promise.all(jobs);
  }

  /**
   * Load or reload a model (repository extension `load`). Resolves once the model is READY.
   * @throws TritonError (UNAVAILABLE in modes none/poll; INVALID_ARG / NOT_FOUND / INTERNAL with the
   *   load failure, the model then being UNAVAILABLE with that reason unless older versions serve).
   */
  load(key: ModelKey, options: LoadOptions = {}, internalCall = false): Promise<void> {
    if (!internalCall && this.opts.controlMode !== 'explicit') return Promise.reject(explicitOnly());
    return this.lifecycle.load(key, options);
  }

  /**
   * Files a load names by digest (Warden's `file_sha256:`), from what `key`'s own namespace holds
   * ({@link UploadSource.resolveDigests}).
   * @throws TritonError UNAVAILABLE in modes none/poll or when uploads are refused; NOT_FOUND for
   *   a digest the namespace does not hold
   */
  resolveDigests(key: ModelKey, digests: ReadonlyMap<string, string>): Promise<{ files: FileOverrides; blobs: Map<string, HeldBlob> }> {
    if (this.opts.controlMode !== 'explicit') return Promise.reject(explicitOnly());
    return this.uploads.resolveDigests(key, digests);
  }

  /**
   * Unload every version of a model (repository extension `unload`). Returns once the model stops
   * taking new requests; in-flight requests finish in the background before finalize.
   * Unloading a model that is not loaded succeeds.
   */
  unload(key: ModelKey, internalCall = false, options: UnloadOptions = {}): Promise<void> {
    if (!internalCall && this.opts.controlMode !== 'explicit') return Promise.reject(explicitOnly());
    return this.lifecycle.unload(key, options);
  }

  /** The loaded ensembles that use `key` in a step, directly or not (see {@link ModelDependencies.dependentsOf}). */
  dependentsOf(key: ModelKey): ModelKey[] {
    return this.dependencies.dependentsOf(key);
  }

  /**
   * The version that serves a request.
   * @param version -1 = highest ready version
   * @throws TritonError NOT_FOUND for an unknown model or version, UNAVAILABLE if not ready.
   */
  getVersion(key: ModelKey, version: number): ModelVersion {
    return this.lifecycle.getVersion(key, version);
  }

  /**
   * Every serving version, for statistics and metadata: of one model (`key`), or of every model
   * in `namespace` (undefined = every namespace).
   */
  servingVersions(scope: { key: ModelKey } | { namespace?: string } = {}): ModelVersion[] {
    return this.lifecycle.serving(scope).map((e) => e.version);
  }

  /** {@link servingVersions} with the key of each version's model. */
  serving(scope: { key: ModelKey } | { namespace?: string } = {}): { key: ModelKey; version: ModelVersion }[] {
    return this.lifecycle.serving(scope);
  }

  /** What a namespace's models hold, for quotas (see {@link ModelLifecycle.usageOf}). */
  usageOf(namespace: string, exclude: string, memoryOf: (config: ModelConfig) => number): { models: number; instances: number; memoryBytes: number } {
    return this.lifecycle.usageOf(namespace, exclude, memoryOf);
  }

  /**
   * Apply the tenants file as it is now ({@link RepositoryManagerOptions.tenants}; DESIGN
   * "Multi-tenancy"): every tenant that left it since the last call, or is listed again under a new
   * creation identity, is removed — its models unloaded (in-flight requests finish) and forgotten,
   * then its stored uploads moved to the store's `.removed/` — so a tenant later created with the
   * same id starts empty. Calls run one at a time. Failures are logged, never thrown.
   * @param onRemove called for each tenant found gone, before its models are unloaded (the server
   *   drops its shared-memory regions and cache entries there)
   * @returns the tenant ids removed
   */
  reconcileTenants(onRemove: (tenant: string) => void = () => undefined): Promise<string[]> {
    const run = this.reconciling.then(async () => {
      const next = new Map(this.opts.tenants?.() ?? []);
      const gone = new Set<string>();
      for (const [id, uid] of this.knownTenants) if (!next.has(id) || next.get(id) !== uid) gone.add(id);
      this.knownTenants = next;
      for (const source of this.sources) for (const id of (await source.strangers?.(next)) ?? []) gone.add(id);
      for (const id of gone) {
        try {
          onRemove(id);
        } catch (e) {
          this.opts.logger.error({ tenant: id, err: e }, 'tenant removal hook failed');
        }
        await this.removeNamespace(id);
      }
      return [...gone].sort();
    });
    this.reconciling = run.catch(() => undefined);
    return run;
  }

  /** Unload and forget every model of tenant `ns`, then move its stored files aside. Logs failures. */
  private async removeNamespace(ns: string): Promise<void> {
    const entries = this.lifecycle.models(ns);
    await Promise.all(entries.map((e) => this.unload(e.key, true).catch(() => undefined)));
    // After each model's retirement and clean-up (queued behind them), forget what it was.
    await Promise.all(entries.map((e) => this.lifecycle.forget(e.key)));
    try {
      let moved: string | undefined;
      for (const source of this.sources) moved = (await source.removeTenant?.(ns)) ?? moved;
      this.opts.logger.info(
        { audit: true, event: 'tenant_removed', tenant: ns, models: entries.map((e) => e.key.name), uploads_moved_to: moved ?? null },
        'tenant removed: models unloaded, uploads moved aside',
      );
    } catch (e) {
      this.opts.logger.error({ tenant: ns, reason: asTritonError(e).message }, "failed to move a removed tenant's uploads aside");
    }
  }

  /** Whether a model is known at all (loaded once, or being loaded). */
  isKnown(key: ModelKey): boolean {
    return this.lifecycle.isKnown(key);
  }

  /** See {@link ModelLifecycle.modelLog}. @throws TritonError NOT_FOUND for a model never loaded */
  modelLog(key: ModelKey): ModelLog {
    return this.lifecycle.modelLog(key);
  }

  /** Whether a model holds its name for lookups (see {@link ModelLifecycle.holdsName}). */
  holdsName(key: ModelKey): boolean {
    return this.lifecycle.holdsName(key);
  }

  /** Strict readiness: every operator model loaded from the repositories is READY (see {@link ModelLifecycle.allReady}). */
  allReady(): boolean {
    return this.lifecycle.allReady();
  }

  /**
   * The repository index (spec §3.1) of one namespace: its models' versions and states, plus every
   * model the sources list there (the operator's repositories, for namespace `''`).
   * @param checkInstances ask each loaded version's instances whether they serve (a native
   *   execute that never returned, Python's is_ready()); false: the lifecycle's states only, as
   *   tritonserver's start-up table shows them
   */
  async index(readyOnly: boolean, namespace = '', checkInstances = true): Promise<IndexEntry[]> {
    const listed = await this.catalog(namespace).catch(() => new Map<string, CatalogEntry>());
    const names = new Set([...listed.keys(), ...this.lifecycle.models(namespace).map((e) => e.key.name)]);
    const out: IndexEntry[] = [];
    for (const name of [...names].sort()) {
      const entry = this.lifecycle.entry({ namespace, name });
      const problem = listed.get(name)?.problem;
      if (problem !== undefined) {
        if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: problem });
        continue;
      }
      if (!entry || entry.slots.size === 0) {
        if (!readyOnly) out.push({ name });
        continue;
      }
      for (const [v, s] of [...entry.slots].sort((a, b) => a[0] - b[0])) {
        if (readyOnly && s.state !== 'READY') continue;
        // A loaded version whose instance became unhealthy (a stuck native execute), or whose
        // model says it is not ready (Python is_ready()), is UNAVAILABLE with the reason.
        const serving = s.version;
        const unhealthy = serving ? (serving.unavailableReason() ?? (checkInstances ? await serving.instanceCheckProblem() : undefined)) : undefined;
        if (readyOnly && unhealthy !== undefined) continue;
        const e: IndexEntry = { name, version: String(v), state: unhealthy !== undefined ? 'UNAVAILABLE' : s.state };
        if (unhealthy !== undefined) e.reason = unhealthy;
        else if (s.reason) e.reason = s.reason;
        out.push(e);
      }
    }
    return out;
  }

  /** Unload everything and finalize backends (graceful shutdown): in-flight requests finish first. */
  async shutdown(drainTimeoutMs?: number): Promise<void> {
    clearTimeout(this.pollTimer);
    clearTimeout(this.syncTimer);
    await this.lifecycle.shutdown(drainTimeoutMs);
    for (const r of this.opts.resolvers) {
      await r.finalizeAll().catch((e) => this.opts.logger.error({ err: e }, 'backend finalize failed'));
    }
  }

  /** The models the sources list in `namespace` (the first source listing a name wins). */
  private async catalog(namespace: string): Promise<Map<string, CatalogEntry>> {
    const out = new Map<string, CatalogEntry>();
    for (const source of this.sources) {
      if (!source.catalog) continue;
      for (const [name, entry] of await source.catalog(namespace)) if (!out.has(name)) out.set(name, entry);
    }
    return out;
  }

  /** Whether some source holds `key` ({@link ModelSource.holds}). */
  private async holds(key: ModelKey): Promise<boolean> {
    for (const source of this.sources) if (await source.holds(key)) return true;
    return false;
  }
}
