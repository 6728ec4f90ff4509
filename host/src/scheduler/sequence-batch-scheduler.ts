/**
 * The sequence batcher of one model version (spec §5.6 `sequence_batching`, §3.7): requests are
 * routed by correlation id; each sequence holds one batch slot of one instance from its START
 * request until its END request was dispatched or it was idle for
 * `max_sequence_idle_microseconds` (sequences beyond the free slots wait in a backlog, in arrival
 * order, for a slot). Control inputs (START / END / READY / CORRID) and implicit state inputs are
 * added to every request handed to the backend; the state outputs are taken back from its
 * responses and kept per sequence.
 *
 * Strategies:
 * - `direct` (default): `max(1, max_batch_size)` slots per instance; a batch holds the next
 *   request of every slot up to the highest slot with work, in slot order (request k of a batch
 *   belongs to slot k); slots without a request get a filler request with READY (and every
 *   other control) false, whose responses are dropped. With `max_queue_delay_microseconds`, a
 *   batch waits until `minimum_slot_utilization` of the slots have work or the delay expired.
 * - `oldest`: `max_candidate_sequences` slots per instance; a batch takes the next requests of
 *   the sequences whose next request is oldest (one per sequence), up to `max_batch_size`,
 *   dispatched at once when the largest `preferred_batch_size` (else `max_batch_size`) is reached
 *   or the oldest request waited `max_queue_delay_microseconds`.
 *
 * Requests of one sequence run one after another on its instance, in arrival order. A sequence is
 * identified by its tenant and its correlation id (DESIGN "Multi-tenancy"): tenants sharing the
 * model never see, continue, end or reset each other's sequences, whatever ids they pick.
 *
 * Iterative sequences (`iterative_sequence: true`, spec §5.6; Triton core's IterativeSequencer in
 * `sequence_batch_scheduler/sequence_utils.{h,cc}`): a request without a correlation id starts a
 * sequence of its own, numbered by the scheduler from 1, with START; the backend may release a
 * request with RESCHEDULE ({@link ResponseSender.reschedule}), which queues it again in its sequence
 * with neither START nor END; its FINAL response (or a failed reschedule, or its cancellation)
 * ends the sequence, as Triton's release without RESCHEDULE does. The sequences the scheduler
 * numbers have keys of their own: no client id can continue, end or reset one of them.
 *
 * The id the backend sees: the client's, except for a tenant's sequence on an operator model in
 * multi-tenant mode, which reaches the backend (request correlation id and CORRID control) under
 * an id of its own ({@link TenantSequenceIds}), so a backend that keeps state by correlation id
 * never mixes two tenants' sequences of the same client id. Clients and error texts only ever see
 * their own id.
 */
import type { ModelConfig } from '../contract/model-config.js';
import { TritonError, asTritonError, cancelled } from '../contract/errors.js';
import {
  REQUEST_FLAG_SEQUENCE_END,
  REQUEST_FLAG_SEQUENCE_START,
  type BackendModelInstance,
  type InferenceRequest,
  type InferenceResponse,
  type ResponseSender,
  type Tensor,
} from '../contract/types.js';
import { ArbiterGate, type ExecutionArbiter, type ExecutionGrant } from './arbiter.js';
import { SYSTEM_CLOCK, type Clock, type ClockTimer } from './clock.js';
import { executeBatch } from './execute.js';
import type { PendingRequest } from './queue.js';
import { SequenceControls } from './sequence-controls.js';
import { TenantSequenceIds, type CorrelationId } from './sequence-ids.js';
import type { ModelScheduler, SchedulerHooks } from './types.js';
import * as schedulerErrors from './scheduler.errors.js';

/** The responses of filler requests go nowhere. */
const DROP: ResponseSender = Object.freeze({ send(): void {}, sendError(): void {} });

/**
 * Map key of a sequence: its tenant and its correlation id (DESIGN "Multi-tenancy": tenant identity
 * is part of every shared key). Two tenants' sequence 4242 on one shared model are two sequences,
 * and neither can address the other's. A tenant id has no NUL, so the tenant part ends at the
 * first one; integer ids (number or bigint) and string ids never collide.
 */
