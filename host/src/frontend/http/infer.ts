/** `POST /v2/models/{m}[/versions/{v}]/infer` (spec §1.8–§1.13, §2). */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TritonError, internal, unsupported } from '../../core/errors.js';
import type { InferenceRequest, InferenceResponse, ResponseSender } from '../../core/types.js';
import type { InferenceRequestInit } from '../../core/validate.js';
import type { ModelVersion } from '../../core/model.js';
import { requestBody } from './body.js';
import type { FrontendContext } from './context.js';
import { decodeInferRequest } from './infer-request.js';
import { encodeInferResponse } from './infer-response.js';

/**
 * Submit a request and gather every response until the final one. Marks the request cancelled if
 * the client disconnects first.
 * @throws TritonError from validation (synchronously, as a rejected promise) or from the backend.
 */
export function submitAndCollect(
  reply: FastifyReply,
  mv: ModelVersion,
  init: InferenceRequestInit,
  onResponse?: (r: InferenceResponse) => void,
): Promise<InferenceResponse[]> {
  return new Promise((resolve, reject) => {
    const responses: InferenceResponse[] = [];
    let finished = false;
    let error: TritonError | undefined;
    const sender: ResponseSender = {
      send(response, final) {
        if (response) {
          responses.push(response);
          onResponse?.(response);
        }
        if (final) {
          finished = true;
          if (error) reject(error);
          else resolve(responses);
        }
      },
      sendError(e, final) {
        error ??= e;
        if (final) {
          finished = true;
          reject(error);
        }
      },
    };
    let request: InferenceRequest;
    try {
      request = mv.submit(init, sender);
    } catch (e) {
      reject(e);
      return;
    }
    // The response's 'close' means the client went away before we answered (the request's
    // 'close' fires as soon as its body has been read, so it cannot be used).
    reply.raw.once('close', () => {
      if (!finished) request.cancelled = true;
    });
  });
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
  const mv = ctx.manager.getVersion(model, version);
  if (mv.decoupled) throw unsupported("HTTP end point doesn't support models with decoupled transaction policy");
  const body = requestBody(req, ctx.maxInputSize);
  const { init, formats } = decodeInferRequest(body, headerLength(req), model, version, mv.config);
  const responses = await submitAndCollect(reply, mv, init);
  if (responses.length !== 1) throw internal(`expected a single response, got ${responses.length}`);
  const enc = encodeInferResponse(model, mv.version, init.id, responses[0]!, formats);
  if (enc.headerLength !== undefined) {
    return reply
      .code(200)
      .header('Content-Type', 'application/octet-stream')
      .header('Inference-Header-Content-Length', String(enc.headerLength))
      .send(enc.body);
  }
  return reply.code(200).type('application/json').send(enc.body);
}
