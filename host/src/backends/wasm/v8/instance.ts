/**
 * Host side of one V8-sandboxed model instance: owns the sandbox worker, runs `execute` through
 * it under the execute deadline, delivers responses to the requests' senders, and replaces the
 * worker after a deadline kill, a trap or an unexpected exit (spec §6.7, §6.8; DESIGN "Sandbox
 * rules"), through the backends' one supervisor (../../supervisor.ts): a worker killed after a
 * trap or a deadline is replaced at once; one that died on its own (JS heap, crash) after its
 * back-off, as a replacement that fails to start. Other instances and models are untouched by
 * anything that happens here.
 *
 * Idle policy: with `idleMs` > 0 a worker that ran nothing for that long is terminated, and the
 * next execute starts a fresh one (a cold start: worker boot, instantiation of the compiled core
 * modules, the guest's `create`s). Memory (../memory-budget.ts): each worker reserves the model's
 * sandbox memory before it is created and releases it at its exit; while it runs nothing (and the
 * idle policy is on) the reservation is marked idle, so that the budget may release it early.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { ModelLogWriter } from '../../../contract/model-log.js';
import { deliverLogLine } from '../host/log.js';
import { TritonError } from '../../../contract/errors.js';
import * as err from '../sandbox.errors.js';
import type { ExecuteTimings, InferenceRequest, InstanceSpec, InstanceUsage, ResponseSender } from '../../../contract/types.js';
import { Supervisor } from '../../supervisor.js';
import type { SandboxedInstance, SandboxStats } from '../engine.js';
import type { Reservation, SandboxMemory } from '../memory-budget.js';
import { WireHandles, deliverResults, deliverSend, toWireRequests, type WireError } from '../wire.js';
import * as bls from '../host/inference.js';
import { CANCEL_SLOTS, type CallAnswer, type CallToHost, type FromWorker, type ToWorker, type WorkerInit } from './messages.js';
import { startSandboxWorker, type SpareWorkers } from './spares.js';

/** Time allowed for a worker to boot and instantiate, on top of the execute deadline (ms). */
const BOOT_ALLOWANCE_MS = 10_000;

/** Counts the worker threads of one engine that have not exited yet. */
export interface WorkerCounter {
  live: number;
}

/** What the model hands each instance. */
export interface SandboxParams {
  init: Omit<WorkerInit, 'cancelFlags' | 'instance' | 'callChannel'>;
  /** The models the instance may call (../host/inference.ts); none: no grants. */
  calls?: bls.InferenceCalls;
  spec: InstanceSpec;
  logger: Logger;
  /** The model's own log, where guest lines also go (contract/model-log.ts). */
  modelLog?: ModelLogWriter;
  /** Execute deadline, ms. */
  executeMs: number;
  /** The engine's live-worker count, kept up to date by the instance. */
  workers: WorkerCounter;
  /** Idle policy (ms; 0 = never release an idle worker). */
  idleMs: number;
  /** Where each worker reserves its memory (none: no budget). */
  memory?: SandboxMemory;
  /** The engine's spare workers: each worker start takes one (none: each start boots its own). */
  spares?: SpareWorkers;
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

/** One V8-sandboxed instance. Create with {@link SandboxInstance.start}. */
export class SandboxInstance implements SandboxedInstance {
  readonly stats: SandboxStats = { starts: 0, deadlineKills: 0, traps: 0 };
  /** The sandbox workers: one serves at a time; a killed or dead one is replaced. */
  private readonly sup: Supervisor<Worker, TritonError>;
  /** A worker booting (first start or replacement), until it is ready or given up. */
  private booting?: Worker;
  /** When the last worker was killed (respawn time). */
  private killedAt = 0;
  private readonly cancelFlags = new SharedArrayBuffer(CANCEL_SLOTS * 4);
  private readonly cancelView = new Int32Array(this.cancelFlags);
  private pending?: Pending;
  private seq = 0;
  private readonly handles = new WireHandles();
  private finalized = false;
  private readonly log: Logger;
  /** Releases by the idle policy, cold starts after one, and the last one's time (ms). */
  readonly idle = { releases: 0, coldStarts: 0, lastColdStartMs: 0 };
  /** The serving worker when the idle policy has terminated it (the next execute starts another). */
  private released?: Worker;
  private idleTimer?: NodeJS.Timeout;
  /** The cold start under way. */
  private cold?: Promise<Worker>;
  /** Each worker's memory reservation (released at its exit). */
  private readonly leases = new WeakMap<Worker, Reservation>();
  /** The calls of the execute in flight (`warden:backend/inference`). */
  private readonly inference: bls.InferenceState;
  /** Where each worker's waiting host calls are answered (its `callChannel`), and the signal it waits on. */
  private readonly callPorts = new WeakMap<Worker, MessagePort>();
  private readonly callSignal = new Int32Array(new SharedArrayBuffer(4));

