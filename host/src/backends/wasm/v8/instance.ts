/**
 * Host side of one V8-sandboxed model instance: owns the sandbox worker, runs `execute` through
 * it under the execute deadline, delivers responses to the requests' senders, and replaces the
 * worker after a deadline kill, a trap or an unexpected exit (spec §6.7, §6.8; DESIGN "Sandbox
 * rules"). Other instances and models are untouched by anything that happens here.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { TritonError, unavailable } from '../../../contract/errors.js';
import type { ExecuteTimings, InferenceRequest, InstanceSpec, ResponseSender } from '../../../contract/types.js';
import { workerEntry } from '../../../threads/worker-entry.js';
import type { SandboxedInstance, SandboxStats } from '../engine.js';
import { WireHandles, toWireRequests, type WireError, type WireResponse } from '../wire.js';
import { CANCEL_SLOTS, type FromWorker, type ToWorker, type WorkerInit } from './messages.js';

/** Time allowed for a worker to boot and instantiate, on top of the execute deadline (ms). */
const BOOT_ALLOWANCE_MS = 10_000;

/** Counts the worker threads of one engine that have not exited yet. */
export interface WorkerCounter {
  live: number;
}

/** What the model hands each instance. */
export interface SandboxParams {
  init: Omit<WorkerInit, 'cancelFlags' | 'instance'>;
  spec: InstanceSpec;
  logger: Logger;
  /** Execute deadline, ms. */
  executeMs: number;
  /** The engine's live-worker count, kept up to date by the instance. */
  workers: WorkerCounter;
}

interface Pending {
  seq: number;
  requests: InferenceRequest[];
  senders: ResponseSender[];
  handles: number[];
  finals: boolean[];
  resolve: (t: ExecuteTimings | void) => void;
  timer: NodeJS.Timeout;
  cancelPoll?: NodeJS.Timeout;
}

function tritonError(e: WireError): TritonError {
  return new TritonError(e.code, e.message);
}

/** A wire response → core response (no copy; the worker transferred the buffers). */
function toResponse(r: WireResponse) {
  return r.parameters ? { outputs: r.outputs, parameters: r.parameters } : { outputs: r.outputs };
}

/** One V8-sandboxed instance. Create with {@link SandboxInstance.start}. */
export class SandboxInstance implements SandboxedInstance {
  readonly stats: SandboxStats = { starts: 0, deadlineKills: 0, traps: 0 };
  private worker?: Worker;
  private readonly cancelFlags = new SharedArrayBuffer(CANCEL_SLOTS * 4);
  private readonly cancelView = new Int32Array(this.cancelFlags);
  private ready?: Promise<void>;
  private broken?: TritonError;
  private pending?: Pending;
  private seq = 0;
  private readonly handles = new WireHandles();
  private finalized = false;
  private readonly log: Logger;

  private constructor(private readonly p: SandboxParams) {
    this.log = p.logger.child({ instance: p.spec.name });
  }

  /**
   * Starts the instance's sandbox: worker boot, instantiation, `model.create`, `instance.create`.
   * @throws TritonError with the backend's own error if a `create` returned one, INTERNAL if the
   *   component trapped during start-up, UNAVAILABLE if start-up exceeded its deadline.
   */
  static async start(p: SandboxParams): Promise<SandboxInstance> {
    const inst = new SandboxInstance(p);
    await inst.spawn();
    return inst;
  }

  isReady(): boolean {
    return !this.finalized && this.broken === undefined && this.worker !== undefined;
  }

