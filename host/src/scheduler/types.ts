/**
 * The scheduler contract between a model version and whatever orders its requests onto its
 * instances (spec §5.6). One implementation per scheduling kind of the config's
 * `scheduling_choice` oneof; {@link createScheduler} in `./index.ts` picks it.
 */
import type { TritonError } from '../contract/errors.js';
import type { ExecuteTimings, InferenceRequest, ResponseSender } from '../contract/types.js';
import type { PendingRequest } from './queue.js';

/**
 * Orders one model version's validated requests onto its instances. Every request passed to
 * {@link enqueue} gets exactly one final response through its sender: from the backend, or an
 * error from the scheduler (timeout, cancellation, unload, failed execution).
 */
export interface ModelScheduler {
  /**
   * Queue a validated request; may dispatch it before returning.
   * @throws TritonError UNAVAILABLE "Exceeds maximum queue size" when the queue policy's
   *   `max_queue_size` is reached (spec §5.6), or UNAVAILABLE "tenant '<t>' exceeds its queue
   *   quota of N requests for model '<m>'" when {@link TenantFairness.maxQueuedPerTenant} is;
   *   the sequence batcher throws INVALID_ARG for requests it cannot route (no correlation id,
   *   no START for an unknown sequence, batch size above 1; see `SequenceBatchScheduler`);
   *   nothing was queued and the sender was not used.
   */
  enqueue(request: InferenceRequest, sender: ResponseSender): void;
  /** Requests waiting for an instance (`nv_inference_pending_request_count`, spec §4). */
  readonly pendingCount: number;
  /**
   * Requests waiting for an instance per tenant ({@link InferenceRequest.tenant}; tenants with
   * none are left out): the `tenant` label of the pending-count metric. A fresh map per call.
   */
  pendingByTenant(): Map<string, number>;
  /** Resolves once nothing is queued or executing. */
  drain(): Promise<void>;
  /**
   * Fail every queued (not yet executing) request with `error` as its final response; used when
   * a model version is torn down. Executions in progress are left to finish.
   */
  rejectPending(error: TritonError): void;
}

/** What happened in one `execute` call; times are monotonic ns on the scheduler's `Clock` (`clock.ts`). */
export interface ExecutionRecord {
  batch: PendingRequest[];
  /** Sum of the requests' batch sizes (batch elements, not requests). */
  batchSize: number;
  execStartNs: bigint;
  execEndNs: bigint;
  /** compute start / end as the backend reported them, if it did. */
  timings?: ExecuteTimings;
  /** Set when `execute` rejected; every request of the batch then gets this error. */
  error?: TritonError;
}

/** Callbacks from a scheduler to the model version that owns it. */
export interface SchedulerHooks {
  /** Statistics for an execution (called before the error fan-out of a failed execution). */
  onExecuted(record: ExecutionRecord): void;
}

/**
 * Fairness across the tenants sharing one model version (DESIGN "Multi-tenancy", "Sandbox
 * rules"). Every scheduler queues per tenant and serves the tenants of a priority level by
 * deficit round robin, weight 1 for everyone unless {@link weightOf} says otherwise; these
 * options only tune it.
 */
export interface TenantFairness {
  /**
   * A tenant's relative share of the model's dispatches (in batch elements), read when the
   * tenant's queue goes from empty to non-empty. Positive and finite; anything else counts as 1.
   * Default: 1 for every tenant.
   */
  weightOf?(tenant: string): number;
  /**
   * DRR credit per turn for weight 1, in batch elements. A tenant whose queue was empty waits at
   * most one turn of each other tenant of its level: `quantum × weight` of their batch elements
   * (plus what is already executing). Default `max(1, max_batch_size)` (the largest request, so
   * every turn serves at least one request); smaller interleaves tenants more finely (1 = request
   * by request for requests of batch size 1). Not a positive finite number = the default.
   */
  quantum?: number;
  /**
   * Most requests one tenant may have queued (not executing) for this model version across its
   * priority levels; past it, `enqueue` throws UNAVAILABLE "tenant '<t>' exceeds its queue quota
   * of N requests for model '<m>'". A function gives per-tenant caps. 0 / absent = no cap (the
   * per-level `max_queue_size` still applies to all tenants together).
   */
  maxQueuedPerTenant?: number | ((tenant: string) => number);
}
