/** `POST /v2/models/{m}[/versions/{v}]/infer` (spec §1.8–§1.13, §2). */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { inferUnary } from '../../dataplane/inference.js';
import type { CancellationSignal, Principal } from '../../contract/types.js';
import { ManualSignal } from '../cancellation.js';
import { requestBody } from './body.js';
import type { FrontendContext } from './context.js';
import { type DecodedInferRequest, decodeInferRequest } from './infer-request.js';
import { OFFLOAD_BYTES } from './codec/pool.js';
import { checkJsonOutputSize, renderInferResponse } from './infer-response.js';
import { DEFAULT_HTTP_LIMITS } from './limits.js';
import { type HttpAnswer, sendAnswer } from './routing.js';
import { traceContextFrom } from '../../trace/context.js';
import * as httpErrors from './http.errors.js';

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
    throw httpErrors.headerLengthInvalid(String(h));
  }
  return n;
}

/** The 200 answer of an encoded response: JSON, or binary with its JSON header's length. */
function okAnswer(enc: { body: string | Buffer; headerLength?: number }): HttpAnswer {
  if (enc.headerLength !== undefined) {
    return {
      status: 200,
      headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(enc.headerLength) },
      body: enc.body,
    };
  }
  return { status: 200, headers: { 'content-type': 'application/json' }, body: enc.body };
}

/** `/infer` answers a decoupled model with this (Triton's HTTP frontend: exactly one response). */
const decoupledRefused = httpErrors.inferDecoupled;

/**
 * One `/infer` request after routing (spec §1.8–§1.13, §2): the data plane's unary call
 * (inferUnary: the target, then the body decoded with its config, one response, its tensors
 * released on every path) with this frontend's decode and encode. The one implementation behind
 * Fastify's route ({@link handleInfer}) and the fast path (fast-path.ts).
 * @param version the requested version, -1 for the model's policy
 * @param body the request body, decompressed (at most `--http-max-input-size` bytes); read once
 *   the target is known, so an unknown or decoupled model is refused before a body is inflated
 * @param headers the request headers (`Inference-Header-Content-Length` is read)
 * @param signal fires when the client goes away (the request is cancelled)
 * @returns 200 with `application/json`, or `application/octet-stream` and
 *   `inference-header-content-length` when an output is binary
 * @throws TritonError as the data plane and the codec raise them (NOT_FOUND for an unknown model,
 *   UNSUPPORTED for a decoupled model, INVALID_ARG for a malformed body, ...); AccessError for quotas
 */
export async function inferAnswer(
  ctx: FrontendContext,
  principal: Principal,
  model: string,
  version: number,
  body: () => Buffer,
  headers: IncomingHttpHeaders,
  signal: CancellationSignal,
): Promise<HttpAnswer> {
  const shm = ctx.shm.access(principal);
  try {
    return await inferUnary<DecodedInferRequest, HttpAnswer>(
      ctx.api,
      principal,
      model,
      version,
      {
        decoupled: decoupledRefused,
        request: (target) => {
          const bytes = body();
          const hl = headerLength(headers);
          // A large JSON part is parsed on a codec worker (codec/pool.ts), not on the event loop. Not when
          // client shared memory is on for this caller: inputs read from regions need the server's access.
          const decoded =
            !shm && (hl ?? bytes.length) >= OFFLOAD_BYTES
              ? ctx.codec.decode(bytes, hl, model, target.version, target.config)
              : decodeInferRequest(bytes, hl, model, target.version, target.config, shm);
          const withTrace = (d: Awaited<typeof decoded>) => {
            d.init.traceContext = traceContextFrom((name) => headers[name]);
            return d;
          };
          return decoded instanceof Promise ? decoded.then(withTrace) : withTrace(decoded);
        },
        answer: (response, served, { init, formats }) => {
          const maxJson = ctx.limits.maxJsonOutputBytes ?? DEFAULT_HTTP_LIMITS.maxJsonOutputBytes;
          // Outputs the client placed in shared memory are written there (spec §3.3).
          for (const t of response.outputs) {
            const region = formats.shm?.get(t.name);
            if (region && shm) shm.write(region, t.data, t.name);
          }
          // Checked once here; the codec worker's encodeInferResponse checks again (it is its own entry point).
          if (checkJsonOutputSize(model, response, formats, maxJson) >= OFFLOAD_BYTES)
            return ctx.codec.encode(model, served, init.id, response, formats, maxJson).then(okAnswer);
          return okAnswer(renderInferResponse(model, served, init.id, response, formats));
        },
      },
      signal,
    );
  } finally {
    // The regions this request used stay registered until here (dataplane/shared-memory.ts).
    shm?.release();
  }
}

/** Fastify's `POST /v2/models/{m}[/versions/{v}]/infer` route: {@link inferAnswer} on the parsed body. */
export async function handleInfer(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply, model: string, version: number): Promise<FastifyReply> {
  const principal = ctx.principalOf(req);
  return sendAnswer(
    reply,
    await inferAnswer(ctx, principal, model, version, () => requestBody(req, ctx.maxInputSize), req.headers, connectionSignal(reply.raw)),
  );
}
