/**
 * A loaded model version: its config, backend model, instances, scheduler and statistics, and
 * the response path that checks what the backend sends and keeps the statistics.
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../contract/model-config.js';
import type { ModelStatistics } from '../metrics/stats.js';
import { randomUUID } from 'node:crypto';
import { ResponseCache } from '../cache/response-cache.js';
import type { ResponseCacheStore } from '../cache/response-cache-store.js';
import type { RequestTrace, TraceManager } from '../trace/trace-manager.js';
import {
  SYSTEM_CLOCK,
  createScheduler,
  type Clock,
  type ClockTimer,
  type ExecutionArbiter,
  type ExecutionRecord,
  type ModelScheduler,
  type SchedulerHooks,
  type TenantFairness,
} from '../scheduler/index.js';
import { TritonError, asTritonError } from '../contract/errors.js';
import { NO_CONFIG_FILES, type ConfigFiles } from './config-files.js';
import type {
  BackendModel,
  BackendModelInstance,
  InferenceRequest,
  InferenceRequestInit,
  InferenceResponse,
  InferenceServerHandle,
  InstanceUsage,
  Principal,
  ResponseSender,
} from '../contract/types.js';
import type { EnsemblePlan } from '../ensemble/plan.js';
import { compileRequestValidator, compileResponseValidator, type RequestValidator, type ResponseValidator } from './validate.js';
import * as lifecycleErrors from './lifecycle.errors.js';

/** Model version objects created so far (each one's response-cache scope, with {@link PROCESS_SCOPE}). */
let loadedVersions = 0;
/** This process's part of per-version scopes: unique across replicas sharing a Redis cache. */
const PROCESS_SCOPE = randomUUID();

/** Per-request bookkeeping between enqueue and the final response. */
class TrackedSender implements ResponseSender {
  private done = false;
  /** When the final response went out (the version's clock, ns); undefined until then. */
  finishedNs: bigint | undefined;
  /** Set when the request is traced (spec §3.5). */
  trace: RequestTrace | undefined;
  constructor(
    private readonly owner: ModelVersion,
    private readonly request: InferenceRequest,
    private readonly downstream: ResponseSender,
    private readonly startNs: bigint,
  ) {}

  send(response: InferenceResponse | null, final: boolean): void {
    if (this.done) return this.owner.logger.warn({ request: this.request.id }, 'response after the final one ignored');
    if (response) {
      let checked: InferenceResponse;
      try {
        checked = this.owner.responseValidator.validate(this.request, response);
      } catch (e) {
        return this.sendError(asTritonError(e), final);
      }
      this.downstream.send(checked, final);
    } else {
      this.downstream.send(null, final);
    }
    if (final) this.finish(true, 'OTHER');
  }

  sendError(error: TritonError, final: boolean): void {
    if (this.done) return;
    this.downstream.sendError(error, final);
    if (final) this.finish(false, error.code === 'UNAVAILABLE' ? 'REJECTED' : error.code === 'CANCELLED' ? 'CANCELED' : 'BACKEND');
  }

  private finish(ok: boolean, reason: 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER'): void {
    this.done = true;
    const end = this.owner.clock.now();
    this.finishedNs = end;
    const duration = end - this.startNs;
    if (this.trace) this.trace.end(end);
    this.owner.live?.delete(this);
    if (ok) this.owner.stats.recordSuccess(duration, this.request.batchSize);
    else this.owner.stats.recordFailure(duration, reason);
    this.owner.requestFinished();
  }
}