  private constructor(private readonly p: SandboxParams) {
    this.log = p.logger.child({ instance: p.spec.name });
    this.inference = bls.createInferenceState(p.calls);
    this.sup = new Supervisor<Worker, TritonError>({
      start: () => this.spawn(),
      stop: (w) => void w.terminate(),
      failInFlight: (_w, error) => this.failPending(error),
      onRestarted: () => {
        this.stats.lastRespawnMs = performance.now() - this.killedAt;
        this.log.info({ respawnMs: Math.round(this.stats.lastRespawnMs * 1000) / 1000 }, 'sandbox restarted');
      },
      onRestartFailed: (e) => this.log.error({ err: (e as Error).message }, 'sandbox could not be restarted'),
    });
  }

  /**
   * Starts the instance's sandbox: worker boot, instantiation, `model.create`, `instance.create`.
   * @throws TritonError with the backend's own error if a `create` returned one, INTERNAL if the
   *   component trapped during start-up, UNAVAILABLE if start-up exceeded its deadline.
   */
  static async start(p: SandboxParams): Promise<SandboxInstance> {
    const inst = new SandboxInstance(p);
    await inst.sup.start();
    inst.armIdle();
    return inst;
  }

  /**
   * The instance without a sandbox, exactly as after an idle release: no worker, no memory
   * reserved; the first execute cold-starts one (a `create` error is then that request's error,
   * as for any cold start).
   */
  static released(p: SandboxParams): SandboxInstance {
    const inst = new SandboxInstance(p);
    // stands for the released worker until the first cold start swaps a real one in
    const none = { terminate: () => Promise.resolve(0) } as unknown as Worker;
    inst.sup.adopt(none);
    inst.released = none;
    return inst;
  }

  /** Restarts of its worker, and the memory reservation of the worker that serves (none while idle-released). */
  usage(): InstanceUsage {
    const serving = this.worker;
    const lease = serving ? this.leases.get(serving) : undefined;
    return { restarts: this.sup.restarts, sandboxMemoryBytes: lease && !lease.released ? lease.bytes : 0 };
  }

  /** Ready while a worker serves or its replacement boots; not once a replacement failed to start, until one serves. */
  isReady(): boolean {
    return !this.finalized && (this.sup.state === 'up' || (this.sup.state === 'restarting' && !this.sup.failing));
  }

  /** The worker that serves now (undefined while it is replaced, or once finalized). */
  private get worker(): Worker | undefined {
    return this.finalized ? undefined : this.sup.child;
  }

  /**
   * Reserves a worker's memory, then boots it; resolves with it once it is ready.
   * @throws TritonError UNAVAILABLE when the memory budget has no room (after releasing idle
   *   sandboxes); as {@link boot}
   */
  private async spawn(): Promise<Worker> {
    const lease = this.p.memory ? await this.p.memory.reserve(this.p.spec.name) : undefined;
    if (this.finalized) {
      lease?.release();
      throw err.instanceFinalized(this.p.init.model.name, this.p.spec.name);
    }
    return this.boot(lease);
  }

