/**
 * A loaded model version: its config, backend model, instances, scheduler and statistics, and
 * the response path that checks what the backend sends and keeps the statistics.
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../config/types.js';
import type { ModelStatistics } from '../metrics/stats.js';
import {
  createScheduler,
  type ExecutionArbiter,
  type ExecutionRecord,
  type ModelScheduler,
  type TenantFairness,
} from '../scheduler/index.js';
import { TritonError, asTritonError, unavailable } from './errors.js';
import type { BackendModel, BackendModelInstance, InferenceRequest, InferenceRequestInit, InferenceResponse, ResponseSender } from './types.js';
import {
  compileRequestValidator,
  compileResponseValidator,
  type RequestValidator,
  type ResponseValidator,
} from './validate.js';

const now = (): bigint => process.hrtime.bigint();

/** Per-request bookkeeping between enqueue and the final response. */
class TrackedSender implements ResponseSender {
  private done = false;
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
    const duration = now() - this.startNs;
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
  /** `<repository>/<model>`, for files the scheduler reads (sequence initial states). */
  modelPath?: string;
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
  private accepting = true;

  /**
   * Compiles the request / response validators and builds the scheduler the config asks for
   * (spec §5.6), over `instances`.
   * @throws TritonError UNSUPPORTED for ensembles (the repository manager rejects those before
   *   loading; it still owns `instances` and `backendModel` then), INVALID_ARG for an unusable
   *   sequence initial state.
   */
  constructor(
    readonly name: string,
    readonly version: number,
    readonly config: ModelConfig,
    private readonly backendModel: BackendModel,
    private readonly instances: BackendModelInstance[],
    readonly stats: ModelStatistics,
    readonly logger: Logger,
    options: ModelVersionOptions = {},
  ) {
    this.requestValidator = compileRequestValidator(config, version);
    this.responseValidator = compileResponseValidator(config);
    this.scheduler = createScheduler(config, instances, { onExecuted: (r) => this.recordExecution(r) }, {
      version,
      arbiter: options.arbiter,
      fairness: options.fairness,
      modelPath: options.modelPath,
    });
  }

  /** True for `model_transaction_policy { decoupled: true }`. */
  get decoupled(): boolean {
    return this.config.model_transaction_policy?.decoupled === true;
  }

  /** Queued requests (for `nv_inference_pending_request_count`). */
  get pendingCount(): number {
    return this.scheduler.pendingCount;
  }

  /** Queued requests per tenant (tenants with none left out), for the pending-count metric's `tenant` label. */
  pendingByTenant(): Map<string, number> {
    return this.scheduler.pendingByTenant();
  }

  /** Every instance reports ready (`TRITONBACKEND_ModelInstanceReady`). */
  isReady(): boolean {
    return this.accepting && this.instances.every((i) => i.isReady?.() ?? true);
  }

  /**
   * Validate and queue a request; responses go to `sender`. If the request's `cancelled` flag is
   * set before it is dispatched, it is not executed: its final response is the error CANCELLED
   * "Request was cancelled" (a failure with reason CANCELED in the statistics).
   * @throws TritonError INVALID_ARG for a request that does not match the config, UNAVAILABLE if
   *   the version is being unloaded, the queue is full or the request's tenant is at its queue
   *   quota. Nothing is queued when it throws.
   */
  submit(init: InferenceRequestInit, sender: ResponseSender): InferenceRequest {
    if (!this.accepting) throw unavailable(`Request for unknown model: '${this.name}' version ${this.version} is not at ready state`);
    let request: InferenceRequest;
    try {
      request = this.requestValidator.validate(init);
    } catch (e) {
      this.stats.recordFailure(0n, 'OTHER');
      throw e;
    }
    const tracked = new TrackedSender(this, request, sender, now());
    this.inflight++;
    try {
      this.scheduler.enqueue(request, tracked);
    } catch (e) {
      this.inflight--;
      this.stats.recordFailure(0n, 'REJECTED');
      throw e;
    }
    return request;
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
  async retire(): Promise<void> {
    this.accepting = false;
    await this.scheduler.drain();
    if (this.inflight > 0) await new Promise<void>((r) => this.drainWaiters.push(r));
    await this.finalize();
  }

  /** Finalize without draining (load failure cleanup). */
  async finalize(): Promise<void> {
    this.accepting = false;
    this.scheduler.rejectPending(unavailable(`model '${this.name}' version ${this.version} is unloading`));
    for (const i of this.instances) {
      await i.finalize().catch((e) => this.logger.error({ err: e }, 'instance finalize failed'));
    }
    await this.backendModel.finalize().catch((e) => this.logger.error({ err: e }, 'model finalize failed'));
  }

  private recordExecution(r: ExecutionRecord): void {
    const computeStart = r.timings?.computeStartNs ?? r.execStartNs;
    const computeEnd = r.timings?.computeEndNs ?? r.execEndNs;
    const input = computeStart - r.execStartNs;
    const infer = computeEnd - computeStart;
    const output = r.execEndNs - computeEnd;
    if (!r.error) this.stats.recordExecution(r.batchSize, input, infer, output);
    for (const p of r.batch) this.stats.recordRequestTimes(r.execStartNs - p.queueStartNs, input, infer, output);
  }
}
