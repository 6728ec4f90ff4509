/**
 * One instance of a Python model (spec §7): a supervised stub process. Requests cross as control
 * messages, their tensors through the instance's shared-memory arenas. Containment:
 *
 * - `execute` raising: the stub reports it and every request of the batch gets the model's error;
 * - the process ending (segfault, `os._exit`, OOM kill): every in-flight request gets UNAVAILABLE
 *   naming the reason, the model's log says why, and a new process is started by the backends'
 *   one supervisor (../supervisor.ts: at once, then backing off while processes keep dying young
 *   or failing to start);
 * - `execute` not returning within `execute_timeout_ms` (config parameter; 0 = no deadline, as
 *   Triton): the process is killed, then as above.
 *
 * Cancellation: while requests are in flight, their `cancelled` flags are checked every
 * {@link CANCEL_POLL_MS} and newly cancelled ones are pushed to the stub (`is_cancelled()`).
 *
 * Readiness (`checkReady`, spec §7.1 `is_ready`, as Triton's python backend): an instance whose
 * process is gone or restarting is not ready; a model that defines `is_ready()` is asked on the
 * stub's readiness thread (so a long `execute` does not delay it). Not ready when it returns
 * False, raises, returns something other than a bool (both logged) or does not answer within
 * `is_ready_timeout_ms` (default {@link IS_READY_TIMEOUT_MS}, Triton's 5 s). Probes arriving while
 * a call is outstanding wait for that call (one call in the stub at a time, as Triton reuses its
 * IPC message); an answer is reused for `is_ready_cache_ms` ({@link IS_READY_CACHE_MS}), so
 * readiness probes cannot flood the stub. Readiness does not gate inference: like Triton, requests
 * still reach `execute` while `is_ready()` says False.
 */
import type { Logger } from 'pino';
import { internal } from '../../contract/errors.js';
import * as errors from './python.errors.js';
import type { BackendModelInstance, ExecuteTimings, InferenceRequest, InstanceUsage, ResponseSender } from '../../contract/types.js';
import { Supervisor } from '../supervisor.js';
import type { BlsBridge } from './bls.js';
import type { PythonMetrics } from './metrics.js';
import type { Region } from './shm.js';
import { InlineTail, TAIL, type Message } from './ipc.js';
import { StubProcess, type StubStartOptions } from './stub.js';
import { errorFromWire, readTensors, writeTensors } from './wire.js';

/** How often cancellation flags of in-flight requests are polled (ms). */
export const CANCEL_POLL_MS = 10;
/** How long finalize waits for the stub's `finalize()` before killing it (ms). */
export const FINALIZE_TIMEOUT_MS = 10_000;
/** Default bound on one `is_ready()` call (ms): Triton's python backend waits 5 s, then reports not ready. */
export const IS_READY_TIMEOUT_MS = 5_000;
/** Default time one `is_ready()` answer is reused for later probes (ms). */
export const IS_READY_CACHE_MS = 250;

interface InFlight {
  request: InferenceRequest;
  sender: ResponseSender;
  eid: number;
  cancelSent: boolean;
}

interface Execution {
  eid: number;
  regions: Region[];
  stub: StubProcess;
  resolve: (t: ExecuteTimings) => void;
  reject: (e: Error) => void;
  startNs: bigint;
  timer?: NodeJS.Timeout;
}

export interface PythonInstanceOptions {
  /** Start options of every (re)started stub, `init` included. */
  stub: StubStartOptions;
  decoupled: boolean;
  /** 0 = no deadline. */
  executeTimeoutMs: number;
  modelName: string;
  instanceName: string;
  logger: Logger;
  bls: () => BlsBridge;
  metrics: PythonMetrics;
  /** Bound on one `is_ready()` call (ms). */
  isReadyTimeoutMs: number;
  /** How long an `is_ready()` answer is reused (ms; 0 = ask on every probe). */
  isReadyCacheMs: number;
}

