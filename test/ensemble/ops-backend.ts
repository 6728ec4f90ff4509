/**
 * `backend: "ops"`, a small in-process test backend for ensemble tests. INT32 vectors; parameter
 * `op`: `inc` (OUT = IN + 1), `double` (OUT = 2 IN), `add` (OUT = A + B), `fail` (error INTERNAL
 * "step failed on purpose"), `split` (decoupled: one response OUT = [x] per element of IN);
 * `acc` (a sequence model: OUT = the running sum of IN over the requests of the correlation ID
 * it is given, as an operator backend may keep state, restarted by the START control input, in
 * IN's shape); `delay_ms` holds the instance for that long on the resolver's clock (a test passes a
 * ManualClock and moves time by hand). Records each execution's interval (ms on that clock) and
 * whether the request was cancelled by the end of the delay; the requests held in a delay are in
 * `opsSeen.held` meanwhile.
 */
import { TritonError } from '../../host/src/contract/errors.js';
import type {
  Backend,
  BackendModel,
  BackendResolveRequest,
  BackendResolver,
  InferenceRequest,
  ModelLoadContext,
  ResponseSender,
  Tensor,
} from '../../host/src/contract/types.js';
import { SYSTEM_CLOCK, type Clock } from '../../host/src/scheduler/clock.js';

export const opsSeen = {
  runs: [] as { model: string; start: number; end: number; cancelled: boolean }[],
  /** The requests of the executions now in their `delay_ms`. */
  held: new Set<InferenceRequest>(),
};

/** A copy of the tensor's values (`new Uint8Array(data)` copies exactly; a Buffer's `slice` would be a view of its pool). */
const ints = (t: Tensor): Int32Array => new Int32Array(new Uint8Array(t.data).buffer);
const tensor = (name: string, values: ArrayLike<number>): Tensor => ({
  name,
  datatype: 'INT32',
  shape: [values.length],
  data: new Uint8Array(Int32Array.from(values).buffer),
});

class OpsBackend implements Backend {
  readonly name = 'ops';
  constructor(private readonly clock: Clock) {}
  async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
    const p = (k: string) => ctx.config.parameters[k]?.string_value;
    const op = p('op') ?? 'inc';
    const delay = Number(p('delay_ms') ?? '0');
    /** `acc`: running sums per (tenant, correlation ID). */
    const sums = new Map<string, Int32Array>();
    const clock = this.clock;
    const ms = () => Number(clock.now()) / 1e6;
    return {
      async createInstance() {
        return {
          async execute(requests: InferenceRequest[], senders: ResponseSender[]) {
            const start = ms();
            if (delay) {
              for (const r of requests) opsSeen.held.add(r);
              await new Promise<void>((res) => clock.schedule(res, delay));
              for (const r of requests) opsSeen.held.delete(r);
            }
            for (const [i, r] of requests.entries()) {
              opsSeen.runs.push({ model: ctx.name, start, end: ms(), cancelled: r.cancelled });
              const s = senders[i]!;
              const input = (n: string) => ints(r.inputs.find((t) => t.name === n)!);
              if (r.cancelled) {
                s.sendError(new TritonError('CANCELLED', 'Request was cancelled'), true);
              } else if (op === 'fail') {
                s.sendError(new TritonError('INTERNAL', 'step failed on purpose'), true);
              } else if (op === 'split') {
                for (const x of input('IN')) s.send({ outputs: [tensor('OUT', [x])] }, false);
                s.send(null, true);
              } else if (op === 'acc') {
                const x = input('IN');
                // The id alone (a backend never sees the tenant): the server scopes it.
                const key = `${typeof r.correlationId === 'string' ? 's' : 'n'}${String(r.correlationId)}`;
                const prev = input('START')[0] ? undefined : sums.get(key);
                const sum = x.map((v, k) => v + (prev?.[k] ?? 0));
                sums.set(key, sum);
                const shape = r.inputs.find((t) => t.name === 'IN')!.shape;
                s.send({ outputs: [{ ...tensor('OUT', sum), shape: [...shape] }] }, true);
              } else if (op === 'add') {
                const a = input('A');
                const b = input('B');
                s.send(
                  {
                    outputs: [
                      tensor(
                        'OUT',
                        a.map((x, k) => x + b[k]!),
                      ),
                    ],
                  },
                  true,
                );
              } else {
                const x = input('IN');
                s.send({ outputs: [tensor('OUT', op === 'double' ? x.map((v) => v * 2) : x.map((v) => v + 1))] }, true);
              }
            }
          },
          async finalize() {},
        };
      },
      async finalize() {},
    };
  }
  async finalize() {}
}

