/**
 * Crash isolation for native backends (Warden's extension of spec §6): a model with
 * `parameters { key: "warden.isolation" value { string_value: "process" } }` (or its backend with
 * `--backend-config=<backend>,warden.isolation=process`) runs its instances in a backend-host
 * process (child.ts) that loads the same `libtriton_<name>.so` through the same libtritonserver.so.
 * When that process dies (SIGSEGV, abort, or killed after `warden.execute_timeout_ms`), its
 * in-flight requests get an error naming the signal, the model's log says what happened, the model
 * is UNAVAILABLE with the reason while the process restarts (the backends' one supervisor and its
 * back-off: ../../supervisor.ts) and READY again
 * after; the server and every other model go on. In-process stays the default. Requests cross
 * through the rings of ring.ts (no IPC message per request), control calls over Node IPC.
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../../../contract/model-config.js';
import { positiveIntParam } from '../../../config/parameters.js';
import { TritonError } from '../../../contract/errors.js';
import * as errors from '../native.errors.js';
import type {
  BackendModel,
  BackendModelInstance,
  ExecuteTimings,
  InferenceRequest,
  InstanceSpec,
  ModelLoadContext,
  ResponseSender,
} from '../../../contract/types.js';
import { BackendHostProcess, describeExit, type ProcessExit } from './host-process.js';
import { nativeAddon, tritonErrorOf } from '../../../platform/addon.js';
import type { NativeLeaks } from '../model.js';
import { READY_CHECK_TIMEOUT_MS, backendRequestFields } from '../instance.js';
import { ServerCalls, addonError } from '../server-bridge.js';
import { ownerPrincipal } from '../../../contract/load-context.js';
import { Supervisor } from '../../supervisor.js';
import type { Finalized, LoadSpec, Loaded } from './protocol.js';
import { processRegionPrefix, removeRegions } from './python-regions.js';
import {
  RecordKind,
  RingError,
  RingReader,
  RingWriter,
  executeRecordBytes,
  readExecDone,
  readResponse,
  writeExecute,
  type RecordWriter,
  type RingExecDone,
  type RingRequest,
} from './ring.js';

/** Model config parameter (and `--backend-config` setting): `process` or `none` (default). */
export const PARAM_ISOLATION = 'warden.isolation';
/**
 * Model config parameter: size of each of the two shared memory rings, bytes (default 32 MiB). A
 * request (all its inputs) or a response (all its outputs) must fit in one ring: larger ones fail
 * with INVALID_ARG / UNAVAILABLE naming this parameter.
 */
export const PARAM_SHM_BYTES = 'warden.isolation_shm_bytes';
export const DEFAULT_SHM_BYTES = 32 * 1024 * 1024;

/** Bound on finalize calls into the process at unload, then on its exit. */
const FINALIZE_TIMEOUT_MS = 10_000;
const EXIT_GRACE_MS = 2_000;
/** Bound on a new process mapping its rings (its first call: Node and the addon start first). */
const RINGS_TIMEOUT_MS = 60_000;

/**
 * Whether a model runs in a backend-host process: its `warden.isolation` parameter, else the
 * backend's setting, else in-process.
 * @throws TritonError INVALID_ARG for a value other than `process` / `none`
 */
export function isolationOf(config: ModelConfig, backendSetting: string | undefined): 'process' | 'none' {
  const v = config.parameters?.[PARAM_ISOLATION]?.string_value ?? backendSetting ?? 'none';
  if (v !== 'process' && v !== 'none') {
    throw errors.isolationInvalid(config.name, PARAM_ISOLATION, String(v));
  }
  return v;
}

/**
 * The ring size of an isolated model: `warden.isolation_shm_bytes` (positive integer, at most 1 GiB)
 * or {@link DEFAULT_SHM_BYTES}. @throws TritonError INVALID_ARG otherwise
 */
export function shmBytesOf(config: ModelConfig): number {
  const n = positiveIntParam(config, PARAM_SHM_BYTES) ?? DEFAULT_SHM_BYTES;
  if (n > 1024 * 1024 * 1024) throw errors.ringBytesTooLarge(config.name, PARAM_SHM_BYTES, n);
  return n;
}

