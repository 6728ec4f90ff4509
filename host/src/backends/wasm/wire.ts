/**
 * Requests, responses, tensors and errors as they cross the sandbox boundary, whatever the engine:
 * the host side of an engine builds {@link WireRequest}s, the host capabilities (./host/) and the
 * response checks (./convert.ts) produce {@link WireResponse}s and {@link WireError}s.
 * Tensors have the same shape as core `Tensor`s; byte buffers move without copies where the
 * sender owns them.
 */
import { TritonError, type ErrorCode } from '../../contract/errors.js';
import type { InferenceRequest, InferenceResponse, ParameterValue, ResponseSender, Tensor } from '../../contract/types.js';
import type { DataType } from '../../contract/datatypes.js';

/** A tensor on the wire (same shape as core `Tensor`). */
export interface WireTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
}

/** An error on the wire. */
export interface WireError {
  code: ErrorCode;
  message: string;
}

/** A response on the wire. */
export interface WireResponse {
  outputs: WireTensor[];
  parameters?: Record<string, ParameterValue>;
}

/** One request as the sandbox needs it. */
export interface WireRequest {
  /** The request's handle for `host.send-response` / `send-final` / `is-cancelled`. */
  handle: number;
  id: string;
  correlationId: number | bigint | string;
  flags: number;
  priority: number;
  timeoutUs: number;
  batchSize: number;
  inputs: WireTensor[];
  requestedOutputs: string[];
  parameters: Record<string, ParameterValue>;
}

/** Request handles of one instance: 1, 2, ... wrapping at 2^32 and skipping 0. */
export class WireHandles {
  private next = 1;

  /** `n` fresh handles. */
  take(n: number): number[] {
    const handles: number[] = [];
    for (let i = 0; i < n; i++) {
      handles.push(this.next);
      this.next = (this.next + 1) >>> 0 || 1;
    }
    return handles;
  }
}

/** `requests` on the wire under `handles`; `input` gives each input tensor's wire form (default: as it is). */
export function toWireRequests(
  requests: readonly InferenceRequest[],
  handles: readonly number[],
  input: (t: Tensor) => WireTensor = (t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.data }),
): WireRequest[] {
  return requests.map((r, i) => ({
    handle: handles[i]!,
    id: r.id,
    correlationId: r.correlationId,
    flags: r.flags,
    priority: r.priority,
    timeoutUs: r.timeoutUs,
    batchSize: r.batchSize,
    inputs: r.inputs.map(input),
    requestedOutputs: r.requestedOutputs,
    parameters: r.parameters,
  }));
}

/** Expected output of the model config, for response checks in the sandbox. */
export interface OutputSpec {
  name: string;
  datatype: DataType;
  /** Dims the backend produces (config `reshape.shape` if set, else `dims`), without batch dim. */
  dims: number[];
}

/** Outcome of one request as returned by `execute` (null: it already had its final response). */
export type WireResult = { ok: WireResponse } | { err: WireError } | null;

/** A wire response as the host's response (no copy: the buffers were transferred or came from native). */
export function fromWireResponse(r: WireResponse): InferenceResponse {
  return r.parameters ? { outputs: r.outputs, parameters: r.parameters } : { outputs: r.outputs };
}

/** The requests of one execute in flight in a sandbox, as either engine tracks them. */
export interface WireExecute {
  /** The requests' wire handles, in request order. */
  handles: number[];
  senders: ResponseSender[];
  /** Whether each request has had its final response (later ones are dropped). */
  finals: boolean[];
}

/**
 * A response (or error) the sandbox sent for `handle` during an execute (`host.send-response`
 * / `send-final`), delivered to that request's sender.
 * @returns the request's index, or -1 when the handle is not one of the execute's or its request had its final response
 */
export function deliverSend(p: WireExecute, s: { handle: number; final: boolean; response?: WireResponse; error?: WireError }): number {
  const i = p.handles.indexOf(s.handle);
  if (i < 0 || p.finals[i]) return -1;
  if (s.final) p.finals[i] = true;
  const sender = p.senders[i]!;
  if (s.error) sender.sendError(new TritonError(s.error.code, s.error.message), s.final);
  else sender.send(s.response ? fromWireResponse(s.response) : null, s.final);
  return i;
}

/** What `execute` returned: the final response of each request that has not had one yet. */
export function deliverResults(p: WireExecute, results: readonly WireResult[]): void {
  results.forEach((r, i) => {
    if (p.finals[i]) return;
    p.finals[i] = true;
    if (r === null) p.senders[i]!.send(null, true);
    else if ('ok' in r) p.senders[i]!.send(fromWireResponse(r.ok), true);
    else p.senders[i]!.sendError(new TritonError(r.err.code, r.err.message), true);
  });
}
