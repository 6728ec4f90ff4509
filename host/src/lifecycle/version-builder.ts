/**
 * Building a model's versions from its files (Triton's `ModelLifeCycle::CreateModel`): the
 * config (`config.pbtxt`, the override, auto-complete), the version policy (spec §5.3), admission
 * (server caps, what an upload may name, tenants' quotas), the backend (the first resolver that
 * takes the model, spec §6.9), each version's backend model and instances (spec §5.5), and the
 * {@link ModelVersion} serving them. An ensemble has no backend: its plan is compiled against the
 * composing models once they are ready (`ensemble/load.ts`).
 *
 * All or nothing: a failure finalizes what was built and is thrown. The builder keeps no state of
 * its own; the lifecycle records what it reports ({@link BuildProgress}).
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { loadModelConfig, normalizeModelConfig, validateModelConfig } from '../config/index.js';
import type { ModelAdmission } from '../contract/admission.js';
import { backendResolveRequest, modelLoadContext, ownerPrincipal } from '../contract/load-context.js';
import type { ModelConfig } from '../contract/model-config.js';
import type {
  Backend,
  BackendModelInstance,
  BackendResolveRequest,
  BackendResolver,
  InferenceServerHandle,
  InstanceSpec,
  ModelKey,
} from '../contract/types.js';
import type { ResponseCacheStore } from '../cache/response-cache-store.js';
import { blsGrants } from '../contract/bls.js';
import { compileEnsemble, composingNames, isEnsemble } from '../ensemble/load.js';
import type { ServerMetrics } from '../metrics/prometheus.js';
import type { ModelLog } from '../metrics/model-log.js';
import { ModelStatistics } from '../metrics/stats.js';
import { listVersions, selectVersions } from '../repository/scan.js';
import type { ExecutionArbiter, TenantFairness } from '../scheduler/index.js';
import type { TraceManager } from '../trace/trace-manager.js';
import { readConfigFiles, type ConfigFiles } from './config-files.js';
import type { ModelFiles } from './model-source.js';
import { ModelVersion } from './model-version.js';
import * as lifecycleErrors from './lifecycle.errors.js';

export interface VersionBuilderOptions {
  resolvers: readonly BackendResolver[];
  autoCompleteConfig: boolean;
  /** `--model-config-name`. */
  configName?: string;
  admission: ModelAdmission;
  metrics: ServerMetrics;
  arbiter?: ExecutionArbiter;
  fairness?: TenantFairness;
  tracer?: TraceManager;
  responseCache?: ResponseCacheStore;
  /** `--exit-timeout-secs` in ms: bound on a retiring version's drain. */
  drainTimeoutMs?: number;
  /** Multi-tenant mode: an operator model's sequences reach its backend under per-tenant ids. */
  multiTenant: boolean;
  /** The data plane backends and ensembles reach (attached after construction). */
  server: () => InferenceServerHandle;
  /**
   * Make the models an ensemble's steps name ready before its plan is compiled (`dependencies.ts`).
   * @throws TritonError INVALID_ARG "circular dependency between ensembles: ..."
   */
  prepareSteps(ensemble: ModelKey, names: readonly string[]): Promise<void>;
}

/** What a build reports to the lifecycle's record while it runs. */
export interface BuildProgress {
  /** Admission passed: `config` is held against the namespace's quotas for `versions` versions until the load ends. */
  admitted(config: ModelConfig, versions: number): void;
  /** These versions are being built (LOADING, except those serving now). */
  loading(versions: readonly number[]): void;
  /** The model's log, each version's backend writes to it (contract/model-log.ts). */
  readonly modelLog?: ModelLog;
}

export class VersionBuilder {
  constructor(private readonly opts: VersionBuilderOptions) {}

  /**
   * Load every version the policy selects from `files`; all or nothing (what was built is
   * finalized on failure).
   * @throws TritonError the config's, the admission's, the backend's errors; INVALID_ARG "failed
   *   to load '<m>', no version is available" and "unable to find backend library for backend '<b>'"
   */
  async build(key: ModelKey, files: ModelFiles, progress: BuildProgress, log: Logger): Promise<Map<number, ModelVersion>> {
    const { name } = key;
    const { modelPath, origin } = files;
    const versions = await listVersions(modelPath);
    const loaded = await loadModelConfig(modelPath, {
      modelName: name,
      autoComplete: this.opts.autoCompleteConfig,
      configName: this.opts.configName,
      versions,
      overrideJson: files.configOverride,
    });
    const selected = selectVersions(loaded.version_policy, versions);
    const config = this.opts.admission.admit(key, origin, loaded, selected.length);
    if (selected.length === 0) throw lifecycleErrors.noVersionAvailable(name);
    // Held against the namespace's quotas from now until the load ends (concurrent loads of other
    // models in the namespace see it).
    progress.admitted(config, selected.length);
    if (isEnsemble(config)) return this.buildEnsemble(key, config, selected, progress, log);
    // A backend that calls other models (contract/bls.ts) loads after them, as an ensemble after its steps.
    const callees = [...blsGrants(config).keys()];
    if (callees.length > 0) await this.opts.prepareSteps(key, callees);
    const request = backendResolveRequest(config, modelPath, selected[selected.length - 1]!, origin, key);
    const backend = await this.resolveBackend(request);
    const built = new Map<number, ModelVersion>();
    progress.loading(selected);
    try {
      for (const version of selected) {
        built.set(version, await this.buildVersion(backend, request, version, log, files.stamp, progress.modelLog));
      }
    } catch (e) {
      await Promise.all([...built.values()].map((m) => m.finalize()));
      throw e;
    }
    return built;
  }

