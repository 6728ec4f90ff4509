/**
 * Spare V8 sandbox workers (DESIGN "Sandbox rules"): a small, bounded set of worker threads started
 * ahead of need, so that an instance start (a load, or an upload by digest) takes one that has
 * already booted Node and loaded ./worker.ts, instead of paying for that on the load's path; the
 * replacement boots in the background once the taker's start settled.
 *
 * A spare has run no guest and holds nothing of a model: it waits for the one `init` message
 * (./messages.ts) of the instance that takes it, and is handed out once, to one instance. Every
 * sandbox worker gets the same Worker options (no environment, the same `resourceLimits`: they do
 * not depend on the model, whose memory cap is baked into its compiled modules), so one pool
 * serves every model and tenant. Spares reserve nothing from the memory budget (../memory-budget.ts:
 * they hold no linear memory) and are not counted as live sandboxes; they do not keep the process
 * alive, and {@link SpareWorkers.close} terminates them.
 */
import { Worker } from 'node:worker_threads';
import { workerEntry } from '../../../threads/worker-entry.js';

/** Spare workers kept by default. */
export const DEFAULT_SPARE_WORKERS = 1;

/**
 * Starts one sandbox worker, waiting for its `init` message. The same options for every sandbox:
 * no environment, console captured by the host, and a bounded JS heap and stack for the glue
 * (lifted values); wasm memory is bounded by the rewritten memory maximum (./memory-cap.ts).
 */
export function startSandboxWorker(): Worker {
  const entry = workerEntry(import.meta.url, 'worker');
  return new Worker(entry.script, {
    eval: entry.eval,
    env: {},
    stdout: true,
    stderr: true,
    resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
  });
}

/** The pool of spare sandbox workers of one V8 engine. */
export class SpareWorkers {
  private readonly spares: Worker[] = [];
  private closed = false;
  /** Spares started, and spares handed to an instance (for tests and logs). */
  readonly counts = { started: 0, taken: 0 };

  /** @param size spares to keep (0: none, every start boots its own worker) */
  constructor(readonly size: number = DEFAULT_SPARE_WORKERS) {
    if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`spare workers must be a non-negative integer, got ${size}`);
  }

  /**
   * A worker for one instance's sandbox, not yet given its `init`: a spare (removed from the pool:
   * no one else gets it) when there is one, else a freshly started one. The caller owns it and
   * calls {@link refill} once its start settled.
   */
  take(): Worker {
    let w = this.spares.shift();
    // one that died before its exit event (threadId -1 once it stopped) would never answer
    while (w && w.threadId < 0) w = this.spares.shift();
    if (!w) return startSandboxWorker();
    this.counts.taken++;
    w.ref();
    return w;
  }

  /** Starts spares until the pool holds `size` (none once closed). */
  refill(): void {
    while (!this.closed && this.spares.length < this.size) {
      const w = startSandboxWorker();
      this.counts.started++;
      w.unref();
      w.on('error', () => {}); // a spare that fails to boot is dropped at its exit
      w.once('exit', () => {
        const i = this.spares.indexOf(w);
        if (i >= 0) this.spares.splice(i, 1);
      });
      this.spares.push(w);
    }
  }

  /** The spares waiting now (a copy; for tests). */
  waiting(): Worker[] {
    return [...this.spares];
  }

  /** Terminates every spare; no more are started. Resolves once they exited. */
  async close(): Promise<void> {
    this.closed = true;
    const all = this.spares.splice(0);
    await Promise.all(all.map((w) => w.terminate()));
  }
}
