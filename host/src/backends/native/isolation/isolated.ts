/**
 * Crash isolation for native backends (issue 12 point 2): a model with
 * `parameters { key: "warden.isolation" value { string_value: "process" } }` (or its backend with
 * `--backend-config=<backend>,warden.isolation=process`) runs its instances in a backend-host
 * process (child.ts) that loads the same `libtriton_<name>.so` through the same libtritonserver.so.
 * When that process dies (SIGSEGV, abort, or killed after `warden.execute_timeout_ms`), its
 * in-flight requests get an error naming the signal, the model's log says what happened, the model
 * is UNAVAILABLE with the reason while the process restarts (exponential backoff) and READY again
 * after; the server and every other model go on. In-process stays the default (no IPC hop).
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../../../config/types.js';
import { positiveIntParam } from '../../../config/parameters.js';
import { TritonError, internal, invalidArg, unavailable } from '../../../core/errors.js';
import type { BackendModel, BackendModelInstance, ExecuteTimings, InferenceRequest, InstanceSpec, ResponseSender } from '../../../core/types.js';
import { BackendHostProcess, describeExit, type ProcessExit } from './host-process.js';
import { nativeAddon } from '../addon.js';
import type { Executed, FromChild, LoadSpec, Loaded, WireRequest } from './protocol.js';
import { ShmReader, ShmWriter, decodeTensors, encodeTensors, type TransportStats } from './shm-ring.js';

/** Model config parameter (and `--backend-config` setting): `process` or `none` (default). */
export const PARAM_ISOLATION = 'warden.isolation';
/** Model config parameter: size of each of the two shared memory rings, bytes (default 32 MiB). */
export const PARAM_SHM_BYTES = 'warden.isolation_shm_bytes';
export const DEFAULT_SHM_BYTES = 32 * 1024 * 1024;

/** First restart delay after a crash; doubled per crash while the process keeps dying, up to the max. */
export const RESTART_BACKOFF_MIN_MS = 100;
export const RESTART_BACKOFF_MAX_MS = 5_000;
/** A process that served this long before dying restarts after the minimum delay again. */
const STABLE_AFTER_MS = 10_000;
/** Bound on finalize calls into the process at unload, then on its exit. */
const FINALIZE_TIMEOUT_MS = 10_000;
const EXIT_GRACE_MS = 2_000;

/**
 * Whether a model runs in a backend-host process: its `warden.isolation` parameter, else the
 * backend's setting, else in-process.
 * @throws TritonError INVALID_ARG for a value other than `process` / `none`
 */
export function isolationOf(config: ModelConfig, backendSetting: string | undefined): 'process' | 'none' {
  const v = config.parameters?.[PARAM_ISOLATION]?.string_value ?? backendSetting ?? 'none';
  if (v !== 'process' && v !== 'none') {
    throw invalidArg(`model '${config.name}': ${PARAM_ISOLATION} must be 'process' or 'none', got '${v}'`);
  }
  return v;
}

/**
 * The ring size of an isolated model: `warden.isolation_shm_bytes` (positive integer, at most 1 GiB)
 * or {@link DEFAULT_SHM_BYTES}. @throws TritonError INVALID_ARG otherwise
 */