function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => void): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<undefined>((r) => {
      timer = setTimeout(() => {
        onTimeout();
        r(undefined);
      }, ms);
    }),
  ]);
}

/** A batch in flight in the process: settles with its ExecDone record. */
interface Job {
  resolve: (d: RingExecDone) => void;
  reject: (e: TritonError) => void;
}

/** Counters of the request path (tests, logs). */
export interface RingStats {
  /** Execute records written / Response, Released and ExecDone records read. */
  executes: number;
  responses: number;
  releases: number;
  /** Batches that waited in Warden because the ring to the process was full. */
  backlogged: number;
  /** Execute records that needed no doorbell (the process was still draining the ring). */
  doorbellsSkipped: number;
}

export class IsolatedNativeModel implements BackendModel {
  config?: ModelConfig;
  parallelInstanceLoading = false;
  readonly ringStats: RingStats = { executes: 0, responses: 0, releases: 0, backlogged: 0, doorbellsSkipped: 0 };
  /** The serving process's rings: requests out, responses in. */
  private toChild?: RingWriter;
  private fromChild?: RingReader;
  /** The process that serves (set once it loaded the model and its instances). */
  private proc!: BackendHostProcess;
  /** What the last start loaded (the model's config, from the process). */
  private loaded?: Loaded;
  /** A process being started (load or restart), until it serves or is given up. */
  private starting?: BackendHostProcess;
  /**
   * The processes: one serves at a time; when it dies its requests fail and another is started.
   * Its `reason` is why the model cannot serve right now (the process is restarting, or being killed).
   */
  private readonly sup: Supervisor<BackendHostProcess>;
  private readonly instances: IsolatedInstance[] = [];
  private readonly pending = new Map<number, ResponseSender>();
  private readonly jobs = new Map<number, Job>();
  /** Execute records that did not fit yet, in order (written as the process consumes). */
  private readonly backlog: { bytes: number; fill: (w: RecordWriter) => void }[] = [];
  /** Requests handed to the backend and not released yet (counted as leaked if it dies holding them). */
  private unreleased = 0;
  private flushTimer?: NodeJS.Timeout;
  private nextToken = 1;
  private nextJob = 1;
  private nextInstance = 1;

  private constructor(
    private readonly spec: LoadSpec,
    private readonly logger: Logger,
    private readonly executeTimeoutMs: number,
    private readonly shmBytes: number,
    private readonly onLeaks?: (leaks: NativeLeaks) => void,
    private readonly owner?: Pick<ModelLoadContext, 'key' | 'server' | 'logger'>,
  ) {
    this.sup = new Supervisor<BackendHostProcess>({
      start: async () => {
        this.loaded = await this.start();
        return this.proc;
      },
      stop: (proc) => void proc.kill(),
      failInFlight: (_proc, reason) => this.failInFlight(errors.failedInFlight(reason)),
      describe: (reason) => `${reason}; restarting`,
      onRestarted: () => this.logger.info({ restarts: this.sup.restarts }, 'backend host process restarted: model ready again'),
      onRestartFailed: (e) => this.logger.error({ err: e }, 'backend host process restart failed; retrying'),
    });
  }

  /** Crashes (or kills) the process has recovered from. */
  get restarts(): number {
    return this.sup.restarts;
  }

  /** True once the model is being unloaded. */
  private get closing(): boolean {
    return this.sup.closed;
  }

  /**
   * Start the backend-host process and load the model there (TRITONBACKEND_Initialize,
   * ModelInitialize in the child).
   * @param onLeaks told at unload what the backend never gave back (warden_native_leaked_total)
   * @param owner where the backend's in-process inference calls (BLS) run: `owner.server` as
   *   ownerPrincipal(owner.key), as for an in-process model (without it they fail UNAVAILABLE)
   * @throws TritonError with the backend's code and message (the process is stopped)
   */
  static async load(
    spec: LoadSpec,
    logger: Logger,
    executeTimeoutMs: number,
    shmBytes = DEFAULT_SHM_BYTES,
    onLeaks?: (leaks: NativeLeaks) => void,
    owner?: Pick<ModelLoadContext, 'key' | 'server' | 'logger'>,
  ): Promise<IsolatedNativeModel> {
    const m = new IsolatedNativeModel(spec, logger, executeTimeoutMs, shmBytes, onLeaks, owner);
    await m.sup.start();
    const loaded = m.loaded!;
    m.config = loaded.config;
    m.parallelInstanceLoading = loaded.parallelInstanceLoading;
    return m;
  }

