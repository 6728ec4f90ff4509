/**
 * A model instance of a native Triton backend (spec §6.7, §6.8): requests go to
 * TRITONBACKEND_ModelInstanceExecute on the instance's native thread; responses and releases come
 * back as events and are routed to each request's ResponseSender. Decoupled backends may keep
 * sending after `execute` resolved.
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../../contract/model-config.js';
import type { BackendModelInstance, ExecuteTimings, InferenceRequest, InstanceSpec, ParameterValue, ResponseSender } from '../../contract/types.js';
import { unavailable } from '../../contract/errors.js';
import { addonInstanceSpec } from './config.js';
import {
  fromAddonError,
  tritonErrorOf,
  type AddonEvent,
  type AddonExecStats,
  type AddonRequest,
  type BackendRequestFields,
  type InstanceHandle,
  type ModelHandle,
} from '../../platform/addon.js';

/**
 * How long `finalize` waits for outstanding requests to be released before finalizing anyway,
 * when its caller gives no deadline (an unload gives the rest of its exit timeout).
 */
export const FINALIZE_DRAIN_TIMEOUT_MS = 30_000;

/** How long a readiness check waits for TRITONBACKEND_ModelInstanceReady before answering not ready. */
export const READY_CHECK_TIMEOUT_MS = 10_000;

/** Hang containment of one instance: how long an Execute may run before the instance is given up. */
export interface InstanceLimits {
  /** TRITONBACKEND_ModelInstanceExecute must return within this (ms); 0 = no limit. */
  executeTimeoutMs: number;
}

interface Pending {
  sender: ResponseSender;
  /** Keeps the input buffers the backend borrows alive until the release event. */
  request: InferenceRequest;
  final: boolean;
  released: boolean;
}

/** Flatten request parameters for the addon: [k0, v0, k1, v1, ...] (a bigint is an exact INT64). */
function flattenParameters(params: Record<string, ParameterValue>): ParameterValue[] {
  const flat: ParameterValue[] = [];
  for (const k of Object.keys(params)) flat.push(k, params[k]!);
  return flat;
}

/** The fields of `r` a backend reads through TRITONBACKEND_Request*, under `token` (in process and across the isolation ring). */
export function backendRequestFields(token: number, r: InferenceRequest): BackendRequestFields {
  return {
    token,
    id: r.id,
    correlationId: r.correlationId,
    flags: r.flags,
    timeoutUs: r.timeoutUs,
    priority: r.priority,
    cancelled: r.cancelled,
  };
}

/** `reschedulable`: the request's sender offers `reschedule` (an iterative sequence's request). */
function toAddonRequest(token: number, r: InferenceRequest, reschedulable: boolean): AddonRequest {
  return {
    ...backendRequestFields(token, r),
    inputs: r.inputs,
    outputs: r.requestedOutputs,
    params: flattenParameters(r.parameters),
    reschedulable,
  };
}

function responseParameters(p: Record<string, string | number | boolean | bigint> | undefined): Record<string, ParameterValue> | undefined {
  if (!p) return undefined;
  const out: Record<string, ParameterValue> = {};
  for (const [k, v] of Object.entries(p)) out[k] = typeof v === 'bigint' ? v.toString() : v;
  return out;
}

