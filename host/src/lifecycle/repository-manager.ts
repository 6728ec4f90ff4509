/**
 * The model repository manager: model control modes none / poll / explicit (spec §5.8), the
 * repository extension's index / load / unload (spec §3.1), version policy, and the model state
 * machine `UNAVAILABLE → LOADING → READY → UNLOADING → UNAVAILABLE` with reasons.
 *
 * Operations on one model are serialised; different models load concurrently. A reload builds the
 * new versions completely before swapping them in, so requests in flight on the old ones finish
 * and new requests never see a gap. A failed (re)load leaves what was serving in place.
 */
import type { ResponseCache } from '../cache/response-cache.js';
import type { Logger } from 'pino';
import { loadModelConfig, normalizeModelConfig, validateModelConfig } from '../config/index.js';
import type { ModelConfig } from '../contract/model-config.js';
import { ModelStatistics } from '../metrics/stats.js';
import type { ServerMetrics } from '../metrics/prometheus.js';
import { fingerprintModel, listVersions, scanRepositories, selectVersions, type ModelLocation } from '../repository/scan.js';
import type { FileOverrides } from '../repository/overrides.js';
import { UploadStore, type StoredGeneration, type StoredModel } from '../repository/upload-store.js';
import { ServerAdmission } from './admission.js';
import { instanceCount, type ModelAdmission } from '../contract/admission.js';
import { TritonError, asTritonError, internal, invalidArg, notFound, unavailable } from '../contract/errors.js';
import { backendResolveRequest, modelLoadContext, NO_SERVER } from '../contract/load-context.js';
import type { ExecutionArbiter } from '../scheduler/arbiter.js';
import { unsupportedSchedulerError, type TenantFairness } from '../scheduler/index.js';
import { ModelVersion } from './model-version.js';
import { readConfigFiles, type ConfigFiles } from './config-files.js';
import type { TraceManager } from '../trace/trace-manager.js';
import { modelNameProblem } from '../contract/names.js';
import { buildEnsembleVersion, composingNames, isEnsemble } from '../ensemble/load.js';
import type { Backend, BackendModelInstance, BackendResolveRequest, BackendResolver, InferenceServerHandle, InstanceSpec, ModelKey, ModelOrigin } from '../contract/types.js';

export type ModelState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';
export type ModelControlMode = 'none' | 'poll' | 'explicit';

/** The map key of a {@link ModelKey} (names never contain NUL). */
export const modelKeyId = (k: ModelKey): string => (k.namespace === '' ? k.name : `${k.namespace}\u0000${k.name}`);

/** One entry of `POST /v2/repository/index`. */
export interface IndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

/**
 * State of one version as the index reports it. `unloaded` marks a version that is UNAVAILABLE
 * because it was unloaded on purpose (reason "unloaded"), which readiness does not count as a
 * failure — a real state, not a comparison on the reason text.
 */
interface VersionStatus {
  state: ModelState;
  reason: string;
  unloaded?: true;
}

const UNLOADED: VersionStatus = Object.freeze({ state: 'UNAVAILABLE', reason: 'unloaded', unloaded: true }) as VersionStatus;

interface ModelRecord {
  key: ModelKey;
  serving: Map<number, ModelVersion>;
  status: Map<number, VersionStatus>;
  /** Where the serving versions' files came from. */
  origin?: ModelOrigin;
  /**
   * Where the latest load attempt's files came from: readiness counts a failure only when the
   * operator's repository produced it (an upload's failure is the uploader's problem).
   */
  attemptOrigin?: ModelOrigin;
  /** Set when the serving versions were loaded from an upload (the generation's model directory). */
  overrideDir?: string;
  /** The upload store generation the serving versions were loaded from. */
  uploadGeneration?: number;
  /** Version sets using each upload generation (serving or still draining): kept on disk until 0. */
  generationUsers?: Map<number, number>;
  fingerprint?: string;
  /** The config admitted for the load in progress, and how many versions it loads. */
  admitted?: { config: ModelConfig; versions: number };
  /** Tail of the per-model operation chain. */
  chain: Promise<unknown>;
}

/** Nothing loaded, attempted or stored under this record's name. */
function isEmptyRecord(r: ModelRecord): boolean {
  return (
    r.serving.size === 0 &&
    r.status.size === 0 &&
    r.origin === undefined &&
    r.attemptOrigin === undefined &&
    r.overrideDir === undefined &&
    r.uploadGeneration === undefined &&
    (r.generationUsers?.size ?? 0) === 0 &&
    r.admitted === undefined
  );
}

export interface RepositoryManagerOptions {
  repositories: string[];
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
  /** `--model-load-thread-count`: models loaded at once by startup (default 4, as Triton). */
  loadThreadCount?: number;
  /** `--exit-timeout-secs` in ms: bound on a retiring version's drain (default: none). */
  drainTimeoutMs?: number;
  /** Request tracing (spec §3.5). */
  tracer?: TraceManager;
  /** The response cache (`--cache-config local,size=N`) models with `response_cache { enable: true }` use. */
  responseCache?: ResponseCache;
  /**
   * Multi-tenant mode: the tenants of the tenants file now, id → creation identity (`uid`,
   * undefined for an entry without one); see {@link ModelRepositoryManager.reconcileTenants}.
   * Absent (single-user mode): tenant namespaces are never reconciled.
   */
  tenants?: () => ReadonlyMap<string, string | undefined>;
}