export function shmBytesOf(config: ModelConfig): number {
  const n = positiveIntParam(config, PARAM_SHM_BYTES) ?? DEFAULT_SHM_BYTES;
  if (n > 1024 * 1024 * 1024) throw invalidArg(`model '${config.name}': parameter ${PARAM_SHM_BYTES} must be at most 1 GiB, got ${n}`);
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

/** What crosses the process boundary (no callbacks, no memory owners; tensors in shared memory). */
function wire(r: InferenceRequest, token: number, writer: ShmWriter | undefined, stats: TransportStats): WireRequest {
  const { onTimes: _onTimes, inputs, ...rest } = r;
  return { ...rest, inputs: encodeTensors(inputs, writer, stats), token };
}

export class IsolatedNativeModel implements BackendModel {
  config?: ModelConfig;
  parallelInstanceLoading = false;
  /** Crashes (or kills) the process has recovered from. */
  restarts = 0;
  /** Tensor bytes moved through the shared memory rings and inline in IPC messages, both ways. */
  readonly transport: TransportStats = { shmBytes: 0, inlineBytes: 0 };
  /** The serving process's rings: inputs out, outputs in. */
  private toChild?: ShmWriter;
  private fromChild?: ShmReader;
  /** The process that serves (set once it loaded the model and its instances). */
  private proc!: BackendHostProcess;
  /** Why the model cannot serve right now (the process is restarting), else undefined. */
  private down?: string;
  private closing = false;
  private backoffMs = RESTART_BACKOFF_MIN_MS;
  private startedAt = 0;
  private restartTimer?: NodeJS.Timeout;
  private readonly instances: IsolatedInstance[] = [];
  private readonly pending = new Map<number, ResponseSender>();
  private nextToken = 1;
  private nextInstance = 1;

  private constructor(
    private readonly spec: LoadSpec,
    private readonly logger: Logger,
    private readonly executeTimeoutMs: number,
    private readonly shmBytes: number,
  ) {}

  /**
   * Start the backend-host process and load the model there (TRITONBACKEND_Initialize,
   * ModelInitialize in the child).
   * @throws TritonError with the backend's code and message (the process is stopped)
   */
  static async load(spec: LoadSpec, logger: Logger, executeTimeoutMs: number, shmBytes = DEFAULT_SHM_BYTES): Promise<IsolatedNativeModel> {
    const m = new IsolatedNativeModel(spec, logger, executeTimeoutMs, shmBytes);
    const loaded = await m.start();
    m.config = loaded.config;
    m.parallelInstanceLoading = loaded.parallelInstanceLoading;
    return m;
  }

  /** Spawn, load, and (after a restart) re-create every instance. */
  private async start(): Promise<Loaded> {
    // Fresh rings per process: a crashed process may have left anything in the old ones.
    const addon = nativeAddon();
    const out = addon.shmCreate(this.shmBytes);
    const back = addon.shmCreate(this.shmBytes);
    const toChild = new ShmWriter(new Uint8Array(out.buffer));
    const fromChild = new ShmReader(new Uint8Array(back.buffer));
    const proc = new BackendHostProcess(
      (m) => this.onResponse(m),
      this.logger,
      (ack) => this.proc === proc && toChild.ack(ack),
    );
    this.startedAt = Date.now();
    try {
      const spec: LoadSpec = { ...this.spec, shm: { toChild: out.name, toParent: back.name, bytes: this.shmBytes } };
      let loaded: Loaded;
      try {
        loaded = await proc.call<Loaded>({ t: 'load', spec });
      } finally {
        addon.shmUnlink(out.name); // both sides have them mapped now (or never will): no names left behind
        addon.shmUnlink(back.name);
      }
      for (const i of this.instances) await proc.call({ t: 'instance', id: i.id, spec: i.spec });
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
    }
  }

  private onExit(proc: BackendHostProcess, e: ProcessExit): void {
    if (proc !== this.proc || this.closing) return;
    const reason = `the backend host process of model '${this.spec.model.name}' (pid ${proc.pid}) ${describeExit(e)}`;
    this.down = `${reason}; restarting`;
    this.logger.error({ pid: proc.pid, signal: e.signal, code: e.code }, `${reason}: its in-flight requests failed, restarting it`);
    const err = internal(`${reason} while the request was in flight`);
    const senders = [...this.pending.values()];
    this.pending.clear();
    for (const s of senders) s.sendError(err, true);
    if (Date.now() - this.startedAt > STABLE_AFTER_MS) this.backoffMs = RESTART_BACKOFF_MIN_MS;
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, RESTART_BACKOFF_MAX_MS);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.closing) return;
      this.start().then(
        () => {
          this.down = undefined;
          this.restarts++;
          this.logger.info({ restarts: this.restarts }, 'backend host process restarted: model ready again');
        },
        (e) => {
          this.logger.error({ err: e }, 'backend host process restart failed; retrying');
          if (!this.closing) this.scheduleRestart();
        },
      );
    }, delay);
  }

  private onResponse(m: Extract<FromChild, { t: 'response' }>): void {
    // Copy the outputs out of the ring first, whoever waits for them (the ring moves on).
    const outputs = m.response ? decodeTensors(m.response.outputs, this.fromChild) : undefined;
    this.fromChild?.done(m.shmEnd);
    const s = this.pending.get(m.token);
    if (!s) return;
    if (m.final) this.pending.delete(m.token);
    if (m.error) s.sendError(new TritonError(m.error.code as TritonError['code'], m.error.message), m.final);
    else s.send(m.response && outputs ? { outputs, parameters: m.response.parameters } : null, m.final);
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
    return this.down;
  }

  /** One Execute of `instance` in the process; the limit kills (and so restarts) a stuck process. */
  async execute(instance: IsolatedInstance, requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void> {
    if (this.down !== undefined) throw unavailable(this.down);
    const proc = this.proc;
    const batch: WireRequest[] = [];
    for (let i = 0; i < requests.length; i++) {
      const token = this.nextToken++;
      this.pending.set(token, senders[i]!);
      batch.push(wire(requests[i]!, token, this.toChild, this.transport));
    }
    const forget = () => {
      for (const r of batch) this.pending.delete(r.token);
    };
    const running = proc.call<Executed>({
      t: 'execute',
      instance: instance.id,
      requests: batch,
      shmEnd: this.toChild?.end ?? 0,
      ack: this.fromChild?.consumed ?? 0,
    });
    try {
      if (this.executeTimeoutMs <= 0) return (await running) ?? undefined;
      let timedOut = false;
      const r = await withTimeout(running, this.executeTimeoutMs, () => (timedOut = true));
      if (!timedOut) return r ?? undefined;
      const reason = `TRITONBACKEND_ModelInstanceExecute of instance '${instance.spec.name}' did not return within ${this.executeTimeoutMs} ms (warden.execute_timeout_ms); its backend host process was killed and is restarted`;
      this.logger.error({ pid: proc.pid }, reason);
      this.down = reason; // not ready from now on, until the restarted process is
      const err = unavailable(reason);
      for (const r2 of batch) {
        const s = this.pending.get(r2.token);
        this.pending.delete(r2.token);
        s?.sendError(err, true);
      }
      void proc.kill();
      throw err;
    } catch (e) {
      forget(); // the scheduler answers every request that got no final response
      if (e instanceof TritonError && e.code === 'INTERNAL' && /^backend host process /.test(e.message)) {
        throw internal(`the backend host process of model '${this.spec.model.name}' (pid ${proc.pid}) ${e.message.replace(/^backend host process /, '')} while the request was in flight`);
      }
      throw e;
    }
  }

  /** TRITONBACKEND_ModelInstanceFinalize in the process (bounded; skipped if it is down). */
  async finalizeInstance(id: number): Promise<void> {
    if (this.down !== undefined) return;
    await withTimeout(this.proc.call({ t: 'finalizeInstance', id }).catch((e) => this.logger.error({ err: e }, 'instance finalize failed')), FINALIZE_TIMEOUT_MS, () =>
      this.logger.error('instance finalize did not finish in time'),
    );
  }

  /** ModelFinalize and backend Finalize in the process, then the process ends (bounded). */
  async finalize(): Promise<void> {
    this.closing = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.down === undefined) {
      await withTimeout(this.proc.call({ t: 'finalizeModel' }).catch((e) => this.logger.error({ err: e }, 'model finalize failed')), FINALIZE_TIMEOUT_MS, () =>
        this.logger.error('model finalize did not finish in time'),
      );
    }
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

  finalize(): Promise<void> {
    return this.model.finalizeInstance(this.id);
  }
}