  private spawn(): Promise<void> {
    const entry = workerEntry(import.meta.url, 'worker');
    const init: WorkerInit = {
      ...this.p.init,
      instance: { name: this.p.spec.name, kind: this.p.spec.kind === 'KIND_GPU' ? 'gpu' : this.p.spec.kind === 'KIND_MODEL' ? 'model' : 'cpu', deviceId: this.p.spec.deviceId },
      cancelFlags: this.cancelFlags,
    };
    this.stats.starts++;
    const worker = new Worker(entry.script, {
      eval: entry.eval,
      workerData: init,
      env: {},
      stdout: true,
      stderr: true,
      // JS heap of the glue (lifted values); wasm memory is bounded by the rewritten maximum
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
    });
    this.worker = worker;
    const workers = this.p.workers;
    workers.live++;
    worker.once('exit', () => workers.live--);
    const started = new Promise<void>((resolve, reject) => {
      const limitMs = this.p.executeMs + BOOT_ALLOWANCE_MS;
      const timer = setTimeout(() => fail(unavailable(`sandbox of model '${this.p.init.model.name}' did not start within ${limitMs} ms`)), limitMs);
      const onError = (e: Error) => fail(new TritonError('INTERNAL', `sandbox of model '${this.p.init.model.name}' failed during start-up: ${e.message}`));
      const onExit = (code: number) => fail(new TritonError('INTERNAL', `sandbox of model '${this.p.init.model.name}' exited during start-up (code ${code})`));
      const detach = () => {
        clearTimeout(timer);
        worker.removeAllListeners('message');
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const fail = (e: TritonError) => {
        detach();
        worker.on('error', () => {}); // a late error of a discarded worker is not news
        void worker.terminate();
        if (this.worker === worker) this.worker = undefined;
        reject(e);
      };
      worker.on('message', (m: FromWorker) => {
        if (m.t === 'ready') {
          detach();
          worker.on('message', (msg: FromWorker) => this.onMessage(worker, msg));
          worker.on('error', (e) => this.onWorkerGone(worker, `worker error: ${e.message}`));
          worker.on('exit', (code) => this.onWorkerGone(worker, `worker exited (code ${code})`));
          resolve();
        } else if (m.t === 'create-error') {
          fail(tritonError(m.error));
        } else if (m.t === 'trap') {
          fail(new TritonError('INTERNAL', `sandboxed backend of model '${this.p.init.model.name}' trapped during start-up: ${m.message}`));
        } else if (m.t === 'log') {
          this.guestLog(m);
        }
      });
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
    for (const stream of [worker.stdout, worker.stderr]) {
      // only jco's glue can print (wasm cannot reach the console); keep it out of the server's stdout
      stream.on('data', (chunk: Buffer) => this.log.debug({ source: 'worker-console' }, chunk.toString('utf8', 0, Math.min(chunk.length, 4096))));
    }
    return started;
  }

  private guestLog(m: Extract<FromWorker, { t: 'log' }>): void {
    const fields = { source: m.source };
    switch (m.level) {
      case 'error':
        this.log.error(fields, m.message);
        break;
      case 'warn':
        this.log.warn(fields, m.message);
        break;
      case 'verbose':
        this.log.debug(fields, m.message);
        break;
      default:
        this.log.info(fields, m.message);
    }
  }

  private onMessage(worker: Worker, m: FromWorker): void {
    if (worker !== this.worker) return;
    switch (m.t) {
      case 'log':
        this.guestLog(m);
        return;
      case 'send':
        this.onSend(m);
        return;
      case 'done':
        this.onDone(m);
        return;
      case 'trap':
        this.kill('trap', new TritonError('INTERNAL', `sandboxed backend of model '${this.p.init.model.name}' trapped: ${m.message}; the instance was restarted`));
        return;
      default:
        return;
    }
  }

  private onSend(m: Extract<FromWorker, { t: 'send' }>): void {
    const p = this.pending;
    if (!p) return;
    const i = p.handles.indexOf(m.handle);
    if (i < 0 || p.finals[i]) return;
    if (m.final) p.finals[i] = true;
    const sender = p.senders[i]!;
    if (m.error) sender.sendError(tritonError(m.error), m.final);
    else sender.send(m.response ? toResponse(m.response) : null, m.final);
    if (p.requests[i]!.cancelled && i < CANCEL_SLOTS) Atomics.store(this.cancelView, i, 1);
  }

  private onDone(m: Extract<FromWorker, { t: 'done' }>): void {
    const p = this.pending;
    if (!p || p.seq !== m.seq) return;
    this.settle(p);
    m.results.forEach((r, i) => {
      if (p.finals[i]) return;
      p.finals[i] = true;
      if (r === null) p.senders[i]!.send(null, true);
      else if ('ok' in r) p.senders[i]!.send(toResponse(r.ok), true);
      else p.senders[i]!.sendError(tritonError(r.err), true);
    });
    p.resolve({ computeStartNs: m.computeStartNs, computeEndNs: m.computeEndNs });
  }

  private settle(p: Pending): void {
    clearTimeout(p.timer);
    if (p.cancelPoll) clearInterval(p.cancelPoll);
    this.pending = undefined;
    for (let i = 0; i < Math.min(p.requests.length, CANCEL_SLOTS); i++) Atomics.store(this.cancelView, i, 0);
  }

  /** The worker died without being asked to (JS heap OOM, crash). */
  private onWorkerGone(worker: Worker, why: string): void {
    if (worker !== this.worker || this.finalized) return;
    this.kill('trap', new TritonError('INTERNAL', `sandbox of model '${this.p.init.model.name}' failed (${why}); the instance was restarted`));
  }

  /**
   * Terminates the current worker, fails the in-flight execute's requests that have no final
   * response with `error`, and starts a replacement in the background.
   */
  private kill(reason: 'deadline' | 'trap', error: TritonError): void {
    const worker = this.worker;
    this.worker = undefined;
    const killedAt = performance.now();
    if (reason === 'deadline') this.stats.deadlineKills++;
    else this.stats.traps++;
    if (worker) {
      worker.removeAllListeners('message');
      void worker.terminate();
    }
    const p = this.pending;
    if (p) {
      this.settle(p);
      p.senders.forEach((s, i) => {
        if (!p.finals[i]) {
          p.finals[i] = true;
          s.sendError(error, true);
        }
      });
      p.resolve();
    }
    this.log.warn({ reason }, error.message);
    if (this.finalized) return;
    this.ready = this.spawn().then(
      () => {
        this.stats.lastRespawnMs = performance.now() - killedAt;
        this.broken = undefined;
        this.log.info({ respawnMs: Math.round(this.stats.lastRespawnMs * 1000) / 1000 }, 'sandbox restarted');
      },
      (e: TritonError) => {
        this.broken = e;
        if (!this.finalized) this.log.error({ err: e.message }, 'sandbox could not be restarted');
      },
    );
  }

  /**
   * Runs one batch in the sandbox. Resolves when the instance can take more work; every request
   * has had its final response by then (a sandboxed backend cannot respond after `execute`).
   * @throws TritonError UNAVAILABLE if the sandbox is down and cannot be restarted.
   */
  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void> {
    if (this.finalized) throw unavailable(`instance ${this.p.spec.name} of model '${this.p.init.model.name}' is finalized`);
    if (this.ready) await this.ready;
    if (!this.worker) {
      // the last restart failed: try once more for this call
      this.ready = this.spawn().then(() => {
        this.broken = undefined;
      });
      try {
        await this.ready;
      } catch (e) {
        this.broken = e as TritonError;
        throw unavailable(`sandboxed backend of model '${this.p.init.model.name}' is unavailable: ${(e as Error).message}`);
      }
    }
    const worker = this.worker!;
    const seq = ++this.seq;
    const handles = this.handles.take(requests.length);
    const transfer: ArrayBuffer[] = [];
    const wire = toWireRequests(requests, handles, (t) => {
      // send only the tensor's own bytes (a view may sit in a larger request buffer)
      // (new Uint8Array(view) copies; Buffer#slice would not)
      const whole = t.data.byteOffset === 0 && t.data.byteLength === t.data.buffer.byteLength;
      const data = whole ? t.data : new Uint8Array(t.data);
      if (!whole) transfer.push(data.buffer as ArrayBuffer);
      return { name: t.name, datatype: t.datatype, shape: t.shape, data };
    });
    return new Promise<ExecuteTimings | void>((resolve) => {
      const p: Pending = {
        seq,
        requests,
        senders,
        handles,
        finals: requests.map(() => false),
        resolve,
        timer: setTimeout(() => {
          if (this.pending === p) {
            this.kill('deadline', unavailable(`sandboxed backend of model '${this.p.init.model.name}' exceeded its execute deadline of ${this.p.executeMs} ms; the instance was restarted`));
          }
        }, this.p.executeMs),
      };
      if (this.p.init.model.decoupled) {
        p.cancelPoll = setInterval(() => {
          requests.forEach((r, i) => {
            if (r.cancelled && i < CANCEL_SLOTS) Atomics.store(this.cancelView, i, 1);
          });
        }, 20);
      }
      this.pending = p;
      worker.postMessage({ t: 'exec', seq, requests: wire } satisfies ToWorker, transfer);
    });
  }

  async finalize(): Promise<void> {
    this.finalized = true;
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }
}
