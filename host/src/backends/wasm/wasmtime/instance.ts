/**
 * Host side of one wasmtime-sandboxed model instance (spec §6.7, §6.8; DESIGN "Sandbox rules").
 * The sandbox itself lives on a native thread (native/rust/wasmtime-engine/src/instance.rs) that owns the
 * wasmtime store, enforces the execute deadline (epoch interruption) and the memory limits
 * (`StoreLimits`), and after a trap or a deadline drops the store and instantiates again from the
 * component's `InstancePre` on its own. This side keeps the host capabilities of ../host/ — the
 * same modules the V8 engine uses: log budget, response checks, read-only files, cancellation —
 * answers the thread's host calls, and delivers responses to the requests' senders.
 *
 * Supervision is the backends' one supervisor's (../../supervisor.ts): after a trap or a deadline
 * the sandbox is replaced at once (the thread re-instantiates on its own, and the instance takes
 * requests again meanwhile: they queue behind the respawn on the thread); a respawn that fails
 * fails the requests in flight, and the supervisor starts a fresh sandbox thread under its
 * back-off (requests meanwhile get the failure's UNAVAILABLE at once).
 *
 * Idle policy: with `idleMs` > 0 an instance whose sandbox ran nothing for that long releases it
 * (thread and store gone, and with them its memory reservation) and starts a new one on the next
 * execute (a cold start: a reservation, a pooled instantiation plus the guest's `create`s).
 *
 * Memory (../memory-budget.ts): each sandbox thread reserves the model's sandbox memory before it
 * is spawned and releases it at its `EXITED`; a trap's respawn on the same thread keeps it. While
 * the sandbox runs nothing (and the idle policy is on) the reservation is marked idle, so that
 * the budget may release this sandbox early to start another.
 */
import type { Logger } from 'pino';
import { TritonError } from '../../../contract/errors.js';
import * as errors from '../sandbox.errors.js';
import type { ExecuteTimings, InferenceRequest, InstanceSpec, InstanceUsage, ResponseSender } from '../../../contract/types.js';
import { fromWitError, toWitError } from '../convert.js';
import type { HostConfig, SandboxedInstance, SandboxStats } from '../engine.js';
import type { Reservation, SandboxMemory } from '../memory-budget.js';
import { createHostState, endCall, type HostState } from '../host/index.js';
import type { HostCallError } from '../host/errors.js';
import { listFiles, readFile } from '../host/files.js';
import * as bls from '../host/inference.js';
import { chargeLog, deliverLogLine, log, type LogLevel } from '../host/log.js';
import type { ModelLogWriter } from '../../../contract/model-log.js';
import { beginExecute, finishExecute, isCancelled, sendFinal, sendResponse, type ResponseSend } from '../host/responses.js';
import { writeOutput } from '../host/wasi/stdio.js';
import { WireHandles, deliverResults, deliverSend, toWireRequests, type WireRequest } from '../wire.js';
import { decodeCallRequest, decodeResults, decodeSentResult, DescriptorWriter, encodeCallOutcome, encodeRequests, type DecodedResults } from './descriptor.js';
import { MSG, type ComponentHandle, type InstanceHandle } from './native.js';
import { Supervisor } from '../../supervisor.js';

/** Longest idle timeout a timer can carry (ms); longer ones never release. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Time allowed for start-up on top of the execute deadline (ms), as the V8 engine. */
export const BOOT_ALLOWANCE_MS = 10_000;

/** What the engine gives an instance to reach its native side. */
export interface InstancePort {
  /** Starts a sandbox thread for `inst`; its messages come back to `inst.onMessage` with `id`. */
  spawn(inst: WasmtimeInstance, paramsJson: string): { handle: InstanceHandle; id: number };
  /** Queues an execute: a requests descriptor (./descriptor.ts; copied at once) and the input buffers it indexes (read later, in place). */
  execute(handle: InstanceHandle, descriptor: Uint8Array, buffers: Uint8Array[]): boolean;
  reply(handle: InstanceHandle, json: string, buffers: Uint8Array[]): void;
  /** Ends the thread; it reports EXITED to the instance. */
  free(handle: InstanceHandle): void;
  /** Holds the event loop while a reply from native is awaited (counted). */
  hold(on: boolean): void;
}

interface Pending {
  requests: InferenceRequest[];
  senders: ResponseSender[];
  wire: WireRequest[];
  handles: number[];
  finals: boolean[];
  resolve: (t: ExecuteTimings | void) => void;
}

