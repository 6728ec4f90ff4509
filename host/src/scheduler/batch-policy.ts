/**
 * Which queued requests form the next execution (spec §5.6): one request at a time without
 * dynamic batching; with it, the next compatible requests in the queue's dispatch order (fair
 * across tenants) up to `max_batch_size` batch elements, dispatched at once when a preferred batch
 * size is reached or when the next request in order cannot join it (incompatible shapes or
 * datatypes, or over `max_batch_size`: waiting could not make the batch bigger, so it goes at
 * once, as Triton's dynamic batcher does), otherwise once the oldest request has waited
 * `max_queue_delay_microseconds` for more. A request never splits across executions.
 */
import type { ModelConfig } from '../contract/model-config.js';
import type { InferenceRequest } from '../contract/types.js';
import type { PendingQueue, PendingRequest } from './queue.js';

/** Batch formation rules of one model version, precomputed from its config. */
export class BatchPolicy {
  /** True with `dynamic_batching` and `max_batch_size > 0`. */
  readonly dynamic: boolean;
  private readonly maxBatch: number;
  private readonly preferredMax: number;
  private readonly maxDelayNs: bigint;
  private readonly raggedInputs: ReadonlySet<string>;

  constructor(config: ModelConfig) {
    const db = config.dynamic_batching;
    this.dynamic = db !== undefined && config.max_batch_size > 0;
    this.maxBatch = Math.max(1, config.max_batch_size);
    const preferred = db?.preferred_batch_size ?? [];
    this.preferredMax = preferred.length > 0 ? Math.min(Math.max(...preferred), this.maxBatch) : this.maxBatch;
    this.maxDelayNs = BigInt(db?.max_queue_delay_microseconds ?? 0) * 1000n;
    this.raggedInputs = new Set(config.input.filter((i) => i.allow_ragged_batch).map((i) => i.name));
  }

  /**
   * Plan the next batch from the front of `queue`'s dispatch order ({@link PendingQueue.ordered}:
   * priority level first, then deficit round robin across tenants; a batch may mix tenants)
   * without removing anything. Cancelled requests met on the way are skipped and appended to
   * `cancelled` (the caller removes them; they all lie before the planned batch's end, and cost
   * nothing in the queue's order, so after their removal the batch is the next `n` requests
   * {@link PendingQueue.shift} returns).
   * @param force dispatch whatever fits now (the queue delay expired).
   * @param tenants when given, cleared and filled with the distinct tenants of the planned
   *   batch, in dispatch order (for the arbiter's claim).
   * @returns n > 0: take the next n requests now (also when the request after them cannot join
   *   the batch); 0: nothing to run yet — either nothing left
   *   but cancelled requests, or wait for more (see {@link delayLeftNs}).
   */
  plan(queue: PendingQueue, nowNs: bigint, force: boolean, cancelled: PendingRequest[], tenants?: string[]): number {
    let head: PendingRequest | undefined;
    let count = 0;
    let total = 0;
    /** The next request in order cannot join this batch: send it now instead of waiting. */
    let blocked = false;
    if (tenants) tenants.length = 0;
    for (const p of queue.ordered()) {
      const r = p.request;
      if (r.cancelled) {
        cancelled.push(p);
        continue;
      }
      if (head === undefined) {
        head = p;
      } else if (total + r.batchSize > this.maxBatch || !this.compatible(head.request, r)) {
        blocked = true;
        break;
      }
      count++;
      total += r.batchSize;
      if (tenants && tenants[tenants.length - 1] !== r.tenant && !tenants.includes(r.tenant)) tenants.push(r.tenant);
      if (!this.dynamic || total >= this.preferredMax) break;
    }
    if (head === undefined || !this.dynamic || force || blocked || total >= this.preferredMax) return count;
    // The delay counts from the oldest request of the level served, whichever tenant's turn it is.
    return this.delayLeftNs(queue.oldestStartNs(head.level) ?? head.queueStartNs, nowNs) > 0n ? 0 : count;
  }

  /**
   * ns left before the oldest request, queued at `oldestStartNs`, must be dispatched even in a
   * smaller batch than preferred (≤ 0: now).
   */
  delayLeftNs(oldestStartNs: bigint, nowNs: bigint): bigint {
    return this.maxDelayNs - (nowNs - oldestStartNs);
  }

  /** Same inputs and datatypes, and the same non-batch dims for every input except ragged ones. */
  private compatible(a: InferenceRequest, b: InferenceRequest): boolean {
    if (a.inputs.length !== b.inputs.length) return false;
    for (const ia of a.inputs) {
      const ib = b.inputs.find((t) => t.name === ia.name);
      if (!ib || ib.datatype !== ia.datatype) return false;
      if (this.raggedInputs.has(ia.name)) continue;
      if (ia.shape.length !== ib.shape.length) return false;
      for (let d = 1; d < ia.shape.length; d++) if (ia.shape[d] !== ib.shape[d]) return false;
    }
    return true;
  }
}
