/**
 * The default scheduler and the dynamic batcher of one model version (spec §5.6): requests wait in
 * a {@link PendingQueue} (priority levels, queue policy §3.9, deficit round robin across tenants
 * within a level), a {@link BatchPolicy} decides what runs next (batches follow the queue's fair
 * order and may mix tenants), an {@link InstancePool} gives the instance and the server-wide
 * {@link ExecutionArbiter} admits the execution. Expired requests are rejected and cancelled ones
 * dropped when they would be dispatched, so neither reaches a backend.
 */
import type { ModelConfig } from '../contract/model-config.js';
import { TritonError, cancelled } from '../contract/errors.js';
import type { InferenceRequest, ResponseSender } from '../contract/types.js';
import { ArbiterGate, type ExecutionArbiter, type ExecutionGrant } from './arbiter.js';
import { executeBatch } from './execute.js';
import { BatchPolicy } from './batch-policy.js';
import { SYSTEM_CLOCK, type Clock, type ClockTimer } from './clock.js';
import type { InstanceLease, InstancePool } from './instance-pool.js';
import { PendingQueue, type PendingRequest } from './queue.js';
import type { ModelScheduler, SchedulerHooks, TenantFairness } from './types.js';
import { queueTimeout } from './scheduler.errors.js';

/** Dispatches one model version's requests: one per execution, or batched with `dynamic_batching`. */
export class DynamicBatchScheduler implements ModelScheduler {
  private readonly queue: PendingQueue;
  private readonly policy: BatchPolicy;
  private timer: ClockTimer | undefined;
  private executing = 0;
  private idleWaiters: (() => void)[] = [];
  private pumping = false;
  private pumpAgain = false;
  private pumpAgainForced = false;
  /** Scratch list for {@link BatchPolicy.plan}'s cancelled requests (reused, always left empty). */
  private readonly cancelled: PendingRequest[] = [];
  /** This model version's side of the arbiter (claim, deferred flag, wake). */
  private readonly gate: ArbiterGate;
  private readonly wakeFromPool = (): void => this.pump();

  /**
   * @param version the model version served (named to the arbiter with `config.name`).
   * @param fairness tenant weights, DRR quantum (default `max(1, max_batch_size)`) and per-tenant cap.
   * @param clock queue times, queue timeouts and the `max_queue_delay_microseconds` timer.
   */
  constructor(
    config: ModelConfig,
    private readonly pool: InstancePool,
    private readonly hooks: SchedulerHooks,
    arbiter: ExecutionArbiter,
    version: number,
    fairness: TenantFairness = {},
    private readonly clock: Clock = SYSTEM_CLOCK,
  ) {
    const q = fairness.quantum;
    this.queue = new PendingQueue(config.dynamic_batching, {
      weightOf: fairness.weightOf?.bind(fairness),
      quantum: q !== undefined && q > 0 && Number.isFinite(q) ? q : Math.max(1, config.max_batch_size),
      maxQueuedPerTenant: fairness.maxQueuedPerTenant,
      model: config.name,
    });
    this.policy = new BatchPolicy(config);
    this.gate = new ArbiterGate(arbiter, config.name, version, () => this.pump(), config.backend === 'wasm');
  }

  get pendingCount(): number {
    return this.queue.size;
  }

  pendingByTenant(): Map<string, number> {
    return this.queue.pendingByTenant();
  }

  enqueue(request: InferenceRequest, sender: ResponseSender): void {
    this.queue.push({ request, sender, queueStartNs: this.clock.now() });
    this.pump();
  }

  drain(): Promise<void> {
    if (this.queue.size === 0 && this.executing === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  rejectPending(error: TritonError): void {
    this.clock.cancel(this.timer);
    this.timer = undefined;
    for (const p of this.queue.clear()) p.sender.sendError(error, true);
    this.checkIdle();
  }

  /**
   * Dispatch what can run now. Re-entrant calls (a wake or a response sent while dispatching) are
   * folded into one more round of the outer call.
   */
  private pump(force = false): void {
    if (this.pumping) {
      this.pumpAgain = true;
      this.pumpAgainForced ||= force;
      return;
    }
    this.pumping = true;
    try {
      this.dispatch(force);
      while (this.pumpAgain) {
        const again = this.pumpAgainForced;
        this.pumpAgain = this.pumpAgainForced = false;
        this.dispatch(again);
      }
    } finally {
      this.pumping = false;
    }
    this.checkIdle();
  }

  private dispatch(force: boolean): void {
    while (this.queue.size > 0) {
      const t = this.clock.now();
      for (const p of this.queue.takeExpired(t)) p.sender.sendError(queueTimeout(), true);
      const count = this.policy.plan(this.queue, t, force, this.cancelled, this.gate.tenants);
      if (this.cancelled.length > 0) this.dropCancelled();
      if (count === 0) {
        const oldestNs = this.queue.oldestStartNs();
        if (oldestNs !== undefined) this.armDelayTimer(this.policy.delayLeftNs(oldestNs, t));
        return;
      }
      if (this.gate.deferred) return;
      const lease = this.pool.tryAcquire();
      if (!lease) {
        this.pool.notifyWhenAvailable(this.wakeFromPool);
        return;
      }
      const grant = this.gate.admit();
      if (!grant) {
        this.pool.release(lease);
        return;
      }
      const batch: PendingRequest[] = new Array(count);
      for (let i = 0; i < count; i++) batch[i] = this.queue.shift()!;
      void this.run(lease, grant, batch);
    }
  }

  /** Take the cancelled requests {@link BatchPolicy.plan} met out of the queue; each gets CANCELLED. */
  private dropCancelled(): void {
    for (const p of this.cancelled) {
      if (this.queue.remove(p)) p.sender.sendError(cancelled(), true);
    }
    this.cancelled.length = 0;
  }

  private armDelayTimer(leftNs: bigint): void {
    if (this.timer) return;
    this.timer = this.clock.schedule(
      () => {
        this.timer = undefined;
        this.pump(true);
      },
      Math.max(0, Number(leftNs) / 1e6),
    );
  }

  private run(lease: InstanceLease, grant: ExecutionGrant, batch: PendingRequest[]): Promise<void> {
    this.executing++;
    const batchSize = batch.reduce((n, p) => n + p.request.batchSize, 0);
    return executeBatch(
      lease.instance,
      batch,
      batch.map((p) => p.request),
      batch.map((p) => p.sender),
      batchSize,
      this.hooks,
      this.clock,
      () => {
        this.executing--;
        this.pool.release(lease);
        grant.release();
        this.pump();
      },
    );
  }

  private checkIdle(): void {
    if (this.queue.size === 0 && this.executing === 0 && this.idleWaiters.length > 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const r of w) r();
    }
  }
}