/** JSON as sent by the native side: 64-bit integers are decimal strings. */
type J = Record<string, unknown>;

function isHostCallError(e: unknown): e is HostCallError {
  return typeof e === 'object' && e !== null && 'payload' in e;
}

/** One wasmtime-sandboxed instance. Create with {@link WasmtimeInstance.start}. */
export class WasmtimeInstance implements SandboxedInstance {
  readonly stats: SandboxStats = { starts: 0, deadlineKills: 0, traps: 0 };
  /** Cold starts after an idle release, and the last one's time (ms). */
  readonly idle = { releases: 0, coldStarts: 0, lastColdStartMs: 0 };
  private handle?: InstanceHandle;
  /** Id of the current sandbox thread (a new one per start). */
  private threadId = 0;
  private readonly host: HostState;
  private readonly log: Logger;
  /** The model's own log, where guest lines also go (set once, at start). */
  private modelLog?: ModelLogWriter;
  private pending?: Pending;
  private starting?: { resolve: () => void; reject: (e: TritonError) => void };
  private ready?: Promise<void>;
  /**
   * The sandboxes, one generation after another: a generation serves from its READY until a trap
   * or a deadline (replaced at once: the thread respawns it) or a failed respawn (died: a fresh
   * thread is started after the back-off).
   */
  private readonly sup: Supervisor<number, TritonError>;
  private generation = 0;
  /** The next start must boot a fresh thread (the last one could not respawn its sandbox). */
  private freshThread = false;
  /** The last restart booted a thread (else the thread respawned the sandbox itself). */
  private booted = false;
  private finalized = false;
  private killedAt?: number;
  private readonly handles = new WireHandles();
  /** Reused for every execute's requests descriptor. */
  private readonly descriptor = new DescriptorWriter();
  private idleTimer?: NodeJS.Timeout;
  private exited?: () => void;
  private exitWaitFor = -1;
  /**
   * Input buffers of executes queued on each sandbox thread, oldest first: the native side reads
   * them in place (no copy until wasmtime lowers them into the guest), so they stay referenced
   * until the execute's terminal message, or the thread's exit.
   */
  private readonly inputsHeld = new Map<number, Uint8Array[][]>();
  /** The memory reservation of the current (or next) sandbox thread. */
  private lease?: Reservation;
  /** Reservations of threads asked to end, released at their `EXITED`. */
  private readonly exiting = new Map<number, Reservation>();
  /** Listeners of {@link wasmtimeThread}'s answer. */
  private readonly threadListeners: (() => void)[] = [];
  /** The calls of the execute in flight (`warden:backend/inference`). */
  private readonly inference: bls.InferenceState;

  private constructor(
    private readonly port: InstancePort,
    readonly component: ComponentHandle,
    private readonly spec: InstanceSpec,
    private readonly config: HostConfig,
    private readonly paramsJson: string,
    logger: Logger,
    private readonly idleMs: number,
    private readonly memory?: SandboxMemory,
  ) {
    this.log = logger.child({ instance: spec.name });
    this.inference = bls.createInferenceState(config.calls);
    this.sup = new Supervisor<number, TritonError>({
      start: () => this.nextGeneration(),
      stop: () => undefined, // nothing to stop: finalize ends the thread
      failInFlight: (_gen, error) => this.failPending(error),
      onRestarted: () => {
        if (this.booted) this.log.info('sandbox restarted on a fresh thread');
        this.threadChanged();
      },
      onRestartFailed: (e) => this.log.error({ err: (e as Error).message }, 'sandbox could not be restarted'),
    });
    this.host = createHostState(config, {
      log: (line) => deliverLogLine(this.log, this.modelLog, line),
      send: (s) => this.onSend(s),
      cancelledAt: (i) => this.pending?.requests[i]?.cancelled === true,
    });
  }

