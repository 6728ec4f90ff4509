/**
 * The scheduler's pending-request queue, with priority levels and queue policy (spec §5.6,
 * §3.9): `max_queue_size` overflow is rejected with UNAVAILABLE "Exceeds maximum queue size";
 * requests whose timeout expired before execution are taken out by {@link PendingQueue.takeExpired}
 * (the scheduler rejects them with "Request timeout expired").
 *
 * Expiry is lazy: the queue keeps the earliest deadline it may hold, so a check while no deadline
 * is due costs O(1); only a due deadline costs a sweep.
 */
import type { ModelDynamicBatching, ModelQueuePolicy } from '../config/types.js';
import { unavailable } from '../core/errors.js';
import type { InferenceRequest, ResponseSender } from '../core/types.js';

/** One request waiting for an instance. Times are monotonic ns (`process.hrtime.bigint()`). */
export interface PendingRequest {
  request: InferenceRequest;
  sender: ResponseSender;
  queueStartNs: bigint;
  /** 0n = no timeout. */
  deadlineNs: bigint;
  /** Index of its priority level (0 = level 1, the highest). */
  level: number;
}

const NO_POLICY: ModelQueuePolicy = {
  timeout_action: 'REJECT',
  default_timeout_microseconds: 0,
  allow_timeout_override: false,
  max_queue_size: 0,
};

const NONE_EXPIRED: readonly PendingRequest[] = Object.freeze([]);

/** Priority queues: level 1 is the highest; a model without priority levels has one queue. */
export class PendingQueue {
  private readonly levels: PendingRequest[][];
  private readonly policies: ModelQueuePolicy[];
  private readonly defaultLevel: number;
  private count = 0;
  /**
   * A lower bound of the deadlines of the queued requests on REJECT levels (0n = none). It may be
   * stale (its request already left the queue); a sweep then finds nothing and recomputes it.
   */
  private nextDeadlineNs = 0n;

  constructor(batching: ModelDynamicBatching | undefined) {
    const n = Math.max(1, batching?.priority_levels ?? 0);
    this.levels = Array.from({ length: n }, () => []);
    this.defaultLevel = batching && batching.priority_levels > 0 ? batching.default_priority_level : 1;
    this.policies = Array.from(
      { length: n },
      (_, i) => batching?.priority_queue_policy?.[String(i + 1)] ?? batching?.default_queue_policy ?? NO_POLICY,
    );
  }

  get size(): number {
    return this.count;
  }

  /**
   * Queue a request at its priority level.
   * @throws TritonError UNAVAILABLE when the level's `max_queue_size` is reached.
   */
  push(p: Omit<PendingRequest, 'deadlineNs' | 'level'>): void {
    const levelIdx = this.levelOf(p.request.priority);
    const policy = this.policies[levelIdx]!;
    const level = this.levels[levelIdx]!;
    if (policy.max_queue_size > 0 && level.length >= policy.max_queue_size) {
      throw unavailable('Exceeds maximum queue size');
    }
    let timeoutUs = policy.default_timeout_microseconds;
    const asked = p.request.timeoutUs;
    // A request may only shorten the timeout, and only when the policy allows it (spec §3.9).
    if (asked > 0 && policy.allow_timeout_override && (timeoutUs === 0 || asked < timeoutUs)) timeoutUs = asked;
    const deadlineNs = timeoutUs > 0 ? p.queueStartNs + BigInt(timeoutUs) * 1000n : 0n;
    level.push({ request: p.request, sender: p.sender, queueStartNs: p.queueStartNs, deadlineNs, level: levelIdx });
    this.count++;
    if (deadlineNs !== 0n && policy.timeout_action === 'REJECT' && (this.nextDeadlineNs === 0n || deadlineNs < this.nextDeadlineNs)) {
      this.nextDeadlineNs = deadlineNs;
    }
  }

  /** The oldest request of the highest non-empty level, without removing it. */
  peek(): PendingRequest | undefined {
    for (const l of this.levels) if (l.length > 0) return l[0];
    return undefined;
  }

  /** Every queued request in dispatch order (highest level first, oldest first), not removed. */
  *ordered(): Generator<PendingRequest> {
    for (const l of this.levels) yield* l;
  }

  /** Remove and return the head (see {@link peek}). */
  shift(): PendingRequest | undefined {
    for (const l of this.levels) {
      if (l.length > 0) {
        this.count--;
        return l.shift();
      }
    }
    return undefined;
  }

  /** Remove one queued request (O(its position in its level)); false if it is not queued. */
  remove(p: PendingRequest): boolean {
    const level = this.levels[p.level]!;
    const i = level.indexOf(p);
    if (i < 0) return false;
    level.splice(i, 1);
    this.count--;
    return true;
  }

  /**
   * Remove and return every request whose deadline is at or before `nowNs` on a level whose
   * `timeout_action` is REJECT (DELAY levels keep theirs). O(1) while no deadline is due.
   */
  takeExpired(nowNs: bigint): readonly PendingRequest[] {
    if (this.nextDeadlineNs === 0n || nowNs < this.nextDeadlineNs) return NONE_EXPIRED;
    const expired: PendingRequest[] = [];
    let next = 0n;
    this.levels.forEach((level, i) => {
      if (this.policies[i]!.timeout_action !== 'REJECT') return;
      let kept = 0;
      for (const p of level) {
        if (p.deadlineNs !== 0n && p.deadlineNs <= nowNs) {
          expired.push(p);
          continue;
        }
        if (p.deadlineNs !== 0n && (next === 0n || p.deadlineNs < next)) next = p.deadlineNs;
        level[kept++] = p;
      }
      level.length = kept;
    });
    this.count -= expired.length;
    this.nextDeadlineNs = next;
    return expired;
  }

  /** Remove everything (shutdown / unload). */
  clear(): PendingRequest[] {
    const all = this.levels.flat();
    for (const l of this.levels) l.length = 0;
    this.count = 0;
    this.nextDeadlineNs = 0n;
    return all;
  }

  private levelOf(priority: number): number {
    const n = this.levels.length;
    const lvl = priority > 0 && priority <= n ? priority : this.defaultLevel;
    return Math.min(Math.max(lvl, 1), n) - 1;
  }
}
