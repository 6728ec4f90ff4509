/**
 * An in-process JavaScript backend for protocol and scheduler tests (`backend: "jstest"`):
 * - `mode: "repeat"` (decoupled): for each element of INT32 input IN, one response with OUT = that
 *   element and IDX = its index, then a flags-only final;
 * - `mode: "echo"`: OUTPUT0 = INPUT0 (any datatype), recording every batch it executes;
 * - `mode: "params"`: as echo, and the response's parameters are the request's parameters;
 * - `mode: "response_params"`: as echo, and each request parameter `response_<name>` becomes the
 *   response parameter `<name>` with its value and type (e.g. `response_sequence_id`, which an
 *   ensemble step's response uses to set the sequence of the steps downstream);
 * - `mode: "accumulate"` (a sequence model with an implicit state ACC_IN / ACC_OUT): OUTPUT0 =
 *   ACC_OUT = ACC_IN + INPUT0 (INT32), so each response shows the sequence's running sum;
 * - `mode: "corrid_sum"` (a sequence model): keeps a running sum of INPUT0 (INT32) per
 *   correlation id itself, as an operator backend may: parameter `key_by` picks the id, `request`
 *   (default; the request's correlation id, `TRITONBACKEND_RequestCorrelationId`'s) or `control`
 *   (its CONTROL_SEQUENCE_CORRID input, tensor `CORRID`); START resets the sum. OUTPUT0 = the sum.
 *   Every request it runs is recorded in {@link correlationIdsSeen};
 * - `delay_ms` parameter: sleep before answering (to hold requests in flight);
 * - `delay_from_input: "true"` parameter: sleep as many ms as the first request's first INT32 input
 *   element (to finish requests out of order on several instances).
 */
import { REQUEST_FLAG_SEQUENCE_START } from '../../host/src/contract/types.js';
import type {
  Backend,
  BackendModel,
  BackendModelInstance,
  BackendResolveRequest,
  BackendResolver,
  InferenceRequest,
  ModelLoadContext,
  ResponseSender,
} from '../../host/src/contract/types.js';
import { sleep } from './wait.js';

export const executed: { model: string; batchSizes: number[] }[] = [];

/** What a `corrid_sum` model was given: its request's tenant, correlation id and CORRID control value. */
export const correlationIdsSeen: { model: string; tenant: string; correlationId: number | bigint | string; corrid: string | undefined }[] = [];

/** The first element of a CORRID control tensor, as a string (BYTES: the string; integers: decimal). */
function corridValue(t: { datatype: string; data: Uint8Array } | undefined): string | undefined {
  if (!t) return undefined;
  const dv = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  switch (t.datatype) {
    case 'BYTES':
      return new TextDecoder().decode(t.data.subarray(4, 4 + dv.getUint32(0, true)));
    case 'UINT64':
      return dv.getBigUint64(0, true).toString();
    case 'INT64':
      return dv.getBigInt64(0, true).toString();
    case 'UINT32':
      return String(dv.getUint32(0, true));
    case 'INT32':
      return String(dv.getInt32(0, true));
    default:
      throw new Error(`no CORRID decoder for ${t.datatype}`);
  }
}

/** The INT32 elements of tensor data (a copy: a Buffer's `slice()` is a view of its pool slab). */
function int32s(data: Uint8Array): Int32Array {
  return new Int32Array(new Uint8Array(data).buffer);
}

function int32(x: number): Uint8Array {
  return new Uint8Array(Int32Array.of(x).buffer);
}

