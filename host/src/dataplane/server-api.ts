/**
 * The data plane: the one protocol-neutral API every frontend (HTTP, gRPC) and every in-process
 * caller (ensembles, BLS, the native `TRITONSERVER_ServerInferAsync`) goes through — health,
 * metadata, readiness, config, statistics (here), inference (inference.ts), the repository
 * extension (repository.ts) and the trace and log settings (settings.ts) (spec §1.3–§1.13, §3.1,
 * §3.2, §3.4, §3.5).
 *
 * Every model-scoped call takes the caller's {@link Principal} first: model-names.ts alone turns a
 * (principal, model name) pair into a model key, so tenant scoping cannot be forgotten at a call
 * site. Frontends map TritonError codes to their transport (HTTP status, gRPC code) themselves.
 */
import { backendApiExtension, SUPPORTED_BACKEND_API_VERSIONS } from '../contract/backend-api.js';
import { TritonError } from '../contract/errors.js';
import { tensorDataType } from '../contract/datatypes.js';
import type { ModelConfig } from '../contract/model-config.js';
import type { PathScrubber } from '../contract/public-errors.js';
import type {
  CancellationSignal,
  InferenceRequestInit,
  InferenceServerHandle,
  ModelKey,
  Principal,
  ResponseSender,
  SubmittedRequest,
} from '../contract/types.js';
import type { EnsembleLimits } from '../ensemble/budget.js';
import type { ModelLogRead } from '../contract/model-log.js';
import type { ModelVersion } from '../lifecycle/model-version.js';
import { type ChatTemplateSource, chatTemplateSource } from '../lifecycle/chat-template.js';
import type { IndexEntry, LoadOptions, ModelRepositoryManager } from '../lifecycle/repository-manager.js';
import { TRITON_PROTOCOL_VERSION } from '../project.js';
import type { TenantRequestRate, TenantUploadRate } from '../tenancy/request-rate.js';
import type { TenantConfig } from '../tenancy/types.js';
import type { TraceManager, TraceSettingsJson } from '../trace/trace-manager.js';
import { Inference, type InferenceTarget } from './inference.js';
import type { LogSettings, LogSettingsStore } from './log-settings.js';
import { ModelNames, type TenantDirectory } from './model-names.js';
import { RepositoryControl } from './repository.js';
import { ServerSettings } from './settings.js';
import type { Logger } from 'pino';
import { modelNotAvailable } from './inference.errors.js';

/** tritonserver's default `--id`: the `name` of server metadata (spec §1.4), which tools check. */
export const DEFAULT_SERVER_ID = 'triton';
export { TRITON_PROTOCOL_VERSION };

/**
 * Protocol extensions `GET /v2` lists (spec §1.4), in Triton's order: every one that is on.
 * `system_shared_memory` only with client shared memory allowed (`--allow-client-shm`);
 * `cuda_shared_memory` never (no GPU memory path: register fails, as on a CPU-only Triton);
 * `generate` (Warden serves Triton's generate extension); then Warden's own: one
 * `sandboxed_backend(warden:backend@X)` per WIT version a sandboxed backend may be built against
 * (contract/backend-api.ts; wit/README.md "Compatibility").
 */
export function serverExtensions(opts: { clientShm: boolean }): string[] {
  return [
    'classification',
    'sequence',
    'model_repository',
    'model_repository(unload_dependents)',
    'schedule_policy',
    'model_configuration',
    ...(opts.clientShm ? ['system_shared_memory'] : []),
    'binary_tensor_data',
    'parameters',
    'statistics',
    'trace',
    'logging',
    'generate',
    ...SUPPORTED_BACKEND_API_VERSIONS.map(backendApiExtension),
  ];
}

/** Server metadata (spec §1.4). */
export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

/** Tensor metadata: shape with -1 for the batch dim of a batching model (spec §1.5). */
export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