const keyOf = (tenant: string, id: number | bigint | string): string => `${tenant}\u0000${typeof id === 'string' ? `s${id}` : `n${id}`}`;
/** Map key of an iterative sequence the scheduler numbered (`i`: never a client's key, see {@link keyOf}). */
const iterativeKeyOf = (tenant: string, id: number): string => `${tenant}\u0000i${id}`;

/** A request of an iterative model, across its runs (see the module comment). */
interface Iteration {
  /** Its sequence's key. */
  readonly key: string;
  /** The sender it was enqueued with. */
  readonly sender: ResponseSender;
  /** Its FINAL was delivered (or it failed): later responses and reschedules are dropped. */
  done: boolean;
  /** Marks it done and ends its sequence; set while it runs. */
  end?: () => void;
}

/** One live sequence. */
interface Sequence {
  readonly key: string;
  /** The client's id (or the number the scheduler gave an iterative sequence). */
  readonly id: number | bigint | string;
  /** The id the backend sees instead of {@link id} ({@link TenantSequenceIds}); undefined = {@link id}. */
  readonly backendId: CorrelationId | undefined;
  /** CORRID control bytes of the id the backend sees (undefined without a CORRID control). */
  readonly corrid: Uint8Array | undefined;
  /** Requests waiting, in arrival order. */
  readonly queue: PendingRequest[];
  /** Its slot, undefined while in the backlog. */
  lane: Lane | undefined;
  slot: number;
  /** Implicit state per state input name: `[shape without batch dim, bytes]`; undefined = initial. */
  state: Map<string, { shape: number[]; data: Uint8Array }> | undefined;
  /** Last enqueue (monotonic ns), for the idle timeout. */
  lastNs: bigint;
  /** END queued or idle timeout: no more requests join; the slot frees once the queue is taken. */
  closed: boolean;
}

/** One instance and its batch slots. */
interface Lane {
  readonly index: number;
  readonly instance: BackendModelInstance;
  /**
   * Its slots in use or freed, grown on demand up to {@link capacity} (a config's slot count is
   * never allocated up front).
   */
  readonly slots: (Sequence | undefined)[];
  /** Slots per instance: `max_candidate_sequences` (oldest) or `max(1, max_batch_size)` (direct). */
  readonly capacity: number;
  busy: boolean;
  /** Sequences holding a slot. */
  used: number;
}

/** Sequence batcher for `direct` and `oldest` (see the module comment). */
export class SequenceBatchScheduler implements ModelScheduler {
  private readonly model: string;
  private readonly controls: SequenceControls;
  private readonly oldest: boolean;
  private readonly maxBatch: number;
  private readonly preferredMax: number;
  private readonly maxDelayNs: bigint;
  private readonly minSlotUtilization: number;
  private readonly idleNs: bigint;
  private readonly lanes: Lane[];
  /** Live sequences by (tenant, correlation id), see {@link keyOf} (closed ones are removed). */
  private readonly sequences = new Map<string, Sequence>();
  /** Sequences waiting for a slot, in arrival order. */
  private readonly backlog: Sequence[] = [];
  private queued = 0;
  private executing = 0;
  private idleWaiters: (() => void)[] = [];
  private pumping = false;
  private pumpAgain = false;
  private delayTimer: ClockTimer | undefined;
  private delayAtNs = 0n;
  private reaper: ClockTimer | undefined;
  /** This model version's side of the arbiter (claim, deferred flag, wake). */
  private readonly gate: ArbiterGate;
  /** `iterative_sequence: true`: requests may be rescheduled; requests without an id are numbered. */
  private readonly iterative: boolean;
  /** The next id of a sequence the scheduler starts (Triton counts from 1, per model). */
  private nextIterativeId = 1;
  /** Requests of an iterative model from their first enqueue to their FINAL. */
  private readonly iterations = new WeakMap<InferenceRequest, Iteration>();
  /** Set by {@link rejectPending}: a reschedule gets this error. */
  private stopped: TritonError | undefined;
  /** Backend ids of tenants' sequences; undefined = every backend sees the client's id (module comment). */
  private readonly tenantIds: TenantSequenceIds | undefined;

