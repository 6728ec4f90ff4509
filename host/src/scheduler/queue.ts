/**
 * The scheduler's pending-request queue, with priority levels and queue policy (spec §5.6,
 * §3.9): `max_queue_size` overflow is rejected with UNAVAILABLE "Exceeds maximum queue size";
 * requests whose timeout expired before execution are rejected with "Request timeout expired".
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
}

const NO_POLICY: ModelQueuePolicy = {
  timeout_action: 'REJECT',
  default_timeout_microseconds: 0,
  allow_timeout_override: false,
  max_queue_size: 0,
};

/** Priority queues: level 1 is the highest; a model without priority levels has one queue. */
export class PendingQueue {
  private readonly levels: PendingRequest[][];
  private readonly policies: ModelQueuePolicy[];
  private readonly defaultLevel: number;
  private count = 0;

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
  push(p: Omit<PendingRequest, 'deadlineNs'>): void {
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
    level.push({ ...p, deadlineNs });
    this.count++;
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

  /** Remove every request whose deadline passed and whose level's action is REJECT. */
  takeExpired(nowNs: bigint): PendingRequest[] {
    const expired: PendingRequest[] = [];
    this.levels.forEach((level, i) => {
      if (this.policies[i]!.timeout_action !== 'REJECT') return;
      for (let j = level.length - 1; j >= 0; j--) {
        const p = level[j]!;
        if (p.deadlineNs !== 0n && p.deadlineNs <= nowNs) {
          expired.push(p);
          level.splice(j, 1);
          this.count--;
        }
      }
    });
    return expired;
  }

  /** Remove everything (shutdown / unload). */
  clear(): PendingRequest[] {
    const all = this.levels.flat();
    for (const l of this.levels) l.length = 0;
    this.count = 0;
    return all;
  }

  private levelOf(priority: number): number {
    const n = this.levels.length;
    const lvl = priority > 0 && priority <= n ? priority : this.defaultLevel;
    return Math.min(Math.max(lvl, 1), n) - 1;
  }
}
