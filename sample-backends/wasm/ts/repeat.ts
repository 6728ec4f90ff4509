/**
 * repeat (decoupled): for a request with IN (INT32 [n]), DELAY (UINT32 [n], ms) and WAIT
 * (UINT32 [1], ms), sends n responses — the i-th after waiting DELAY[i] ms, carrying
 * OUT = IN[i] (INT32 [1]) and IDX = i (UINT32 [1]) — then the final flag: the semantics of
 * Triton's repeat example. A sandboxed guest has no threads, so the responses are produced while
 * `execute` runs (each reaches the client as soon as it is sent) and `execute` returns after
 * max(WAIT, sum of DELAY) ms. Stops early if the client cancels. Served as `repeat_wasm`
 * (`model_transaction_policy { decoupled: true }`).
 */
import { isCancelled, log, sendFinal, sendResponse } from 'warden:backend/host@0.1.1';
import { now, subscribeDuration } from 'wasi:clocks/monotonic-clock@0.2.12';
import type { InstanceContext, ModelContext } from 'warden:backend/backend@0.1.1';
import type { Request, Tensor } from 'warden:backend/types@0.1.1';
import { bytesOf, input, parseConfig, view, witError } from './guest.js';

function sleepMs(ms: number): void {
  if (ms > 0) subscribeDuration(BigInt(ms) * 1_000_000n).block();
}

class Model {
  static create(ctx: ModelContext): Model {
    const config = parseConfig(ctx.config);
    if (config.model_transaction_policy?.decoupled !== true) {
      throw witError(
        'invalid-arg',
        `the model '${ctx.name}' can generate any number of responses per request, enable decoupled transaction policy in model configuration to serve this model`,
      );
    }
    return new Model();
  }
}

class Instance {
  static create(_model: Model, _ctx: InstanceContext): Instance {
    return new Instance();
  }

  private run(req: Request): void {
    const values = view(Int32Array, input(req, 'IN', 'int32').data);
    const delays = view(Uint32Array, input(req, 'DELAY', 'uint32').data);
    const wait = view(Uint32Array, input(req, 'WAIT', 'uint32').data);
    if (delays.length !== values.length) throw witError('invalid-arg', `DELAY has ${delays.length} elements, IN has ${values.length}`);
    if (wait.length !== 1) throw witError('invalid-arg', `WAIT must have exactly one element, got ${wait.length}`);
    const start = now();
    for (let i = 0; i < values.length; i++) {
      sleepMs(delays[i]!);
      if (isCancelled(req.handle)) {
        log('info', `request '${req.id}' cancelled after ${i} responses`);
        break;
      }
      sendResponse(
        req.handle,
        {
          tag: 'ok',
          val: {
            outputs: (
              [
                { name: 'OUT', datatype: 'int32', shape: BigInt64Array.of(1n), data: bytesOf(Int32Array.of(values[i]!)) },
                { name: 'IDX', datatype: 'uint32', shape: BigInt64Array.of(1n), data: bytesOf(Uint32Array.of(i)) },
              ] satisfies Tensor[]
            ).filter((t) => req.requestedOutputs.includes(t.name)),
            parameters: [],
          },
        },
        false,
      );
    }
    const elapsedMs = Number((now() - start) / 1_000_000n);
    sleepMs(wait[0]! - elapsedMs);
  }

  execute(requests: Request[]) {
    for (const req of requests) {
      try {
        this.run(req);
        sendFinal(req.handle);
      } catch (e) {
        const err = e as { code?: unknown; message?: unknown };
        if (typeof err?.code !== 'string' || typeof err.message !== 'string') throw e;
        sendResponse(req.handle, { tag: 'err', val: { code: err.code as 'invalid-arg', message: err.message } }, true);
      }
    }
    return [];
  }
}

export const backend = { Model, Instance };
