/** `POST /v2/models/{m}[/versions/{v}]/infer` (spec §1.8–§1.13, §2). */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TritonError, internal, unsupported } from '../../contract/errors.js';
import { type InferenceTarget, inferAndCollect, releaseTensors } from '../../dataplane/inference.js';
import type { CancellationSignal, Principal } from '../../contract/types.js';
import { requestBody } from './body.js';
import type { FrontendContext } from './context.js';
import { decodeInferRequest } from './infer-request.js';
import { OFFLOAD_BYTES } from './codec/pool.js';
import { checkJsonOutputSize, renderInferResponse } from './infer-response.js';
import { DEFAULT_HTTP_LIMITS } from './limits.js';
import { type HttpAnswer, sendAnswer } from './routing.js';
import { traceContextFrom } from '../../trace/context.js';
import type { ShmAccess } from '../../dataplane/shared-memory.js';

/**
 * The data plane's `CancellationSignal` shape without an AbortController per request, fired by
 * `abort()` (a front-end thread's cancel message, threads/pool.ts; a closed connection, below).
 */
export class ManualSignal implements CancellationSignal {
  aborted = false;
  private listeners: (() => void)[] | undefined;
  /** Fires the listeners once; later calls do nothing. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const ls = this.listeners;
    this.listeners = undefined;
    if (ls) for (const l of ls) l();
  }
  addEventListener(_type: 'abort', listener: () => void): void {
    (this.listeners ??= []).push(listener);
  }
  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }
}

/**
 * Fires when the client goes away before the response was written: the response's 'close' without
 * a finished write (the request's 'close' fires as soon as its body has been read, so it cannot be
 * used).
 */
class ConnectionSignal extends ManualSignal {
  constructor(res: ServerResponse) {
    super();
    res.once('close', () => {
      if (!res.writableFinished) this.abort();
    });
  }
}

/** The cancellation signal of the connection `res` answers on (see {@link ConnectionSignal}). */
export function connectionSignal(res: ServerResponse): CancellationSignal {
  return new ConnectionSignal(res);
}

/** Parse the `Inference-Header-Content-Length` header (int32, 0 ≤ N). @throws TritonError INVALID_ARG otherwise */
export function headerLength(headers: IncomingHttpHeaders): number | undefined {
  const h = headers['inference-header-content-length'];
  if (h === undefined) return undefined;
  const n = Number(Array.isArray(h) ? h[0] : h);
  if (!Number.isInteger(n) || n < 0 || n > 0x7fffffff) {
    throw new TritonError('INVALID_ARG', `invalid Inference-Header-Content-Length '${String(h)}'`);
  }
  return n;
}

/**
 * The model version `/infer` runs, looked up before the body is read or inflated.
 * @param version the requested version, -1 for the model's policy
 * @throws TritonError NOT_FOUND / UNAVAILABLE as `ServerApi.inferenceTarget`; UNSUPPORTED for a
 *   decoupled model (HTTP `/infer` returns exactly one response)
 */
export function inferTarget(ctx: FrontendContext, principal: Principal, model: string, version: number): InferenceTarget {
  const target = ctx.api.inferenceTarget(principal, model, version);
  if (target.decoupled) throw unsupported("HTTP end point doesn't support models with decoupled transaction policy");
  return target;
}

/**
 * One `/infer` request after routing, {@link inferTarget} and body reading (spec §1.8–§1.13, §2): decode, infer, encode.
 * The one implementation behind Fastify's route ({@link handleInfer}) and the fast path (fast-path.ts).
 * @param body the request body, decompressed (at most `--http-max-input-size` bytes)
 * @param headers the request headers (`Inference-Header-Content-Length` is read)
 * @param signal fires when the client goes away (the request is cancelled)
 * @returns 200 with `application/json`, or `application/octet-stream` and
 *   `inference-header-content-length` when an output is binary
 * @throws TritonError as the data plane and the codec raise them (INVALID_ARG for a malformed body,
 *   NOT_FOUND for an unknown model, UNSUPPORTED for a decoupled model, ...); AccessError for quotas
 */
export async function inferAnswer(ctx: FrontendContext, principal: Principal, model: string, target: InferenceTarget, body: Buffer, headers: IncomingHttpHeaders, signal: CancellationSignal): Promise<HttpAnswer> {
  const shm = ctx.shm.access(principal);
  if (!shm) return inferWith(ctx, principal, model, target, body, headers, signal, undefined);
  try {
    return await inferWith(ctx, principal, model, target, body, headers, signal, shm);
  } finally {
    // The regions this request used stay registered until here (dataplane/shared-memory.ts).
    shm.release();
  }
}

async function inferWith(ctx: FrontendContext, principal: Principal, model: string, target: InferenceTarget, body: Buffer, headers: IncomingHttpHeaders, signal: CancellationSignal, shm: ShmAccess | undefined): Promise<HttpAnswer> {
  const hl = headerLength(headers);
  // A large JSON part is parsed on a codec worker (codec/pool.ts), not on the event loop. Not when
  // client shared memory is on for this caller: inputs read from regions need the server's access.
  const { init, formats } =
    !shm && (hl ?? body.length) >= OFFLOAD_BYTES
      ? await ctx.codec.decode(body, hl, model, target.version, target.config)
      : decodeInferRequest(body, hl, model, target.version, target.config, shm);
  init.traceContext = traceContextFrom((name) => headers[name]);
  const { version: served, responses } = await inferAndCollect(ctx.api, principal, model, target.version, init, signal);
  if (responses.length !== 1) throw internal(`expected a single response, got ${responses.length}`);
  const response = responses[0]!;
  const maxJson = ctx.limits.maxJsonOutputBytes ?? DEFAULT_HTTP_LIMITS.maxJsonOutputBytes;
  let enc;
  try {
    // Outputs the client placed in shared memory are written there (spec §3.3).
    for (const t of response.outputs) {
      const region = formats.shm?.get(t.name);
      if (region && shm) shm.write(region, t.data, t.name);
    }
    // Checked once here; the codec worker's encodeInferResponse checks again (it is its own entry point).
    enc =
      checkJsonOutputSize(model, response, formats, maxJson) >= OFFLOAD_BYTES
        ? await ctx.codec.encode(model, served, init.id, response, formats, maxJson)
        : renderInferResponse(model, served, init.id, response, formats);
  } finally {
    releaseTensors(response.outputs);
  }
  if (enc.headerLength !== undefined) {
    return { status: 200, headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(enc.headerLength) }, body: enc.body };
  }
  return { status: 200, headers: { 'content-type': 'application/json' }, body: enc.body };
}

/** Fastify's `POST /v2/models/{m}[/versions/{v}]/infer` route: {@link inferAnswer} on the parsed body. */
export async function handleInfer(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply, model: string, version: number): Promise<FastifyReply> {
  const principal = ctx.principalOf(req);
  const target = inferTarget(ctx, principal, model, version);
  const body = requestBody(req, ctx.maxInputSize);
  return sendAnswer(reply, await inferAnswer(ctx, principal, model, target, body, req.headers, connectionSignal(reply.raw)));
}
