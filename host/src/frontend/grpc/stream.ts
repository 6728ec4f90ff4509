/**
 * `ModelStreamInfer` (bidirectional): each `ModelInferRequest` read from the stream is decoded and
 * sent to the data plane; every response it produces is written as a `ModelStreamInferResponse`
 * (`infer_response`), errors as `error_message` — the way decoupled models stream over gRPC. For a
 * decoupled model each response carries `triton_final_response` (bool); a flags-only final is
 * written as an empty response only when the request asked with `triton_enable_empty_final_response`.
 * Errors are `error_message` responses, or — with `triton_grpc_error: true` in the stream's
 * metadata, as Triton — the stream's final gRPC status.
 * Requests still running when the client cancels or half-closes the stream are cancelled / awaited.
 * A non-decoupled request's response (or error) is written after those of every earlier request on
 * the stream, as Triton does (`InOrderWriter`); a decoupled model's responses as they come.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { AccessError, TritonError } from '../../contract/errors.js';
import { callPrincipal } from './auth.js';
import { redactAbsolutePaths } from '../../contract/public-errors.js';
import { releaseTensors } from '../../dataplane/inference.js';
import type { InferenceResponse, Principal, ResponseSender } from '../../contract/types.js';
import type { ShmAccess } from '../../dataplane/shared-memory.js';
import { decodeModelInferRequest, encodeModelInferResponse, parseModelVersion, stripReserved } from './infer.js';
import type { ModelInferRequest } from './proto.js';
import type { GrpcServiceContext } from './service.js';
import { callSignal } from './cancel.js';
import { toServiceError } from './status.js';
import { InOrderWriter, type InOrderPlace } from './in-order.js';
import { traceContextFrom } from '../../trace/context.js';

type Stream = ServerDuplexStream<ModelInferRequest, unknown>;

export function handleStreamInfer(ctx: GrpcServiceContext, call: Stream): void {
  const signal = callSignal(call);
  let pending = 0;
  let ended = false;
  const finishIfDone = () => {
    if (ended && pending === 0 && !call.destroyed && !call.writableEnded) call.end();
  };
  const write = (msg: unknown) => {
    if (!signal.aborted && !call.destroyed && !call.writableEnded) call.write(msg);
  };
  // `triton_grpc_error: true` metadata (Triton's opt-in): an error ends the stream with its gRPC
  // status instead of being written as an `error_message` response.
  const grpcErrors = call.metadata.get('triton_grpc_error')[0] === 'true';
  const endWithStatus = (pub: TritonError) => {
    // grpc-js ends a server stream with a status when 'error' is emitted on it.
    if (!call.destroyed && !call.writableEnded) {
      const status = toServiceError(pub);
      call.emit('error', Object.assign(new Error(status.message), status));
    }
  };
  const writeError = (e: unknown, id: string) => {
    const pub = ctx.api.publicError(e);
    if (grpcErrors) endWithStatus(pub);
    else write({ error_message: redactAbsolutePaths(pub.message), infer_response: { id } });
  };
  // --grpc-restricted-protocol (restricted.ts): a stream without the `inference` metadata is ended
  // at once with UNAVAILABLE, as Triton's stream_infer_handler.cc; in multi-tenant mode after its
  // credentials are checked, as every other call (no credentials: UNAUTHENTICATED).
  const refusal = ctx.restricted.refusal('ModelStreamInfer', call.metadata);
  if (refusal) {
    call.on('error', () => undefined);
    callPrincipal(ctx.admission, call).then(
      () => endWithStatus(refusal),
      (e: unknown) => endWithStatus(ctx.api.publicError(e)),
    );
    return;
  }
  // Every request on the stream is authenticated and counted against the tenant's request rate
  // on its own (a stream is no way around the rate, and a token revoked mid-stream stops working).
  // Over its rate, the request gets an error message; bad credentials end the stream with
  // UNAUTHENTICATED. Requests are handled in arrival order.
  let chain: Promise<unknown> = Promise.resolve();
  const order = new InOrderWriter();
  // the stream's metadata, and so the client's trace context, is the same for every request on it
  const traceContext = traceContextFrom((name) => call.metadata.get(name)[0]);
  // Each request counts as a call being handled until its final response (an open, idle stream
  // does not hold a graceful shutdown).
  call.on('data', (raw: ModelInferRequest) => {
    pending++;
    ctx.calls.begin();
    const place = order.reserve();
    const authorized = chain.then(() => callPrincipal(ctx.admission, call));
    chain = authorized.catch(() => undefined);
    authorized.then(
      (principal) => inferOne(principal, raw, place),
      (e: unknown) => {
        if (e instanceof AccessError && e.kind === 'unauthenticated') {
          endWithStatus(ctx.api.publicError(e));
        } else {
          place.write(() => writeError(e, raw.id ?? ''));
        }
        place.done();
        pending--;
        ctx.calls.end();
        finishIfDone();
      },
    );
  });
  call.on('end', () => {
    ended = true;
    finishIfDone();
  });
  call.on('error', () => undefined);
  // A cancelled call takes no more writes: close our side now.
  call.once('cancelled', () => {
    ended = true;
    if (!call.destroyed && !call.writableEnded) call.end();
  });

  function inferOne(principal: Principal, raw: ModelInferRequest, place: InOrderPlace): void {
    const id = raw.id ?? '';
    let done = false;
    // Until the model is known to be decoupled, this request's writes keep their place in order.
    let ordered = true;
    const emit = (write: () => void) => (ordered ? place.write(write) : write());
    let access: ShmAccess | undefined;
    const finish = () => {
      if (done) return;
      done = true;
      // The regions this request used stay registered until its last write (dataplane/shared-memory.ts).
      if (access) emit(() => access!.release());
      place.done();
      pending--;
      ctx.calls.end();
      finishIfDone();
    };
    try {
      const req = stripReserved(raw);
      const model = req.model_name ?? '';
      const target = ctx.api.inferenceTarget(principal, model, parseModelVersion(req.model_version));
      if (target.decoupled) {
        ordered = false;
        place.done();
      }
      access = ctx.shm.access(principal);
      const { init, shmOutputs } = decodeModelInferRequest(req, model, target.version, access, () => ctx.shm.disabledError());
      init.traceContext = traceContext;
      let version = target.version;
      const send = (response: InferenceResponse | null, final: boolean) => {
        const flag = target.decoupled ? final : undefined;
        if (response) {
          emit(() => {
            try {
              ctx.shm.writeOutputs(access, response, shmOutputs);
              write({ infer_response: encodeModelInferResponse(model, version, init.id, response, shmOutputs, flag) });
            } catch (e) {
              writeError(e, id);
            } finally {
              releaseTensors(response.outputs);
            }
          });
        } else if (final && target.decoupled && req.emptyFinal) {
          write({ infer_response: encodeModelInferResponse(model, version, init.id, null, undefined, true) });
        }
      };
      const sender: ResponseSender = {
        send(response, final) {
          send(response, final);
          if (final) finish();
        },
        sendError(error: TritonError, final) {
          emit(() => writeError(error, id));
          if (final) finish();
        },
      };
      version = ctx.api.infer(principal, model, target.version, init, sender, signal).version;
    } catch (e) {
      emit(() => writeError(e, id));
      finish();
    }
  }
}