  /**
   * Starts the instance: a sandbox thread, `model.create`, `instance.create`.
   * @throws TritonError the guest's own error from a `create`, INTERNAL if it trapped during
   *   start-up, UNAVAILABLE if start-up exceeded its deadline
   */
  static async start(p: {
    port: InstancePort;
    component: ComponentHandle;
    memories: number;
    spec: InstanceSpec;
    host: HostConfig;
    executeMs: number;
    logger: Logger;
    /** The model's own log, where guest lines also go (contract/model-log.ts). */
    modelLog?: ModelLogWriter;
    idleMs: number;
    /** Where each sandbox thread reserves its memory (none: no budget). */
    memory?: SandboxMemory;
  }): Promise<WasmtimeInstance> {
    const { host, spec } = p;
    const params = JSON.stringify({
      name: spec.name,
      kind: spec.kind === 'KIND_GPU' ? 'gpu' : spec.kind === 'KIND_MODEL' ? 'model' : 'cpu',
      deviceId: spec.deviceId,
      modelName: host.model.name,
      modelVersion: host.model.version,
      configJson: host.model.configJson,
      memoryBytes: host.limits.memoryBytes,
      memories: p.memories,
      executeMs: p.executeMs,
      bootMs: BOOT_ALLOWANCE_MS,
      logBytes: host.limits.logBytes,
      logMessages: host.limits.logMessages,
    });
    const inst = new WasmtimeInstance(p.port, p.component, spec, host, params, p.logger, p.idleMs, p.memory);
    inst.modelLog = p.modelLog;
    await inst.sup.start();
    inst.armIdle();
    return inst;
  }

  /**
   * The supervisor's start: the sandbox's next generation. After a trap the thread respawns it on
   * its own (nothing to start here); a thread that could not respawn it, or none at all, is
   * replaced by a fresh one ({@link boot}).
   */
  private async nextGeneration(): Promise<number> {
    this.booted = this.freshThread || !this.handle;
    if (this.booted) {
      this.freshThread = false;
      this.dropHandle();
      await this.boot();
    }
    return ++this.generation;
  }

  private get modelName(): string {
    return this.config.model.name;
  }

  /**
   * Reserves the next sandbox's memory, unless held already.
   * @throws TritonError UNAVAILABLE when the budget has no room (after releasing idle sandboxes),
   *   or when the instance was finalized meanwhile
   */
  private async takeLease(): Promise<void> {
    if (this.lease || !this.memory) return;
    const lease = await this.memory.reserve(this.spec.name);
    if (this.finalized || this.lease) {
      lease.release();
      if (this.finalized) throw errors.finalizedDuringStart(this.modelName, this.spec.name);
      return;
    }
    this.lease = lease;
  }

  /** Reserves its memory, then starts a sandbox thread and waits for its READY. */
  private async boot(): Promise<void> {
    await this.takeLease();
    this.stats.starts++;
    this.port.hold(true);
    const started = new Promise<void>((resolve, reject) => {
      this.starting = { resolve, reject };
    }).finally(() => this.port.hold(false));
    try {
      const t = this.port.spawn(this, this.paramsJson);
      this.handle = t.handle;
      this.threadId = t.id;
    } catch (e) {
      this.starting = undefined;
      this.port.hold(false);
      this.lease?.release();
      this.lease = undefined;
      throw errors.startFailed(this.modelName, (e as Error).message);
    }
    this.ready = started;
    return started;
  }

  /** Restarts of its sandbox thread, and the memory reserved by its sandbox threads (the current one and any still ending). */
  usage(): InstanceUsage {
    let bytes = this.lease && !this.lease.released ? this.lease.bytes : 0;
    for (const r of this.exiting.values()) if (!r.released) bytes += r.bytes;
    return { restarts: this.sup.restarts, sandboxMemoryBytes: bytes };
  }

  /** Ready while a sandbox serves or is being started; not once a start failed, until one serves. */
  isReady(): boolean {
    return !this.finalized && (this.sup.state === 'up' || (this.sup.state === 'restarting' && !this.sup.failing));
  }

  /** True while a native sandbox (thread + store) exists for this instance. */
  get live(): boolean {
    return this.handle !== undefined;
  }

  private onSend(s: ResponseSend): void {
    const p = this.pending;
    if (p) deliverSend(p, s);
  }

