/**
 * One ensemble request, executed as a data-flow graph (spec §5.6): a step is sent as soon as every
 * ensemble tensor it reads is available, so independent steps run concurrently. Every step is an
 * ordinary inference request on its composing model through the data plane
 * (`InferenceServerHandle.infer`) with the ensemble owner's principal on behalf of the request's
 * caller (`Principal.caller`): names resolve in the owner's namespace, the step is queued as the
 * caller's and charged to the caller's in-flight quota, and it counts against the request's
 * {@link EnsembleRequestBudget} (inferences, depth, fan-out: ensemble/budget.ts); the composing model counts
 * it in its statistics, cancellation reaches it through its signal.
 *
 * Tensors pass between steps without copying (the step's request input views the producing
 * response's buffer). Where a tensor made without a batch dimension meets a batching model, or a
 * batch-1 tensor meets a non-batching one (a step's input, an ensemble output), the batch
 * dimension is added or stripped as Triton does (ensemble/batch-dims.ts). The request's
 * correlation ID and sequence flags go to every step (core `ensemble_scheduler.cc`), so a
 * sequence model can be a step; models without a sequence batcher ignore them. A step's response
 * parameters `sequence_id` / `sequence_start` / `sequence_end` override them for the steps
 * downstream of it, and the ensemble's response carries the three (ensemble/sequence-override.ts).
 *
 * Decoupled steps: each response of a decoupled composing model opens a new frame of ensemble
 * tensors, and the steps downstream of it run once per response; the ensemble
 * then sends one response per frame that completes its outputs (it is decoupled itself, see
 * {@link EnsemblePlan.decoupled}). With `max_inflight_requests` N > 0, at most N requests of this
 * run are in flight at each step; a step's further frames wait, in arrival order, for one to end
 * (Triton blocks the decoupled producer instead; a backend cannot be blocked here, so its
 * responses are held as frames until the step downstream takes them).
 */
import { AccessError, TritonError, asTritonError, cancelled } from '../contract/errors.js';
import { outputsNotProduced, stepFailed } from './ensemble.errors.js';
import type {
  EnsembleRequestBudget,
  InferenceRequest,
  InferenceRequestInit,
  InferenceResponse,
  InferenceServerHandle,
  Principal,
  ResponseSender,
  Tensor,
} from '../contract/types.js';
import { reshapeTensorDims } from './batch-dims.js';
import type { EnsemblePlan, PlanStep } from './plan.js';
import { ensembleResponseSequenceParameters, responseSequenceOverride, stepSequence, type SequenceTag } from './sequence-override.js';

/** Queue and compute durations (ns) of the composing requests of one ensemble request, summed. */
export interface StepTimes {
  queueNs: bigint;
  inputNs: bigint;
  inferNs: bigint;
  outputNs: bigint;
}

/** What a run needs besides the request. */
export interface EnsembleRunOptions {
  name: string;
  plan: EnsemblePlan;
  server: InferenceServerHandle;
  /** The ensemble owner's principal: steps resolve model names in its namespace. */
  principal: Principal;
  /** Called once, after the final response went to the sender. */
  onFinished(ok: boolean, times: StepTimes): void;
  /** Error log of the run (Triton's LOG_ERROR): a step's inputs carrying different sequence settings. */
  logError?(msg: string): void;
}

/** Ensemble tensors visible to the steps started in it (its own, then its parents'). */
class Frame {
  readonly tensors = new Map<string, Tensor>();
  readonly started = new Set<PlanStep>();
  emitted = false;
  constructor(readonly parent?: Frame) {}
  lookup(name: string): Tensor | undefined {
    for (let f: Frame | undefined = this; f; f = f.parent) {
      const t = f.tensors.get(name);
      if (t) return t;
    }
    return undefined;
  }
}

/** A tensor as a step's request input: the same bytes, under the model's input name, without the memory owner (the producer's consumer — this run — releases it). */
const viewAs = (name: string, t: Tensor): Tensor => ({ name, datatype: t.datatype, shape: t.shape, data: t.data });

