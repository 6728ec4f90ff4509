/**
 * Host capability `warden:backend/inference` (wit/inference.wit; Triton's BLS, spec §7.2): the
 * calls a sandboxed instance makes on other models during one `execute`, run on the JS thread
 * through the server's data plane (`InferenceServerHandle.infer`) with the model owner's principal
 * (DESIGN "Sandbox rules": capabilities, not ambient authority). Both engines drive it the same
 * way: {@link beginCalls} when an execute is handed to the sandbox, {@link startCall} /
 * {@link nextOutcome} / {@link cancelCall} for the guest's calls, {@link endCalls} when the
 * execute ends however it ends (returned, trapped, killed at its deadline, instance gone).
 *
 * What it enforces (contract/bls.ts; the data plane adds the chain checks and the owner's rate,
 * quotas and fair queueing):
 * - grants: a callee must be granted by the config (`bls_model:<name>`), with the version that
 *   serves the call; anything else fails exactly as a missing model or version does;
 * - the caller's deadline: each call's timeout is what the execute has left; {@link endCalls}
 *   cancels every call still in flight;
 * - in flight: at most `bls_max_inflight` calls per execute;
 * - memory: responses received and not yet taken by the guest hold at most the instance's memory
 *   limit; a response past it fails (and cancels) its call;
 * - cancellation: once every request of the execute is cancelled by its client, the calls are.
 */
import { asTritonError, type TritonError } from '../../../contract/errors.js';
import { extendChain, granted, type BlsChain, type BlsGrants } from '../../../contract/bls.js';
import * as blsErrors from '../../../contract/bls.errors.js';
import { ownerPrincipal } from '../../../contract/load-context.js';
import { modelNotFound, versionNotFound } from '../../../contract/model-lookup.errors.js';
import type { InferenceRequest, InferenceResponse, InferenceServerHandle, ModelKey, ParameterValue, ResponseSender } from '../../../contract/types.js';
import type { WireError, WireResponse, WireTensor } from '../wire.js';

/** What a model's instances may call, and how much (one per model version, shared by its instances). */
export interface InferenceCalls {
  readonly server: InferenceServerHandle;
  /** The calling model (its owner's principal makes the calls). */
  readonly key: ModelKey;
  readonly grants: BlsGrants;
  /** Most calls in flight per execute. */
  readonly maxInflight: number;
  /** Most bytes of responses held for the guest (the instance's memory limit). */
  readonly memoryBytes: number;
}

/** A call as the guest makes it (`inference-request`). */
export interface CallRequest {
  model: string;
  /** -1: the version the server picks. */
  version: number;
  id: string;
  inputs: WireTensor[];
  requestedOutputs: string[];
  parameters: Record<string, ParameterValue>;
  /** µs; 0: the rest of the caller's deadline. */
  timeoutUs: number;
}

/** What `next` answers: a response, the end of the call (`ok: null`), or its error. */
export type CallOutcome = { ok: WireResponse | null } | { err: WireError };

interface Call {
  readonly model: string;
  readonly abort: AbortController;
  /** Outcomes received and not yet taken by the guest, oldest first. */
  readonly queue: CallOutcome[];
  /** Bytes of the responses in {@link queue}. */
  bytes: number;
  /** The final response (or error) arrived: nothing more will be queued. */
  ended: boolean;
  /** A `next` waiting for the next outcome. */
  waiter?: (o: CallOutcome) => void;
}

interface Scope {
  readonly requests: readonly InferenceRequest[];
  readonly chain: BlsChain;
  /** `performance.now()` (ms) at which the execute's deadline passes. */
  readonly deadlineAt: number;
  readonly calls: Map<number, Call>;
  nextHandle: number;
  /** Bytes held for the guest across the scope's calls. */
  heldBytes: number;
  cancelPoll?: NodeJS.Timeout;
}

/** Per-instance state of the inference capability. */
export interface InferenceState {
  /** Undefined: the model has no grants (every callee looks missing). */
  readonly calls?: InferenceCalls;
  scope?: Scope;
}

/** Inference state of one instance of a model whose calls are `calls` (none: no grants). */
export function createInferenceState(calls?: InferenceCalls): InferenceState {
  return { calls };
}

/** How often a scope with calls in flight checks whether its requests were all cancelled (ms). */
const CANCEL_POLL_MS = 20;

const wireError = (e: TritonError): WireError => ({ code: e.code, message: e.message });