/** Optional collaborators of a {@link ModelVersion}. */
export interface ModelVersionOptions {
  /**
   * The server-wide execution arbiter every version's scheduler asks before dispatching a batch;
   * default: the pass-through one (admits everything).
   */
  arbiter?: ExecutionArbiter;
  /**
   * Fairness across the tenants sharing this version ({@link InferenceRequest.tenant}): weights,
   * DRR quantum, per-tenant queue cap. Default: every tenant weight 1, no per-tenant cap.
   */
  fairness?: TenantFairness;
  /** Request tracing (spec §3.5); absent = never traced. */
  tracer?: TraceManager;
  /**
   * Bound on {@link ModelVersion.retire}'s wait for in-flight requests (`--exit-timeout-secs`):
   * past it, requests still unanswered get an UNAVAILABLE error and the version finalizes anyway.
   * Absent = wait for ever.
   */
  drainTimeoutMs?: number;
  /**
   * `<repository>/<model>` (or the upload directory) the version was loaded from. Informational:
   * the files its config names are read at load into {@link files}.
   */
  modelPath?: string;
  /**
   * The label files and sequence initial states the config names, read at load through the
   * confinement rule (`lifecycle/config-files.ts#readConfigFiles`); default none.
   */
  files?: ConfigFiles;
  /**
   * An ensemble version (no backend model, no instances): its plan (`ensemble/load.ts#compileEnsemble`),
   * the data plane its steps run through and its owner's principal, for {@link createScheduler}'s
   * ensemble kind. Undefined for any other model.
   */
  ensemble?: { plan: EnsemblePlan; server: InferenceServerHandle; principal: Principal };
  /**
   * The server's response cache (`--cache-config local,size=N` or `redis,...`); used only when the
   * config says `response_cache { enable: true }`. An ensemble caches its top-level response
   * (Triton's `EnsembleScheduler` looks the ensemble request up and inserts its final response).
   */
  responseCache?: ResponseCacheStore;
  /**
   * The cache keys' scope when the cache is shared ({@link ResponseCacheStore.shared}): the same
   * on every replica serving the same files and config, another after a reload with changed ones
   * (`version-builder.ts#sharedCacheScope`). Undefined, or a cache in this process only: the
   * version object's own scope (a reload never sees the old entries; not shared across replicas).
   */
  cacheScope?: string;
  /**
   * An operator model in multi-tenant mode: a sequence model's backend sees tenants' sequences
   * under correlation ids of their own (`scheduler/sequence-ids.ts`, DESIGN "Multi-tenancy").
   */
  tenantSequenceIds?: boolean;
  /**
   * Request timings, the scheduler's queue delays and timeouts, and {@link ModelVersion.retire}'s
   * drain bound; default {@link SYSTEM_CLOCK} (tests inject a manual one).
   */
  clock?: Clock;
}

/**
 * Between a missed request and its caller: keeps the request's one successful final response in
 * the cache and records the miss (lookup + insertion time).
 */
class CacheFill implements ResponseSender {
  constructor(
    private readonly downstream: ResponseSender,
    private readonly cache: ResponseCacheStore,
    private readonly tenant: string,
    private readonly key: string,
    private readonly lookupNs: bigint,
    private readonly stats: ModelStatistics,
    private readonly clock: Clock,
  ) {}
  send(response: InferenceResponse | null, final: boolean): void {
    if (final) {
      const t0 = this.clock.now();
      if (response) this.cache.set(this.tenant, this.key, response);
      this.stats.recordCacheMiss(this.lookupNs + (this.clock.now() - t0));
    }
    this.downstream.send(response, final);
  }
  sendError(error: TritonError, final: boolean): void {
    if (final) this.stats.recordCacheMiss(this.lookupNs);
    this.downstream.sendError(error, final);
  }
}

/**
 * One model version in service. States are kept by the repository manager; this object only
 * serves requests while READY and drains on retire.
 */