export class EnsembleRun {
  private readonly controller = new AbortController();
  private readonly needed: Set<PlanStep>;
  private readonly wanted: string[];
  private pending = 0;
  /** Per step: requests of this run in flight, and frames waiting for `max_inflight_requests`. */
  private readonly inflight = new Map<PlanStep, number>();
  private readonly waiting = new Map<PlanStep, Frame[]>();
  private waitingCount = 0;
  private error: TritonError | undefined;
  private finished = false;
  /** The response of a non-decoupled ensemble, sent with the final flag once every step is done. */
  private single: InferenceResponse | undefined;
  /** Memory owners of step outputs; released at the end unless they left in a response. */
  private readonly owned = new Set<Tensor>();
  private readonly times: StepTimes = { queueNs: 0n, inputNs: 0n, inferNs: 0n, outputNs: 0n };
  /**
   * The batch size of the request that made each tensor (Triton's `TensorData::batch_size_`): 0
   * when that model, or this ensemble for its inputs, does not batch.
   */
  private readonly batchOf = new WeakMap<Tensor, number>();
  /**
   * The correlation ID and flags each step-made tensor carries to the steps that read it (Triton's
   * `parameter_override_` metadata, ensemble/sequence-override.ts); ensemble inputs carry none.
   */
  private readonly sequenceOf = new WeakMap<Tensor, SequenceTag>();
  /**
   * The owner's namespace (step names resolve there), acting within this request on behalf of its
   * caller: each step is charged to the caller's in-flight quota and queued as the caller's.
   */
  private readonly stepPrincipal: Principal;
  /** The budget of the top-level request (ensemble/budget.ts); undefined = no caps. */
  private readonly budget: EnsembleRequestBudget | undefined;
  /** This run's nesting depth (1 = the top-level ensemble). */
  private readonly depth: number;

  constructor(
    private readonly opts: EnsembleRunOptions,
    private readonly request: InferenceRequest,
    private readonly sender: ResponseSender,
  ) {
    const { plan } = opts;
    this.stepPrincipal = { ...opts.principal, within: true, caller: request.tenant };
    this.budget = request.ensemble?.budget;
    this.depth = (request.ensemble?.depth ?? 0) + 1;
    this.wanted = request.requestedOutputs.length > 0 ? request.requestedOutputs : plan.outputs;
    this.needed = neededSteps(plan, this.wanted);
  }

  /** Start the steps the request's inputs make ready. */
  start(): void {
    try {
      this.budget?.enter(this.depth);
    } catch (e) {
      return this.fail(asTritonError(e));
    }
    const root = new Frame();
    const batch = this.opts.plan.batching ? this.request.batchSize : 0;
    for (const t of this.request.inputs) {
      const v = viewAs(t.name, t);
      this.batchOf.set(v, batch);
      root.tensors.set(t.name, v);
    }
    // Held while sending: a step answered synchronously must not end the run before its siblings start.
    this.pending++;
    this.added(
      root,
      this.request.inputs.map((t) => t.name),
    );
    this.pending--;
    this.settle();
  }

  /** The caller went away: stop sending steps, cancel the ones in flight, answer CANCELLED. */
  cancel(): void {
    this.fail(cancelled());
  }

  private fail(e: TritonError): void {
    if (this.error || this.finished) return;
    this.error = e;
    this.controller.abort();
    this.waiting.clear(); // never sent
    this.waitingCount = 0;
    this.settle();
  }

  /** Send `step` on `frame` now, or queue it while the step has `max_inflight_requests` in flight. */
  private admit(step: PlanStep, frame: Frame): void {
    const max = this.opts.plan.maxInflightRequests;
    if (max > 0 && (this.inflight.get(step) ?? 0) >= max) {
      const q = this.waiting.get(step);
      if (q) q.push(frame);
      else this.waiting.set(step, [frame]);
      this.waitingCount++;
      return;
    }
    this.inflight.set(step, (this.inflight.get(step) ?? 0) + 1);
    this.send(step, frame);
  }