/** Model metadata (spec §1.5). */
export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface ServerApiOptions {
  /** `--strict-readiness`: ready = live and every operator model ready. */
  strictReadiness: boolean;
  /** False once shutdown started (ready then fails). */
  accepting(): boolean;
  logSettings: LogSettingsStore;
  /** Rewrites absolute host paths out of client-facing error text. */
  scrubber: PathScrubber;
  /** The tenants (multi-tenant mode); absent = single-user mode. */
  tenants?: TenantDirectory;
  /** Where audit lines go (loads, unloads, deletes). */
  logger?: Logger;
  /** `--max-upload-bytes`: decoded size of one load request's files, any caller. */
  maxUploadBytes?: number;
  /**
   * Server-wide caps of one ensemble request (a tenant's quotas may lower them; ensemble/budget.ts);
   * undefined = none (single-user mode without `--ensemble-max-*` flags).
   */
  ensembleLimits?: EnsembleLimits;
  /** `--id`: the server's name in its metadata (default `triton`, as tritonserver). */
  serverId?: string;
  /** `--allow-client-shm`: the `system_shared_memory` extension is listed. */
  clientShm?: boolean;
  /** Request tracing (trace extension, spec §3.5). */
  trace?: TraceManager;
}

export class ServerApi implements InferenceServerHandle {
  private readonly names: ModelNames;
  private readonly inference: Inference;
  private readonly repository: RepositoryControl;
  private readonly settings: ServerSettings;

  constructor(
    private readonly manager: ModelRepositoryManager,
    private readonly opts: ServerApiOptions,
  ) {
    this.names = new ModelNames(manager, opts.tenants);
    this.inference = new Inference(this.names, opts.ensembleLimits);
    this.repository = new RepositoryControl(manager, this.names, opts.scrubber, opts.maxUploadBytes, opts.logger);
    this.settings = new ServerSettings(manager, this.names, opts.logSettings, opts.trace);
  }

  /**
   * Each tenant's request rate: the one count every frontend admits requests with (HTTP routes,
   * the `/infer` fast path, gRPC), and that an ensemble request is charged its composing
   * inferences on.
   */
  get requestRate(): TenantRequestRate {
    return this.inference.requestRate;
  }

  /** Each tenant's load-request bytes per minute, charged by the frontends as requests arrive. */
  get uploadRate(): TenantUploadRate {
    return this.repository.uploadRate;
  }

  /** The tenants-file entry of a tenant's principal (undefined for the operator and in single-user mode). */
  tenantConfig(principal: Principal): TenantConfig | undefined {
    return this.names.tenantOf(principal);
  }

  /**
   * The form of any error a frontend is about to send to a client: a TritonError (anything else
   * is INTERNAL) whose message names no absolute host path. Every frontend sends errors through
   * this.
   */
  publicError(e: unknown): TritonError {
    return this.opts.scrubber.publicError(e);
  }

  // ---- health and metadata (spec §1.3, §1.4) ----

  /** `GET /v2/health/live`: the process is up. */
  isLive(): boolean {
    return true;
  }

  /** `GET /v2/health/ready`: accepting, and (strict) every operator model that was asked to load is ready. */
  isReady(): boolean {
    return this.opts.accepting() && (!this.opts.strictReadiness || this.manager.allReady());
  }

  serverMetadata(): ServerMetadata {
    return {
      name: this.opts.serverId ?? DEFAULT_SERVER_ID,
      version: TRITON_PROTOCOL_VERSION,
      extensions: serverExtensions({ clientShm: this.opts.clientShm === true }),
    };
  }

  // ---- per model (spec §1.5–§1.7, §3.2) ----

  /** @throws TritonError NOT_FOUND (unknown model or version), UNAVAILABLE (version not ready) */
  modelMetadata(principal: Principal, name: string, version: number): ModelMetadata {
    const mv = this.names.version(principal, name, version);
    const versions = version >= 0 ? [String(version)] : this.manager.servingVersions({ key: this.names.keyOf(principal, name) }).map((v) => String(v.version));
    const c = mv.config;
    const meta = (t: ModelConfig['input'][number] | ModelConfig['output'][number]): TensorMetadata => ({
      name: t.name,
      datatype: tensorDataType(t),
      shape: c.max_batch_size >= 1 ? [-1, ...t.dims] : [...t.dims],
    });
    return { name, versions, platform: c.platform || c.backend, inputs: c.input.map(meta), outputs: c.output.map(meta) };
  }