/** Whether `p` settles before `deadlineMs` (a `Date.now()` time); never rejects. */
async function waitUntil(p: Promise<unknown>, deadlineMs: number): Promise<boolean> {
  const ms = deadlineMs - Date.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), Math.max(0, ms));
    timer.unref();
  });
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export class NativeModelInstance implements BackendModelInstance {
  private readonly pending = new Map<number, Pending>();

  /** The requests handed to the backend and not yet answered FINAL (whose calls a backend's in-process requests serve). */
  *waitingRequests(): Iterable<InferenceRequest> {
    for (const p of this.pending.values()) if (!p.final) yield p.request;
  }

  private nextToken = 1;
  private finalizing?: Promise<void>;
  private drained?: () => void;
  /** An Execute call has not returned yet. */
  private executing = false;
  /** Set when an Execute did not return within the limit: the instance is given up. */
  private stuck?: string;
  /** Requests the backend never released (counted when the instance was finalized or given up). */
  leakedRequests = 0;
  /** A TRITONBACKEND_ModelInstanceReady call still running on its own thread. */
  private readyCheck?: Promise<string | undefined>;

  private constructor(
    private readonly name: string,
    private readonly logger: Logger,
    private readonly limits: InstanceLimits,
  ) {}

  private handle!: InstanceHandle;

  /** The addon's instance (a backend-host process serves it from the isolation ring). */
  get addonHandle(): InstanceHandle {
    return this.handle;
  }

  /** {@link BackendModelInstance.nativeHandle}: the addon's instance while it can serve. */
  nativeHandle(): object | undefined {
    return this.stuck || this.finalizing ? undefined : this.handle;
  }

  /**
   * Create the instance and run TRITONBACKEND_ModelInstanceInitialize on its thread.
   * @throws TritonError with the backend's code and message if initialization fails (the instance
   *   is finalized and freed first).
   */
  static async create(
    model: ModelHandle,
    spec: InstanceSpec,
    config: ModelConfig,
    logger: Logger,
    limits: InstanceLimits = { executeTimeoutMs: 0 },
  ): Promise<NativeModelInstance> {
    const inst = new NativeModelInstance(spec.name, logger.child({ instance: spec.name }), limits);
    try {
      inst.handle = model.createInstance(addonInstanceSpec(spec, config), (events) => inst.onEvents(events));
    } catch (e) {
      throw fromAddonError(e);
    }
    try {
      await inst.handle.initialize();
    } catch (e) {
      await inst.handle.finalize().catch(() => undefined);
      throw fromAddonError(e);
    }
    return inst;
  }

  /**
   * One TRITONBACKEND_ModelInstanceExecute for `requests` (inputs are lent to the backend without a
   * copy). Resolves when the backend returned from Execute, with the compute timestamps and batch
   * size it reported through TRITONBACKEND_ModelInstanceReportBatchStatistics (`backendBatchSize`
   * null when it reported none: no batch statistic, as in Triton).
   * @throws TritonError if the backend's Execute returned an error (each request has then already
   *   received it as its final response), or if the batch could not be submitted.
   */
  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void> {
    if (this.stuck !== undefined) throw unavailable(this.stuck);
    const batch: AddonRequest[] = new Array(requests.length);
    for (let i = 0; i < requests.length; i++) {
      const token = this.nextToken;
      this.nextToken = this.nextToken >= 0xfffffffe ? 1 : this.nextToken + 1;
      this.pending.set(token, { sender: senders[i]!, request: requests[i]!, final: false, released: false });
      batch[i] = toAddonRequest(token, requests[i]!, typeof senders[i]!.reschedule === 'function');
    }
    try {
      this.executing = true;
      const running = this.handle.execute(batch);
      const stats = this.limits.executeTimeoutMs > 0 ? await this.withinLimit(running, batch) : await running;
      this.executing = false;
      if (!stats) return;
      // returnedNs: when Execute returned on the native thread; the promise settles only after the
      // thread hop and the delivery of the responses, which is not compute_output (spec §3.2).
      // A batch statistic only if the backend reported one, as Triton's core (ExecuteTimings).
      if (!stats.reported) return { execEndNs: stats.returnedNs, backendBatchSize: null };
      return { computeStartNs: stats.computeStartNs, computeEndNs: stats.computeEndNs, execEndNs: stats.returnedNs, backendBatchSize: stats.batchSize };
    } catch (e) {
      if (this.stuck === undefined) this.executing = false;
      // Requests that got no final response were never submitted: forget them (the caller answers).
      for (const r of batch) if (!this.pending.get(r.token)?.final) this.pending.delete(r.token);
      this.checkDrained();
      throw fromAddonError(e);
    }
  }

  /**
   * `running`, unless Execute does not return within the limit: then the batch's requests get
   * UNAVAILABLE with the reason, the instance is given up (its thread cannot be stopped safely)
   * and this rejects; the model version sees {@link unhealthy} and becomes UNAVAILABLE with the reason.
   */
  private withinLimit(running: Promise<AddonExecStats | undefined>, batch: AddonRequest[]): Promise<AddonExecStats | undefined> {
    const limit = this.limits.executeTimeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const reason = `TRITONBACKEND_ModelInstanceExecute of instance '${this.name}' did not return within ${limit} ms (warden.execute_timeout_ms); the instance was given up`;
        this.stuck = reason;
        const err = unavailable(reason);
        this.logger.error({ requests: batch.length, executeTimeoutMs: limit }, reason);
        for (const r of batch) {
          const p = this.pending.get(r.token);
          if (p && !p.final) {
            p.final = true;
            p.sender.sendError(err, true);
          }
        }
        reject(err);
      }, limit);
      running.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  }

  /** Why the instance was given up (Execute did not return in time), else undefined. */
  unhealthy(): string | undefined {
    return this.stuck;
  }

  /**
   * Whether the instance takes requests: until it is finalized. Never asks the backend: as in
   * Triton, TRITONBACKEND_ModelInstanceReady answers readiness checks only ({@link checkReady});
   * an instance the backend reports not ready still gets its requests and answers them (with its
   * error), so no request waits on it.
   */
  isReady(): boolean {
    return this.finalizing === undefined;
  }

  /**
   * TRITONBACKEND_ModelInstanceReady for a readiness check (spec §7.1: `/ready`, ModelReady, the
   * repository index), run on a thread of its own (Triton's python backend answers it with the
   * model's `is_ready()` through its stub). Concurrent checks share one call. Resolves undefined
   * when ready, else the backend's message; bounded by {@link READY_CHECK_TIMEOUT_MS}. Never rejects.
   */
  checkReady(): Promise<string | undefined> {
    if (this.finalizing !== undefined) return Promise.resolve(`instance '${this.name}' is finalized`);
    if (this.stuck !== undefined) return Promise.resolve(this.stuck);
    if (!this.readyCheck) {
      const call = this.handle.checkReady().then(
        () => undefined,
        (e: unknown) => fromAddonError(e).message,
      );
      this.readyCheck = call;
      void call.finally(() => {
        if (this.readyCheck === call) this.readyCheck = undefined;
      });
    }
    const call = this.readyCheck;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((r) => {
      timer = setTimeout(
        () => r(`TRITONBACKEND_ModelInstanceReady of instance '${this.name}' did not answer within ${READY_CHECK_TIMEOUT_MS} ms`),
        READY_CHECK_TIMEOUT_MS,
      );
      timer.unref();
    });
    return Promise.race([call, late]).finally(() => clearTimeout(timer));
  }

  /** Requests handed to the backend and not yet both answered (FINAL) and released. */
  get outstanding(): number {
    return this.pending.size;
  }

  /**
   * Wait until every request was released (until `deadlineMs`, a `Date.now()` time, if given:
   * an unload's exit timeout; else up to {@link FINALIZE_DRAIN_TIMEOUT_MS}) and for a running
   * readiness check, then TRITONBACKEND_ModelInstanceFinalize and free the instance and its thread.
   */
  finalize(deadlineMs?: number): Promise<void> {
    this.finalizing ??= (async () => {
      const deadline = deadlineMs ?? Date.now() + FINALIZE_DRAIN_TIMEOUT_MS;
      if (this.readyCheck && !(await waitUntil(this.readyCheck, deadline))) {
        // The backend's ModelInstanceReady does not return: Finalize must not run beside it.
        this.stuck ??= `instance '${this.name}' was given up while inside TRITONBACKEND_ModelInstanceReady`;
      }
      if (this.stuck !== undefined || this.executing) {
        // Its thread is still inside Execute (the caller already waited the exit timeout):
        // Finalize would queue behind it for ever. Give the instance up so unload and shutdown end.
        this.leakedRequests = this.pending.size;
        this.logger.error(
          { outstanding: this.pending.size },
          `instance '${this.name}' is still inside TRITONBACKEND_ModelInstanceExecute: not finalized; its thread and memory are left behind`,
        );
        this.stuck ??= `instance '${this.name}' was given up while inside TRITONBACKEND_ModelInstanceExecute`;
        this.handle.abandon();
        this.pending.clear();
        return;
      }
      if (this.pending.size > 0) {
        const drained = new Promise<void>((r) => (this.drained = r));
        if (!(await waitUntil(drained, deadline))) {
          this.leakedRequests = [...this.pending.values()].filter((p) => !p.released).length;
          this.logger.warn({ outstanding: this.pending.size, unreleased: this.leakedRequests }, 'finalizing with requests the backend never released');
        }
      }
      try {
        await this.handle.finalize();
      } catch (e) {
        throw fromAddonError(e);
      }
    })();
    return this.finalizing;
  }

  private onEvents(events: AddonEvent[]): void {
    for (const ev of events) {
      const p = this.pending.get(ev.token);
      if (p && p.final && ev.t === 0) continue; // answered already (e.g. after an execute timeout)
      if (!p) {
        this.logger.warn({ token: ev.token, event: ev.t }, 'event for an unknown request ignored');
        continue;
      }
      try {
        if (ev.t === 0 && ev.closed) {
          // A request released with RESCHEDULE sends nothing more; its next run answers it.
          p.final = true;
        } else if (ev.t === 0) {
          if (ev.error) p.sender.sendError(tritonErrorOf(ev.error.code, ev.error.message), ev.final);
          else if (ev.outputs) p.sender.send({ outputs: ev.outputs, parameters: responseParameters(ev.parameters) }, ev.final);
          else if (ev.final) p.sender.send(null, true);
          if (ev.final) p.final = true;
        } else {
          p.released = true;
          // Released with RESCHEDULE (the core accepts it only for a reschedulable request): the
          // request runs again as a new one; its inputs are no longer borrowed by this run.
          if (ev.rescheduled) p.sender.reschedule?.();
        }
      } catch (e) {
        this.logger.error({ err: e, request: p.request.id }, 'response delivery failed');
      }
      if (p.final && p.released) this.pending.delete(ev.token);
    }
    this.checkDrained();
  }

  private checkDrained(): void {
    if (this.pending.size === 0 && this.drained) {
      const d = this.drained;
      this.drained = undefined;
      d();
    }
  }

  toString(): string {
    return `NativeModelInstance(${this.name})`;
  }
}