  /** A request of `step` ended: send its next waiting frame, if any. */
  private released(step: PlanStep): void {
    this.inflight.set(step, (this.inflight.get(step) ?? 1) - 1);
    const next = this.waiting.get(step)?.shift();
    if (next === undefined || this.error) return;
    this.waitingCount--;
    this.admit(step, next);
  }

  /** Tensors `names` became available in `frame`: send the steps they complete, emit outputs. */
  private added(frame: Frame, names: string[]): void {
    if (this.error) return;
    const { plan } = this.opts;
    for (const n of names) {
      for (const step of plan.consumers.get(n) ?? []) {
        if (!this.needed.has(step) || frame.started.has(step)) continue;
        if (!step.inputs.every(([, t]) => frame.lookup(t) !== undefined)) continue;
        frame.started.add(step);
        this.admit(step, frame);
        if (this.error) return;
      }
    }
    if (!frame.emitted && names.some((n) => this.wanted.includes(n)) && this.wanted.every((o) => frame.lookup(o) !== undefined)) {
      frame.emitted = true;
      let tag: SequenceTag | undefined;
      const response: InferenceResponse = {
        outputs: this.wanted.map((o) => {
          const t = frame.lookup(o)!;
          this.owned.delete(t);
          tag ??= this.sequenceOf.get(t);
          const shape = reshapeTensorDims(plan.outputDims.get(o) ?? [], plan.batching, this.batchOf.get(t) ?? 0, t.shape);
          return shape === t.shape ? t : { ...t, shape: [...shape] };
        }),
      };
      // Triton adds these for each output a step made (all of them): the first output's here.
      if (tag) response.parameters = ensembleResponseSequenceParameters(this.request.correlationId, tag);
      if (plan.decoupled) this.sender.send(response, false);
      else this.single = response;
    }
  }

  private send(step: PlanStep, frame: Frame): void {
    const r = this.request;
    if (r.cancelled) return this.cancel();
    try {
      this.budget?.take();
    } catch (e) {
      this.inflight.set(step, (this.inflight.get(step) ?? 1) - 1);
      return this.fail(asTritonError(e));
    }
    const inputs = step.inputs.map(([input, tensor]): Tensor => {
      const t = frame.lookup(tensor)!;
      const shape = reshapeTensorDims(step.inputDims.get(input) ?? [], step.batching, this.batchOf.get(t) ?? 0, t.shape);
      return { name: input, datatype: t.datatype, shape: shape === t.shape ? t.shape : [...shape], data: t.data };
    });
    // What the step's outputs carry as their batch size (Triton records the step request's).
    const stepBatch = step.batching ? Math.max(inputs[0]?.shape[0] ?? 1, 1) : 0;
    // The step's correlation ID and flags: its first input's that a step made, else the request's.
    const sequence = stepSequence(
      r,
      step.inputs.map(([, tensor]) => this.sequenceOf.get(frame.lookup(tensor)!)),
      (used, ignored) =>
        this.opts.logError?.(
          `ensemble '${this.opts.name}': different sequence settings for step '${step.modelName}' (correlation ID ${String(ignored.correlationId)}, flags ${ignored.flags} ignored); correlation ID ${String(used.correlationId)}, flags ${used.flags} is used`,
        ),
    );
    const init: InferenceRequestInit = {
      id: r.id,
      model: step.modelName,
      version: step.modelVersion,
      tenant: '',
      inputs,
      requestedOutputs: step.outputs.map(([o]) => o),
      parameters: r.parameters,
      correlationId: sequence.correlationId,
      flags: sequence.flags,
      priority: r.priority,
      timeoutUs: r.timeoutUs,
      ensemble: this.budget ? { budget: this.budget, depth: this.depth } : undefined,
      blsChain: this.request.blsChain,
      // A traced ensemble request's steps are traced as its children (Triton's SpawnChildTrace).
      parentTrace: this.request.trace,
    };
    const outputs = new Map(step.outputs);
    const take = (response: InferenceResponse | null): void => {
      if (!response) return;
      if (this.error || this.finished) {
        for (const t of response.outputs) t.owner?.release();
        return;
      }
      // Response parameters may set the sequence of the steps downstream (Triton's ConsumeResponse).
      let tag: SequenceTag;
      try {
        tag = responseSequenceOverride(response.parameters, sequence.correlationId) ?? sequence;
      } catch (e) {
        for (const t of response.outputs) t.owner?.release();
        return this.fail(this.stepError(asTritonError(e)));
      }
      const target = step.decoupled ? new Frame(frame) : frame;
      const names: string[] = [];
      for (const t of response.outputs) {
        const tensorName = outputs.get(t.name);
        if (tensorName === undefined) {
          t.owner?.release();
          continue;
        }
        const renamed: Tensor = { ...t, name: tensorName };
        this.batchOf.set(renamed, stepBatch);
        this.sequenceOf.set(renamed, tag);
        if (t.owner) this.owned.add(renamed);
        target.tensors.set(tensorName, renamed);
        names.push(tensorName);
      }
      this.added(target, names);
    };
    this.pending++;
    let done = false;
    // The step's final response (or error) ends it: its budget slot and its place are given back.
    const ended = (final: boolean) => {
      if (!final) return;
      done = true;
      this.budget?.done();
      this.released(step);
      this.pending--;
      this.settle();
    };
    const sender: ResponseSender = {
      send: (response, final) => {
        if (done) return;
        take(response);
        ended(final);
      },
      sendError: (e, final) => {
        if (done) return;
        this.fail(this.stepError(e));
        ended(final);
      },
    };
    try {
      const submitted = this.opts.server.infer(this.stepPrincipal, step.modelName, step.modelVersion, init, sender, this.controller.signal);
      submitted.request.onTimes = (q, i, n, o) => {
        this.times.queueNs += q;
        this.times.inputNs += i;
        this.times.inferNs += n;
        this.times.outputNs += o;
      };
    } catch (e) {
      if (!done) {
        done = true;
        this.budget?.done();
        this.inflight.set(step, (this.inflight.get(step) ?? 1) - 1);
        this.pending--;
      }
      this.fail(this.stepError(asTritonError(e)));
    }
  }