  /**
   * @param readInitialState reads `<model>/initial_state/<file>` for `initial_state.data_file`.
   * @param tenantSequenceIds an operator model in multi-tenant mode: tenants' sequences reach the
   *   backend under ids of their own, and the operator's ids of the reserved forms are refused
   *   ({@link TenantSequenceIds}).
   * @param clock queue times, `max_queue_delay_microseconds` and `max_sequence_idle_microseconds`.
   * @throws TritonError INVALID_ARG for an unusable initial state (see {@link SequenceControls}).
   */
  constructor(
    config: ModelConfig,
    instances: readonly BackendModelInstance[],
    private readonly hooks: SchedulerHooks,
    arbiter: ExecutionArbiter,
    version: number,
    readInitialState?: (file: string) => Uint8Array,
    tenantSequenceIds = false,
    private readonly clock: Clock = SYSTEM_CLOCK,
  ) {
    const sb = config.sequence_batching!;
    this.model = config.name;
    this.controls = new SequenceControls(config, readInitialState);
    this.oldest = sb.oldest !== undefined;
    this.maxBatch = Math.max(1, config.max_batch_size);
    const preferred = (sb.oldest?.preferred_batch_size ?? []).filter((n) => n <= this.maxBatch);
    this.preferredMax = preferred.length > 0 ? Math.max(...preferred) : this.maxBatch;
    this.maxDelayNs = BigInt((sb.oldest ?? sb.direct)?.max_queue_delay_microseconds ?? 0) * 1000n;
    this.minSlotUtilization = sb.direct?.minimum_slot_utilization ?? 0;
    this.idleNs = BigInt(sb.max_sequence_idle_microseconds) * 1000n;
    const slots = this.oldest ? Math.max(1, sb.oldest!.max_candidate_sequences) : this.maxBatch;
    this.lanes = instances.map((instance, index) => ({ index, instance, slots: [], capacity: slots, busy: false, used: 0 }));
    this.gate = new ArbiterGate(arbiter, config.name, version, () => this.pump(), config.backend === 'wasm');
    this.iterative = sb.iterative_sequence === true;
    this.tenantIds = tenantSequenceIds ? new TenantSequenceIds(this.controls.corridType, config.name) : undefined;
  }

  get pendingCount(): number {
    return this.queued;
  }

  pendingByTenant(): Map<string, number> {
    const m = new Map<string, number>();
    const count = (s: Sequence): void => {
      for (const p of s.queue) if (p.request.tenant) m.set(p.request.tenant, (m.get(p.request.tenant) ?? 0) + 1);
    };
    for (const l of this.lanes) for (const s of l.slots) if (s) count(s);
    for (const s of this.backlog) count(s);
    return m;
  }

