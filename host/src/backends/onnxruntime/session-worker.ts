/**
 * Main-thread handle of one ONNX Runtime session worker (worker.ts): starts it, runs one batch at a
 * time through it, and turns the thread's death into an error for the run in flight. The model
 * instance (index.ts) decides when to start a replacement.
 */
import { Worker } from 'node:worker_threads';
import { TritonError, internal } from '../../contract/errors.js';
import type { DataType } from '../../contract/datatypes.js';
import { workerEntry } from '../../threads/worker-entry.js';
import type { FromSessionWorker, SessionMetadata, SessionWorkerInit, ToSessionWorker, WireTensor } from './messages.js';
import * as ortErrors from './onnxruntime.errors.js';

/** What one run returns: output tensors (buffers now owned by this thread) and compute times (ns). */
export interface RunResult {
  outputs: WireTensor[];
  computeStartNs: bigint;
  computeEndNs: bigint;
  /** An inline run's CPU time on the event-loop thread (µs), where that clock applies (placement.ts). */
  costUs?: number;
}

interface PendingRun {
  seq: number;
  resolve: (r: RunResult) => void;
  reject: (e: TritonError) => void;
}

/** Time allowed for `release` before the thread is left to end on its own (ms). */
const RELEASE_WAIT_MS = 5_000;

/** One session worker. Create with {@link SessionWorker.start}. */
export class SessionWorker {
  private pending?: PendingRun;
  private seq = 0;
  private gone?: TritonError;
  private exited = false;
  private onGoneListener?: (e: TritonError) => void;

  private constructor(
    private readonly worker: Worker,
    /** The session's inputs and outputs as ONNX Runtime reports them. */
    readonly metadata: SessionMetadata,
    private readonly model: string,
  ) {
    worker.on('message', (m: FromSessionWorker) => this.onMessage(m));
    worker.on('error', (e) => this.die(`onnxruntime worker of model '${model}' failed: ${e.message}`));
    worker.on('exit', (code) => {
      this.exited = true;
      this.die(`onnxruntime worker of model '${model}' exited (code ${code})`);
    });
  }

  /**
   * Starts a worker thread and opens the session in it.
   * @param model The model's name, for messages.
   * @throws TritonError INVALID_ARG if ONNX Runtime cannot load the model (its message included),
   *   INTERNAL if the thread died before the session was open.
   */
  static start(init: SessionWorkerInit, model: string): Promise<SessionWorker> {
    const entry = workerEntry(import.meta.url, 'worker');
    const worker = new Worker(entry.script, { eval: entry.eval, workerData: init });
    return new Promise<SessionWorker>((resolve, reject) => {
      const onMessage = (m: FromSessionWorker) => {
        if (m.t === 'ready') {
          detach();
          resolve(new SessionWorker(worker, m.metadata, model));
        } else if (m.t === 'load-error') {
          detach();
          void worker.terminate();
          reject(ortErrors.sessionLoadFailed(model, init.file, m.message));
        }
      };
      const onError = (e: Error) => {
        detach(); // an uncaught error ends the thread
        reject(ortErrors.workerStartFailed(model, e.message));
      };
      const onExit = (code: number) => {
        detach();
        reject(ortErrors.workerExitedAtStart(model, code));
      };
      const detach = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }

  /**
   * The worker thread (supervision and tests). Terminate it only while no run is in flight: see
   * worker.ts.
   */
  get thread(): Worker {
    return this.worker;
  }

  /** True until the thread died or was released. */
  get alive(): boolean {
    return this.gone === undefined;
  }

  /** Called once, when the thread dies or is released (not called for a death during `start`). */
  onGone(listener: (e: TritonError) => void): void {
    this.onGoneListener = listener;
  }

  /**
   * Runs the session once. `feeds[i].data` must be the whole of a buffer this thread may give up:
   * it is transferred (detached here). One run at a time.
   * @param outputs The outputs to compute, with the Triton datatype each is returned as.
   * @throws TritonError INTERNAL with ONNX Runtime's message if the run failed, or if the worker
   *   died during the run (the caller replaces the worker).
   */
  run(feeds: WireTensor[], outputs: { name: string; datatype: DataType }[]): Promise<RunResult> {
    if (this.gone) return Promise.reject(this.gone);
    if (this.pending) return Promise.reject(ortErrors.sessionBusy());
    const seq = ++this.seq;
    const transfer: ArrayBuffer[] = [];
    for (const f of feeds) {
      const b = f.data.buffer as ArrayBuffer;
      if (!transfer.includes(b)) transfer.push(b);
    }
    return new Promise<RunResult>((resolve, reject) => {
      this.pending = { seq, resolve, reject };
      this.worker.postMessage({ t: 'run', seq, feeds, outputs } satisfies ToSessionWorker, transfer);
    });
  }

  private onMessage(m: FromSessionWorker): void {
    const p = this.pending;
    if (m.t === 'result' && p?.seq === m.seq) {
      this.pending = undefined;
      p.resolve({ outputs: m.outputs, computeStartNs: m.computeStartNs, computeEndNs: m.computeEndNs });
    } else if (m.t === 'run-error' && p?.seq === m.seq) {
      this.pending = undefined;
      p.reject(ortErrors.executeFailed(m.message));
    }
  }

  private die(message: string): void {
    if (this.gone) return;
    this.gone = internal(message);
    const p = this.pending;
    this.pending = undefined;
    p?.reject(this.gone);
    this.onGoneListener?.(this.gone);
  }

  /**
   * Releases the session and lets the thread end itself (never terminated from here: see
   * worker.ts). Resolves once the session is released (the thread's own teardown goes on without
   * keeping the process alive), or after {@link RELEASE_WAIT_MS} if the thread is still busy.
   */
  async release(): Promise<void> {
    if (this.exited) return;
    if (!this.gone) this.gone = ortErrors.sessionReleased(this.model);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(), RELEASE_WAIT_MS);
      const done = () => {
        clearTimeout(timer);
        this.worker.unref(); // the thread ends by itself; do not wait for its teardown
        resolve();
      };
      this.worker.once('exit', done);
      this.worker.on('message', (m: FromSessionWorker) => {
        if (m.t === 'released') done();
      });
      this.worker.postMessage({ t: 'release' } satisfies ToSessionWorker);
    });
  }
}