  /**
   * Spawn, hand over the rings, load, and (after a restart) re-create every instance. What a
   * start creates is removed whatever becomes of it, and only that: the ring names as
   * soon as the process has mapped them (before the backend runs: a start that hangs or fails
   * leaves none), Triton's Python backend regions of the process once it is gone, and the process
   * itself when the start fails or the model is unloaded meanwhile ({@link finalize}).
   */
  private async start(): Promise<Loaded> {
    // Per process: Triton's Python backend names its regions with a prefix of this process's own.
    const regions = processRegionPrefix(this.spec.backend);
    // Per process: its in-process requests are answered to it alone (tokens restart with it).
    const owner = this.owner;
    const calls = owner
      ? new ServerCalls({ server: owner.server, principal: ownerPrincipal(owner.key), logger: owner.logger }, (token, response, final) =>
          proc.notify({ t: 'serverRespond', token, response, final }),
        )
      : undefined;
    const proc: BackendHostProcess = new BackendHostProcess(
      () => {
        nativeAddon().wakeAffinityUnpinSelf(); // the answer is back (native/src/core/wake.cc)
        if (this.proc === proc) this.drain();
      },
      this.logger,
      (m) => this.onServerCall(proc, calls, m),
    );
    void proc.exit.then(() => {
      calls?.cancelAll(); // nobody to answer any more
      if (!regions) return;
      const removed = removeRegions(regions.prefix);
      if (removed.length > 0)
        this.logger.info({ pid: proc.pid, regions: removed.length }, "removed the Python backend's shared memory regions of the ended backend host process");
    });
    this.starting = proc;
    try {
      const { toChild, fromChild } = await this.handOverRings(proc);
      if (this.closing) throw errors.unloadedWhileStarting(this.spec.model.name);
      const spec: LoadSpec = regions ? { ...this.spec, backend: { ...this.spec.backend, configJson: regions.configJson } } : this.spec;
      const loaded = await proc.call<Loaded>({ t: 'load', spec });
      proc.setReaderTid(loaded.readerTid);
      for (const i of this.instances) await proc.call({ t: 'instance', id: i.id, spec: i.spec });
      if (this.closing) throw errors.unloadedWhileStarting(this.spec.model.name);
      this.logger.info({ pid: proc.pid }, 'backend host process ready');
      // Only a process that came up serves, and only its death triggers a restart (a start that
      // fails is retried by its caller).
      this.proc = proc;
      this.toChild = toChild;
      this.fromChild = fromChild;
      void proc.exit.then((e) => this.onExit(proc, e));
      return loaded;
    } catch (e) {
      await proc.kill();
      throw e;
    } finally {
      if (this.starting === proc) this.starting = undefined;
    }
  }

  /**
   * Create the two rings and have `proc` map them (its first call); their names are removed when
   * that call ends, mapped or not (bounded by {@link RINGS_TIMEOUT_MS}: the process is killed).
   * @throws TritonError when the process could not map them or died
   */
  private async handOverRings(proc: BackendHostProcess): Promise<{ toChild: RingWriter; fromChild: RingReader }> {
    // Fresh rings per process: a crashed process may have left anything in the old ones.
    const addon = nativeAddon();
    const out = addon.shmCreate(this.shmBytes);
    let back: { name: string; buffer: ArrayBuffer } | undefined;
    try {
      back = addon.shmCreate(this.shmBytes);
      const shm = { toChild: out.name, toParent: back.name, bytes: this.shmBytes };
      let timedOut = false;
      await withTimeout(proc.call({ t: 'rings', shm }), RINGS_TIMEOUT_MS, () => {
        timedOut = true;
        void proc.kill();
      });
      if (timedOut) throw errors.ringsTimeout(this.spec.model.name, RINGS_TIMEOUT_MS);
      return { toChild: new RingWriter(out.buffer), fromChild: new RingReader(back.buffer) };
    } finally {
      // Mapped by both sides now (the process removed them already), or never will be.
      addon.shmUnlink(out.name);
      if (back) addon.shmUnlink(back.name);
    }
  }