  /**
   * A step's error (its error response, its refusal, a response parameter of the wrong type) as
   * Triton's ensemble reports it (`EnsembleContext::FinishEnsemble`): the same code, the message
   * prefixed "in ensemble '<name>', " (a nested ensemble's error gets each ensemble's prefix).
   * Warden's own access refusals (tenant quotas and ensemble caps: 403 / 429) and cancellation
   * keep their text.
   */
  private stepError(e: TritonError): TritonError {
    if (e instanceof AccessError || e.code === 'CANCELLED') return e;
    return stepFailed(this.opts.name, e);
  }

  /** Once no step is in flight: send the final response (or the first error) and clean up. */
  private settle(): void {
    if (this.pending > 0 || this.waitingCount > 0 || this.finished) return;
    this.finished = true;
    for (const t of this.owned) t.owner?.release();
    this.owned.clear();
    if (this.error) {
      this.sender.sendError(this.error, true);
    } else if (this.opts.plan.decoupled) {
      this.sender.send(null, true);
    } else if (this.single) {
      this.sender.send(this.single, true);
    } else {
      const missing = this.wanted.filter((o) => !this.single?.outputs.some((t) => t.name === o));
      this.error = outputsNotProduced(this.opts.name, missing);
      this.sender.sendError(this.error, true);
    }
    this.opts.onFinished(this.error === undefined, this.times);
  }
}

/** The steps the requested outputs depend on (the rest are not run). */
function neededSteps(plan: EnsemblePlan, outputs: readonly string[]): Set<PlanStep> {
  const producers = new Map<string, PlanStep>();
  for (const s of plan.steps) for (const [, t] of s.outputs) producers.set(t, s);
  const needed = new Set<PlanStep>();
  const stack = [...outputs];
  while (stack.length > 0) {
    const s = producers.get(stack.pop()!);
    if (!s || needed.has(s)) continue;
    needed.add(s);
    for (const [, t] of s.inputs) stack.push(t);
  }
  return needed;
}