export class ModelVersion {
  private readonly scheduler: ModelScheduler;
  private readonly requestValidator: RequestValidator;
  /** Checks what the backend sends (used by the per-request senders). */
  readonly responseValidator: ResponseValidator;
  private inflight = 0;
  private drainWaiters: (() => void)[] = [];
  /** Run first when the version stops taking requests ({@link onRetire}). */
  private readonly retireHooks: (() => Promise<void>)[] = [];
  private accepting = true;
  private readonly tracer: TraceManager | undefined;
  /** The response cache, when this version's config enables it and the server has one. */
  private readonly cache: ResponseCacheStore | undefined;
  /** This version's part of cache keys ({@link ModelVersionOptions.cacheScope}). */
  private readonly cacheScope: string;
  private readonly drainTimeoutMs: number | undefined;
  /** Unanswered requests, kept only when retire has a drain bound (to fail them past it). */
  readonly live: Set<TrackedSender> | undefined;
  /** Where the model's files are. */
  readonly modelPath: string | undefined;
  /** The label files and initial states its config names, read at load (classification uses the labels). */
  readonly files: ConfigFiles;
  /** An ensemble version's least cost per request (ensemble/plan.ts#EnsembleCost); undefined for any other model. */
  readonly ensembleCost: { readonly inferences: number; readonly depth: number } | undefined;
  /** Request timings and timers ({@link ModelVersionOptions.clock}). */
  readonly clock: Clock;

  /**
   * Compiles the request / response validators and builds the scheduler the config asks for
   * (spec §5.6, {@link createScheduler}) over `instances`; an ensemble's over its plan
   * ({@link ModelVersionOptions.ensemble}).
   * @param backendModel undefined for an ensemble (it has no backend)
   * @throws TritonError INVALID_ARG for an unusable sequence initial state, INTERNAL for an
   *   ensemble config without `options.ensemble`; the caller still owns `instances` and
   *   `backendModel` then.
   */
  constructor(
    readonly name: string,
    readonly version: number,
    readonly config: ModelConfig,
    private readonly backendModel: BackendModel | undefined,
    private readonly instances: BackendModelInstance[],
    readonly stats: ModelStatistics,
    readonly logger: Logger,
    options: ModelVersionOptions = {},
  ) {
    this.tracer = options.tracer;
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.drainTimeoutMs = options.drainTimeoutMs;
    this.live = options.drainTimeoutMs !== undefined ? new Set() : undefined;
    this.modelPath = options.modelPath;
    this.files = options.files ?? NO_CONFIG_FILES;
    this.ensembleCost = options.ensemble?.plan.cost;
    this.cache = config.response_cache?.enable ? options.responseCache : undefined;
    this.cacheScope = this.cache?.shared && options.cacheScope !== undefined ? options.cacheScope : `${PROCESS_SCOPE}.${++loadedVersions}`;
    this.requestValidator = compileRequestValidator(config, version);
    this.responseValidator = compileResponseValidator(config);
    const hooks: SchedulerHooks = { onExecuted: (r) => this.recordExecution(r) };
    this.scheduler = createScheduler(config, instances, hooks, {
      version,
      arbiter: options.arbiter,
      fairness: options.fairness,
      initialStates: this.files.initialStates,
      tenantSequenceIds: options.tenantSequenceIds,
      clock: this.clock,
      ensemble: options.ensemble && { ...options.ensemble, stats, logger },
    });
  }

  /** The backend's instances of this version (the native data path reads their handles). */
  get backendInstances(): readonly BackendModelInstance[] {
    return this.instances;
  }

  /**
   * Registers `hook` to run, and be awaited, as the version stops taking requests (retire or
   * finalize), before its scheduler drains: another path serving this version's instances (the
   * native data path) stops and drains there first, so instances finalize with nothing in flight.
   * A hook that rejects is logged; the unload goes on.
   */
  onRetire(hook: () => Promise<void>): void {
    this.retireHooks.push(hook);
  }

  private async runRetireHooks(): Promise<void> {
    const hooks = this.retireHooks.splice(0);
    for (const h of hooks) await h().catch((e: unknown) => this.logger.error({ err: e }, 'retire hook failed'));
  }

  /** True for `model_transaction_policy { decoupled: true }`. */
  get decoupled(): boolean {
    return this.config.model_transaction_policy?.decoupled === true;
  }

  /** Queued requests (for `nv_inference_pending_request_count`). */
  get pendingCount(): number {
    return this.scheduler.pendingCount;
  }

