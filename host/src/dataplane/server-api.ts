/**
 * The data plane: the one protocol-neutral API every frontend (HTTP today, gRPC later) and every
 * in-process caller (ensembles, BLS, the native `TRITONSERVER_ServerInferAsync`) goes through —
 * health, metadata, readiness, config, statistics, inference, the repository extension and the
 * log settings (spec §1.3–§1.13, §3.1, §3.2, §3.4).
 *
 * Every model-scoped call takes the caller's {@link Principal} first: this module alone turns a
 * (principal, model name) pair into a model key, so tenant scoping cannot be forgotten at a call
 * site. Frontends map TritonError codes to their transport (HTTP status, gRPC code) themselves.
 */
import type { ModelConfig } from '../contract/model-config.js';
import { AccessError, TritonError, cancelled, forbidden, invalidArg } from '../contract/errors.js';
import { ClassificationSender, checkClassification } from './classification.js';
import type { TraceManager, TraceSettingsJson } from '../trace/trace-manager.js';
import { type LogSettings, LogSettingsStore } from './log-settings.js';
import { modelNameProblem } from '../contract/names.js';
import type { PathScrubber } from '../contract/public-errors.js';
import { webcrypto } from 'node:crypto';
import type { Logger } from 'pino';
import { auditEvent } from '../tenancy/audit.js';
import { TenantRequestRate, TenantUploadRate } from '../tenancy/request-rate.js';
import { TRITON_PROTOCOL_VERSION } from '../project.js';
import { EnsembleBudget, ensembleLimitsFor, type EnsembleLimits } from '../ensemble/budget.js';
import type { TenantConfig } from '../tenancy/types.js';
import { TENANT_ID_PATTERN } from '../contract/names.js';
import type { ModelVersion } from '../lifecycle/model-version.js';
import type { IndexEntry, LoadOptions, ModelRepositoryManager } from '../lifecycle/repository-manager.js';
import { tensorDataType } from '../contract/datatypes.js';
import type {
  CancellationSignal,
  InferenceRequest,
  InferenceRequestInit,
  InferenceResponse,
  InferenceServerHandle,
  ModelKey,
  Principal,
  ResponseSender,
  SubmittedRequest,
  Tensor,
} from '../contract/types.js';

/** tritonserver's default `--id`: the `name` of server metadata (spec §1.4), which tools check. */
export const DEFAULT_SERVER_ID = 'triton';
export { TRITON_PROTOCOL_VERSION };

/**
 * Protocol extensions `GET /v2` lists (spec §1.4), in Triton's order: every one that is on.
 * `system_shared_memory` only with client shared memory allowed (`--allow-client-shm`);
 * `cuda_shared_memory` never (no GPU memory path: register fails, as on a CPU-only Triton);
 * `generate` (Warden serves Triton's generate extension) last.
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

/** Facts about the version that would serve a request, for decoding it (config, decoupled). */
export interface InferenceTarget {
  readonly name: string;
  /** The version that serves now (-1 resolved to the highest ready version). */
  readonly version: number;
  readonly config: ModelConfig;
  readonly decoupled: boolean;
  /** An ensemble's least cost per request (composing inferences, nesting depth); undefined for any other model. */
  readonly ensemble?: { readonly inferences: number; readonly depth: number };
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

/**
 * A model name inside an error message: quoted as Triton does ('name'), with control characters
 * and quotes escaped so a hostile name cannot forge log lines or message text.
 */
function quoteName(name: string): string {
  return `'${JSON.stringify(name).slice(1, -1).replace(/'/g, "\\'")}'`;
}

/** Release the memory owners of tensors that carry one (see {@link Tensor.owner}). */
export function releaseTensors(tensors: readonly Tensor[]): void {
  for (const t of tensors) t.owner?.release();
}

/**
 * Wraps the caller's sender so that the data plane's per-request duties run exactly once, at the
 * final response: detach from the caller's cancellation signal, give back the tenant's in-flight
 * slot, release request inputs the host does not own. While the request is pending, an abort of
 * the signal marks it cancelled.
 */
class RequestGuard implements ResponseSender {
  private done = false;
  private request: InferenceRequest | undefined;
  constructor(
    private readonly downstream: ResponseSender,
    private readonly inputs: readonly Tensor[],
    private readonly signal: CancellationSignal | undefined,
    private readonly release: (() => void) | undefined,
  ) {}
  /** The signal's listener (one per request). */
  private readonly onAbort = (): void => {
    if (this.request) this.request.cancelled = true;
  };
  /** Called once the request is queued (a backend may already have answered inside submit). */
  attach(request: InferenceRequest): void {
    this.request = request;
    if (!this.done && this.signal) this.signal.addEventListener('abort', this.onAbort, { once: true });
  }
  send(response: InferenceResponse | null, final: boolean): void {
    this.downstream.send(response, final);
    if (final) this.finish();
  }
  sendError(error: TritonError, final: boolean): void {
    this.downstream.sendError(error, final);
    if (final) this.finish();
  }
  private finish(): void {
    if (this.done) return;
    this.done = true;
    if (this.request && this.signal) this.signal.removeEventListener('abort', this.onAbort);
    this.release?.();
    releaseTensors(this.inputs);
  }
}

/** The tenants as the data plane reads them (the registry of host/src/tenancy, reloaded live). */
export interface TenantDirectory {
  get(id: string): TenantConfig | undefined;
}

/** `<tenant>/<model>`: how an admin addresses a tenant's model. */
const ADMIN_QUALIFIED = new RegExp(`^(${TENANT_ID_PATTERN})/(.+)$`);

export class ServerApi implements InferenceServerHandle {
  /** Inference requests of each tenant queued or executing (for `max_inflight`). */
  private readonly inflight = new Map<string, number>();
  /**
   * Each tenant's request rate: the one count every frontend admits requests with (HTTP routes,
   * the `/infer` fast path, gRPC), and that an ensemble request is charged its composing
   * inferences on.
   */
  readonly requestRate = new TenantRequestRate();
  /** Each tenant's load-request bytes per minute, charged by the frontends as requests arrive. */
  readonly uploadRate = new TenantUploadRate();