/** One outstanding `is_ready()` call in a stub; resolves with the reason it is not ready, or undefined. */
interface ReadyQuery {
  qid: number;
  stub: StubProcess;
  answer: Promise<string | undefined>;
  settle: (problem: string | undefined) => void;
}

export class PythonInstance implements BackendModelInstance {
  /** The stub processes: one serves at a time; a new one starts when it ends. */
  private readonly sup: Supervisor<StubProcess>;
  private readonly inflight = new Map<number, InFlight>();
  private execution?: Execution;
  private nextRid = 1;
  private nextEid = 1;
  private poll?: NodeJS.Timeout;
  private finalizing = false;
  private killReason?: string;
  private bls?: BlsBridge;
  /** The current process's model defines `is_ready()`. */
  private hasIsReady = false;
  private readyQuery?: ReadyQuery;
  private readyCache?: { stub: StubProcess; atMs: number; problem: string | undefined };
  private nextQid = 1;
  /** Processes started (1 + restarts), for tests and logs. */
  starts = 0;

  private constructor(private readonly opts: PythonInstanceOptions) {
    const { logger, instanceName: instance, modelName } = opts;
    this.sup = new Supervisor<StubProcess>({
      start: () => this.spawn(),
      stop: (s) => s.kill(),
      failInFlight: (stub, reason) => this.failInFlight(stub, reason),
      onRestarted: (s) => logger.info({ instance, pid: s.pid }, `Python model '${modelName}' instance restarted`),
      onRestartFailed: (e) => logger.error({ instance, err: (e as Error).message }, `Python model '${modelName}' instance failed to restart`),
    });
  }

  /** Start the first process; rejects with the model's `initialize` error. */
  static async create(opts: PythonInstanceOptions): Promise<PythonInstance> {
    const inst = new PythonInstance(opts);
    await inst.sup.start();
    return inst;
  }

  /** The serving process's id (tests). */
  get pid(): number | undefined {
    return this.sup.child?.pid;
  }

  /** Restarts of its stub process (no sandbox memory: a stub is a process of its own). */
  usage(): InstanceUsage {
    return { restarts: this.sup.restarts, sandboxMemoryBytes: 0 };
  }

  /**
   * True while a process runs or is being restarted (requests then wait for the new process: the
   * scheduler's pool is not woken when an instance turns ready again, so a restarting instance
   * must stay eligible); false once finalizing.
   */
  isReady(): boolean {
    return !this.finalizing && (this.sup.child?.alive === true || this.sup.state === 'restarting');
  }

  private async spawn(): Promise<StubProcess> {
    const { stub, answer } = await StubProcess.start(this.opts.stub);
    this.starts++;
    this.hasIsReady = answer.has_is_ready === true;
    this.bls = this.opts.bls();
    stub.onMessage = (m) => this.onMessage(stub, m);
    stub.onExit = (reason) => this.onExit(stub, reason);
    stub.deliverEarly();
    return stub;
  }