/** What the load API may carry (spec §3.1). */
export interface LoadOptions {
  /** Parsed JSON of `parameters.config`. */
  configOverride?: unknown;
  files?: FileOverrides;
  /** Largest accepted upload (decoded file bytes + config JSON), checked before anything is written. */
  maxUploadBytes?: number;
}

/** What the unload API may carry. */
export interface UnloadOptions {
  /**
   * Also delete the model's stored upload (a tenant's uploads are kept across unloads and restarts
   * otherwise), once its versions have retired.
   */
  deleteFiles?: boolean;
}

export class ModelRepositoryManager {
  private readonly records = new Map<string, ModelRecord>();
  /** Ensemble loads in progress → the models (key ids) they are waiting for. */
  private readonly ensembleWaits = new Map<string, Set<string>>();
  /**
   * Loads a start-up, restore or poll has scheduled but not started (key id → start). An
   * ensemble that names one starts it at once and waits for it, so dependencies load before the
   * ensembles over them in every control mode, as Triton orders loads.
   */
  private readonly deferredLoads = new Map<string, () => Promise<void>>();
  private pollTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The drain bound of the shutdown in progress (what is left of --exit-timeout-secs). */
  private shutdownDrainMs: number | undefined;
  private server: InferenceServerHandle = NO_SERVER;
  private readonly admission: ModelAdmission;
  private uploads: UploadStore | undefined;
  /** The tenants (id → uid) as last reconciled ({@link reconcileTenants}). */
  private knownTenants = new Map<string, string | undefined>();
  /** The reconciliation in progress (they run one at a time). */
  private reconciling: Promise<unknown> = Promise.resolve();
  /** Why uploads are refused (no upload directory, or it is not usable). */
  private uploadsDisabled = 'no upload directory is configured';

  constructor(private readonly opts: RepositoryManagerOptions) {
    this.admission = opts.admission ?? new ServerAdmission();
    this.knownTenants = new Map(opts.tenants?.() ?? []);
    if (opts.uploadDirectory !== undefined) {
      this.uploads = new UploadStore({ root: opts.uploadDirectory });
      this.uploadsDisabled = '';
    }
    opts.metrics.setPendingSource(() =>
      [...this.records.values()].flatMap((r) =>
        [...r.serving.values()].map((v) => ({ model: v.name, version: String(v.version), tenant: r.key.namespace, count: v.pendingCount })),
      ),
    );
  }

  get controlMode(): ModelControlMode {
    return this.opts.controlMode;
  }

  /** The upload store (undefined when uploads are refused). */
  get uploadStore(): UploadStore | undefined {
    return this.uploads;
  }

  /** The data plane backends reach for in-process inference (set once, by the server). */
  attachServer(server: InferenceServerHandle): void {
    this.server = server;
  }

  /**
   * Initial load: everything (modes none / poll, or explicit with `*`), or the `--load-model`
   * names (explicit). Failures leave models UNAVAILABLE; they are returned, not thrown.
   */
  async startup(loadModels: readonly string[]): Promise<{ name: string; error: TritonError }[]> {
    const restoring = this.restoreUploads();
    const found = await scanRepositories(this.opts.repositories);
    const all = this.opts.controlMode !== 'explicit' || loadModels.includes('*');
    const names = all ? [...found.keys()] : [...loadModels];
    const failures: { name: string; error: TritonError }[] = [];
    // At most --model-load-thread-count loads at once (an ensemble's dependencies it starts itself
    // run within its own slot).
    await this.loadDeferred(
      names.map(operatorKey),
      this.opts.loadThreadCount ?? 4,
      (key, e) => failures.push({ name: key.name, error: asTritonError(e) }),
    );
    await restoring;
    return failures;
  }

