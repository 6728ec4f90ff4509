/**
 * Which queued requests form the next execution (spec §5.6): one request at a time without
 * dynamic batching; with it, the oldest compatible requests up to `max_batch_size` batch
 * elements, dispatched at once when a preferred batch size is reached, otherwise after waiting at
 * most `max_queue_delay_microseconds` for more. A request never splits across executions.
 */
import type { ModelConfig } from '../config/types.js';
import type { InferenceRequest } from '../core/types.js';
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
   * Plan the next batch from the head of `queue` without removing anything. Cancelled requests
   * met on the way are skipped and appended to `cancelled` (the caller removes them; they all lie
   * before the planned batch's end, so after their removal the batch is the first `n` requests).
   * @param force dispatch whatever fits now (the queue delay expired).
   * @returns n > 0: take the first n requests now; 0: nothing to run yet — either nothing left
   *   but cancelled requests, or wait for more (see {@link delayLeftNs}).
   */
  plan(queue: PendingQueue, nowNs: bigint, force: boolean, cancelled: PendingRequest[]): number {
    let head: PendingRequest | undefined;
    let count = 0;
    let total = 0;
    for (const p of queue.ordered()) {
      const r = p.request;
      if (r.cancelled) {
        cancelled.push(p);
        continue;
      }
      if (head === undefined) {
        head = p;
      } else if (total + r.batchSize > this.maxBatch || !this.compatible(head.request, r)) {
        break;
      }
      count++;
      total += r.batchSize;
      if (!this.dynamic || total >= this.preferredMax) break;
    }
    if (head === undefined || !this.dynamic || force || total >= this.preferredMax) return count;
    return this.delayLeftNs(head, nowNs) > 0n ? 0 : count;
  }

  /** ns left before `oldest` must be dispatched even in a smaller batch than preferred (≤ 0: now). */
  delayLeftNs(oldest: PendingRequest, nowNs: bigint): bigint {
    return this.maxDelayNs - (nowNs - oldest.queueStartNs);
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