  /**
   * The readiness check (spec §7.1 `is_ready`): undefined when ready, else why not. Never rejects;
   * resolves within `isReadyTimeoutMs`.
   */
  async checkReady(): Promise<string | undefined> {
    const stub = this.sup.child;
    const who = `Python model '${this.opts.modelName}' instance '${this.opts.instanceName}'`;
    if (this.finalizing) return `${who} is being unloaded`;
    if (!stub?.alive) return `${who} has no running process (restarting)`;
    if (!this.hasIsReady) return undefined;
    const c = this.readyCache;
    if (c && c.stub === stub && Date.now() - c.atMs < this.opts.isReadyCacheMs) return c.problem;
    const q = this.readyQuery?.stub === stub ? this.readyQuery : (this.readyQuery = this.askReady(stub));
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(`is_ready() did not answer within ${this.opts.isReadyTimeoutMs} ms`), this.opts.isReadyTimeoutMs);
      void q.answer.then((problem) => {
        clearTimeout(timer);
        resolve(problem);
      });
    });
  }

  private askReady(stub: StubProcess): ReadyQuery {
    let settle!: (p: string | undefined) => void;
    const answer = new Promise<string | undefined>((r) => (settle = r));
    const q: ReadyQuery = { qid: this.nextQid++, stub, answer, settle };
    const slow = setTimeout(
      () =>
        this.opts.logger.warn(
          { instance: this.opts.instanceName },
          `Python model '${this.opts.modelName}': is_ready() did not answer within ${this.opts.isReadyTimeoutMs} ms; the model is reported not ready`,
        ),
      this.opts.isReadyTimeoutMs,
    );
    void answer.then(() => clearTimeout(slow));
    stub.send({ op: 'is_ready', qid: q.qid });
    return q;
  }

  private onReadyResult(stub: StubProcess, m: Record<string, unknown>): void {
    const q = this.readyQuery;
    if (!q || q.stub !== stub || q.qid !== m.qid) return;
    this.readyQuery = undefined;
    let problem: string | undefined;
    if (m.error !== undefined) {
      problem = `is_ready() failed: ${String(m.error).slice(0, 4096)}`;
      this.opts.logger.error({ instance: this.opts.instanceName }, `Python model '${this.opts.modelName}': ${problem}; the model is reported not ready`);
    } else if (m.ready !== true) problem = 'is_ready() returned False';
    this.readyCache = { stub, atMs: Date.now(), problem };
    q.settle(problem);
  }

  /** The serving process, waiting for a restart under way (through failed attempts) until the instance is unloaded. */
  private async current(): Promise<StubProcess> {
    const stub = this.sup.child;
    if (stub?.alive) return stub;
    if (this.sup.state === 'restarting') {
      return this.sup.whenUp().catch(() => {
        throw errors.instanceUnloading();
      });
    }
    throw errors.instanceNoProcess(this.opts.modelName, this.opts.instanceName);
  }

  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings> {
    const stub = await this.current();
    const eid = this.nextEid++;
    const regions: Region[] = [];
    // Fields at their defaults are left out (the stub assumes them): less JSON on both sides.
    const wire = requests.map((r, i) => {
      const rid = this.nextRid++;
      const msg: Record<string, unknown> = { rid, requested_outputs: r.requestedOutputs };
      if (r.id !== '') msg.id = r.id;
      if (typeof r.correlationId === 'bigint') {
        // An id above 2^53 crosses JSON as its decimal digits; the stub makes it an int again.
        msg.correlation_id = r.correlationId.toString();
        msg.correlation_id_int = true;
      } else if (r.correlationId !== 0) msg.correlation_id = r.correlationId;
      if (r.flags !== 0) msg.flags = r.flags;
      if (r.timeoutUs) msg.timeout = r.timeoutUs;
      for (const _ in r.parameters) {
        msg.parameters = r.parameters;
        break;
      }
      return { rid, i, msg };
    });
    const tail = new InlineTail();
    try {
      for (const w of wire) w.msg.inputs = writeTensors(stub.arenas, requests[w.i]!.inputs, regions, tail);
    } catch (e) {
      for (const r of regions) stub.arenas.release(r);
      throw errors.inputsNotPassed((e as Error).message);
    }
    for (const w of wire) this.inflight.set(w.rid, { request: requests[w.i]!, sender: senders[w.i]!, eid, cancelSent: false });
    this.startPolling();
    return new Promise<ExecuteTimings>((resolve, reject) => {
      const ex: Execution = { eid, regions, stub, resolve, reject, startNs: process.hrtime.bigint() };
      this.execution = ex;
      if (this.opts.executeTimeoutMs > 0) {
        ex.timer = setTimeout(() => {
          this.killReason = `execute did not return within its deadline (execute_timeout_ms ${this.opts.executeTimeoutMs})`;
          this.opts.logger.error({ instance: this.opts.instanceName }, `Python model '${this.opts.modelName}': ${this.killReason}; stopping its process`);
          stub.kill();
        }, this.opts.executeTimeoutMs);
      }
      stub.send({ op: 'execute', eid, model: this.opts.modelName, requests: wire.map((w) => w.msg) }, tail);
    });
  }

  private onMessage(stub: StubProcess, m: Message): void {
    switch (m.op) {
      case 'response':
        return this.onResponse(stub, m, m[TAIL]);
      case 'executed':
        return this.onExecuted(stub, m);
      case 'log': {
        const level = Number(m.level);
        const fn = level === 2 ? 'error' : level === 1 ? 'warn' : level === 3 ? 'debug' : 'info';
        this.opts.logger[fn]({ instance: this.opts.instanceName }, String(m.message).slice(0, 65536));
        return;
      }
      case 'metric':
        return this.opts.metrics.apply(this.opts.modelName, m);
      case 'bls':
        return this.bls!.handle(
          stub,
          m,
          [...this.inflight.values()].map((f) => f.request),
        );
      case 'is_ready_result':
        return this.onReadyResult(stub, m);
      case 'is_model_ready':
      case 'load_model':
      case 'unload_model':
        return this.bls!.control(stub, m);
      case 'free_in':
        if (Array.isArray(m.regions)) for (const [offset, size] of m.regions as [number, number][]) stub.arenas.release({ offset, size });
        return;
      default:
        this.opts.logger.warn({ instance: this.opts.instanceName, op: m.op }, 'unknown message from the Python stub');
    }
  }

  /** One response; its inline tensors are in `tail` (the frame's: an `executed` message's for the responses it carries). */
  private onResponse(stub: StubProcess, m: Record<string, unknown>, tail: Buffer | undefined): void {
    const rid = Number(m.rid);
    const entry = this.inflight.get(rid);
    const regions: Region[] = [];
    const final = m.final === true;
    try {
      if (!entry) {
        if (Array.isArray(m.outputs)) {
          for (const o of m.outputs as { offset: number; size: number; inline?: boolean }[])
            if (o?.inline !== true) regions.push({ offset: o.offset, size: o.size });
        }
        return;
      }
      if (final) this.inflight.delete(rid);
      if (m.error !== undefined) {
        entry.sender.sendError(errorFromWire(m.error), final);
        return;
      }
      if (m.outputs === undefined) {
        entry.sender.send(null, final);
        return;
      }
      let outputs;
      try {
        outputs = readTensors(stub.arenas, m.outputs, regions, tail);
      } catch (e) {
        entry.sender.sendError(errors.responseMalformed(this.opts.modelName, (e as Error).message), final);
        return;
      }
      const parameters = m.parameters as Record<string, string | number | boolean> | undefined;
      entry.sender.send(parameters ? { outputs, parameters } : { outputs }, final);
    } finally {
      stub.freeOut(regions);
    }
  }

  private onExecuted(stub: StubProcess, m: Message): void {
    const ex = this.execution;
    if (!ex || ex.eid !== m.eid) return;
    this.execution = undefined;
    clearTimeout(ex.timer);
    for (const r of ex.regions) stub.arenas.release(r);
    if (Array.isArray(m.responses)) for (const r of m.responses as Record<string, unknown>[]) this.onResponse(stub, r, m[TAIL]);
    const computeEndNs = process.hrtime.bigint();
    const error = m.error !== undefined ? internal(String(m.error)) : undefined;
    if (!error && Array.isArray(m.rescheduled)) this.reschedule(ex.eid, m.rescheduled);
    if (error || !this.opts.decoupled) {
      // The host sends the error (or "no response") to every request without a final response.
      for (const [rid, e] of this.inflight) if (e.eid === ex.eid) this.inflight.delete(rid);
    }
    if (error) ex.reject(error);
    else ex.resolve({ computeStartNs: ex.startNs, computeEndNs });
  }

  /**
   * Requests `execute` released with `set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)`
   * (spec §6.7 item 6): the scheduler runs each again as a new request (an iterative sequence's
   * sender offers `reschedule`); elsewhere the request gets Triton's INVALID_ARG as its FINAL
   * response. Called before the execution resolves, so the scheduler holds the request throughout.
   */
  private reschedule(eid: number, rids: unknown[]): void {
    for (const v of rids) {
      const rid = Number(v);
      const e = this.inflight.get(rid);
      if (!e || e.eid !== eid) continue;
      this.inflight.delete(rid);
      if (e.sender.reschedule) e.sender.reschedule();
      else e.sender.sendError(errors.rescheduleRefused(), true);
    }
  }

  /** The process ended: the supervisor fails its requests (below) and, unless unloading, starts another. */
  private onExit(stub: StubProcess, reason: string): void {
    this.sup.died(stub, reason);
  }

  /** Every request in flight in the ended process `stub` gets UNAVAILABLE naming why it ended. */
  private failInFlight(stub: StubProcess, reason: string): void {
    this.bls?.abortAll();
    if (this.readyQuery?.stub === stub) {
      this.readyQuery.settle(`its process ${reason}`);
      this.readyQuery = undefined;
    }
    const why = this.killReason ?? `its process ${reason}`;
    this.killReason = undefined;
    const err = errors.instanceFailed(this.opts.modelName, this.opts.instanceName, why);
    if (!this.finalizing) this.opts.logger.error({ instance: this.opts.instanceName, pid: stub.pid }, `${err.message}; restarting it`);
    for (const e of this.inflight.values()) e.sender.sendError(err, true);
    this.inflight.clear();
    this.stopPolling();
    const ex = this.execution;
    this.execution = undefined;
    if (ex) {
      clearTimeout(ex.timer);
      ex.resolve({ computeStartNs: ex.startNs, computeEndNs: process.hrtime.bigint() });
    }
  }

  /**
   * Poll cancellation flags while requests are in flight. The interval outlives a request: it
   * stops itself at its first tick with nothing in flight, so back-to-back requests do not each
   * create and clear a timer.
   */
  private startPolling(): void {
    if (this.poll) return;
    this.poll = setInterval(() => {
      if (this.inflight.size === 0) return this.stopPolling();
      const rids: number[] = [];
      for (const [rid, e] of this.inflight) {
        if (e.request.cancelled && !e.cancelSent) {
          e.cancelSent = true;
          rids.push(rid);
        }
      }
      if (rids.length) this.sup.child?.send({ op: 'cancel', rids });
    }, CANCEL_POLL_MS);
    this.poll.unref();
  }

  private stopPolling(): void {
    clearInterval(this.poll);
    this.poll = undefined;
  }

  async finalize(): Promise<void> {
    this.finalizing = true;
    const stub = this.sup.child;
    // No restart from now on: one pending is cancelled, a process starting is stopped when it is up.
    this.sup.close();
    if (!stub?.alive) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.opts.logger.warn(
          { instance: this.opts.instanceName },
          `Python model '${this.opts.modelName}': finalize did not return within ${FINALIZE_TIMEOUT_MS} ms; stopping the process`,
        );
        stub.kill();
      }, FINALIZE_TIMEOUT_MS);
      const prevExit = stub.onExit;
      stub.onExit = (reason) => {
        clearTimeout(timer);
        prevExit(reason);
        resolve();
      };
      stub.onMessage = (m) => {
        if (m.op === 'finalized') stub.kill();
        else this.onMessage(stub, m);
      };
      stub.send({ op: 'finalize' });
    });
    for (const e of this.inflight.values()) e.sender.sendError(errors.modelUnloaded(), true);
    this.inflight.clear();
  }
}