  /** A message of one of this instance's sandbox threads (the engine routes them by thread id). */
  onMessage(tid: number, kind: number, json: string, buffers: Uint8Array[]): void {
    if (kind === MSG.EXITED) {
      this.inputsHeld.delete(tid);
      this.exiting.get(tid)?.release();
      this.exiting.delete(tid);
      if (tid === this.exitWaitFor) this.exited?.();
      return;
    }
    if (kind === MSG.DONE) {
      // binary results descriptor as the last buffer (./descriptor.ts), no JSON
      this.inputsHeld.get(tid)?.shift(); // that execute's inputs were read
      if (tid === this.threadId && this.handle) this.onDone(buffers);
      return;
    }
    const m = JSON.parse(json) as J;
    // a direct execute (the native data path's, m.direct) holds no inputs here
    if (m.direct !== true && ((kind === MSG.TRAP && m.during === 'execute') || (kind === MSG.RESPAWN_FAILED && m.terminal === true))) {
      this.inputsHeld.get(tid)?.shift(); // that execute's inputs were read (or never will be)
    }
    if (tid !== this.threadId || !this.handle) return; // a thread released or replaced since
    switch (kind) {
      case MSG.LOG:
        log(this.host.log, m.level as LogLevel, String(m.message));
        return;
      case MSG.OUTPUT:
        writeOutput(this.host.stdio, m.stream === 'stderr' ? 'stderr' : 'stdout', buffers[0] ?? new Uint8Array(0));
        return;
      case MSG.LOG_DROPPED:
        chargeLog(this.host.log, Number(m.bytes), Number(m.messages));
        return;
      case MSG.CALL:
        this.onCall(m, buffers);
        return;
      case MSG.READY:
        endCall(this.host);
        this.onReady(m);
        return;
      case MSG.CREATE_ERROR: {
        endCall(this.host);
        const e = fromWitError(m);
        this.startFailed(new TritonError(e.code, e.message));
        return;
      }
      case MSG.TRAP:
        endCall(this.host);
        if (m.direct === true) this.countTrap(m);
        else this.onTrap(m);
        return;
      case MSG.END_CALL:
        endCall(this.host);
        return;
      case MSG.RESPAWN_FAILED:
        endCall(this.host);
        this.onRespawnFailed(String(m.message));
        return;
      default:
        return;
    }
  }

  private onCall(m: J, buffers: Uint8Array[]): void {
    const handle = this.handle;
    if (!handle) return;
    // the native side matches a reply to its call by this number (a late one is dropped there)
    const seq = Number(m.seq);
    let out: unknown = null;
    const replyBufs: Uint8Array[] = [];
    try {
      switch (m.fn) {
        case 'infer-start':
          out = bls.startCall(this.inference, decodeCallRequest(m.request, buffers), true);
          break;
        case 'infer-call': {
          const tid = this.threadId;
          bls.inferCall(this.inference, decodeCallRequest(m.request, buffers), (o: bls.CallOutcome) => {
            if (this.handle === handle && this.threadId === tid) this.replyOutcome(handle, seq, o);
          });
          return;
        }
        case 'infer-next': {
          const tid = this.threadId;
          bls.nextOutcome(this.inference, Number(m.handle), (o: bls.CallOutcome) => {
            // the thread that asked may be gone (deadline, release): nobody waits then
            if (this.handle === handle && this.threadId === tid) this.replyOutcome(handle, seq, o);
          });
          return;
        }
        case 'infer-cancel':
          bls.cancelCall(this.inference, Number(m.handle));
          break;
        case 'send-response':
          sendResponse(this.host.responses, Number(m.handle), decodeSentResult(buffers), m.final === true);
          break;
        case 'send-final':
          sendFinal(this.host.responses, Number(m.handle));
          break;
        case 'is-cancelled':
          out = isCancelled(this.host.responses, Number(m.handle));
          break;
        case 'read-file':
          replyBufs.push(readFile(this.host.files, String(m.path)));
          break;
        case 'list-files':
          out = listFiles(this.host.files);
          break;
        default:
          throw { payload: { code: 'unsupported', message: `unknown host call '${String(m.fn)}'` } };
      }
      this.port.reply(handle, JSON.stringify({ ok: out, seq }), replyBufs);
    } catch (e) {
      const err = isHostCallError(e)
        ? e.payload
        : e instanceof TritonError
          ? toWitError(e)
          : { code: 'internal', message: `host error: ${(e as Error)?.message ?? String(e)}` };
      this.port.reply(handle, JSON.stringify({ err, seq }), []);
    }
  }

  /** Answers an `infer-next` (./descriptor.ts `encodeCallOutcome`: JSON and one buffer per output). */
  private replyOutcome(handle: InstanceHandle, seq: number, o: bls.CallOutcome): void {
    if ('err' in o) {
      this.port.reply(handle, JSON.stringify({ err: toWitError(o.err), seq }), []);
      return;
    }
    const bufs: Uint8Array[] = [];
    const ok = o.ok === null ? null : encodeCallOutcome(o.ok, bufs);
    this.port.reply(handle, JSON.stringify({ ok, seq }), bufs);
  }