class JsBackend implements Backend {
  readonly name = 'jstest';
  async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
    const mode = ctx.config.parameters.mode?.string_value ?? 'echo';
    const delay = Number(ctx.config.parameters.delay_ms?.string_value ?? '0');
    const delayFromInput = ctx.config.parameters.delay_from_input?.string_value === 'true';
    const keyByControl = ctx.config.parameters.key_by?.string_value === 'control';
    /** `corrid_sum`: running sum per correlation id, shared by the model's instances. */
    const sums = new Map<string, number>();
    return {
      async createInstance() {
        return {
          async execute(requests: InferenceRequest[], senders: ResponseSender[]) {
            executed.push({ model: ctx.name, batchSizes: requests.map((r) => r.batchSize) });
            const wait = delayFromInput ? int32s(requests[0]!.inputs[0]!.data)[0]! : delay;
            if (wait) await sleep(wait);
            requests.forEach((r, i) => {
              const s = senders[i]!;
              if (mode === 'repeat') {
                const input = r.inputs.find((t) => t.name === 'IN')!;
                const values = int32s(input.data);
                values.forEach((v, k) =>
                  s.send(
                    {
                      outputs: [
                        { name: 'OUT', datatype: 'INT32', shape: [1], data: int32(v) },
                        { name: 'IDX', datatype: 'UINT32', shape: [1], data: new Uint8Array(Uint32Array.of(k).buffer) },
                      ],
                    },
                    false,
                  ),
                );
                s.send(null, true);
              } else if (mode === 'accumulate') {
                const input = r.inputs.find((t) => t.name === 'INPUT0')!;
                const sum = int32s(input.data)[0]! + int32s(r.inputs.find((t) => t.name === 'ACC_IN')!.data)[0]!;
                s.send(
                  {
                    outputs: [
                      { name: 'OUTPUT0', datatype: 'INT32', shape: input.shape.slice(), data: int32(sum) },
                      { name: 'ACC_OUT', datatype: 'INT32', shape: input.shape.slice(), data: int32(sum) },
                    ],
                  },
                  true,
                );
              } else if (mode === 'corrid_sum') {
                const input = r.inputs.find((t) => t.name === 'INPUT0')!;
                const corrid = corridValue(r.inputs.find((t) => t.name === 'CORRID'));
                correlationIdsSeen.push({ model: ctx.name, tenant: r.tenant, correlationId: r.correlationId, corrid });
                const key = keyByControl ? String(corrid) : `${typeof r.correlationId === 'string' ? 's' : 'n'}:${String(r.correlationId)}`;
                const sum = ((r.flags & REQUEST_FLAG_SEQUENCE_START) !== 0 ? 0 : (sums.get(key) ?? 0)) + int32s(input.data)[0]!;
                sums.set(key, sum);
                s.send({ outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: input.shape.slice(), data: int32(sum) }] }, true);
              } else if (mode === 'bad') {
                s.send({ outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1000], data: new Uint8Array(16) }] }, true);
              } else {
                const t = r.inputs[0]!;
                const parameters =
                  mode === 'params'
                    ? r.parameters
                    : mode === 'response_params'
                      ? Object.fromEntries(
                          Object.entries(r.parameters)
                            .filter(([k]) => k.startsWith('response_'))
                            .map(([k, v]) => [k.slice('response_'.length), v]),
                        )
                      : { echoed: true };
                s.send({ outputs: [{ ...t, name: 'OUTPUT0' }], parameters }, true);
              }
            });
          },
          async finalize() {},
        };
      },
      async finalize() {},
    };
  }
  async finalize() {}
}

export class JsBackendResolver implements BackendResolver {
  private readonly backend = new JsBackend();
  async resolve({ config }: BackendResolveRequest) {
    return config.backend === 'jstest' ? this.backend : undefined;
  }
  async finalizeAll() {}
}

/** Resolves `backend: "<backend.name>"` to `backend` and any other model to none (the next resolver's). */
export function resolverOf(backend: Backend): BackendResolver {
  return {
    resolve: async ({ config }) => (config.backend === backend.name ? backend : undefined),
    finalizeAll: async () => undefined,
  };
}

/**
 * A backend `name` for a test that needs one behaviour: every instance of its models runs
 * `execute`; `load`, when given, runs first at each model load (what it throws fails the load).
 */
export function executeBackend(name: string, execute: BackendModelInstance['execute'], load?: (ctx: ModelLoadContext) => void): Backend {
  return {
    name,
    async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
      load?.(ctx);
      return {
        createInstance: async () => ({ execute, finalize: async () => undefined }),
        finalize: async () => undefined,
      };
    },
    finalize: async () => undefined,
  };
}

export const REPEAT_CONFIG = `
backend: "jstest"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]
parameters { key: "mode" value: { string_value: "repeat" } }
`;

/**
 * A sequence model `name` of `backend` (the `jstest` backend by default): INT32 INPUT0 and OUTPUT0
 * of dims [ 1 ], max_batch_size 4, `sequenceBatching` the body of its `sequence_batching`
 * (strategy, controls, state), and one string parameter per entry of `parameters` (the backend's
 * `mode`, …).
 */
export const sequenceConfig = (name: string, sequenceBatching: string, parameters: Record<string, string>, backend = 'jstest') => `
name: "${name}"
backend: "${backend}"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
${sequenceBatching}
}
${Object.entries(parameters)
  .map(([key, value]) => `parameters { key: "${key}" value: { string_value: "${value}" } }`)
  .join('\n')}
`;

export const echoConfig = (extra = '', maxBatch = 8) => `
backend: "jstest"
max_batch_size: ${maxBatch}
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]
${extra}
`;