  /**
   * Its instances' restarts and reserved sandbox memory, summed ({@link BackendModelInstance.usage};
   * for `warden_instance_restarts_total` and `warden_sandbox_memory_bytes`).
   */
  usage(): InstanceUsage {
    let restarts = 0;
    let sandboxMemoryBytes = 0;
    for (const i of this.instances) {
      const u = i.usage?.();
      if (!u) continue;
      restarts += u.restarts;
      sandboxMemoryBytes += u.sandboxMemoryBytes;
    }
    return { restarts, sandboxMemoryBytes };
  }

  /** Queued requests per tenant (tenants with none left out), for the pending-count metric's `tenant` label. */
  pendingByTenant(): Map<string, number> {
    return this.scheduler.pendingByTenant();
  }

  /** Every instance reports ready (`TRITONBACKEND_ModelInstanceReady`) and none is unhealthy. */
  isReady(): boolean {
    return this.accepting && this.unavailableReason() === undefined && this.instances.every((i) => i.isReady?.() ?? true);
  }

  /**
   * Readiness as a readiness check sees it: {@link isReady}, then every instance's own check
   * (`checkReady`, a Python model's `is_ready()`; Triton asks each instance, and the model is
   * ready only if all are). Resolves undefined when ready, else the reason. Never rejects.
   */
  async readinessProblem(): Promise<string | undefined> {
    if (!this.isReady()) return this.unavailableReason() ?? 'not ready';
    return this.instanceCheckProblem();
  }

  /**
   * Only the instances' own checks (`checkReady`): undefined when every instance that has one
   * answers ready (or none has one), else the first reason. What the repository index adds to a
   * READY version's state. Never rejects.
   */
  async instanceCheckProblem(): Promise<string | undefined> {
    const checks = this.instances.filter((i) => i.checkReady !== undefined);
    if (checks.length === 0) return undefined;
    const answers = await Promise.all(checks.map((i) => i.checkReady!()));
    return answers.find((a) => a !== undefined);
  }

  /** Why the version cannot serve although loaded (an instance became unhealthy), else undefined. */
  unavailableReason(): string | undefined {
    for (const i of this.instances) {
      const r = i.unhealthy?.();
      if (r !== undefined) return r;
    }
    return undefined;
  }

  /** Requests accepted and not yet answered with their final response (queued or executing). */
  get inflightCount(): number {
    return this.inflight;
  }

  /**
   * Validate and queue a request; responses go to `sender`. If the request's `cancelled` flag is
   * set before it is dispatched, it is not executed: its final response is the error CANCELLED
   * "Request was cancelled" (a failure with reason CANCELED in the statistics).
   *
   * With a response cache: a hit is answered without queueing. A cache in this process (local) is
   * looked up synchronously, so every refusal below is thrown. A shared cache (Redis) is looked up
   * after `submit` returns: validation still throws, but a refusal of the queue after a miss (the
   * version unloading meanwhile, a full queue, the tenant's queue quota) reaches `sender` as its
   * final error instead, like any later error. The request counts as in flight during the lookup
   * ({@link retire} waits for it).
   * @throws TritonError INVALID_ARG for a request that does not match the config, UNAVAILABLE if
   *   the version is being unloaded, the queue is full or the request's tenant is at its queue
   *   quota (with a shared cache, the first only). Nothing is queued when it throws.
   */
  submit(init: InferenceRequestInit, sender: ResponseSender): InferenceRequest {
    if (!this.accepting) throw lifecycleErrors.versionNotReady(this.name, this.version);
    const unhealthy = this.unavailableReason();
    if (unhealthy !== undefined) throw lifecycleErrors.versionUnhealthy(this.name, this.version, unhealthy);
    let request: InferenceRequest;
    try {
      request = this.requestValidator.validate(init);
    } catch (e) {
      this.stats.recordFailure(0n, 'OTHER');
      throw e;
    }
    const clock = this.clock;
    const start = clock.now();
    if (this.cache) {
      const key = ResponseCache.key(request, this.cacheScope);
      const hit = this.cache.get(request.tenant, key);
      if (hit instanceof Promise) {
        this.enqueueAfterLookup(request, key, hit, sender, start);
        return request;
      }
      const lookupNs = clock.now() - start;
      if (hit) {
        this.stats.recordCacheHit(clock.now() - start, lookupNs);
        sender.send(hit, true);
        return request;
      }
      sender = new CacheFill(sender, this.cache, request.tenant, key, lookupNs, this.stats, clock);
    }
    this.enqueue(request, sender, start);
    return request;
  }