  constructor(
    private readonly manager: ModelRepositoryManager,
    private readonly opts: ServerApiOptions,
  ) {}

  /** The tenants-file entry of a tenant's principal (undefined for the operator and in single-user mode). */
  tenantConfig(principal: Principal): TenantConfig | undefined {
    return this.tenantOf(principal);
  }

  private tenantOf(principal: Principal): TenantConfig | undefined {
    return principal.role === 'tenant' ? this.opts.tenants?.get(principal.namespace) : undefined;
  }

  /**
   * The model key a principal means by `name`: its own namespace. Nothing else maps names to
   * keys. Lookups need no name check (a name that cannot be a model name is simply not found;
   * nothing touches the filesystem); load and unload check it ({@link controlKeyOf}).
   */
  private keyOf(principal: Principal, name: string): ModelKey {
    if (principal.role === 'admin') return this.adminKeyOf(principal, name);
    const own = { namespace: principal.namespace, name };
    // A tenant's own model first (while it holds its name: loaded, loading or failed, not after
    // an unload); else an operator model shared with it; else its own (not found, with exactly the
    // text any unknown model gets — another tenant's model is indistinguishable).
    if (this.manager.holdsName(own)) return own;
    if (this.tenantOf(principal)?.shared_models.includes(name)) return { namespace: '', name };
    return own;
  }

  /** An admin's key: `<tenant>/<model>` names a tenant's model (multi-tenant mode), else its own namespace. */
  private adminKeyOf(principal: Principal, name: string): ModelKey {
    const q = this.opts.tenants && principal.namespace === '' ? ADMIN_QUALIFIED.exec(name) : null;
    return q ? { namespace: q[1]!, name: q[2]! } : { namespace: principal.namespace, name };
  }

  /** {@link keyOf} for load / unload. @throws TritonError INVALID_ARG for an invalid name */
  private controlKeyOf(principal: Principal, name: string): ModelKey {
    const key = principal.role === 'admin' ? this.adminKeyOf(principal, name) : { namespace: principal.namespace, name };
    const problem = modelNameProblem(key.name);
    if (problem !== undefined) throw invalidArg(`invalid model name ${quoteName(name)}: ${problem}`);
    return key;
  }

  private version(principal: Principal, name: string, version: number): ModelVersion {
    return this.manager.getVersion(this.keyOf(principal, name), version);
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
    return { name: this.opts.serverId ?? DEFAULT_SERVER_ID, version: TRITON_PROTOCOL_VERSION, extensions: serverExtensions({ clientShm: this.opts.clientShm === true }) };
  }

  // ---- per model (spec §1.5–§1.7, §3.2) ----