  /**
   * Load `keys`, at most `concurrency` at once, each through {@link deferredLoads} until it
   * starts: an ensemble among them that names another starts that one first
   * ({@link prepareComposing}), so no ensemble is checked before the models it names have loaded.
   * Failures go to `onError`; this never rejects.
   */
  private async loadDeferred(keys: readonly ModelKey[], concurrency: number, onError: (key: ModelKey, e: unknown) => void): Promise<void> {
    const queue = [...keys];
    for (const key of keys) {
      const id = modelKeyId(key);
      this.deferredLoads.set(id, () => {
        this.deferredLoads.delete(id);
        return this.load(key, {}, true).catch((e: unknown) => onError(key, e));
      });
    }
    const worker = async (): Promise<void> => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        // Undefined once an ensemble started it.
        await this.deferredLoads.get(modelKeyId(key))?.();
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, keys.length)) }, worker));
  }

  /**
   * Start-up of the upload store: remove what a previous process left (staging, uncommitted
   * generations, the operator namespace's ephemeral uploads), then load every tenant model stored
   * there. A model that fails to load stays UNAVAILABLE with the reason; start-up goes on. A store
   * that cannot be used disables uploads (logged) without failing start-up.
   */
  private async restoreUploads(): Promise<void> {
    const store = this.uploads;
    if (!store) return;
    let models: ModelKey[];
    try {
      // Uploads of tenants no longer in the file (or of an earlier creation of a listed id) are
      // moved aside before anything is restored (DESIGN "Multi-tenancy").
      if (this.opts.tenants) {
        for (const ns of await store.strangers(this.knownTenants)) {
          const moved = await store.quarantine(ns);
          this.opts.logger.info({ audit: true, event: 'tenant_uploads_quarantined', tenant: ns, to: moved }, 'uploads of a removed tenant moved aside');
        }
      }
      const report = await store.recover();
      if (report.removed.length > 0) this.opts.logger.info({ removed: report.removed }, 'upload store: removed leftovers of an earlier run');
      models = report.models;
    } catch (e) {
      this.uploads = undefined;
      this.uploadsDisabled = `the upload directory is not usable (${(e as NodeJS.ErrnoException).code ?? 'error'})`;
      this.opts.logger.error({ reason: this.uploadsDisabled }, 'upload store unavailable: uploads are refused');
      return;
    }
    await this.loadDeferred(models, Math.max(1, models.length), (key, e) => {
      this.opts.logger.error({ model: key.name, namespace: key.namespace, reason: asTritonError(e).message }, 'failed to restore uploaded model');
    });
  }

  /** Start polling the repositories every `seconds` (poll mode). */
  startPolling(seconds: number): void {
    const tick = async (): Promise<void> => {
      try {
        await this.poll();
      } catch (e) {
        this.opts.logger.error({ err: e }, 'repository poll failed');
      }
      if (!this.closed) this.pollTimer = setTimeout(tick, seconds * 1000);
    };
    this.pollTimer = setTimeout(tick, seconds * 1000);
  }

  /**
   * Rescan (poll mode): load new models, unload removed ones, reload changed ones. A failed reload
   * keeps the old versions serving.
   */
  async poll(): Promise<void> {
    const found = await scanRepositories(this.opts.repositories);
    const changed: ModelKey[] = [];
    for (const [name, loc] of found) {
      const key = operatorKey(name);
      const rec = this.records.get(modelKeyId(key));
      if (rec?.overrideDir) continue;
      const fp = await fingerprintModel(loc.modelPath);
      if (!rec || rec.fingerprint !== fp) changed.push(key);
    }
    const jobs: Promise<unknown>[] = [this.loadDeferred(changed, Math.max(1, changed.length), () => undefined)];
    for (const rec of this.records.values()) {
      if (rec.key.namespace !== '' || rec.overrideDir || rec.serving.size === 0) continue;
      if (!found.has(rec.key.name)) jobs.push(this.unload(rec.key, true));
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
    if (this.closed) return Promise.reject(unavailable('server is shutting down'));
    return this.serialise(key, async (rec) => {
      try {
        return await this.doLoad(rec, options);
      } finally {
        rec.admitted = undefined;
      }
    });
  }

  /**
   * Unload every version of a model (repository extension `unload`). Returns once the model stops
   * taking new requests; in-flight requests finish in the background before finalize.
   * Unloading a model that is not loaded succeeds.
   */
  unload(key: ModelKey, internalCall = false, options: UnloadOptions = {}): Promise<void> {
    if (!internalCall && this.opts.controlMode !== 'explicit') return Promise.reject(explicitOnly());
    return new Promise<void>((resolveReturned, reject) => {
      this.serialise(key, async (rec) => {
        const retiring = [...rec.serving.values()];
        const retiringGeneration = rec.uploadGeneration;
        rec.serving = new Map();
        rec.overrideDir = undefined;
        rec.uploadGeneration = undefined;
        // Versions that failed to load are unloaded too: the failure no longer counts anywhere.
        for (const [v, st] of rec.status) if (st.state === 'UNAVAILABLE') rec.status.set(v, UNLOADED);
        for (const v of retiring) rec.status.set(v.version, { state: 'UNLOADING', reason: '' });
        rec.fingerprint = undefined;
        resolveReturned();
        await Promise.all(
          retiring.map(async (v) => {
            await v.retire(this.closed && this.shutdownDrainMs !== undefined ? this.shutdownDrainMs : undefined);
            // A newer load may have replaced the status meanwhile; only mark ours.
            if (rec.status.get(v.version)?.state === 'UNLOADING') rec.status.set(v.version, UNLOADED);
          }),
        );
        if (retiringGeneration !== undefined) releaseGeneration(rec, retiringGeneration);
        // An operator upload is ephemeral: gone once its versions retired. A tenant's stays stored
        // (a later load without files serves it again) unless deleting was asked for.
        if (retiringGeneration !== undefined || options.deleteFiles) await this.pruneUploads(rec, options.deleteFiles === true);
      }).catch(reject);
    });
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
      for (const rec of this.records.values()) {
        if (rec.key.namespace !== key.namespace || found.has(modelKeyId(rec.key)) || modelKeyId(rec.key) === modelKeyId(key)) continue;
        const uses = [...rec.serving.values()].some((v) => isEnsemble(v.config) && composingNames(v.config).includes(target.name) && this.resolvesTo(rec.key.namespace, target));
        if (!uses) continue;
        found.set(modelKeyId(rec.key), rec.key);
        queue.push(rec.key);
      }
    }
    return [...found.values()];
  }

  /** Whether step name `target.name` in namespace `namespace` resolves to `target` (see prepareComposing). */
  private resolvesTo(namespace: string, target: ModelKey): boolean {
    if (target.namespace === namespace) return true;
    if (target.namespace !== '') return false;
    const own = this.records.get(modelKeyId({ namespace, name: target.name }));
    return !own || own.serving.size === 0;
  }

  /**
   * The version that serves a request.
   * @param version -1 = highest ready version
   * @throws TritonError NOT_FOUND for an unknown model or version, UNAVAILABLE if not ready.
   */
  getVersion(key: ModelKey, version: number): ModelVersion {
    const name = key.name;
    const rec = this.records.get(modelKeyId(key));
    if (!rec || (rec.serving.size === 0 && rec.status.size === 0)) throw notFound(`Request for unknown model: '${name}' is not found`);
    if (version < 0) {
      let best: ModelVersion | undefined;
      for (const v of rec.serving.values()) if (!best || v.version > best.version) best = v;
      if (!best) throw notFound(`Request for unknown model: '${name}' has no available versions`);
      return best;
    }
    const v = rec.serving.get(version);
    if (v) return v;
    if (rec.status.has(version)) throw unavailable(`Request for unknown model: '${name}' version ${version} is not at ready state`);
    throw notFound(`Request for unknown model: '${name}' version ${version} is not found`);
  }

  /**
   * Every serving version, for statistics and metadata: of one model (`key`), or of every model
   * in `namespace` (undefined = every namespace).
   */
  servingVersions(scope: { key: ModelKey } | { namespace?: string } = {}): ModelVersion[] {
    return this.serving(scope).map((e) => e.version);
  }

  /** {@link servingVersions} with the key of each version's model. */
  serving(scope: { key: ModelKey } | { namespace?: string } = {}): { key: ModelKey; version: ModelVersion }[] {
    let recs: ModelRecord[];
    if ('key' in scope) recs = [this.records.get(modelKeyId(scope.key))].filter((r): r is ModelRecord => !!r);
    else recs = [...this.records.values()].filter((r) => scope.namespace === undefined || r.key.namespace === scope.namespace);
    return recs.flatMap((r) => [...r.serving.values()].sort((a, b) => a.version - b.version).map((version) => ({ key: r.key, version })));
  }

  /**
   * What a namespace's models hold, for quotas: distinct models serving or loading, and the instances and sandbox memory of their serving versions (`memoryOf` gives one
   * instance's bytes from its config). `exclude` = a model name left out (the one being loaded).
   */
  usageOf(namespace: string, exclude: string, memoryOf: (config: ModelConfig) => number): { models: number; instances: number; memoryBytes: number } {
    let models = 0;
    let instances = 0;
    let memoryBytes = 0;
    for (const r of this.records.values()) {
      if (r.key.namespace !== namespace || r.key.name === exclude) continue;
      // Serving or being loaded counts; unloaded or failed models hold nothing.
      if (r.serving.size === 0 && !r.admitted) continue;
      models++;
      const held = r.serving.size > 0 ? [...r.serving.values()].map((v) => ({ config: v.config, versions: 1 })) : [r.admitted!];
      for (const { config, versions } of held) {
        const n = instanceCount(config) * versions;
        instances += n;
        memoryBytes += n * memoryOf(config);
      }
    }
    return { models, instances, memoryBytes };
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
      if (this.uploads) for (const id of await this.uploads.strangers(next).catch(() => [])) gone.add(id);
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

  /** Unload and forget every model of tenant `ns`, then move its stored uploads aside. Logs failures. */
  private async removeNamespace(ns: string): Promise<void> {
    const recs = [...this.records.values()].filter((r) => r.key.namespace === ns);
    await Promise.all(recs.map((r) => this.unload(r.key, true).catch(() => undefined)));
    // After each model's retirement and clean-up (queued behind them), forget what it was: the
    // record then holds nothing and is dropped ({@link serialise}) unless a newer load is queued.
    await Promise.all(
      recs.map((r) =>
        this.serialise(r.key, async (rec) => {
          if (rec.serving.size > 0) return; // loaded again meanwhile (a new tenant of the same id)
          rec.status.clear();
          rec.origin = undefined;
          rec.attemptOrigin = undefined;
          rec.fingerprint = undefined;
        }),
      ),
    );
    try {
      const moved = await this.uploads?.quarantine(ns);
      this.opts.logger.info({ audit: true, event: 'tenant_removed', tenant: ns, models: recs.map((r) => r.key.name), uploads_moved_to: moved ?? null }, 'tenant removed: models unloaded, uploads moved aside');
    } catch (e) {
      this.opts.logger.error({ tenant: ns, reason: asTritonError(e).message }, 'failed to move a removed tenant\'s uploads aside');
    }
  }

  /** Whether a model is known at all (loaded once, or being loaded). */
  isKnown(key: ModelKey): boolean {
    const rec = this.records.get(modelKeyId(key));
    return !!rec && (rec.serving.size > 0 || rec.status.size > 0);
  }

  /**
   * Whether a model holds its name for lookups (DESIGN "Multi-tenancy"): a version serving, being
   * loaded, or failed to load. A model whose versions were all unloaded (or are draining after an
   * unload) does not, so a tenant's unloaded model never hides an operator model shared with the
   * tenant under the same name.
   */
  holdsName(key: ModelKey): boolean {
    const rec = this.records.get(modelKeyId(key));
    if (!rec) return false;
    if (rec.serving.size > 0) return true;
    for (const s of rec.status.values()) if (!s.unloaded && s.state !== 'UNLOADING') return true;
    return false;
  }

  /**
   * Strict readiness (DESIGN "Multi-tenancy"): every operator model (namespace `''`) whose latest
   * load came from the operator's repositories is READY. Versions unloaded on purpose do not
   * count, nor do uploads (load API file overrides) or tenants' models: an upload that fails must
   * never take the replica out of service.
   */
  allReady(): boolean {
    for (const r of this.records.values()) {
      if (r.key.namespace !== '' || r.attemptOrigin?.kind !== 'repository') continue;
      for (const s of r.status.values()) if (s.state !== 'READY' && !s.unloaded) return false;
    }
    return true;
  }

  /**
   * The repository index (spec §3.1) of one namespace: its loaded models, plus (namespace `''`)
   * every model of the operator's repositories.
   */
  async index(readyOnly: boolean, namespace = ''): Promise<IndexEntry[]> {
    const onDisk =
      namespace === '' ? await scanRepositories(this.opts.repositories).catch(() => new Map<string, ModelLocation>()) : new Map<string, ModelLocation>();
    const mine = [...this.records.values()].filter((r) => r.key.namespace === namespace);
    const names = new Set([...onDisk.keys(), ...mine.map((r) => r.key.name)]);
    const out: IndexEntry[] = [];
    for (const name of [...names].sort()) {
      const rec = this.records.get(modelKeyId({ namespace, name }));
      const dup = onDisk.get(name)?.duplicates.length;
      if (dup) {
        if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: 'model appears in two or more repositories' });
        continue;
      }
      if (!rec || rec.status.size === 0) {
        if (!readyOnly) out.push({ name });
        continue;
      }
      for (const [v, s] of [...rec.status].sort((a, b) => a[0] - b[0])) {
        if (readyOnly && s.state !== 'READY') continue;
        // A loaded version whose instance became unhealthy (a stuck native execute), or whose
        // model says it is not ready (Python is_ready()), is UNAVAILABLE with the reason.
        const serving = s.state === 'READY' ? rec.serving.get(v) : undefined;
        const unhealthy = serving ? (serving.unavailableReason() ?? (await serving.instanceCheckProblem())) : undefined;
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
    this.shutdownDrainMs = drainTimeoutMs;
    this.closed = true;
    clearTimeout(this.pollTimer);
    await Promise.all([...this.records.values()].map((r) => this.unload(r.key, true)));
    await Promise.all([...this.records.values()].map((r) => r.chain));
    for (const r of this.opts.resolvers) {
      await r.finalizeAll().catch((e) => this.opts.logger.error({ err: e }, 'backend finalize failed'));
    }
  }

  private serialise<T>(key: ModelKey, op: (rec: ModelRecord) => Promise<T>): Promise<T> {
    const id = modelKeyId(key);
    let rec = this.records.get(id);
    if (!rec) {
      rec = { key: { namespace: key.namespace, name: key.name }, serving: new Map(), status: new Map(), chain: Promise.resolve() };
      this.records.set(id, rec);
    }
    const r = rec;
    const run = r.chain.then(
      () => op(r),
      () => op(r),
    );
    // A record that holds nothing once its last queued operation is done (a failed load or an
    // unload of a name that never existed) is dropped, so the index never grows bogus names.
    const tail: Promise<unknown> = run.catch(() => undefined).then(() => {
      if (r.chain === tail && this.records.get(id) === r && isEmptyRecord(r)) this.records.delete(id);
    });
    r.chain = tail;
    return run;
  }

  private async doLoad(rec: ModelRecord, options: LoadOptions): Promise<void> {
    const { name } = rec.key;
    const log = this.opts.logger.child(rec.key.namespace === '' ? { model: name } : { model: name, namespace: rec.key.namespace });
    // Failures before a load starts are logged like the others (at the default level, with the reason).
    const refuse = (e: TritonError, text?: string): TritonError => {
      log.error({ reason: e.message }, text ?? loadFailureText(name, e.message));
      return e;
    };
    if (options.files && options.files.size > 0 && options.configOverride === undefined) {
      throw refuse(invalidArg(`failed to load '${name}', failed to poll from model repository: model configuration must be provided when file overrides are given`));
    }
    let modelPath: string;
    let overrideDir: string | undefined;
    let origin: ModelOrigin;
    // Loads from the upload store: a new generation (`staged`, committed once it loaded), or a
    // tenant's committed one (its stored config override applies unless a new one is given).
    let staged: StoredGeneration | undefined;
    let fromStore: { generation: number; configOverride: unknown; commit: boolean } | undefined;
    let stored: StoredModel | undefined;
    if (options.files && options.files.size > 0) {
      if (!this.uploads) throw unavailable(`failed to load '${name}': uploads are refused: ${this.uploadsDisabled}`);
      this.admission.precheckUpload?.(rec.key, options.configOverride);
      const owner = this.opts.tenants && rec.key.namespace !== '' ? { uid: this.opts.tenants().get(rec.key.namespace) } : undefined;
      staged = await this.uploads.stage(rec.key, options.files, options.configOverride, { maxUploadBytes: options.maxUploadBytes, owner });
      // The operator namespace's uploads are ephemeral: nothing to commit.
      fromStore = { generation: staged.generation, configOverride: options.configOverride, commit: rec.key.namespace !== '' };
      overrideDir = staged.modelPath;
      modelPath = overrideDir;
      origin = { kind: 'upload', tenant: rec.key.namespace };
    } else if (rec.key.namespace !== '' && (stored = await this.storedUpload(rec, log))) {
      // A tenant's models live in the upload store: a load without files serves the stored one.
      const configOverride = options.configOverride ?? stored.configOverride;
      fromStore = { generation: stored.generation, configOverride, commit: JSON.stringify(configOverride) !== JSON.stringify(stored.configOverride) };
      overrideDir = stored.modelPath;
      modelPath = overrideDir;
      origin = { kind: 'upload', tenant: rec.key.namespace };
    } else {
      // Only the operator's namespace has models on disk here; a tenant's own models come from
      // its uploads.
      const loc = rec.key.namespace === '' ? (await scanRepositories(this.opts.repositories)).get(name) : undefined;
      // The log lines are Triton's (core model_repository_manager.cc Poll); so is the answer, an
      // INTERNAL error (LoadUnloadModel, when the poll found nothing).
      if (!loc) throw refuse(internal(`failed to load '${name}', failed to poll from model repository`), `failed to poll model '${name}': model not found in any model repository.`);
      if (loc.duplicates.length > 0) throw refuse(invalidArg(`failed to load '${name}', model appears in two or more repositories`), `failed to poll model '${name}': not unique across all model repositories`);
      modelPath = loc.modelPath;
      origin = { kind: 'repository', repository: loc.repositoryPath };
    }
    rec.attemptOrigin = origin;
    const fingerprint = overrideDir ? undefined : await fingerprintModel(modelPath);
    let loaded: Map<number, ModelVersion>;
    try {
      loaded = await this.buildVersions(rec, modelPath, origin, fromStore ? { ...options, configOverride: fromStore.configOverride } : options, log);
      if (fromStore?.commit) {
        // Durable from here: a restart serves this generation with this config.
        await this.uploads!.publish(rec.key, fromStore.generation, fromStore.configOverride).catch(async (e: unknown) => {
          await Promise.all([...loaded.values()].map((m) => m.finalize()));
          throw e;
        });
      }
    } catch (e) {
      if (staged) await this.uploads!.discard(staged).catch((d: unknown) => log.error({ err: d }, 'failed to remove a failed upload'));
      const err = overrideDir ? withoutPath(asTritonError(e), overrideDir, name) : asTritonError(e);
      if (rec.serving.size === 0) {
        // Nothing serves: the model (every version it tried) is UNAVAILABLE with the reason.
        if (rec.status.size === 0) rec.status.set(1, { state: 'UNAVAILABLE', reason: err.message });
        for (const [v, s] of rec.status) if (s.state !== 'READY') rec.status.set(v, { state: 'UNAVAILABLE', reason: err.message });
      }
      log.error({ reason: err.message }, loadFailureText(name, err.message));
      throw err;
    }
    // Swap: new versions serve from now on; old ones drain and finalize in the background.
    const old = rec.serving;
    rec.serving = loaded;
    for (const v of rec.status.keys()) if (!loaded.has(v)) rec.status.delete(v);
    for (const v of loaded.keys()) rec.status.set(v, { state: 'READY', reason: '' });
    const oldGeneration = rec.uploadGeneration;
    rec.overrideDir = overrideDir;
    rec.uploadGeneration = fromStore?.generation;
    if (fromStore) retainGeneration(rec, fromStore.generation);
    rec.origin = origin;
    rec.fingerprint = fingerprint;
    void Promise.all([...old.values()].map((v) => v.retire())).then(() => {
      // The old generation's files go once no version set uses them (in this model's turn).
      if (oldGeneration !== undefined && releaseGeneration(rec, oldGeneration)) void this.serialise(rec.key, (r) => this.pruneUploads(r, false));
    });
    log.info({ versions: [...loaded.keys()] }, 'successfully loaded');
  }

  /**
   * A tenant model's committed upload, if any. A damaged one fails the load: the model is then
   * UNAVAILABLE with the reason (unless older versions serve).
   */
  private async storedUpload(rec: ModelRecord, log: Logger): Promise<StoredModel | undefined> {
    try {
      return await this.uploads?.current(rec.key);
    } catch (e) {
      const err = asTritonError(e);
      rec.attemptOrigin = { kind: 'upload', tenant: rec.key.namespace };
      if (rec.serving.size === 0) {
        if (rec.status.size === 0) rec.status.set(1, { state: 'UNAVAILABLE', reason: err.message });
        for (const [v, s] of rec.status) if (s.state !== 'READY') rec.status.set(v, { state: 'UNAVAILABLE', reason: err.message });
      }
      log.error({ reason: err.message }, loadFailureText(rec.key.name, err.message));
      throw err;
    }
  }

  /**
   * Remove the model's upload generations no version set uses (and, `deleteFiles`, its committed
   * tenant upload). Runs in the model's turn. Failures are logged: the files go at the next start.
   */
  private async pruneUploads(rec: ModelRecord, deleteFiles: boolean): Promise<void> {
    const store = this.uploads;
    if (!store) return;
    try {
      if (deleteFiles && rec.key.namespace !== '') await store.forget(rec.key);
      await store.prune(rec.key, new Set(rec.generationUsers?.keys() ?? []), rec.key.namespace === '' ? 'operator' : 'tenant');
    } catch (e) {
      this.opts.logger.error({ model: rec.key.name, namespace: rec.key.namespace, reason: asTritonError(e).message }, 'failed to remove uploaded files');
    }
  }

  /** Load every selected version; all-or-nothing (partial successes are finalized on failure). */
  private async buildVersions(rec: ModelRecord, modelPath: string, origin: ModelOrigin, options: LoadOptions, log: Logger): Promise<Map<number, ModelVersion>> {
    const { name } = rec.key;
    const versions = await listVersions(modelPath);
    const loaded = await loadModelConfig(modelPath, {
      modelName: name,
      autoComplete: this.opts.autoCompleteConfig,
      configName: this.opts.configName,
      versions,
      overrideJson: options.configOverride,
    });
    if (!isEnsemble(loaded)) rejectUnsupported(loaded);
    const selected = selectVersions(loaded.version_policy, versions);
    const config = this.admission.admit(rec.key, origin, loaded, selected.length);
    if (selected.length === 0) throw invalidArg(`failed to load '${name}', no version is available`);
    // Held against the namespace's quotas from now until the load ends (concurrent loads of other
    // models in the namespace see it).
    rec.admitted = { config, versions: selected.length };
    if (isEnsemble(config)) return this.buildEnsembleVersions(rec, config, selected, log);
    const request = backendResolveRequest(config, modelPath, selected[selected.length - 1]!, origin, rec.key);
    const backend = await this.resolveBackend(request);
    const built = new Map<number, ModelVersion>();
    for (const v of selected) if (!rec.serving.has(v)) rec.status.set(v, { state: 'LOADING', reason: '' });
    try {
      for (const version of selected) {
        built.set(version, await this.buildVersion(backend, request, version, log));
      }
    } catch (e) {
      await Promise.all([...built.values()].map((m) => m.finalize()));
      throw e;
    }
    return built;
  }

  /**
   * An ensemble's versions (no backend, no instances): its composing models are made ready first —
   * a load in progress is waited for; in explicit mode a model not loaded is loaded, as Triton
   * loads an ensemble's composing models with it — then each version's plan is checked against
   * them (ensemble/load.ts).
   * @throws TritonError INVALID_ARG "circular dependency between ensembles: ..." or the plan's errors
   */
  private async buildEnsembleVersions(rec: ModelRecord, config: ModelConfig, selected: number[], log: Logger): Promise<Map<number, ModelVersion>> {
    for (const v of selected) if (!rec.serving.has(v)) rec.status.set(v, { state: 'LOADING', reason: '' });
    await this.prepareComposing(rec.key, composingNames(config));
    const built = new Map<number, ModelVersion>();
    for (const version of selected) {
      const t0 = process.hrtime.bigint();
      const { key } = rec;
      const stats = new ModelStatistics(this.opts.metrics.forModel(key.name, version, key.namespace));
      built.set(
        version,
        buildEnsembleVersion({ key, version, config, server: this.server, stats, logger: log.child({ version }), options: { arbiter: this.opts.arbiter, fairness: this.opts.fairness, responseCache: this.opts.responseCache } }),
      );
      this.opts.metrics.setLoadDuration(key.name, version, Number(process.hrtime.bigint() - t0) / 1e9, key.namespace);
    }
    return built;
  }

  /**
   * Wait for (explicit mode: load) the models an ensemble's steps name, in the ensemble's
   * namespace — a tenant's own model, else the operator's (sharing is checked by the data plane
   * afterwards). Waits between ensembles are tracked so that a cycle fails instead of hanging.
   */
  private async prepareComposing(ensemble: ModelKey, names: string[]): Promise<void> {
    const me = modelKeyId(ensemble);
    await Promise.all(
      names.map(async (name) => {
        const candidates: ModelKey[] = [{ namespace: ensemble.namespace, name }];
        if (ensemble.namespace !== '') candidates.push(operatorKey(name));
        for (const key of candidates) {
          const id = modelKeyId(key);
          if (id === me || this.waitsFor(id, me)) {
            throw invalidArg(`circular dependency between ensembles: ${name} -> ... -> ${ensemble.name} -> ${name}`);
          }
          let rec = this.records.get(id);
          const waits = this.ensembleWaits.get(me) ?? new Set<string>();
          this.ensembleWaits.set(me, waits.add(id));
          try {
            // Scheduled by start-up, restore or poll but not started: load it now, in this slot.
            const deferred = this.deferredLoads.get(id);
            if (deferred) await deferred();
            else if (rec) await rec.chain;
            rec = this.records.get(id);
            if (rec && rec.serving.size > 0) return;
            // Explicit mode loads a composing model that is not loaded (a tenant's from its stored
            // uploads; only the operator's namespace loads from the repositories).
            if (this.opts.controlMode === 'explicit' && key.namespace === ensemble.namespace && (await this.loadable(key))) {
              // A dependency that failed is reported by the resolution afterwards ("not
              // available"), except a cycle, which is the real reason.
              const loaded = await this.load(key, {}, true).then(
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
            if (waits.size === 0) this.ensembleWaits.delete(me);
          }
        }
      }),
    );
  }

  /** Whether a load of `key` has files to load: a tenant's stored upload, an operator model on disk. */
  private async loadable(key: ModelKey): Promise<boolean> {
    if (modelNameProblem(key.name) !== undefined) return false;
    if (key.namespace !== '') return (await this.uploads?.current(key).catch(() => undefined)) !== undefined;
    return (await scanRepositories(this.opts.repositories)).has(key.name);
  }

  /** Whether the ensemble load `from` (transitively) waits for the model `to`. */
  private waitsFor(from: string, to: string, seen = new Set<string>()): boolean {
    if (seen.has(from)) return false;
    seen.add(from);
    for (const next of this.ensembleWaits.get(from) ?? []) if (next === to || this.waitsFor(next, to, seen)) return true;
    return false;
  }

  private async buildVersion(backend: Backend, request: BackendResolveRequest, version: number, log: Logger): Promise<ModelVersion> {
    const { config, key } = request;
    const { name } = key;
    const t0 = process.hrtime.bigint();
    const vlog = log.child({ version });
    const backendModel = await backend.loadModel(
      modelLoadContext(request, version, { logger: vlog, autoCompleteConfig: this.opts.autoCompleteConfig, server: this.server }),
    );
    const instances: BackendModelInstance[] = [];
    let finalConfig = config;
    let files: ConfigFiles;
    try {
      if (backendModel.config) {
        finalConfig = normalizeModelConfig(backendModel.config, { modelName: name, gpuCount: 0 });
        validateModelConfig(finalConfig);
        rejectUnsupported(finalConfig);
        finalConfig = this.admission.admit(key, request.origin, finalConfig, 1);
      }
      // Label files and initial states, through the confinement rule (DESIGN "Multi-tenancy").
      files = await readConfigFiles(finalConfig, request.modelPath);
      const specs = instanceSpecs(finalConfig);
      if (backendModel.parallelInstanceLoading) {
        const results = await Promise.allSettled(specs.map((s) => backendModel.createInstance(s)));
        for (const r of results) if (r.status === 'fulfilled') instances.push(r.value);
        const failed = results.find((r) => r.status === 'rejected');
        if (failed) throw (failed as PromiseRejectedResult).reason;
      } else {
        for (const s of specs) instances.push(await backendModel.createInstance(s));
      }
    } catch (e) {
      for (const i of instances) await i.finalize().catch(() => undefined);
      await backendModel.finalize().catch(() => undefined);
      throw e;
    }
    const stats = new ModelStatistics(this.opts.metrics.forModel(name, version, key.namespace));
    this.opts.metrics.setLoadDuration(name, version, Number(process.hrtime.bigint() - t0) / 1e9, key.namespace);
    try {
      return new ModelVersion(name, version, finalConfig, backendModel, instances, stats, vlog, {
        arbiter: this.opts.arbiter,
        fairness: this.opts.fairness,
        tracer: this.opts.tracer,
        responseCache: this.opts.responseCache,
        drainTimeoutMs: this.opts.drainTimeoutMs,
        modelPath: request.modelPath,
        files,
        // Tenants' sequences on an operator model reach its backend under ids of their own.
        tenantSequenceIds: this.opts.tenants !== undefined && key.namespace === '',
      });
    } catch (e) {
      // The scheduler could not be built (e.g. an unreadable sequence initial state).
      for (const i of instances) await i.finalize().catch(() => undefined);
      await backendModel.finalize().catch(() => undefined);
      throw e;
    }
  }

  private async resolveBackend(request: BackendResolveRequest): Promise<Backend> {
    for (const r of this.opts.resolvers) {
      const b = await r.resolve(request);
      if (b) return b;
    }
    const { config } = request;
    throw invalidArg(`unable to find backend library for backend '${config.backend || config.platform}'`);
  }
}

/** One more version set uses upload generation `g` of the model. */
function retainGeneration(rec: ModelRecord, g: number): void {
  rec.generationUsers ??= new Map();
  rec.generationUsers.set(g, (rec.generationUsers.get(g) ?? 0) + 1);
}

/** A version set stopped using generation `g`; true when nothing uses it any more. */
function releaseGeneration(rec: ModelRecord, g: number): boolean {
  const n = (rec.generationUsers?.get(g) ?? 1) - 1;
  if (n > 0) {
    rec.generationUsers!.set(g, n);
    return false;
  }
  rec.generationUsers?.delete(g);
  return true;
}

/**
 * An upload's load error without host paths: the model directory (somewhere in the upload store)
 * is named by the model's name, as the uploader knows it.
 */
function withoutPath(err: TritonError, modelPath: string, name: string): TritonError {
  if (!err.message.includes(modelPath)) return err;
  const message = err.message.split(`${modelPath}/`).join(`${name}/`).split(modelPath).join(name);
  return new TritonError(err.code, message);
}

/** A model of the operator's namespace (the repositories on disk). */
export const operatorKey = (name: string): ModelKey => ({ namespace: '', name });

/** The load / unload API outside explicit mode (Triton's wording). */
function explicitOnly(): TritonError {
  return unavailable('explicit model load / unload is not allowed if polling is enabled');
}

/** Scheduling features Warden does not implement yet make the model UNAVAILABLE with a clear reason. */
function rejectUnsupported(config: ModelConfig): void {
  const e = unsupportedSchedulerError(config);
  if (e) throw e;
}

/** Instance placements from the normalised instance groups (spec §5.5); CPU / MODEL only here. */
export function instanceSpecs(config: ModelConfig): InstanceSpec[] {
  const specs: InstanceSpec[] = [];
  for (const g of config.instance_group) {
    if (g.kind === 'KIND_GPU') throw invalidArg(`instance group ${g.name} of model ${config.name} has kind KIND_GPU but no GPUs are available`);
    const kind = g.kind === 'KIND_MODEL' ? 'KIND_MODEL' : 'KIND_CPU';
    for (let k = 0; k < g.count; k++) {
      specs.push({
        name: `${g.name}_${k}`,
        groupName: g.name,
        kind,
        deviceId: 0,
        hostPolicy: g.host_policy || (kind === 'KIND_MODEL' ? 'model' : 'cpu'),
        passive: g.passive,
      });
    }
  }
  return specs;
}

/**
 * The log line of a failed load, in Triton's words (core model_lifecycle.cc: "failed to load
 * '<model>' ...: <reason>"); a reason that already starts so is the line itself.
 */
function loadFailureText(name: string, reason: string): string {
  return reason.startsWith(`failed to load '${name}'`) ? reason : `failed to load '${name}': ${reason}`;
}
