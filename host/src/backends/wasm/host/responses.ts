/**
 * Host capability `warden:backend/host.{send-response,send-final,is-cancelled}` (spec §6.8), and
 * the bookkeeping of the requests in flight during one `execute` that those functions act on:
 * {@link beginExecute} registers them, {@link finishExecute} turns what `execute` returned into one
 * result per request (nothing for a request that already got its final response).
 *
 * Every response leaving the sandbox is checked against the model configuration (../convert.ts).
 * After a request's final response, anything more for it is refused (`invalid-arg`) and never
 * reaches the host.
 */
import { fromWitError, fromWitResponse, ResponseCheckError, type ResponseCheckContext } from '../convert.js';
import type { OutputSpec, WireError, WireRequest, WireResponse, WireResult } from '../wire.js';
import type * as WitHost from '../wit-types/interfaces/warden-backend-host.js';
import type * as WitTypes from '../wit-types/interfaces/warden-backend-types.js';
import { witErr } from './errors.js';

/** One response (or error, or flags-only final) for the request with `handle`, sent during execute. */
export interface ResponseSend {
  handle: number;
  response?: WireResponse;
  error?: WireError;
  final: boolean;
}

/** A request of the current execute. */
interface InFlight {
  request: WireRequest;
  /** Position in the batch. */
  index: number;
  final: boolean;
  check: ResponseCheckContext;
}

/** Per-instance state of the responses capability. */
export interface ResponsesState {
  readonly model: { name: string; decoupled: boolean; maxBatchSize: number };
  readonly outputs: Map<string, OutputSpec>;
  /** Delivers a response sent during execute to the host, at once. */
  readonly emit: (send: ResponseSend) => void;
  /** Whether the request at this batch position was cancelled by its client. */
  readonly cancelledAt: (index: number) => boolean;
  /** Requests of the execute in progress, by handle (empty between executes). */
  inFlight: Map<number, InFlight>;
}

/**
 * Responses state of one instance.
 * @param model the model's name (for messages), decoupled flag and max_batch_size
 * @param outputs the config outputs responses are checked against
 */
export function createResponsesState(
  model: { name: string; decoupled: boolean; maxBatchSize: number },
  outputs: OutputSpec[],
  emit: (send: ResponseSend) => void,
  cancelledAt: (index: number) => boolean,
): ResponsesState {
  return { model, outputs: new Map(outputs.map((o) => [o.name, o])), emit, cancelledAt, inFlight: new Map() };
}

/** Registers the requests of an execute (replacing any left from the previous one). */
export function beginExecute(state: ResponsesState, requests: WireRequest[]): void {
  state.inFlight = new Map();
  requests.forEach((request, index) => {
    state.inFlight.set(request.handle, {
      request,
      index,
      final: false,
      check: { outputs: state.outputs, maxBatchSize: state.model.maxBatchSize, batchSize: request.batchSize, requestedOutputs: request.requestedOutputs },
    });
  });
}

function lookup(state: ResponsesState, handle: number): InFlight {
  const f = state.inFlight.get(handle);
  if (!f) throw witErr('not-found', `request handle ${handle} is not an in-flight request of this instance`);
  if (f.final) throw witErr('invalid-arg', `request handle ${handle} already got its final response`);
  return f;
}

/**
 * `send-response(request, response, final)`.
 * @throws HostCallError `not-found` for a handle not in flight, `invalid-arg` after the final
 *   response or for a response that fails the checks, `unsupported` for a non-final response of
 *   a model that is not decoupled
 */
export function sendResponse(state: ResponsesState, handle: number, response: WitHost.Result<WitTypes.Response, WitTypes.Error>, final: boolean): void {
  const f = lookup(state, handle);
  if (!state.model.decoupled && !final) {
    throw witErr('unsupported', `model '${state.model.name}' is not decoupled: it may send only one response per request, and it must be final`);
  }
  if (response.tag === 'err') {
    f.final ||= final;
    state.emit({ handle, error: fromWitError(response.val), final });
    return;
  }
  let wire: WireResponse;
  try {
    wire = fromWitResponse(response.val, f.check);
  } catch (e) {
    if (e instanceof ResponseCheckError) throw witErr('invalid-arg', e.message);
    throw e;
  }
  f.final ||= final;
  state.emit({ handle, response: wire, final });
}

/**
 * `send-final(request)`: the flags-only final.
 * @throws HostCallError as {@link sendResponse}
 */
export function sendFinal(state: ResponsesState, handle: number): void {
  const f = lookup(state, handle);
  f.final = true;
  state.emit({ handle, final: true });
}

/** `is-cancelled(request)`: false for a handle that is not in flight. */
export function isCancelled(state: ResponsesState, handle: number): boolean {
  const f = state.inFlight.get(handle);
  return f !== undefined && state.cancelledAt(f.index);
}

/**
 * Ends an execute: one result per request of the batch, in order, from what the guest's
 * `execute` returned — null for a request that already got its final response (or, decoupled,
 * that the guest left to the host's flags-only final), an INTERNAL error for a missing entry of a
 * non-decoupled model or a response that fails the checks. Clears the in-flight requests.
 * @throws whatever a response check throws that is not a ResponseCheckError (a host bug)
 */
export function finishExecute(state: ResponsesState, requests: WireRequest[], returned: unknown): WireResult[] {
  const list = Array.isArray(returned) ? (returned as WitHost.Result<WitTypes.Response, WitTypes.Error>[]) : undefined;
  const name = state.model.name;
  const results = requests.map((req, i): WireResult => {
    const f = state.inFlight.get(req.handle)!;
    const entry = list?.[i];
    if (f.final) return null;
    if (entry === undefined) {
      return state.model.decoupled
        ? null
        : { err: { code: 'INTERNAL', message: `backend of model '${name}' returned ${list ? list.length : 0} responses for ${requests.length} requests` } };
    }
    if (entry.tag === 'err') return { err: fromWitError(entry.val) };
    try {
      return { ok: fromWitResponse(entry.val, f.check) };
    } catch (e) {
      if (!(e instanceof ResponseCheckError)) throw e;
      return { err: { code: 'INTERNAL', message: `backend of model '${name}' produced an invalid response: ${e.message}` } };
    }
  });
  state.inFlight = new Map();
  return results;
}