  /**
   * Whether a model version is ready (`version` -1 = any ready version). A model the principal
   * does not know is not ready, with no error, as Triton's core (`InferenceServer::ModelIsReady`;
   * HTTP answers 400 "Model version not ready" either way, so a tenant cannot tell another
   * tenant's model from a missing one).
   */
  async isModelReady(principal: Principal, name: string, version: number): Promise<boolean> {
    const key = this.names.keyOf(principal, name);
    if (!this.manager.isKnown(key)) return false;
    try {
      return (await this.manager.getVersion(key, version).readinessProblem()) === undefined;
    } catch (e) {
      // The model is known: a missing or unready version is "not ready", not an unknown model.
      if (e instanceof TritonError && (e.code === 'NOT_FOUND' || e.code === 'UNAVAILABLE')) return false;
      throw e;
    }
  }

  /** The normalised config of the serving version. @throws TritonError NOT_FOUND / UNAVAILABLE */
  modelConfig(principal: Principal, name: string, version: number): ModelConfig {
    return this.names.version(principal, name, version).config;
  }

  /**
   * Statistics JSON (spec §3.2) of every model the principal sees, or of one model / version.
   * @throws TritonError INVALID_ARG "requested model '<m>' is not available" for a model with no
   *   serving version (Triton's answer)
   */
  modelStatistics(principal: Principal, name?: string, version = -1): { model_stats: unknown[] } {
    let entries: { key: ModelKey; version: ModelVersion }[];
    if (name === undefined) {
      // The admin sees every namespace; a tenant its own models (a shared model's statistics
      // would show other tenants' traffic).
      entries = this.manager.serving(principal.role === 'admin' && principal.namespace === '' ? {} : { namespace: principal.namespace });
    } else {
      const key = this.names.keyOf(principal, name);
      const visible = principal.role === 'admin' || key.namespace === principal.namespace;
      entries = visible ? this.manager.serving({ key }).filter((e) => version < 0 || e.version.version === version) : [];
      if (entries.length === 0) throw modelNotAvailable(name);
    }
    // Multi-tenant mode: each entry says whose model it is (two tenants may both have `m`).
    const tenantField = this.names.multiTenant;
    return {
      model_stats: entries.map(({ key, version: v }) => {
        // Warden's addition: requests accepted and not yet answered (queued or executing), so a
        // stuck backend's requests show.
        const json = { ...v.stats.toJson(v.name, v.version), pending_count: v.inflightCount };
        if (!tenantField) return json;
        // The OpenAI-compatible requests' tokens by the caller's tenant (docs/openai.md).
        const tokens = v.stats.tokenUsage();
        return { ...json, tenant: key.namespace, ...(tokens ? { token_usage: { ...tokens.total, tenants: tokens.byTenant } } : {}) };
      }),
    };
  }

  /**
   * The model's log (metrics/model-log.ts): the lines its backend wrote (a sandboxed guest's `log`
   * calls and stdout / stderr, and the host's notes about them), after `since` (a seq; 0 = all
   * kept), of one version or all (`version` -1). Readable by the model's tenant and by admins,
   * never through a shared operator model (its log would show other tenants' traffic): a tenant
   * always means its own namespace here, so another tenant's model, like an operator's, is an
   * unknown one (DESIGN "Multi-tenancy").
   * @throws TritonError NOT_FOUND "Request for unknown model: '<m>' is not found" for a model
   *   never loaded in the caller's scope
   */
  modelLog(principal: Principal, name: string, version = -1, since = 0): ModelLogRead & { model: string } {
    const key = principal.role === 'admin' ? this.names.keyOf(principal, name) : { namespace: principal.namespace, name };
    const read = this.manager.modelLog(key).read({ since, version: version < 0 ? undefined : version });
    return { model: name, ...read };
  }