  private startFailed(e: TritonError): void {
    const s = this.starting;
    this.starting = undefined;
    this.dropHandle();
    if (s) s.reject(e);
    else this.onRespawnFailed(e.message);
  }

  private onReady(m: J): void {
    const s = this.starting;
    this.starting = undefined;
    if (s) {
      s.resolve();
      this.threadChanged();
      return;
    }
    // a respawn after a trap or a deadline, done by the native thread on its own (counted in onTrap)
    this.stats.lastRespawnMs = this.killedAt !== undefined ? performance.now() - this.killedAt : Number(m.startMs);
    this.log.info({ respawnMs: Math.round(this.stats.lastRespawnMs * 1000) / 1000 }, 'sandbox restarted');
  }

  private onTrap(m: J): void {
    if (m.during === 'create' && this.starting) {
      this.startFailed(errors.trappedAtStart(this.modelName, String(m.message)));
      return;
    }
    const error = this.countTrap(m);
    // replaced at once: the thread respawns the sandbox; a request sent meanwhile waits behind it there
    if (this.sup.state === 'up') this.sup.replace(this.generation, error);
    else this.failPending(error);
  }

  /**
   * Counts and logs a trap or a deadline of an execute (the native thread starts the replacement
   * right away). A direct execute's (the native data path's) ends here: its request got the same
   * error there, and the host's own executes queued behind it run on the replacement.
   * @returns the error of the execute that trapped
   */
  private countTrap(m: J): TritonError {
    this.killedAt = performance.now();
    this.stats.starts++;
    const deadline = m.reason === 'deadline';
    if (deadline) this.stats.deadlineKills++;
    else this.stats.traps++;
    const error = deadline ? errors.deadlineExceeded(this.modelName, this.config.limits.executeMs) : errors.trapped(this.modelName, String(m.message));
    this.log.warn({ reason: deadline ? 'deadline' : 'trap' }, error.message);
    return error;
  }

  /** The thread could not respawn the sandbox (or start it again after an idle release): a fresh thread follows. */
  private onRespawnFailed(message: string): void {
    const error = errors.sandboxUnavailable(this.modelName, message);
    if (!this.finalized) this.log.error({ err: message }, 'sandbox could not be restarted');
    this.freshThread = true;
    if (this.sup.state === 'up') this.sup.died(this.generation, error);
    else this.failPending(error);
    this.threadChanged();
  }

  private failPending(error: TritonError): void {
    const p = this.pending;
    if (!p) return;
    bls.endCalls(this.inference);
    this.pending = undefined;
    this.host.responses.inFlight = new Map();
    p.senders.forEach((s, i) => {
      if (!p.finals[i]) {
        p.finals[i] = true;
        s.sendError(error, true);
      }
    });
    this.port.hold(false);
    p.resolve();
    this.armIdle();
  }

  private onDone(buffers: Uint8Array[]): void {
    const p = this.pending;
    if (!p) return;
    let m: DecodedResults;
    try {
      m = decodeResults(buffers[buffers.length - 1] ?? new Uint8Array(0), buffers);
    } catch (e) {
      this.failPending(errors.resultMalformed(this.modelName, (e as Error).message));
      return;
    }
    this.pending = undefined;
    bls.endCalls(this.inference);
    const returned = m.results;
    const results = finishExecute(this.host.responses, p.wire, returned);
    endCall(this.host);
    deliverResults(p, results);
    if (m.fuel !== undefined) {
      this.stats.lastFuel = Number(m.fuel);
      this.log.debug({ fuel: this.stats.lastFuel }, 'execute fuel');
    }
    this.port.hold(false);
    p.resolve({ computeStartNs: m.computeStartNs, computeEndNs: m.computeEndNs });
    this.armIdle();
  }

  private armIdle(): void {
    if (this.idleMs <= 0 || this.finalized) return;
    clearTimeout(this.idleTimer);
    // the budget may release it before the timer does, for another sandbox
    this.lease?.idle(() => this.releaseIdle());
    // setTimeout takes at most 2^31 - 1 ms (longer fires at once): longer = never in practice
    if (this.idleMs > MAX_TIMER_MS) return;
    this.idleTimer = setTimeout(() => this.releaseIdle(), this.idleMs);
    this.idleTimer.unref();
  }

  /**
   * The idle policy: releases the sandbox (thread, store; its reservation at its `EXITED`) until
   * the next execute.
   * @returns false when it is busy (or already released) and stays
   */
  private releaseIdle(): boolean {
    if (this.pending || this.starting || !this.handle || this.finalized) return false;
    clearTimeout(this.idleTimer);
    this.idle.releases++;
    this.dropHandle();
    this.log.debug('idle sandbox released');
    return true;
  }

