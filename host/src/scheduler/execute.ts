/**
 * One `execute` call as every scheduler kind makes it: time it (monotonic ns, on the scheduler's
 * {@link Clock}), report it through {@link SchedulerHooks.onExecuted} (statistics, before any
 * error fan-out), and when `execute` rejects, send that error as the final response of every
 * request in the batch.
 */
import { asTritonError, type TritonError } from '../contract/errors.js';
import type { BackendModelInstance, ExecuteTimings, InferenceRequest, ResponseSender } from '../contract/types.js';
import type { Clock } from './clock.js';
import type { PendingRequest } from './queue.js';
import type { SchedulerHooks } from './types.js';

/**
 * Execute `requests` (with their `senders`) on `instance`; `batch` is what the scheduler queued
 * for them (the requests' queue times), `batchSize` the sum of their batch sizes, `clock` the one
 * the queue times were read on. `finished` runs last, in the same turn (the scheduler frees the
 * instance and its grant there). Never rejects.
 */
export async function executeBatch(
  instance: BackendModelInstance,
  batch: PendingRequest[],
  requests: InferenceRequest[],
  senders: ResponseSender[],
  batchSize: number,
  hooks: SchedulerHooks,
  clock: Clock,
  finished: () => void,
): Promise<void> {
  try {
    const execStartNs = clock.now();
    let timings: ExecuteTimings | void = undefined;
    let error: TritonError | undefined;
    try {
      timings = await instance.execute(requests, senders);
    } catch (e) {
      error = asTritonError(e);
    }
    const execEndNs = clock.now();
    hooks.onExecuted({ batch, batchSize, execStartNs, execEndNs, timings: timings ?? undefined, error });
    if (error) for (const p of batch) p.sender.sendError(error, true);
  } finally {
    finished();
  }
}