/** Bytes of a response's tensors. */
function responseBytes(r: WireResponse): number {
  let n = 0;
  for (const t of r.outputs) n += t.data.byteLength;
  return n;
}

/**
 * An execute of `requests` begins, with `executeMs` of deadline: calls made from now on belong to
 * it. Any previous scope is ended first.
 */
export function beginCalls(state: InferenceState, requests: readonly InferenceRequest[], executeMs: number): void {
  endCalls(state);
  if (!state.calls) return;
  const chain = extendChain(requests, state.calls.key);
  state.scope = { requests, chain, deadlineAt: performance.now() + executeMs, calls: new Map(), nextHandle: 1, heldBytes: 0 };
}

/** The execute ended: every call still in flight is cancelled, and what it held is dropped. */
export function endCalls(state: InferenceState): void {
  const scope = state.scope;
  if (!scope) return;
  state.scope = undefined;
  clearInterval(scope.cancelPoll);
  // nobody waits any more: the execute returned, or its sandbox is gone
  for (const call of scope.calls.values()) discard(call);
  scope.calls.clear();
}

/** Ends `call`: its request is cancelled, what it queued for the guest released, nobody waits. */
function discard(call: Call): void {
  call.ended = true;
  call.abort.abort();
  for (const o of call.queue) if ('ok' in o && o.ok) releaseOutputs(o.ok);
  call.queue.length = 0;
  call.waiter = undefined;
}

/** Output tensors the data plane lent (a memory owner) are given back once the guest has them. */
function releaseOutputs(r: WireResponse): void {
  for (const t of r.outputs) (t as { owner?: { release(): void } }).owner?.release();
}

/**
 * Starts a call (`inference.start`, and the first half of `inference.infer`).
 * @param wantDecoupled false for `infer`: a decoupled callee is refused
 * @returns the call's handle
 * @throws TritonError NOT_FOUND for a callee that is not granted or does not exist (the same
 *   text), UNSUPPORTED outside an execute, UNAVAILABLE past the in-flight limit or the deadline,
 *   and what the data plane throws (INVALID_ARG for a bad request, a cycle or a chain too deep)
 */
export function startCall(state: InferenceState, req: CallRequest, wantDecoupled: boolean): number {
  const scope = state.scope;
  const calls = state.calls;
  if (!calls) throw modelNotFound(req.model);
  if (!scope) throw blsErrors.outsideExecute();
  if (!calls.grants.has(req.model)) throw modelNotFound(req.model);
  if (scope.calls.size >= calls.maxInflight) throw blsErrors.tooManyInflight(calls.maxInflight);
  const left = scope.deadlineAt - performance.now();
  if (left <= 0) throw blsErrors.callerDeadline(req.model);
  const principal = ownerPrincipal(calls.key);
  const target = calls.server.inferenceTarget?.(principal, req.model, req.version);
  if (target) {
    if (!granted(calls.grants, req.model, target.version)) throw req.version >= 0 ? versionNotFound(req.model, req.version) : modelNotFound(req.model);
    if (target.decoupled && !wantDecoupled) throw blsErrors.calleeDecoupled(req.model);
  }
  const leftUs = Math.max(1, Math.floor(left * 1000));
  const timeoutUs = req.timeoutUs > 0 ? Math.min(req.timeoutUs, leftUs) : leftUs;
  const handle = scope.nextHandle++;
  const call: Call = { model: req.model, abort: new AbortController(), queue: [], bytes: 0, ended: false };
  // An error ends the call (inference.wit `next`); a final response is followed by the end (`ok: null`).
  const push = (o: CallOutcome, final: boolean): void => {
    if (call.ended) {
      if ('ok' in o && o.ok) releaseOutputs(o.ok);
      return;
    }
    if (final || 'err' in o) call.ended = true;
    if ('ok' in o && o.ok) {
      const n = responseBytes(o.ok);
      if (scope.heldBytes + n > calls.memoryBytes) {
        releaseOutputs(o.ok);
        call.ended = true;
        call.abort.abort();
        call.queue.push({ err: wireError(blsErrors.responsesTooLarge(req.model, calls.memoryBytes)) });
      } else {
        call.bytes += n;
        scope.heldBytes += n;
        call.queue.push(o);
        if (final) call.queue.push({ ok: null });
      }
    } else if ('err' in o || final) call.queue.push(o);
    give(scope, call);
  };
  const sender: ResponseSender = {
    send: (response: InferenceResponse | null, final: boolean) => push({ ok: response ? toWire(response) : null }, final),
    sendError: (error: TritonError, final: boolean) => push({ err: wireError(error) }, final),
  };
  scope.calls.set(handle, call);
  try {
    calls.server.infer(
      principal,
      req.model,
      req.version,
      {
        id: req.id,
        model: req.model,
        version: req.version,
        tenant: principal.namespace,
        inputs: req.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.data })),
        requestedOutputs: req.requestedOutputs,
        parameters: req.parameters,
        correlationId: 0,
        flags: 0,
        priority: 0,
        timeoutUs,
        blsChain: scope.chain,
        parentTrace: scope.requests.find((r) => r.trace !== undefined)?.trace,
      },
      sender,
      call.abort.signal,
    );
  } catch (e) {
    scope.calls.delete(handle);
    throw asTritonError(e);
  }
  watchCancellation(scope);
  return handle;
}

