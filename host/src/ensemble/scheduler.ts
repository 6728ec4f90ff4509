/**
 * The scheduler of an ensemble version (spec §5.6, Triton's EnsembleScheduler): an ensemble has no
 * backend and no instances; each request it is given runs as an {@link EnsembleRun} over the data
 * plane. Nothing is queued here — the composing models' schedulers queue the steps.
 *
 * Statistics as Triton keeps them for an ensemble: the request's success / failure and end-to-end
 * duration (recorded by the model version, as for every model), and per successful request one
 * "execution" whose queue and compute durations are the sums of its composing requests' (nested
 * ensembles pass their sums up the same way).
 */
import type { Logger } from 'pino';
import { TritonError } from '../contract/errors.js';
import type { InferenceRequest, InferenceServerHandle, Principal, ResponseSender } from '../contract/types.js';
import type { ModelStatistics } from '../metrics/stats.js';
import type { EnsemblePlan } from './plan.js';
import { EnsembleRun } from './run.js';

export interface EnsembleSchedulerOptions {
  name: string;
  plan: EnsemblePlan;
  server: InferenceServerHandle;
  /** Whose namespace the steps' model names resolve in: the ensemble's owner. */
  principal: Principal;
  stats: ModelStatistics;
  /** The ensemble's log (errors of a run, e.g. a step's inputs carrying different sequence settings). */
  logger?: Logger;
}

/**
 * A `ModelScheduler` (scheduler/types.ts) for the ensemble kind: `createScheduler` builds it, and
 * its return type checks the shape (this folder sits below the scheduler's).
 */
export class EnsembleScheduler {
  private running = 0;
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly opts: EnsembleSchedulerOptions) {}

  /**
   * Start running `request`; responses go to `sender`. The request's `cancelled` flag (set by the
   * data plane when the caller goes away) cancels the run: the steps in flight are cancelled
   * through their signal and the final response is CANCELLED once they ended.
   */
  enqueue(request: InferenceRequest, sender: ResponseSender): void {
    const { name, plan, server, principal, stats, logger } = this.opts;
    this.running++;
    const run = new EnsembleRun(
      {
        name,
        plan,
        server,
        principal,
        logError: logger ? (msg) => logger.error(msg) : undefined,
        onFinished: (ok, t) => {
          this.finished();
          if (!ok) return;
          // A composing model records an execution once its backend's execute call returned,
          // which may come just after the response that ended this run: record on the next turn.
          setImmediate(() => {
            stats.recordRequestTimes(t.queueNs, t.inputNs, t.inferNs, t.outputNs);
            stats.recordExecution(request.batchSize, t.inputNs, t.inferNs, t.outputNs);
            request.onTimes?.(t.queueNs, t.inputNs, t.inferNs, t.outputNs);
          });
        },
      },
      request,
      sender,
    );
    let cancelled = request.cancelled;
    Object.defineProperty(request, 'cancelled', {
      configurable: true,
      enumerable: true,
      get: () => cancelled,
      set: (v: boolean) => {
        cancelled = v;
        if (v) run.cancel();
      },
    });
    if (cancelled) run.cancel();
    else run.start();
  }

  get pendingCount(): number {
    return 0;
  }

  pendingByTenant(): Map<string, number> {
    return new Map();
  }

  async drain(): Promise<void> {
    if (this.running > 0) await new Promise<void>((r) => this.drainWaiters.push(r));
  }

  /** Nothing is queued in an ensemble; runs in progress finish. */
  rejectPending(_error: TritonError): void {}

  private finished(): void {
    this.running--;
    if (this.running === 0 && this.drainWaiters.length > 0) {
      const w = this.drainWaiters;
      this.drainWaiters = [];
      for (const r of w) r();
    }
  }
}