  /** Ends the current sandbox thread; its reservation is released at its `EXITED` (at once if no thread was spawned). */
  private dropHandle(): void {
    const h = this.handle;
    this.handle = undefined;
    if (h) this.threadChanged();
    const lease = this.lease;
    this.lease = undefined;
    if (h) {
      if (lease) this.exiting.set(this.threadId, lease);
      this.port.free(h);
    } else lease?.release();
  }

  /**
   * Runs one batch in the sandbox. Resolves when the instance can take more work; every request
   * has had its final response by then.
   * @throws TritonError UNAVAILABLE if the instance is finalized, or its sandbox cannot start
   */
  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void> {
    if (this.finalized) throw errors.instanceFinalized(this.modelName, this.spec.name);
    clearTimeout(this.idleTimer);
    this.lease?.busy();
    const finalized = () => errors.instanceFinalized(this.modelName, this.spec.name);
    if (this.ready) await this.ready.catch(() => {});
    if (this.sup.state === 'restarting') {
      // a fresh sandbox thread after a failed respawn: wait for it (a failed one answers at once)
      try {
        await this.sup.attempt();
      } catch (e) {
        if (this.finalized) throw finalized();
        throw errors.sandboxUnavailable(this.modelName, (e as Error).message);
      }
    }
    if (this.finalized) throw finalized();
    if (!this.handle) {
      // released while idle: a cold start (one that fails is the supervisor's to retry; one
      // whose memory does not fit fails this request with the budget's UNAVAILABLE, nothing else)
      const t0 = performance.now();
      await this.takeLease();
      try {
        await this.boot();
      } catch (e) {
        const error = errors.sandboxUnavailable(this.modelName, (e as Error).message);
        if (this.sup.state === 'up') this.sup.died(this.generation, error);
        throw error;
      }
      this.idle.coldStarts++;
      this.idle.lastColdStartMs = performance.now() - t0;
    }
    const handle = this.handle!;
    const handles = this.handles.take(requests.length);
    const wire = toWireRequests(requests, handles);
    const buffers: Uint8Array[] = [];
    const descriptor = encodeRequests(this.descriptor, wire, buffers);
    beginExecute(this.host.responses, wire);
    return new Promise<ExecuteTimings | void>((resolve) => {
      this.pending = { requests, senders, wire, handles, finals: requests.map(() => false), resolve };
      bls.beginCalls(this.inference, requests, this.config.limits.executeMs);
      this.port.hold(true);
      let held = this.inputsHeld.get(this.threadId);
      if (!held) this.inputsHeld.set(this.threadId, (held = []));
      held.push(buffers);
      if (!this.port.execute(handle, descriptor, buffers)) {
        held.pop();
        this.failPending(errors.sandboxGone(this.modelName));
      }
    });
  }

  /**
   * BackendModelInstance.wasmtimeThread: the sandbox thread while it serves steadily — started,
   * its supervisor up (not after a failed respawn), not finalized, and no idle policy (which
   * releases the thread behind the data path's back).
   */
  wasmtimeThread(): { handle: object; executeMs: number } | undefined {
    // a model that calls other models (config.calls) runs its executes here: its calls belong to them
    if (this.finalized || !this.handle || this.starting || this.freshThread || this.idleMs > 0 || this.sup.state !== 'up' || this.config.calls)
      return undefined;
    return { handle: this.handle, executeMs: this.config.limits.executeMs };
  }

  onWasmtimeThreadChange(listener: () => void): void {
    this.threadListeners.push(listener);
  }

  private threadChanged(): void {
    for (const l of this.threadListeners) l();
  }

  async finalize(): Promise<void> {
    if (this.finalized) return;
    this.finalized = true;
    this.threadChanged();
    this.sup.close();
    clearTimeout(this.idleTimer);
    if (this.starting) this.starting.reject(errors.finalizedDuringStart(this.modelName, this.spec.name));
    this.starting = undefined;
    this.failPending(errors.finalizedInFlight(this.modelName, this.spec.name));
    if (!this.handle) {
      this.lease?.release();
      this.lease = undefined;
      return;
    }
    this.exitWaitFor = this.threadId;
    const gone = new Promise<void>((r) => (this.exited = r));
    this.port.hold(true);
    this.dropHandle();
    await gone;
    this.port.hold(false);
  }
}