  /**
   * Boots one sandbox worker holding `lease` (released at its exit) — a spare of the engine when
   * one waits (./spares.ts) — and gives it this instance; resolves with it once it is ready.
   */
  private boot(lease: Reservation | undefined): Promise<Worker> {
    const channel = new MessageChannel();
    const init: WorkerInit = {
      ...this.p.init,
      instance: {
        name: this.p.spec.name,
        kind: this.p.spec.kind === 'KIND_GPU' ? 'gpu' : this.p.spec.kind === 'KIND_MODEL' ? 'model' : 'cpu',
        deviceId: this.p.spec.deviceId,
      },
      cancelFlags: this.cancelFlags,
      callChannel: { port: channel.port2, signal: this.callSignal.buffer as SharedArrayBuffer },
    };
    this.stats.starts++;
    let worker: Worker | undefined;
    try {
      worker = this.p.spares ? this.p.spares.take() : startSandboxWorker();
      worker.postMessage({ t: 'init', init } satisfies ToWorker, [channel.port2]);
    } catch (e) {
      void worker?.terminate();
      channel.port1.close();
      lease?.release();
      throw e;
    }
    this.callPorts.set(worker, channel.port1);
    this.booting = worker;
    const workers = this.p.workers;
    workers.live++;
    if (lease) this.leases.set(worker, lease);
    worker.once('exit', () => {
      workers.live--;
      lease?.release();
      channel.port1.close();
    });
    const started = new Promise<Worker>((resolve, reject) => {
      const limitMs = this.p.executeMs + BOOT_ALLOWANCE_MS;
      const timer = setTimeout(() => fail(err.startTimeout(this.p.init.model.name, limitMs)), limitMs);
      const onError = (e: Error) => fail(err.startupError(this.p.init.model.name, e.message));
      const onExit = (code: number) => fail(err.startupExit(this.p.init.model.name, code));
      const detach = () => {
        clearTimeout(timer);
        worker.removeAllListeners('message');
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const fail = (e: TritonError) => {
        detach();
        worker.on('error', () => {}); // a late error of a discarded worker is not news
        if (this.booting === worker) this.booting = undefined;
        // rejected once the worker is gone: its memory reservation is back by then
        void worker.terminate().finally(() => reject(e));
      };
      worker.on('message', (m: FromWorker) => {
        if (m.t === 'ready') {
          detach();
          worker.on('message', (msg: FromWorker) => this.onMessage(worker, msg));
          worker.on('error', (e) => this.onWorkerGone(worker, `worker error: ${e.message}`));
          worker.on('exit', (code) => this.onWorkerGone(worker, `worker exited (code ${code})`));
          if (this.booting === worker) this.booting = undefined;
          resolve(worker);
        } else if (m.t === 'create-error') {
          fail(tritonError(m.error));
        } else if (m.t === 'trap') {
          fail(err.trappedAtStart(this.p.init.model.name, m.message));
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
    // the next spare boots once this start settled, off its path (and off its cores meanwhile)
    const spares = this.p.spares;
    if (spares)
      void started.then(
        () => spares.refill(),
        () => spares.refill(),
      );
    return started;
  }

  private guestLog(m: Extract<FromWorker, { t: 'log' }>): void {
    deliverLogLine(this.log, this.p.modelLog, m);
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
        this.kill(worker, 'trap', err.trapped(this.p.init.model.name, m.message));
        return;
      case 'call':
        this.onCall(worker, m);
        return;
      default:
        return;
    }
  }

  /**
   * A guest's `warden:backend/inference` call (../host/inference.ts), answered on the worker's call
   * channel (it waits in `Atomics.wait`); tensors are copied into buffers of their own and moved.
   */
  private onCall(worker: Worker, m: CallToHost): void {
    const answer = (a: CallAnswer): void => {
      const port = this.callPorts.get(worker);
      if (!port || worker !== this.worker) return; // killed meanwhile: nobody waits
      const transfer: ArrayBuffer[] = [];
      if ('ok' in a && a.ok !== null && typeof a.ok === 'object') {
        const outputs = a.ok.outputs.map((t) => {
          const data = new Uint8Array(t.data);
          transfer.push(data.buffer);
          return { name: t.name, datatype: t.datatype, shape: t.shape, data };
        });
        a = { ok: a.ok.parameters ? { outputs, parameters: a.ok.parameters } : { outputs } };
      }
      port.postMessage(a, transfer);
      Atomics.add(this.callSignal, 0, 1);
      Atomics.notify(this.callSignal, 0);
    };
    if (m.fn === 'cancel') bls.cancelCall(this.inference, m.handle);
    else if (m.fn === 'next') bls.nextOutcome(this.inference, m.handle, answer);
    else if (m.fn === 'infer') bls.inferCall(this.inference, m.request, answer);
    else {
      try {
        answer({ ok: bls.startCall(this.inference, m.request, m.decoupled) });
      } catch (e) {
        const t = e instanceof TritonError ? e : err.sandboxFailed(this.p.init.model.name, String(e));
        answer({ err: { code: t.code, message: t.message } });
      }
    }
  }

  private onSend(m: Extract<FromWorker, { t: 'send' }>): void {
    const p = this.pending;
    if (!p) return;
    const i = deliverSend(p, m);
    if (i < 0) return;
    if (p.requests[i]!.cancelled && i < CANCEL_SLOTS) Atomics.store(this.cancelView, i, 1);
  }

  private onDone(m: Extract<FromWorker, { t: 'done' }>): void {
    const p = this.pending;
    if (!p || p.seq !== m.seq) return;
    this.settle(p);
    deliverResults(p, m.results);
    p.resolve({ computeStartNs: m.computeStartNs, computeEndNs: m.computeEndNs });
    this.armIdle();
  }

  /** After an execute (or the start): the idle timer, and the reservation marked idle. */
  private armIdle(): void {
    const w = this.worker;
    if (this.p.idleMs <= 0 || !w || w === this.released || this.pending) return;
    clearTimeout(this.idleTimer);
    this.leases.get(w)?.idle(() => this.releaseIdle());
    // setTimeout takes at most 2^31 - 1 ms (longer fires at once): longer = never in practice
    if (this.p.idleMs > 2 ** 31 - 1) return;
    this.idleTimer = setTimeout(() => this.releaseIdle(), this.p.idleMs);
    this.idleTimer.unref();
  }

  /**
   * The idle policy: terminates the serving worker (its reservation is released at its exit)
   * until the next execute.
   * @returns false when it is busy (or already released) and stays
   */
  private releaseIdle(): boolean {
    const w = this.worker;
    if (!w || w === this.released || this.pending || this.cold) return false;
    clearTimeout(this.idleTimer);
    this.released = w;
    this.idle.releases++;
    w.removeAllListeners('message');
    void w.terminate();
    this.log.debug('idle sandbox released');
    return true;
  }

  /** A fresh worker for the one the idle policy released; the budget's error if its memory does not fit. */
  private async coldStart(old: Worker): Promise<Worker> {
    const t0 = performance.now();
    let fresh: Worker;
    try {
      fresh = await (this.cold ??= this.spawn().finally(() => (this.cold = undefined)));
    } catch (e) {
      if (this.finalized) throw err.instanceFinalized(this.p.init.model.name, this.p.spec.name);
      if (e instanceof TritonError && e.code === 'UNAVAILABLE') throw e;
      throw err.sandboxUnavailable(this.p.init.model.name, (e as Error).message);
    }
    if (this.released === old && this.sup.swap(old, fresh)) {
      this.released = undefined;
      this.idle.coldStarts++;
      this.idle.lastColdStartMs = performance.now() - t0;
    }
    if (this.finalized) {
      void fresh.terminate();
      throw err.instanceFinalized(this.p.init.model.name, this.p.spec.name);
    }
    return this.worker ?? fresh;
  }

  private settle(p: Pending): void {
    bls.endCalls(this.inference);
    clearTimeout(p.timer);
    if (p.cancelPoll) clearInterval(p.cancelPoll);
    this.pending = undefined;
    for (let i = 0; i < Math.min(p.requests.length, CANCEL_SLOTS); i++) Atomics.store(this.cancelView, i, 0);
  }

  /** The worker died without being asked to (JS heap OOM, crash): replaced after the supervisor's back-off. */
  private onWorkerGone(worker: Worker, why: string): void {
    if (worker !== this.worker || worker === this.released) return;
    this.kill(worker, 'gone', err.sandboxFailed(this.p.init.model.name, why));
  }

  /**
   * Terminates `worker`, fails the in-flight execute's requests that have no final response with
   * `error`, and has the supervisor start a replacement in the background: at once after a trap
   * or a deadline (the instance is poisoned, not broken), after the back-off when it died on its own.
   */
  private kill(worker: Worker, reason: 'deadline' | 'trap' | 'gone', error: TritonError): void {
    this.killedAt = performance.now();
    if (reason === 'deadline') this.stats.deadlineKills++;
    else this.stats.traps++;
    worker.removeAllListeners('message');
    void worker.terminate();
    this.log.warn({ reason: reason === 'gone' ? 'trap' : reason }, error.message);
    if (reason === 'gone') this.sup.died(worker, error);
    else this.sup.replace(worker, error);
  }

  /** The in-flight execute's requests that have no final response get `error`; the execute resolves. */
  private failPending(error: TritonError): void {
    const p = this.pending;
    if (!p) return;
    this.settle(p);
    p.senders.forEach((s, i) => {
      if (!p.finals[i]) {
        p.finals[i] = true;
        s.sendError(error, true);
      }
    });
    p.resolve();
    this.armIdle();
  }

  /**
   * Runs one batch in the sandbox. Resolves when the instance can take more work; every request
   * has had its final response by then (a sandboxed backend cannot respond after `execute`).
   * @throws TritonError UNAVAILABLE if the sandbox is down and its replacement failed to start.
   */
  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void> {
    const finalized = () => err.instanceFinalized(this.p.init.model.name, this.p.spec.name);
    if (this.finalized) throw finalized();
    clearTimeout(this.idleTimer);
    let worker = this.worker;
    if (worker && worker === this.released) worker = await this.coldStart(worker);
    if (worker) this.leases.get(worker)?.busy();
    if (!worker) {
      // replaced after a kill: wait for the replacement (a failed one answers at once)
      try {
        worker = await this.sup.attempt();
      } catch (e) {
        if (this.finalized) throw finalized();
        throw err.sandboxUnavailable(this.p.init.model.name, (e as Error).message);
      }
      if (this.finalized) throw finalized();
    }
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
            this.kill(worker, 'deadline', err.deadlineExceeded(this.p.init.model.name, this.p.executeMs));
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
      bls.beginCalls(this.inference, requests, this.p.executeMs);
      worker.postMessage({ t: 'exec', seq, requests: wire } satisfies ToWorker, transfer);
    });
  }

  async finalize(): Promise<void> {
    this.finalized = true;
    clearTimeout(this.idleTimer);
    const w = this.sup.child;
    this.sup.close();
    // a replacement still booting is stopped too: no worker outlives the instance
    const b = this.booting;
    this.booting = undefined;
    if (b) void b.terminate();
    if (w) await w.terminate();
  }
}