  /** @throws TritonError NOT_FOUND (unknown model or version), UNAVAILABLE (version not ready) */
  modelMetadata(principal: Principal, name: string, version: number): ModelMetadata {
    const mv = this.version(principal, name, version);
    const versions =
      version >= 0 ? [String(version)] : this.manager.servingVersions({ key: this.keyOf(principal, name) }).map((v) => String(v.version));
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
    const key = this.keyOf(principal, name);
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
    return this.version(principal, name, version).config;
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
      const key = this.keyOf(principal, name);
      const visible = principal.role === 'admin' || key.namespace === principal.namespace;
      entries = visible ? this.manager.serving({ key }).filter((e) => version < 0 || e.version.version === version) : [];
      if (entries.length === 0) throw invalidArg(`requested model '${name}' is not available`);
    }
    // Multi-tenant mode: each entry says whose model it is (two tenants may both have `m`).
    const tenantField = this.opts.tenants !== undefined;
    return {
      model_stats: entries.map(({ key, version: v }) => {
        // Warden's addition: requests accepted and not yet answered (queued or executing), so a
        // stuck backend's requests show.
        const json = { ...v.stats.toJson(v.name, v.version), pending_count: v.inflightCount };
        return tenantField ? { ...json, tenant: key.namespace } : json;
      }),
    };
  }

  // ---- inference (spec §1.8–§1.13, §3.6) ----

  /**
   * What a frontend needs to decode a request for `name` / `version` before calling
   * {@link infer}: the serving version's config and transaction policy.
   * @throws TritonError NOT_FOUND / UNAVAILABLE
   */
  inferenceTarget(principal: Principal, name: string, version: number): InferenceTarget {
    const mv = this.version(principal, name, version);
    return { name, version: mv.version, config: mv.config, decoupled: mv.decoupled, ensemble: mv.ensembleCost };
  }

  /**
   * Validate and queue one request. Responses (one final for ordinary models, any number then a
   * final for decoupled ones) go to `sender`. When `signal` aborts before the final response, the
   * request is marked cancelled: a queued request is then dropped with CANCELLED, an executing
   * one may be stopped by its backend (`TRITONBACKEND_RequestIsCancelled`).
   * Inputs that carry a memory owner are released after the final response.
   * @throws TritonError synchronously — NOT_FOUND / UNAVAILABLE (model), INVALID_ARG (request does
   *   not match the config), UNAVAILABLE (queue full), CANCELLED (already aborted); nothing was
   *   queued and no response will be sent.
   */
  infer(principal: Principal, name: string, version: number, init: InferenceRequestInit, sender: ResponseSender, signal?: CancellationSignal): SubmittedRequest {
    const mv = this.version(principal, name, version);
    if (signal?.aborted) throw cancelled();
    init.tenant = principal.caller ?? principal.namespace;
    if (mv.config.platform === 'ensemble' && init.ensemble === undefined && this.opts.ensembleLimits !== undefined) {
      // A client's ensemble request: one budget for it and every ensemble nested in it
      // (ensemble/budget.ts), checked against the least the request costs before any step runs,
      // and its composing inferences charged to the caller's request rate.
      const caller = this.tenantOf(principal);
      const budget = new EnsembleBudget(ensembleLimitsFor(this.opts.ensembleLimits, caller?.quotas), `ensemble '${name}'`);
      if (mv.ensembleCost) {
        budget.afford(mv.ensembleCost);
        if (caller) this.requestRate.admit(caller, mv.ensembleCost.inferences);
      }
      init.ensemble = { budget, depth: 0 };
    }
    if (init.classification !== undefined && init.classification.size > 0) {
      checkClassification(mv.config, init.classification);
      sender = new ClassificationSender(sender, mv.config, mv.files.labels, init.classification);
    }
    // An ensemble's steps are charged to the ensemble's caller (DESIGN "Multi-tenancy").
    const tenant = principal.caller !== undefined ? this.callerTenant(principal.caller) : this.tenantOf(principal);
    const needsHook = signal !== undefined || tenant !== undefined || init.inputs.some((t) => t.owner !== undefined);
    if (!needsHook) {
      const request = mv.submit(init, sender);
      return { model: name, version: mv.version, request };
    }
    const release = tenant && (!principal.within || principal.caller !== undefined) ? this.takeInflight(tenant) : undefined;
    const guard = new RequestGuard(sender, init.inputs, signal, release);
    let request;
    try {
      request = mv.submit(init, guard);
    } catch (e) {
      release?.();
      throw e;
    }
    guard.attach(request);
    return { model: name, version: mv.version, request };
  }

  /** The tenant entry of an in-process call's caller ({@link Principal.caller}); undefined for the operator and admins. */
  private callerTenant(id: string): TenantConfig | undefined {
    const t = id === '' ? undefined : this.opts.tenants?.get(id);
    return t?.role === 'tenant' ? t : undefined;
  }