  /**
   * A shared cache's lookup settled: a hit answers, a miss is queued (a refusal goes to `sender`).
   * In flight meanwhile, so a retiring version waits for it.
   */
  private enqueueAfterLookup(
    request: InferenceRequest,
    key: string,
    lookup: Promise<InferenceResponse | undefined>,
    sender: ResponseSender,
    start: bigint,
  ): void {
    const cache = this.cache!;
    const clock = this.clock;
    this.inflight++;
    void lookup
      .then((hit) => {
        const lookupNs = clock.now() - start;
        try {
          if (hit) {
            this.stats.recordCacheHit(clock.now() - start, lookupNs);
            sender.send(hit, true);
          } else if (!this.accepting) {
            sender.sendError(lifecycleErrors.versionNotReady(this.name, this.version), true);
          } else {
            try {
              this.enqueue(request, new CacheFill(sender, cache, request.tenant, key, lookupNs, this.stats, clock), start);
            } catch (e) {
              sender.sendError(asTritonError(e), true);
            }
          }
        } finally {
          this.requestFinished();
        }
      })
      .catch((e: unknown) => this.logger.error({ err: e }, 'response after a cache lookup failed'));
  }

  /**
   * Queue a validated request (its cache lookup, if any, missed).
   * @throws TritonError UNAVAILABLE from the scheduler (nothing is queued then)
   */
  private enqueue(request: InferenceRequest, sender: ResponseSender, start: bigint): void {
    const clock = this.clock;
    const tracked = new TrackedSender(this, request, sender, start);
    if (this.tracer?.active) {
      const t = (tracked.trace = this.tracer.sample(this.name, this.version, request.id, request.traceContext, request.parentTrace));
      if (t) {
        // The parent of the traces of requests made on its behalf (ensemble steps, BLS calls).
        request.trace = t;
        t.stamp('REQUEST_START', start);
        t.stamp('QUEUE_START', clock.now());
      }
    }
    this.live?.add(tracked);
    this.inflight++;
    try {
      this.scheduler.enqueue(request, tracked);
    } catch (e) {
      this.inflight--;
      this.live?.delete(tracked);
      this.stats.recordFailure(0n, 'REJECTED');
      throw e;
    }
  }

  /** Called by TrackedSender once a request's final response went out. */
  requestFinished(): void {
    this.inflight--;
    if (this.inflight === 0 && this.drainWaiters.length > 0) {
      const w = this.drainWaiters;
      this.drainWaiters = [];
      for (const r of w) r();
    }
  }

  /**
   * Stop accepting, let queued and in-flight requests finish (including decoupled responses sent
   * after execute returned), then finalize instances and the backend model.
   */
  async retire(drainTimeoutMs = this.drainTimeoutMs): Promise<void> {
    this.accepting = false;
    await this.runRetireHooks();
    // The whole unload (drain, then instances waiting for their backend) ends within the bound;
    // the instances' deadline is a wall-clock time (BackendModelInstance.finalize).
    const deadline = drainTimeoutMs === undefined ? undefined : Date.now() + drainTimeoutMs;
    const drained = (async () => {
      await this.scheduler.drain();
      if (this.inflight > 0) await new Promise<void>((r) => this.drainWaiters.push(r));
    })();
    if (drainTimeoutMs === undefined) await drained;
    else {
      let timer: ClockTimer | undefined;
      const expired = await Promise.race([
        drained.then(() => false),
        new Promise<boolean>((r) => (timer = this.clock.schedule(() => r(true), drainTimeoutMs))),
      ]);
      this.clock.cancel(timer);
      if (expired) this.abandonInflight();
    }
    await this.finalize(deadline);
  }