  /**
   * Route a request to its sequence (spec §5.6).
   * @throws TritonError INVALID_ARG (Triton's wording) for a batch size above 1 ("inference
   *   request to model '<m>' must specify batch-size 1 due to requirements of sequence batcher"),
   *   no correlation id ("... must specify a non-zero or non-empty correlation ID"), a request
   *   without START for a sequence that is not live ("inference request for sequence <id> to
   *   model '<m>' must specify the START flag on the first request of the sequence"), or a
   *   string id that the model's integer CORRID control cannot carry, or (operator models in
   *   multi-tenant mode) an operator id of a reserved form ({@link TenantSequenceIds.checkOperatorId}).
   *   Nothing was queued. An iterative model numbers a request without a correlation id instead
   *   (module comment).
   */
  enqueue(request: InferenceRequest, sender: ResponseSender): void {
    const m = this.model;
    if (request.batchSize > 1) {
      throw schedulerErrors.sequenceBatchSize(m);
    }
    // The requester's tenant scopes the id: another tenant's live sequence of the same id is, to
    // this request, a sequence that does not exist (same error text).
    let key = this.iterations.get(request)?.key; // a rescheduled request stays in its sequence
    if (key === undefined) {
      const cid = request.correlationId;
      if (cid !== 0 && cid !== '' && cid !== 0n) {
        if (this.tenantIds && request.tenant === '') this.tenantIds.checkOperatorId(cid);
        key = keyOf(request.tenant, cid);
      } else if (this.iterative) {
        const n = this.nextIterativeId++;
        request.correlationId = n;
        request.flags |= REQUEST_FLAG_SEQUENCE_START;
        key = iterativeKeyOf(request.tenant, n);
      } else {
        throw schedulerErrors.sequenceIdMissing(m);
      }
    }
    const id = request.correlationId;
    const start = (request.flags & REQUEST_FLAG_SEQUENCE_START) !== 0;
    let seq = this.sequences.get(key);
    if (!start && !seq) {
      throw schedulerErrors.sequenceNotStarted(String(id), m);
    }
    const t = this.clock.now();
    if (!seq) {
      let corrid = this.controls.corridData(id, m); // refuses a client id the CORRID control cannot carry
      let backendId: CorrelationId | undefined;
      if (this.tenantIds && request.tenant !== '') {
        backendId = this.tenantIds.assign(request.tenant, id);
        corrid = this.controls.corridData(backendId, m);
      }
      seq = { key, id, backendId, corrid, queue: [], lane: undefined, slot: -1, state: undefined, lastNs: t, closed: false };
      this.sequences.set(key, seq);
      if (!this.assign(seq)) this.backlog.push(seq);
    }
    // A START for a live sequence continues it in its slot (Triton: the previous sequence is
    // ended early); the START resets its state when dispatched.
    seq.lastNs = t;
    seq.queue.push({ request, sender, queueStartNs: t, deadlineNs: 0n, level: 0 });
    this.queued++;
    if (this.iterative && !this.iterations.has(request)) this.iterations.set(request, { key, sender, done: false });
    if ((request.flags & REQUEST_FLAG_SEQUENCE_END) !== 0) this.close(seq);
    this.armReaper();
    this.pump();
  }