  /** The serving process ended: the supervisor fails its requests and starts another after its back-off. */
  private onExit(proc: BackendHostProcess, e: ProcessExit): void {
    if (proc !== this.proc || this.closing) return;
    const reason = `the backend host process of model '${this.spec.model.name}' (pid ${proc.pid}) ${describeExit(e)}`;
    this.logger.error({ pid: proc.pid, signal: e.signal, code: e.code }, `${reason}: its in-flight requests failed, restarting it`);
    this.sup.died(proc, reason);
  }

  /**
   * A backend's in-process call from the process: run it here and answer (a cancel has no answer).
   * Calls of a process still loading are served too (Python-style backends set up at initialize).
   */
  private onServerCall(proc: BackendHostProcess, calls: ServerCalls | undefined, m: { cid: number; kind: number; payload: unknown }): void {
    const answer = (value?: string, error?: unknown) => {
      if (m.cid === 0) return;
      if (error === undefined) proc.notify({ t: 'serverResult', cid: m.cid, value });
      else {
        const e = addonError(error) as Error & { tritonCode: number };
        proc.notify({ t: 'serverResult', cid: m.cid, error: { tritonCode: e.tritonCode, message: e.message } });
      }
    };
    if (!calls) return answer(undefined, errors.bridgeInferUnavailable());
    if (m.kind === 1) return calls.cancel((m.payload as { token: number }).token);
    try {
      const r = calls.handle(m.kind, m.payload);
      if (r instanceof Promise)
        r.then(
          (v) => answer(v),
          (e: unknown) => answer(undefined, e),
        );
      else answer(r);
    } catch (e) {
      answer(undefined, e);
    }
  }

  /** Every request and batch in flight in a process that is gone gets `err`. */
  private failInFlight(err: TritonError): void {
    const senders = [...this.pending.values()];
    const jobs = [...this.jobs.values()];
    this.pending.clear();
    this.jobs.clear();
    this.backlog.length = 0;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.unreleased = 0;
    this.toChild = undefined;
    this.fromChild = undefined;
    for (const s of senders) s.sendError(err, true);
    for (const j of jobs) j.reject(err);
  }

  /**
   * Read every record the process published (doorbell). @throws RingError for a record no valid
   * process writes (the caller kills it: its requests fail, it restarts)
   */
  private drain(): void {
    this.fromChild?.drain((kind, r) => {
      switch (kind) {
        case RecordKind.Response: {
          const m = readResponse(r);
          this.ringStats.responses++;
          const s = this.pending.get(m.token);
          if (!s) return; // answered already (timeout) or not ours
          if (m.final) this.pending.delete(m.token);
          if (m.error) s.sendError(tritonErrorOf(m.error.code, m.error.message), m.final);
          else s.send(m.outputs ? { outputs: m.outputs, parameters: m.parameters } : null, m.final);
          return;
        }
        case RecordKind.Released:
          r.u32();
          this.ringStats.releases++;
          if (this.unreleased > 0) this.unreleased--;
          return;
        case RecordKind.ExecDone: {
          const d = readExecDone(r);
          const j = this.jobs.get(d.job);
          if (!j) return;
          this.jobs.delete(d.job);
          j.resolve(d);
          return;
        }
        default:
          throw new RingError(`record kind ${kind}`);
      }
    });
    this.flush();
  }