  /**
   * The drain bound passed: every request still unanswered (queued, or stuck in a backend that
   * never answers) gets UNAVAILABLE as its final response; later responses are ignored.
   */
  private abandonInflight(): void {
    const err = lifecycleErrors.unloadTimedOut(this.name, this.version);
    this.scheduler.rejectPending(err);
    const stuck = [...(this.live ?? [])];
    if (stuck.length > 0) this.logger.warn({ requests: stuck.length }, 'requests still in flight after the exit timeout: failing them');
    for (const t of stuck) t.sendError(err, true);
  }

  /**
   * Finalize without draining (load failure cleanup; after {@link retire} drained). `deadlineMs`
   * (a `Date.now()` time) bounds how long instances wait for their backend to release requests.
   */
  async finalize(deadlineMs?: number): Promise<void> {
    this.accepting = false;
    await this.runRetireHooks();
    this.scheduler.rejectPending(lifecycleErrors.versionUnloading(this.name, this.version));
    for (const i of this.instances) {
      await i.finalize(deadlineMs).catch((e) => this.logger.error({ err: e }, 'instance finalize failed'));
    }
    await this.backendModel?.finalize().catch((e) => this.logger.error({ err: e }, 'model finalize failed'));
  }

  private recordExecution(r: ExecutionRecord): void {
    // The backend's own "execute returned" time when it has one (never later than ours).
    const reportedEnd = r.timings?.execEndNs;
    const execEnd = reportedEnd !== undefined && reportedEnd >= r.execStartNs && reportedEnd < r.execEndNs ? reportedEnd : r.execEndNs;
    const computeStart = clampNs(r.timings?.computeStartNs ?? r.execStartNs, r.execStartNs, execEnd);
    const computeEnd = clampNs(r.timings?.computeEndNs ?? execEnd, computeStart, execEnd);
    const input = computeStart - r.execStartNs;
    const infer = computeEnd - computeStart;
    const output = execEnd - computeEnd;
    // A batch statistic where Triton's core has one: a backend that reports its own (native)
    // counts only what it reported, with its batch size (ExecuteTimings.backendBatchSize).
    const batchSize = r.timings?.backendBatchSize === undefined ? r.batchSize : r.timings.backendBatchSize;
    if (!r.error && batchSize !== null) this.stats.recordExecution(batchSize, input, infer, output);
    for (const p of r.batch) {
      const queue = r.execStartNs - p.queueStartNs;
      // A request answered before execute returned (a native backend's final response reaches
      // the JS thread first) ends its compute at its answer — input, infer and output all cut
      // there, since a backend may report its compute end after it sent the response: its
      // request times then fit inside its success duration, as in Triton, where a request ends
      // at its release.
      const answered = p.sender instanceof TrackedSender ? p.sender.finishedNs : undefined;
      if (answered === undefined || answered >= execEnd) {
        this.stats.recordRequestTimes(queue, input, infer, output);
        p.request.onTimes?.(queue, input, infer, output);
        continue;
      }
      const end = clampNs(answered, r.execStartNs, execEnd);
      const start = clampNs(computeStart, r.execStartNs, end);
      const stop = clampNs(computeEnd, start, end);
      this.stats.recordRequestTimes(queue, start - r.execStartNs, stop - start, end - stop);
      p.request.onTimes?.(queue, start - r.execStartNs, stop - start, end - stop);
    }
    if (this.tracer?.active) {
      for (const p of r.batch) {
        const t = p.sender instanceof TrackedSender ? p.sender.trace : undefined;
        if (!t) continue;
        t.stamp('COMPUTE_START', r.execStartNs);
        t.stamp('COMPUTE_INPUT_END', computeStart);
        t.stamp('COMPUTE_OUTPUT_START', computeEnd);
        t.stamp('COMPUTE_END', execEnd);
      }
    }
  }
}

/** `v` limited to [lo, hi] (timestamps a backend reported may lie outside the execution). */
function clampNs(v: bigint, lo: bigint, hi: bigint): bigint {
  return v < lo ? lo : v > hi ? hi : v;
}