  /**
   * An ensemble's versions (no backend, no instances): its composing models are made ready first
   * ({@link VersionBuilderOptions.prepareSteps}), then each version's plan is compiled against them
   * and served by the scheduler's ensemble kind.
   * @throws TritonError INVALID_ARG "circular dependency between ensembles: ..." or the plan's errors
   */
  private async buildEnsemble(
    key: ModelKey,
    config: ModelConfig,
    selected: number[],
    progress: BuildProgress,
    log: Logger,
  ): Promise<Map<number, ModelVersion>> {
    progress.loading(selected);
    await this.opts.prepareSteps(key, composingNames(config));
    const built = new Map<number, ModelVersion>();
    const server = this.opts.server();
    for (const version of selected) {
      const t0 = process.hrtime.bigint();
      const stats = new ModelStatistics(this.opts.metrics.forModel(key.name, version, key.namespace));
      const compiled = compileEnsemble(key, config, server);
      built.set(
        version,
        new ModelVersion(key.name, version, compiled.config, undefined, [], stats, log.child({ version }), {
          arbiter: this.opts.arbiter,
          fairness: this.opts.fairness,
          responseCache: this.opts.responseCache,
          // Traced as any model's requests; its steps' traces are the request's children.
          tracer: this.opts.tracer,
          ensemble: { plan: compiled.plan, server, principal: ownerPrincipal(key) },
        }),
      );
      this.opts.metrics.setLoadDuration(key.name, version, Number(process.hrtime.bigint() - t0) / 1e9, key.namespace);
    }
    return built;
  }

  /** @param stamp the files' stamp ({@link ModelFiles.stamp}): the shared response cache's scope with the final config */
  private async buildVersion(
    backend: Backend,
    request: BackendResolveRequest,
    version: number,
    log: Logger,
    stamp: string | undefined,
    modelLog: ModelLog | undefined,
  ): Promise<ModelVersion> {
    const { config, key } = request;
    const { name } = key;
    const t0 = process.hrtime.bigint();
    const vlog = log.child({ version });
    const backendModel = await backend.loadModel(
      modelLoadContext(request, version, {
        logger: vlog,
        autoCompleteConfig: this.opts.autoCompleteConfig,
        server: this.opts.server(),
        modelLog: modelLog?.forVersion(version),
      }),
    );
    const instances: BackendModelInstance[] = [];
    let finalConfig = config;
    let files: ConfigFiles;
    try {
      if (backendModel.config) {
        finalConfig = normalizeModelConfig(backendModel.config, { modelName: name, gpuCount: 0 });
        validateModelConfig(finalConfig);
        // The model was resolved to a backend: the backend cannot make it an ensemble.
        if (isEnsemble(finalConfig)) throw lifecycleErrors.backendMadeEnsemble(name);
        finalConfig = this.opts.admission.admit(key, request.origin, finalConfig, 1);
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
        cacheScope: stamp === undefined ? undefined : sharedCacheScope(stamp, finalConfig),
        drainTimeoutMs: this.opts.drainTimeoutMs,
        modelPath: request.modelPath,
        files,
        // Tenants' sequences on an operator model reach its backend under ids of their own.
        tenantSequenceIds: this.opts.multiTenant && key.namespace === '',
      });
    } catch (e) {
      // The scheduler could not be built (e.g. an unreadable sequence initial state).
      for (const i of instances) await i.finalize().catch(() => undefined);
      await backendModel.finalize().catch(() => undefined);
      throw e;
    }
  }

  /** The first resolver's backend for the model (spec §6.9). */
  private async resolveBackend(request: BackendResolveRequest): Promise<Backend> {
    for (const r of this.opts.resolvers) {
      const b = await r.resolve(request);
      if (b) return b;
    }
    const { config } = request;
    throw lifecycleErrors.backendNotFound(config.backend || config.platform);
  }
}

/**
 * The response cache keys' scope for a cache shared by replicas (Redis): a hash of the model's
 * files stamp (names, sizes, modification times of every file: `repository/scan.ts#fingerprintModel`,
 * or an object store's listing) and the normalised config the version serves. Replicas that serve
 * the same files and config share entries; a reload with changed files or config gets a new scope.
 *
 * Where the files have no stamp (uploads) and for ensembles (whose answers also depend on their
 * steps' files), the version keeps a scope of its own in this process instead
 * (`ModelVersionOptions.cacheScope` undefined): correct, but not shared across replicas.
 */
export function sharedCacheScope(stamp: string, config: ModelConfig): string {
  const json = JSON.stringify(config, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return createHash('sha256').update(stamp).update('\u0000').update(json).digest('hex');
}

/** Instance placements from the normalised instance groups (spec §5.5); CPU / MODEL only here. */
export function instanceSpecs(config: ModelConfig): InstanceSpec[] {
  const specs: InstanceSpec[] = [];
  for (const g of config.instance_group) {
    if (g.kind === 'KIND_GPU') throw lifecycleErrors.gpuUnavailable(g.name, config.name);
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