  drain(): Promise<void> {
    if (this.queued === 0 && this.executing === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  rejectPending(error: TritonError): void {
    this.stopped = error;
    this.clock.cancel(this.delayTimer);
    this.delayTimer = undefined;
    this.clock.cancel(this.reaper);
    this.reaper = undefined;
    const all: Sequence[] = [...this.backlog];
    for (const l of this.lanes) {
      for (let s = 0; s < l.slots.length; s++) {
        const seq = l.slots[s];
        if (seq) all.push(seq);
        l.slots[s] = undefined;
      }
      l.used = 0;
    }
    this.backlog.length = 0;
    this.sequences.clear();
    this.tenantIds?.clear();
    for (const seq of all) {
      for (const p of seq.queue.splice(0)) {
        this.queued--;
        p.sender.sendError(error, true);
      }
    }
    this.checkIdle();
  }

  /**
   * Give `seq` a free slot (a ready lane first, then the one with the fewest sequences, lowest
   * slot); false if none. A lane whose instance is not ready still takes sequences when no ready
   * lane has room: it answers them itself (nothing wakes a sequence waiting for readiness).
   */
  private assign(seq: Sequence): boolean {
    let best: Lane | undefined;
    let bestReady = false;
    for (const l of this.lanes) {
      if (l.used >= l.capacity) continue;
      const ready = l.instance.isReady?.() ?? true;
      if (!best || (ready && !bestReady) || (ready === bestReady && l.used < best.used)) {
        best = l;
        bestReady = ready;
      }
    }
    if (!best) return false;
    let slot = best.slots.indexOf(undefined);
    if (slot < 0) slot = best.slots.length;
    best.slots[slot] = seq;
    best.used++;
    seq.lane = best;
    seq.slot = slot;
    return true;
  }

  /** No more requests join `seq` (END queued, or idle); its slot frees once its queue is taken. */
  private close(seq: Sequence): void {
    seq.closed = true;
    if (this.sequences.get(seq.key) === seq) {
      this.sequences.delete(seq.key);
      if (seq.backendId !== undefined) this.tenantIds?.release(seq.backendId);
    }
    if (seq.queue.length === 0) this.release(seq);
  }

  /** Free `seq`'s slot (or drop it from the backlog) and hand the slot to the oldest backlogged sequence. */
  private release(seq: Sequence): void {
    const lane = seq.lane;
    if (!lane) {
      const i = this.backlog.indexOf(seq);
      if (i >= 0) this.backlog.splice(i, 1);
      return;
    }
    lane.slots[seq.slot] = undefined;
    lane.used--;
    seq.lane = undefined;
    seq.state = undefined;
    while (this.backlog.length > 0) {
      const next = this.backlog[0]!;
      if (!this.assign(next)) break;
      this.backlog.shift();
      // Its idle time counts from when it got the slot.
      next.lastNs = this.clock.now();
    }
  }

  /** Release the sequences idle for `max_sequence_idle_microseconds`; re-arm for the next one. */
  private reap(): void {
    this.reaper = undefined;
    const t = this.clock.now();
    for (const seq of [...this.sequences.values()]) {
      // A backlogged sequence is not reaped (as in Triton): it has not had a slot to idle in.
      if (seq.lane && t - seq.lastNs >= this.idleNs) this.close(seq);
    }
    this.armReaper();
    this.pump();
  }

  private armReaper(): void {
    if (this.reaper || this.sequences.size === 0) return;
    let oldest: bigint | undefined;
    for (const s of this.sequences.values()) if (oldest === undefined || s.lastNs < oldest) oldest = s.lastNs;
    const leftMs = Math.max(0, Number(oldest! + this.idleNs - this.clock.now()) / 1e6);
    this.reaper = this.clock.schedule(() => this.reap(), Math.ceil(leftMs) + 1, true);
  }

  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        for (const lane of this.lanes) {
          if (this.gate.deferred) break;
          this.dispatch(lane);
        }
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
    this.checkIdle();
  }

  /** Drop the cancelled requests at the head of `seq`'s queue (CANCELLED); true if one was dropped. */
  private dropCancelled(seq: Sequence): void {
    while (seq.queue.length > 0 && seq.queue[0]!.request.cancelled) {
      const p = seq.queue.shift()!;
      this.queued--;
      const ends = (p.request.flags & REQUEST_FLAG_SEQUENCE_END) !== 0;
      const iteration = this.iterations.get(p.request);
      if (iteration) {
        iteration.done = true;
        this.iterations.delete(p.request);
      }
      p.sender.sendError(cancelled(), true);
      // A request of an iterative model ends its sequence however it ends (module comment).
      if (iteration && !seq.closed) this.close(seq);
      else if (ends || (seq.closed && seq.queue.length === 0)) this.release(seq);
    }
  }

  /** Run the next batch of `lane` if its instance is free and a batch is due. */
  private dispatch(lane: Lane): void {
    if (lane.busy) return; // a lane's sequences run on its instance, ready or not (it answers them)
    const ready: Sequence[] = [];
    for (const seq of lane.slots) {
      if (!seq) continue;
      this.dropCancelled(seq);
      if (seq.queue.length > 0 && seq.lane === lane) ready.push(seq);
    }
    if (ready.length === 0) return;
    const t = this.clock.now();
    let chosen: Sequence[];
    if (this.oldest) {
      ready.sort((a, b) => (a.queue[0]!.queueStartNs < b.queue[0]!.queueStartNs ? -1 : a.queue[0]!.queueStartNs > b.queue[0]!.queueStartNs ? 1 : 0));
      chosen = ready.slice(0, this.maxBatch);
      const full = chosen.length >= this.preferredMax;
      const waited = t - chosen[0]!.queue[0]!.queueStartNs;
      if (!full && this.maxDelayNs > 0n && waited < this.maxDelayNs) return this.armDelay(chosen[0]!.queue[0]!.queueStartNs + this.maxDelayNs);
    } else {
      chosen = ready.sort((a, b) => a.slot - b.slot);
      if (this.maxDelayNs > 0n && ready.length < this.minSlotUtilization * lane.capacity) {
        let earliest = ready[0]!.queue[0]!.queueStartNs;
        for (const s of ready) if (s.queue[0]!.queueStartNs < earliest) earliest = s.queue[0]!.queueStartNs;
        if (t - earliest < this.maxDelayNs) return this.armDelay(earliest + this.maxDelayNs);
      }
    }
    const tenants = this.gate.tenants;
    if (tenants) {
      tenants.length = 0;
      for (const s of chosen) {
        const tenant = s.queue[0]!.request.tenant;
        if (!tenants.includes(tenant)) tenants.push(tenant);
      }
    }
    const grant = this.gate.admit();
    if (!grant) return;
    const batch: PendingRequest[] = [];
    const requests: InferenceRequest[] = [];
    const senders: ResponseSender[] = [];
    let filler: { base: Tensor[]; requestedOutputs: string[]; template: InferenceRequest } | undefined;
    const prepared: { seq: Sequence; p: PendingRequest; base: Tensor[] }[] = [];
    for (const seq of chosen) {
      const p = seq.queue.shift()!;
      this.queued--;
      prepared.push({ seq, p, base: p.request.inputs.slice() });
    }
    for (const { seq, p, base } of prepared) {
      if (!this.oldest) {
        // Pad the slots before this one that have no request with not-ready fillers.
        filler ??= { base, requestedOutputs: p.request.requestedOutputs.slice(), template: p.request };
        while (requests.length < seq.slot) {
          requests.push(this.fillerRequest(filler.template, filler.base, filler.requestedOutputs));
          senders.push(DROP);
        }
      }
      const r = p.request;
      const requested = r.requestedOutputs.slice();
      if (seq.backendId !== undefined) r.correlationId = seq.backendId;
      r.inputs.push(...this.controls.controlTensors(r.flags, true, seq.corrid));
      if ((r.flags & REQUEST_FLAG_SEQUENCE_START) !== 0) seq.state = undefined;
      const sender = this.addState(seq, r, p.sender);
      const iteration = this.iterations.get(r);
      senders.push(iteration ? this.iterationSender(seq, r, iteration, base, requested, sender) : sender);
      requests.push(r);
      batch.push(p);
      if ((r.flags & REQUEST_FLAG_SEQUENCE_END) !== 0 || (seq.closed && seq.queue.length === 0)) {
        // The END request is on its way: the slot is free for the backlog from the next batch on.
        // Its state stays readable by the sender wrapper (it holds `seq`).
        const state = seq.state;
        this.release(seq);
        seq.state = state;
      }
    }
    lane.busy = true;
    void this.run(lane, grant, batch, requests, senders);
  }

  /** A not-ready request padding a direct batch's empty slot: the template's inputs, every control false. */
  private fillerRequest(template: InferenceRequest, base: Tensor[], requestedOutputs: string[]): InferenceRequest {
    const inputs = [...base, ...this.controls.controlTensors(0, false, undefined)];
    for (const spec of this.controls.states) inputs.push(this.controls.stateTensor(spec, spec.shape, spec.initial));
    const outputs = requestedOutputs.slice();
    for (const spec of this.controls.states) if (!outputs.includes(spec.output)) outputs.push(spec.output);
    return { ...template, id: '', inputs, requestedOutputs: outputs, correlationId: 0, flags: 0, parameters: {}, cancelled: false, batchSize: 1 };
  }

  /**
   * Add `seq`'s state inputs to `r` and ask for the state outputs; the returned sender takes the
   * state outputs out of the responses (keeping them as the sequence's next state) before they
   * reach `downstream`.
   */
  private addState(seq: Sequence, r: InferenceRequest, downstream: ResponseSender): ResponseSender {
    const specs = this.controls.states;
    if (specs.length === 0) return downstream;
    for (const spec of specs) {
      const cur = seq.state?.get(spec.input);
      r.inputs.push(this.controls.stateTensor(spec, cur?.shape ?? spec.shape, cur?.data ?? spec.initial));
      if (!r.requestedOutputs.includes(spec.output)) r.requestedOutputs.push(spec.output);
    }
    const batching = this.controls.batching;
    return {
      send(response: InferenceResponse | null, final: boolean): void {
        if (response) {
          const outputs: Tensor[] = [];
          for (const t of response.outputs) {
            const spec = specs.find((s) => s.output === t.name);
            if (!spec) {
              outputs.push(t);
              continue;
            }
            seq.state ??= new Map();
            seq.state.set(spec.input, { shape: batching ? t.shape.slice(1) : t.shape.slice(), data: t.data });
          }
          if (outputs.length !== response.outputs.length) {
            // A response of states only is how a backend's flags-only FINAL carries a state
            // update (the native host's): it reaches the client as what it was, a FINAL alone.
            if (outputs.length === 0 && !response.parameters && final) response = null;
            else response = response.parameters ? { outputs, parameters: response.parameters } : { outputs };
          }
        }
        downstream.send(response, final);
      },
      sendError(error: TritonError, final: boolean): void {
        downstream.sendError(error, final);
      },
    };
  }

  /**
   * The sender a backend gets for a request of an iterative model: its FINAL ends the sequence
   * (Triton: the request is released without RESCHEDULE), and, unless the request has END,
   * `reschedule` queues it again with `inputs` / `requested` (as before this run's controls and
   * states were added) and neither START nor END.
   */
  private iterationSender(
    seq: Sequence,
    r: InferenceRequest,
    it: Iteration,
    inputs: Tensor[],
    requested: string[],
    downstream: ResponseSender,
  ): ResponseSender {
    it.end = (): void => {
      it.done = true;
      this.iterations.delete(r);
      if (!seq.closed && !this.stopped) {
        this.close(seq);
        this.pump();
      }
    };
    const end = it.end;
    const sender: ResponseSender = {
      send(response: InferenceResponse | null, final: boolean): void {
        if (it.done) return;
        if (final) end();
        downstream.send(response, final);
      },
      sendError(error: TritonError, final: boolean): void {
        if (it.done) return;
        if (final) end();
        downstream.sendError(error, final);
      },
    };
    if ((r.flags & REQUEST_FLAG_SEQUENCE_END) === 0) {
      sender.reschedule = (): void => {
        if (it.done) return;
        r.inputs = inputs;
        r.requestedOutputs = requested;
        r.flags = 0;
        r.correlationId = seq.id; // as the client sent it (errors name the client's id)
        try {
          if (this.stopped) throw this.stopped;
          this.enqueue(r, it.sender);
        } catch (e) {
          // Its sequence is gone (idle) or the model is unloading: the request ends with that error.
          end();
          it.sender.sendError(asTritonError(e), true);
        }
      };
    }
    return sender;
  }

  /** End `r`'s iteration and its sequence, if `r` is a running request of an iterative model. */
  private endIteration(r: InferenceRequest): void {
    const it = this.iterations.get(r);
    if (it && !it.done) it.end?.();
  }

  private armDelay(atNs: bigint): void {
    if (this.delayTimer && this.delayAtNs <= atNs) return;
    this.clock.cancel(this.delayTimer);
    this.delayAtNs = atNs;
    this.delayTimer = this.clock.schedule(
      () => {
        this.delayTimer = undefined;
        this.pump();
      },
      Math.max(0, Number(atNs - this.clock.now()) / 1e6),
    );
  }

  private run(lane: Lane, grant: ExecutionGrant, batch: PendingRequest[], requests: InferenceRequest[], senders: ResponseSender[]): Promise<void> {
    this.executing++;
    // A failed execution (its error goes to each request's own sender) ends iterative sequences.
    const hooks: SchedulerHooks = !this.iterative
      ? this.hooks
      : {
          onExecuted: (record) => {
            this.hooks.onExecuted(record);
            if (record.error) for (const p of record.batch) this.endIteration(p.request);
          },
        };
    return executeBatch(lane.instance, batch, requests, senders, batch.length, hooks, this.clock, () => {
      this.executing--;
      lane.busy = false;
      grant.release();
      this.pump();
    });
  }

  private checkIdle(): void {
    if (this.queued === 0 && this.executing === 0 && this.idleWaiters.length > 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const r of w) r();
    }
  }
}