  /**
   * Write what waited for room, in order; ring the process if anything went. Retried after each
   * drain, and on a 1 ms timer while anything still waits (room may come without a response: the
   * process skipping a pad record, or consuming records whose responses come much later).
   */
  private flush(): void {
    const ring = this.toChild;
    if (!ring || this.backlog.length === 0) return;
    let wake = false;
    for (;;) {
      const next = this.backlog[0];
      const r = next && ring.write(RecordKind.Execute, next.bytes, next.fill);
      if (r === 'padded') wake = true;
      if (!r || r === 'padded') break;
      this.backlog.shift();
      if (r === 'ring') wake = true;
      else this.ringStats.doorbellsSkipped++;
    }
    if (wake) this.proc.ring();
    if (this.backlog.length > 0 && !this.flushTimer) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        this.flush();
      }, 1);
    }
  }

  /** TRITONBACKEND_ModelInstanceInitialize in the process. @throws TritonError from the backend */
  async createInstance(spec: InstanceSpec): Promise<BackendModelInstance> {
    const inst = new IsolatedInstance(this, this.nextInstance++, spec);
    await this.proc.call({ t: 'instance', id: inst.id, spec });
    this.instances.push(inst);
    return inst;
  }

  /** Why requests cannot be served now (process restarting), else undefined. */
  unavailableReason(): string | undefined {
    return this.sup.reason;
  }

  /**
   * TRITONBACKEND_ModelInstanceReady of instance `id` in the process, for a readiness check only
   * (as an in-process instance's `checkReady`: never on the request path). Resolves undefined when
   * ready, else why not (the process is down, the backend's message, no answer in time). Never
   * rejects; bounded by READY_CHECK_TIMEOUT_MS.
   */
  async checkInstanceReady(id: number, name: string): Promise<string | undefined> {
    const down = this.sup.reason;
    if (down !== undefined) return down;
    if (this.closing) return `model '${this.spec.model.name}' is unloading`;
    // The process bounds the backend's call by READY_CHECK_TIMEOUT_MS itself; this bounds the process.
    const limitMs = READY_CHECK_TIMEOUT_MS + 2_000;
    let timedOut = false;
    const answer = await withTimeout(
      this.proc.call<string | undefined>({ t: 'checkReady', id }).then(
        (v) => (typeof v === 'string' ? v : undefined),
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      ),
      limitMs,
      () => (timedOut = true),
    );
    return timedOut ? `the backend host process did not answer the readiness check of instance '${name}' within ${limitMs} ms` : answer;
  }

  /**
   * One Execute of `instance` in the process: an Execute record into the ring (inputs copied in),
   * then the doorbell. Resolves with the backend's timestamps when its Execute returned; the limit
   * kills (and so restarts) a stuck process.
   * @throws TritonError INVALID_ARG when the batch is larger than the ring
   *   (`warden.isolation_shm_bytes`), UNAVAILABLE while restarting, INTERNAL naming the signal
   *   when the process died with the batch in flight, or the backend's Execute error
   */
  async execute(instance: IsolatedInstance, requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void> {
    const down = this.sup.reason;
    if (down !== undefined || !this.toChild) throw errors.hostUnavailable(this.spec.model.name, down);
    const proc = this.proc;
    const batch: RingRequest[] = new Array(requests.length);
    for (let i = 0; i < requests.length; i++) {
      const r = requests[i]!;
      const token = this.nextToken;
      this.nextToken = this.nextToken >= 0xfffffffe ? 1 : this.nextToken + 1;
      batch[i] = {
        ...backendRequestFields(token, r),
        inputs: r.inputs,
        requestedOutputs: r.requestedOutputs,
        parameters: r.parameters,
      };
    }
    let bytes: number;
    try {
      bytes = executeRecordBytes(batch);
    } catch (e) {
      throw errors.batchRefused(this.spec.model.name, (e as Error).message);
    }
    if (bytes + 8 > this.toChild.cap) {
      throw errors.batchOverRing(this.spec.model.name, bytes, this.toChild.cap, PARAM_SHM_BYTES);
    }
    const job = this.nextJob;
    this.nextJob = this.nextJob >= 0xfffffffe ? 1 : this.nextJob + 1;
    const instanceId = instance.id;
    const fill = (w: RecordWriter) => writeExecute(w, instanceId, job, batch);
    const done = new Promise<RingExecDone>((resolve, reject) => this.jobs.set(job, { resolve, reject }));
    for (let i = 0; i < batch.length; i++) this.pending.set(batch[i]!.token, senders[i]!);
    this.unreleased += batch.length;
    this.ringStats.executes++;
    const written = this.backlog.length === 0 && this.toChild.write(RecordKind.Execute, bytes, fill);
    if (written === 'ring' || written === 'busy') {
      // Nothing else in flight: the process's reader sleeps, so place it on this CPU first (wake.cc).
      if (written === 'ring') proc.ring(this.jobs.size === 1);
      else this.ringStats.doorbellsSkipped++;
    } else {
      this.ringStats.backlogged++;
      this.backlog.push({ bytes, fill });
      if (written === 'padded') proc.ring();
      this.flush();
    }
    const forget = () => {
      for (const b of batch) this.pending.delete(b.token);
    };
    try {
      let d: RingExecDone | undefined;
      if (this.executeTimeoutMs <= 0) d = await done;
      else {
        let timedOut = false;
        d = await withTimeout(done, this.executeTimeoutMs, () => (timedOut = true));
        if (timedOut) {
          const reason = `TRITONBACKEND_ModelInstanceExecute of instance '${instance.spec.name}' did not return within ${this.executeTimeoutMs} ms (warden.execute_timeout_ms); its backend host process was killed and is restarted`;
          this.logger.error({ pid: proc.pid }, reason);
          this.sup.unhealthy(reason); // not ready from now on, until the restarted process is
          const err = errors.hostFailed(reason);
          this.jobs.delete(job);
          for (const b of batch) {
            const s = this.pending.get(b.token);
            this.pending.delete(b.token);
            s?.sendError(err, true);
          }
          void proc.kill();
          throw err;
        }
      }
      if (d!.error) {
        forget(); // answered already by the backend's error, or never submitted: the scheduler answers
        throw tritonErrorOf(d!.error.code, d!.error.message);
      }
      // A batch statistic only if the backend reported one, as Triton's core (ExecuteTimings); the
      // ring carries no reported batch size: the scheduler's counts for a reported batch.
      if (!d!.reported) return { execEndNs: d!.returnedNs, backendBatchSize: null };
      return { computeStartNs: d!.computeStartNs, computeEndNs: d!.computeEndNs, execEndNs: d!.returnedNs };
    } catch (e) {
      forget(); // the scheduler answers every request that got no final response
      throw e;
    }
  }

  /** TRITONBACKEND_ModelInstanceFinalize in the process (bounded; skipped if it is down). */
  async finalizeInstance(id: number): Promise<void> {
    if (this.sup.reason !== undefined) return;
    await withTimeout(
      this.proc.call({ t: 'finalizeInstance', id }).catch((e) => this.logger.error({ err: e }, 'instance finalize failed')),
      FINALIZE_TIMEOUT_MS,
      () => this.logger.error('instance finalize did not finish in time'),
    );
  }

  /**
   * ModelFinalize and backend Finalize in the process, then the process ends (bounded). What the
   * backend never gave back is reported to `onLeaks` (requests still held by a process that is
   * down or stuck count as leaked).
   */
  async finalize(): Promise<void> {
    // No restart from now on; a restart still under way is given up: its process must not outlive the model.
    this.sup.close();
    if (this.starting) await this.starting.kill();
    const down = this.sup.reason;
    let leaks: NativeLeaks | undefined;
    if (down === undefined) {
      leaks = await withTimeout(
        this.proc.call<Finalized>({ t: 'finalizeModel' }).catch((e) => {
          this.logger.error({ err: e }, 'model finalize failed');
          return undefined;
        }),
        FINALIZE_TIMEOUT_MS,
        () => this.logger.error('model finalize did not finish in time'),
      );
    }
    leaks ??= { responses: 0, factories: 0, requests: this.unreleased };
    if (leaks.responses + leaks.factories + leaks.requests > 0 && down !== undefined) {
      this.logger.warn(leaks, 'the backend host process was down at unload: requests it held are counted as leaked');
    }
    this.onLeaks?.(leaks);
    await this.proc.close(EXIT_GRACE_MS);
  }
}

/** One instance living in the model's backend-host process. */
export class IsolatedInstance implements BackendModelInstance {
  constructor(
    private readonly model: IsolatedNativeModel,
    readonly id: number,
    readonly spec: InstanceSpec,
  ) {}

  execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void> {
    return this.model.execute(this, requests, senders);
  }

  /** While the process restarts the model is UNAVAILABLE with the crash as the reason. */
  unhealthy(): string | undefined {
    return this.model.unavailableReason();
  }

  /**
   * TRITONBACKEND_ModelInstanceReady in the process, asked by readiness checks only; requests are
   * dispatched whatever it answers (the backend answers them), as for an in-process instance.
   */
  checkReady(): Promise<string | undefined> {
    return this.model.checkInstanceReady(this.id, this.spec.name);
  }

  finalize(): Promise<void> {
    return this.model.finalizeInstance(this.id);
  }
}
