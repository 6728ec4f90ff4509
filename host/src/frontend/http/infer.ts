/** `POST /v2/models/{m}[/versions/{v}]/infer` (spec §1.8–§1.13, §2). */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TritonError, internal, unsupported } from '../../core/errors.js';
import { inferAndCollect, releaseTensors } from '../../core/server-api.js';
import type { CancellationSignal } from '../../core/types.js';
import { requestBody } from './body.js';
import type { FrontendContext } from './context.js';
import { decodeInferRequest } from './infer-request.js';
import { encodeInferResponse } from './infer-response.js';

/**
 * A cancellation signal that fires when the client goes away before the response was written: the
 * response's 'close' without a finished write (the request's 'close' fires as soon as its body
 * has been read, so it cannot be used). The data plane's `CancellationSignal` shape without an
 * AbortController per request.
 */
class ConnectionSignal implements CancellationSignal {
  aborted = false;
  private listeners: (() => void)[] | undefined;
  constructor(reply: FastifyReply) {
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished) return;
      this.aborted = true;
      const ls = this.listeners;
      this.listeners = undefined;
      if (ls) for (const l of ls) l();
    });
  }
  addEventListener(_type: 'abort', listener: () => void): void {
    (this.listeners ??= []).push(listener);
  }
  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }
}

/** The cancellation signal of `reply`'s connection (see {@link ConnectionSignal}). */
export function connectionSignal(reply: FastifyReply): CancellationSignal {
  return new ConnectionSignal(reply);
}

/** Parse the `Inference-Header-Content-Length` header (int32, 0 ≤ N). */
export function headerLength(req: FastifyRequest): number | undefined {
  const h = req.headers['inference-header-content-length'];
  if (h === undefined) return undefined;
  const n = Number(Array.isArray(h) ? h[0] : h);
  if (!Number.isInteger(n) || n < 0 || n > 0x7fffffff) {
    throw new TritonError('INVALID_ARG', `invalid Inference-Header-Content-Length '${String(h)}'`);
  }
  return n;
}

export async function handleInfer(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply, model: string, version: number): Promise<FastifyReply> {
  const principal = ctx.principalOf(req);
  const target = ctx.api.inferenceTarget(principal, model, version);
  if (target.decoupled) throw unsupported("HTTP end point doesn't support models with decoupled transaction policy");
  const body = requestBody(req, ctx.maxInputSize);
  const { init, formats } = decodeInferRequest(body, headerLength(req), model, target.version, target.config);
  const { version: served, responses } = await inferAndCollect(ctx.api, principal, model, target.version, init, connectionSignal(reply));
  if (responses.length !== 1) throw internal(`expected a single response, got ${responses.length}`);
  let enc;
  try {
    enc = encodeInferResponse(model, served, init.id, responses[0]!, formats, ctx.limits.maxJsonOutputBytes);
  } finally {
    releaseTensors(responses[0]!.outputs);
  }
  if (enc.headerLength !== undefined) {
    return reply
      .code(200)
      .header('Content-Type', 'application/octet-stream')
      .header('Inference-Header-Content-Length', String(enc.headerLength))
      .send(enc.body);
  }
  return reply.code(200).type('application/json').send(enc.body);
}
