/**
 * Per-model-version scheduler (spec §5.6): the default scheduler (one request per execution) and
 * the dynamic batcher (several requests in one `execute`, bounded by `max_batch_size`, waiting at
 * most `max_queue_delay_microseconds` for a preferred batch size). `execute` is never called
 * concurrently on one instance; idle instances take work in parallel.
 */
import type { ModelConfig } from '../config/types.js';
import { TritonError, asTritonError, unavailable } from '../core/errors.js';
import type { BackendModelInstance, ExecuteTimings, InferenceRequest, ResponseSender } from '../core/types.js';
import { PendingQueue, type PendingRequest } from './queue.js';

/** What happened in one `execute` call (monotonic ns). */
export interface ExecutionRecord {
  batch: PendingRequest[];
  /** Sum of the requests' batch sizes. */
  batchSize: number;
  execStartNs: bigint;
  execEndNs: bigint;
  timings?: ExecuteTimings;
  /** Set when `execute` rejected. */
  error?: TritonError;
}

export interface SchedulerHooks {
  /** Statistics for an execution (called before the error fan-out of a failed execution). */
  onExecuted(record: ExecutionRecord): void;
}

interface Slot {
  instance: BackendModelInstance;
  busy: boolean;
}

const now = (): bigint => process.hrtime.bigint();

export class Scheduler {
  private readonly queue: PendingQueue;
  private readonly slots: Slot[];
  private readonly maxBatch: number;
  private readonly dynamic: boolean;
  private readonly preferredMax: number;
  private readonly maxDelayNs: bigint;
  private readonly raggedInputs: Set<string>;
  private timer: NodeJS.Timeout | undefined;
  private busyCount = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    instances: readonly BackendModelInstance[],
    config: ModelConfig,
    private readonly hooks: SchedulerHooks,
  ) {
    this.slots = instances.map((instance) => ({ instance, busy: false }));
    const db = config.dynamic_batching;
    this.queue = new PendingQueue(db);
    this.dynamic = db !== undefined && config.max_batch_size > 0;
    this.maxBatch = Math.max(1, config.max_batch_size);
    const preferred = db?.preferred_batch_size ?? [];
    this.preferredMax = preferred.length > 0 ? Math.min(Math.max(...preferred), this.maxBatch) : this.maxBatch;
    this.maxDelayNs = BigInt(db?.max_queue_delay_microseconds ?? 0) * 1000n;
    this.raggedInputs = new Set(config.input.filter((i) => i.allow_ragged_batch).map((i) => i.name));
  }

  /** Requests waiting for an instance (`nv_inference_pending_request_count`). */
  get pendingCount(): number {
    return this.queue.size;
  }

  /**
   * Queue a validated request.
   * @throws TritonError UNAVAILABLE if the queue is full (the request was not queued).
   */
  enqueue(request: InferenceRequest, sender: ResponseSender): void {
    this.queue.push({ request, sender, queueStartNs: now() });
    this.pump();
  }

  /** Resolves once nothing is queued or executing. */
  drain(): Promise<void> {
    if (this.queue.size === 0 && this.busyCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Fail every queued request with `error` (used when a model version is torn down). */
  rejectPending(error: TritonError): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const p of this.queue.clear()) p.sender.sendError(error, true);
    this.checkIdle();
  }

  private pump(force = false): void {
    for (const p of this.queue.takeExpired(now())) p.sender.sendError(unavailable('Request timeout expired'), true);
    while (this.queue.size > 0) {
      const slot = this.slots.find((s) => !s.busy && (s.instance.isReady?.() ?? true));
      if (!slot) break;
      const batch = this.formBatch(force);
      if (!batch) break;
      void this.run(slot, batch);
    }
    this.checkIdle();
  }

  /**
   * Take the next batch, or undefined if the dynamic batcher should wait for more requests (a
   * timer is then armed). `force` dispatches whatever fits (the queue delay expired).
   */
  private formBatch(force = false): PendingRequest[] | undefined {
    if (!this.dynamic) return [this.queue.shift()!];
    let head: InferenceRequest | undefined;
    let count = 0;
    let total = 0;
    for (const p of this.queue.ordered()) {
      const r = p.request;
      if (total + r.batchSize > this.maxBatch) break;
      if (head && !this.compatible(head, r)) break;
      head ??= r;
      count++;
      total += r.batchSize;
      if (total >= this.preferredMax) break;
    }
    if (count === 0) count = 1; // cannot happen for validated requests; never stall the queue
    const waited = now() - this.queue.peek()!.queueStartNs;
    if (!force && total < this.preferredMax && this.maxDelayNs > 0n && waited < this.maxDelayNs) {
      if (!this.timer) {
        this.timer = setTimeout(
          () => {
            this.timer = undefined;
            this.pump(true);
          },
          Math.max(0, Number(this.maxDelayNs - waited) / 1e6),
        );
      }
      return undefined;
    }
    return Array.from({ length: count }, () => this.queue.shift()!);
  }

  /** Same non-batch dims for every input (except ragged ones) and the same inputs. */
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

  private async run(slot: Slot, batch: PendingRequest[]): Promise<void> {
    slot.busy = true;
    this.busyCount++;
    const execStartNs = now();
    let timings: ExecuteTimings | void = undefined;
    let error: TritonError | undefined;
    try {
      timings = await slot.instance.execute(
        batch.map((p) => p.request),
        batch.map((p) => p.sender),
      );
    } catch (e) {
      error = asTritonError(e);
    }
    const execEndNs = now();
    const batchSize = batch.reduce((n, p) => n + p.request.batchSize, 0);
    this.hooks.onExecuted({ batch, batchSize, execStartNs, execEndNs, timings: timings ?? undefined, error });
    if (error) for (const p of batch) p.sender.sendError(error, true);
    slot.busy = false;
    this.busyCount--;
    this.pump();
  }

  private checkIdle(): void {
    if (this.queue.size === 0 && this.busyCount === 0 && this.idleWaiters.length > 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const r of w) r();
    }
  }
}