  /**
   * Count one request against the tenant's `max_inflight` (queued + executing).
   * @returns the release, to call once at the final response
   * @throws AccessError 429 when the tenant is at its quota
   */
  private takeInflight(tenant: TenantConfig): () => void {
    const n = this.inflight.get(tenant.id) ?? 0;
    if (n >= tenant.quotas.max_inflight) {
      throw new AccessError(429, `tenant '${tenant.id}' has ${n} inference requests in flight, its quota (max_inflight)`, 1);
    }
    this.inflight.set(tenant.id, n + 1);
    return () => {
      const m = (this.inflight.get(tenant.id) ?? 1) - 1;
      if (m <= 0) this.inflight.delete(tenant.id);
      else this.inflight.set(tenant.id, m);
    };
  }

  // ---- repository extension (spec §3.1) ----

  /** The index of the principal's namespace (`ready` = READY versions only); reasons carry no host paths. */
  async repositoryIndex(principal: Principal, readyOnly: boolean): Promise<IndexEntry[]> {
    const entries = await this.manager.index(readyOnly, principal.namespace);
    const shared = this.tenantOf(principal)?.shared_models ?? [];
    if (shared.length > 0) {
      const own = new Set(entries.map((e) => e.name));
      const operator = await this.manager.index(readyOnly, '');
      entries.push(...operator.filter((e) => shared.includes(e.name) && !own.has(e.name)));
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    for (const e of entries) if (e.reason) e.reason = this.opts.scrubber.scrub(e.reason);
    return entries;
  }

  /**
   * Load or reload a model; resolves once it is READY.
   * @throws TritonError UNAVAILABLE (not explicit mode), INVALID_ARG / NOT_FOUND / INTERNAL (load failure)
   */
  async loadModel(principal: Principal, name: string, options: LoadOptions): Promise<void> {
    const key = this.controlKeyOf(principal, name);
    // Hashed on the thread pool (WebCrypto), not the event loop: an upload may be megabytes.
    const files = await Promise.all(
      [...(options.files ?? new Map<string, Uint8Array>())].map(async ([path, data]) => ({
        path,
        sha256: Buffer.from(await webcrypto.subtle.digest('SHA-256', data)).toString('hex'),
        bytes: data.length,
      })),
    );
    const audit = (outcome: 'ok' | 'error', reason?: string) =>
      this.opts.logger && auditEvent(this.opts.logger, { event: 'load', tenant: auditTenant(principal, key), model: key.name, files, outcome, reason });
    try {
      const tenant = this.tenantOf(principal);
      if (tenant) {
        const bytes = files.reduce((n, f) => n + f.bytes, 0);
        if (bytes > tenant.quotas.max_upload_bytes) {
          throw forbidden(`upload of ${bytes} bytes exceeds tenant '${tenant.id}''s quota of ${tenant.quotas.max_upload_bytes} bytes (max_upload_bytes)`);
        }
      }
      await this.manager.load(key, this.opts.maxUploadBytes === undefined ? options : { ...options, maxUploadBytes: this.opts.maxUploadBytes });
      audit('ok');
    } catch (e) {
      audit('error', this.publicError(e).message);
      throw e;
    }
  }

  /**
   * Unload every version of a model (succeeds for a model that is not loaded). With
   * `unloadDependents` (Triton's `unload_dependents`, TRITONSERVER_ServerUnloadModelAndDependents)
   * the loaded ensembles of the same namespace that use it, directly or not, are unloaded first.
   * @throws TritonError UNAVAILABLE (not explicit mode)
   */
  async unloadModel(principal: Principal, name: string, options: { deleteFiles?: boolean; unloadDependents?: boolean } = {}): Promise<void> {
    const key = this.controlKeyOf(principal, name);
    const event = options.deleteFiles ? 'delete' : 'unload';
    try {
      if (options.unloadDependents) {
        for (const dep of this.manager.dependentsOf(key)) {
          await this.manager.unload(dep, false);
          if (this.opts.logger) auditEvent(this.opts.logger, { event: 'unload', tenant: auditTenant(principal, dep), model: dep.name, outcome: 'ok' });
        }
      }
      await this.manager.unload(key, false, { deleteFiles: options.deleteFiles === true });
      if (this.opts.logger) auditEvent(this.opts.logger, { event, tenant: auditTenant(principal, key), model: key.name, outcome: 'ok' });
    } catch (e) {
      if (this.opts.logger) auditEvent(this.opts.logger, { event, tenant: auditTenant(principal, key), model: key.name, outcome: 'error', reason: this.publicError(e).message });
      throw e;
    }
  }

  // ---- trace extension (spec §3.5) ----

  /**
   * The trace settings of the server, or of `model` (its overrides over the global ones).
   * @throws TritonError INVALID_ARG "Request for unknown model : <m>" for a model that is not
   *   ready (Triton's answer); AccessError 403 for a tenant; UNAVAILABLE without tracing
   */
  traceSettings(principal: Principal, model?: string): TraceSettingsJson {
    return this.traceOf(principal, model).settings(model === undefined ? undefined : this.traceModelId(principal, model));
  }

  /** Apply trace settings (POST). @throws TritonError as Triton (see TraceManager.update), AccessError 403 for a tenant */
  updateTraceSettings(principal: Principal, model: string | undefined, body: unknown): TraceSettingsJson {
    const t = this.traceOf(principal, model);
    return t.update(body, model === undefined ? undefined : this.traceModelId(principal, model));
  }

  private traceOf(principal: Principal, model: string | undefined): TraceManager {
    adminOnly(principal, 'trace settings');
    if (!this.opts.trace) throw new TritonError('UNAVAILABLE', 'the server does not support tracing');
    if (model !== undefined && !this.isKnownReady(principal, model)) throw invalidArg(`Request for unknown model : ${model}`);
    return this.opts.trace;
  }

  /** A loaded, serving model (the trace extension's check; the model's own is_ready is not asked). */
  private isKnownReady(principal: Principal, model: string): boolean {
    try {
      const key = this.keyOf(principal, model);
      return this.manager.isKnown(key) && this.manager.getVersion(key, -1).isReady();
    } catch {
      return false;
    }
  }

  /** The name a model's trace settings are kept under (its key; the admin may name a tenant's). */
  private traceModelId(principal: Principal, model: string): string {
    // Model versions sample by their name (tenants' models of the same name share overrides).
    return this.keyOf(principal, model).name;
  }

  // ---- logging extension (spec §3.4) ----

  /** The server's log settings. @throws AccessError 403 for a tenant (they are the operator's) */
  logSettings(principal: Principal): LogSettings {
    adminOnly(principal, 'logging settings');
    return this.opts.logSettings.get();
  }

  /** Apply log settings (`null` values leave a setting unchanged). @throws TritonError on bad values, AccessError 403 for a tenant */
  updateLogSettings(principal: Principal, body: unknown): LogSettings {
    adminOnly(principal, 'logging settings');
    return this.opts.logSettings.update(body);
  }
}

/** @throws AccessError 403 unless `principal` is an admin */
function adminOnly(principal: Principal, what: string): void {
  if (principal.role !== 'admin') throw forbidden(`${what} are available to administrators only`);
}

/** The tenant an audit line names: the model's namespace, or null for the operator's. */
function auditTenant(principal: Principal, key: ModelKey): string | null {
  return key.namespace || (principal.role === 'admin' ? null : principal.namespace);
}

/** Everything one request produced, in order, once its final response arrived. */
export interface CollectedResponses {
  /** The version that served the request. */
  version: number;
  responses: InferenceResponse[];
}

/**
 * Infer and gather every response until the final one (what a unary frontend call, an ensemble
 * step or a BLS call needs). `onResponse` sees each response as it arrives (streaming).
 * @returns a promise that rejects with the request's first error (validation errors included:
 *   they reject rather than throw)
 */
export function inferAndCollect(
  server: InferenceServerHandle,
  principal: Principal,
  name: string,
  version: number,
  init: InferenceRequestInit,
  signal?: CancellationSignal,
  onResponse?: (r: InferenceResponse) => void,
): Promise<CollectedResponses> {
  return new Promise((resolve, reject) => {
    // A backend may answer inside infer(); `out.version` is filled in before any reader runs
    // (promise reactions run after this synchronous code).
    const out: CollectedResponses = { version, responses: [] };
    let error: TritonError | undefined;
    const sender: ResponseSender = {
      send(response, final) {
        if (response) {
          out.responses.push(response);
          onResponse?.(response);
        }
        if (final) {
          if (error) reject(error);
          else resolve(out);
        }
      },
      sendError(e, final) {
        error ??= e;
        if (final) reject(error);
      },
    };
    try {
      out.version = server.infer(principal, name, version, init, sender, signal).version;
    } catch (e) {
      reject(e);
    }
  });
}