/** A host response as the guest receives it (the tensors' memory owners ride along, released when taken). */
function toWire(r: InferenceResponse): WireResponse {
  const outputs = r.outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.data, owner: t.owner }));
  return r.parameters ? { outputs, parameters: r.parameters } : { outputs };
}

/** While calls are in flight: once every request of the execute is cancelled, cancel them. */
function watchCancellation(scope: Scope): void {
  if (scope.cancelPoll) return;
  scope.cancelPoll = setInterval(() => {
    if (scope.calls.size === 0) {
      clearInterval(scope.cancelPoll);
      scope.cancelPoll = undefined;
      return;
    }
    if (scope.requests.length > 0 && scope.requests.every((r) => r.cancelled)) {
      for (const call of scope.calls.values()) call.abort.abort();
    }
  }, CANCEL_POLL_MS);
  scope.cancelPoll.unref();
}

/**
 * The next outcome of call `handle` (`inference.next`): given to `reply` now if one is queued,
 * else when it arrives. After the call's end (`ok: null`) or an error, the handle is gone.
 * Never throws: an unknown handle is an `err`.
 */
export function nextOutcome(state: InferenceState, handle: number, reply: (o: CallOutcome) => void): void {
  const scope = state.scope;
  const call = scope?.calls.get(handle);
  if (!scope || !call) {
    reply({ err: wireError(blsErrors.unknownCall(handle)) });
    return;
  }
  call.waiter = (o) => {
    if ('err' in o || o.ok === null) scope.calls.delete(handle);
    reply(o);
  };
  give(scope, call);
}

/**
 * Gives the oldest queued outcome of `call` to its waiting `next`, if both exist. The waiter copies
 * the tensors out (into the guest, or a message to the sandbox) before it returns; the memory
 * owners the data plane lent are released then.
 */
function give(scope: Scope, call: Call): void {
  const w = call.waiter;
  if (!w || call.queue.length === 0) return;
  call.waiter = undefined;
  const o = call.queue.shift()!;
  if ('ok' in o && o.ok) {
    const n = responseBytes(o.ok);
    call.bytes -= n;
    scope.heldBytes -= n;
  }
  w(o);
  if ('ok' in o && o.ok) releaseOutputs(o.ok);
}

/** Cancels call `handle` (`inference.cancel`); its handle is gone. Unknown handles are ignored. */
export function cancelCall(state: InferenceState, handle: number): void {
  const scope = state.scope;
  const call = scope?.calls.get(handle);
  if (!scope || !call) return;
  scope.calls.delete(handle);
  scope.heldBytes -= call.bytes;
  discard(call);
}

/**
 * `inference.infer`: a call to a non-decoupled callee and its one response, in one host call —
 * `reply` gets the response (or the error) when it arrives; the call is gone after it.
 * Never throws: a refused start is an `err` too.
 */
export function inferCall(state: InferenceState, req: CallRequest, reply: (o: CallOutcome) => void): void {
  let handle: number;
  try {
    handle = startCall(state, req, false);
  } catch (e) {
    const t = asTritonError(e);
    reply({ err: wireError(t) });
    return;
  }
  nextOutcome(state, handle, (o) => {
    // a response is followed by the call's end: nothing to wait for
    if ('ok' in o && o.ok !== null) cancelCall(state, handle);
    reply('ok' in o && o.ok === null ? { err: wireError(blsErrors.noResponse(req.model)) } : o);
  });
}