  // ---- inference (inference.ts) ----

  /**
   * Load `name` for `principal` when it is a tenant model of the shared upload store that this
   * replica does not serve (the first request for it here). Operator models never load this way.
   * @returns true when it was loaded now
   * @throws TritonError the load's failure, public form
   */
  async loadOnDemand(principal: Principal, name: string): Promise<boolean> {
    if (principal.namespace === '' || principal.within) return false;
    try {
      return await this.manager.loadOnDemand({ namespace: principal.namespace, name });
    } catch (e) {
      throw this.publicError(e);
    }
  }

  /** See {@link Inference.inferenceTarget}. @throws TritonError NOT_FOUND / UNAVAILABLE */
  inferenceTarget(principal: Principal, name: string, version: number): InferenceTarget {
    return this.inference.inferenceTarget(principal, name, version);
  }

  /**
   * The chat template source the serving version of `name` ships (lifecycle/chat-template.ts), or
   * undefined; for the OpenAI-compatible chat endpoint.
   * @throws TritonError NOT_FOUND / UNAVAILABLE (model), INVALID_ARG (a template file the confinement rule refuses)
   */
  chatTemplateSource(principal: Principal, name: string, version: number): Promise<ChatTemplateSource | undefined> {
    return chatTemplateSource(this.names.version(principal, name, version));
  }

  /**
   * Count the tokens of an OpenAI-compatible request of `principal` in the statistics of the
   * version that served it (`token_usage`, docs/openai.md); a version no longer served is not counted.
   */
  recordTokenUsage(principal: Principal, name: string, version: number, promptTokens: number, completionTokens: number): void {
    let mv: ModelVersion;
    try {
      mv = this.names.version(principal, name, version);
    } catch {
      return;
    }
    mv.stats.recordTokenUsage(principal.namespace, promptTokens, completionTokens);
  }

  /** See {@link Inference.infer}. @throws TritonError synchronously; nothing was queued */
  infer(
    principal: Principal,
    name: string,
    version: number,
    init: InferenceRequestInit,
    sender: ResponseSender,
    signal?: CancellationSignal,
  ): SubmittedRequest {
    return this.inference.infer(principal, name, version, init, sender, signal);
  }

  // ---- repository extension (repository.ts) ----

  /** See {@link RepositoryControl.repositoryIndex}. */
  repositoryIndex(principal: Principal, readyOnly: boolean): Promise<IndexEntry[]> {
    return this.repository.repositoryIndex(principal, readyOnly);
  }

  /** See {@link RepositoryControl.loadModel}. */
  loadModel(principal: Principal, name: string, options: LoadOptions): Promise<void> {
    return this.repository.loadModel(principal, name, options);
  }

  /** See {@link RepositoryControl.unloadModel}. */
  unloadModel(principal: Principal, name: string, options: { deleteFiles?: boolean; unloadDependents?: boolean } = {}): Promise<void> {
    return this.repository.unloadModel(principal, name, options);
  }

  // ---- trace and logging extensions (settings.ts) ----

  /** See {@link ServerSettings.traceSettings}. */
  traceSettings(principal: Principal, model?: string): TraceSettingsJson {
    return this.settings.traceSettings(principal, model);
  }

  /** See {@link ServerSettings.updateTraceSettings}. */
  updateTraceSettings(principal: Principal, model: string | undefined, body: unknown): TraceSettingsJson {
    return this.settings.updateTraceSettings(principal, model, body);
  }

  /** See {@link ServerSettings.logSettings}. */
  logSettings(principal: Principal): LogSettings {
    return this.settings.logSettings(principal);
  }

  /** See {@link ServerSettings.updateLogSettings}. */
  updateLogSettings(principal: Principal, body: unknown): LogSettings {
    return this.settings.updateLogSettings(principal, body);
  }
}