export class OpsResolver implements BackendResolver {
  private readonly backend: OpsBackend;
  /** @param clock what `delay_ms` and the recorded intervals are timed on. */
  constructor(clock: Clock = SYSTEM_CLOCK) {
    this.backend = new OpsBackend(clock);
  }
  async resolve({ config }: BackendResolveRequest) {
    return config.backend === 'ops' ? this.backend : undefined;
  }
  async finalizeAll() {}
}

/** config.pbtxt of an `ops` model. */
export function opsConfig(op: string, opts: { delayMs?: number; inputs?: string[]; decoupled?: boolean; datatype?: string } = {}): string {
  const dt = opts.datatype ?? 'TYPE_INT32';
  const inputs = opts.inputs ?? (op === 'add' ? ['A', 'B'] : ['IN']);
  return `
backend: "ops"
max_batch_size: 0
${opts.decoupled || op === 'split' ? 'model_transaction_policy { decoupled: true }' : ''}
input [ ${inputs.map((n) => `{ name: "${n}" data_type: ${dt} dims: [ -1 ] }`).join(', ')} ]
output [ { name: "OUT" data_type: ${dt} dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU, count: 2 } ]
parameters { key: "op" value: { string_value: "${op}" } }
parameters { key: "delay_ms" value: { string_value: "${opts.delayMs ?? 0}" } }
`;
}

export interface StepSpec {
  model: string;
  inputs: Record<string, string>;
  outputs: Record<string, string>;
  version?: number;
}

/** config.pbtxt of an ensemble over INT32 [-1] tensors. */
export function ensembleConfig(inputs: string[], outputs: string[], steps: StepSpec[], datatype = 'TYPE_INT32', maxInflightRequests?: number): string {
  const io = (names: string[]) => names.map((n) => `{ name: "${n}" data_type: ${datatype} dims: [ -1 ] }`).join(', ');
  const step = (s: StepSpec) => `{
      model_name: "${s.model}"
      model_version: ${s.version ?? -1}
      ${Object.entries(s.inputs)
        .map(([k, v]) => `input_map { key: "${k}" value: "${v}" }`)
        .join('\n      ')}
      ${Object.entries(s.outputs)
        .map(([k, v]) => `output_map { key: "${k}" value: "${v}" }`)
        .join('\n      ')}
    }`;
  return `
platform: "ensemble"
max_batch_size: 0
input [ ${io(inputs)} ]
output [ ${io(outputs)} ]
ensemble_scheduling { step [ ${steps.map(step).join(', ')} ]${maxInflightRequests === undefined ? '' : ` max_inflight_requests: ${maxInflightRequests}`} }
`;
}

/** An ensemble X -> `first` -> T -> `second` -> Y of two `ops` models (IN -> OUT), INT32 [-1]. */
export function pipeConfig(first: string, second: string, maxInflightRequests?: number): string {
  const steps = [
    { model: first, inputs: { IN: 'X' }, outputs: { OUT: 'T' } },
    { model: second, inputs: { IN: 'T' }, outputs: { OUT: 'Y' } },
  ];
  return ensembleConfig(['X'], ['Y'], steps, 'TYPE_INT32', maxInflightRequests);
}
