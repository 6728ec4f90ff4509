/**
 * Iterative sequences through ModelVersion with a fake backend (spec §5.6 `iterative_sequence`,
 * §6.7 item 6; Triton core `sequence_batch_scheduler/sequence_utils.{h,cc}` IterativeSequencer):
 * a request without a correlation id gets one from the scheduler and START; each time the backend
 * releases it with RESCHEDULE (`ResponseSender.reschedule`) it runs again with neither START nor
 * END, in its slot; its FINAL response ends the sequence. Only iterative models offer `reschedule`.
 */
import { describe, expect, it } from 'vitest';
import type { TritonError } from '../../host/src/contract/errors.js';
import type { BackendModelInstance, InferenceRequest, InferenceRequestInit, ResponseSender, Tensor } from '../../host/src/contract/types.js';
import { REQUEST_FLAG_SEQUENCE_END as END, REQUEST_FLAG_SEQUENCE_START as START } from '../../host/src/contract/types.js';
import { ManualClock } from '../helpers/clock.js';
import { config, modelVersion, tick } from '../helpers/model-version.js';
import { emptyRequestInit } from '../../host/src/dataplane/request-parameters.js';

const int32 = (name: string, v: number, shape = [1]): Tensor => ({ name, datatype: 'INT32', shape, data: new Uint8Array(Int32Array.of(v).buffer) });
const valueOf = (t: Tensor): number => new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength).getInt32(0, true);

/** One execution of one request, as the backend saw it. */
interface Seen {
  corr: number | bigint | string;
  flags: number;
  start: number | undefined;
  inputs: string[];
}

/**
 * Triton's `iterative_sequence` test backend in JS: INPUT0 says how many responses to send; each
 * execution sends one (OUTPUT0 = how many are left) and reschedules while some are left. What is
 * left is kept per request (by request id). With `manual`, each execution waits for {@link step}.
 */
class IterativeInstance implements BackendModelInstance {
  readonly seen: Seen[] = [];
  readonly sawReschedule: boolean[] = [];
  private readonly left = new Map<string, number>();
  private gates: (() => void)[] = [];
  constructor(private readonly manual = false) {}

  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<void> {
    for (const r of requests) {
      const start = r.inputs.find((t) => t.name === 'START');
      this.seen.push({ corr: r.correlationId, flags: r.flags, start: start ? valueOf(start) : undefined, inputs: r.inputs.map((t) => t.name) });
    }
    await new Promise<void>((resolve) => (this.manual ? this.gates.push(resolve) : setImmediate(resolve)));
    requests.forEach((r, i) => {
      const s = senders[i]!;
      this.sawReschedule.push(typeof s.reschedule === 'function');
      const key = r.id;
      const left = (this.left.get(key) ?? valueOf(r.inputs.find((t) => t.name === 'INPUT0')!)) - 1;
      if (left > 0 && s.reschedule) {
        this.left.set(key, left);
        s.reschedule(); // released with RESCHEDULE first, then the response (as Triton's backend)
        s.send({ outputs: [int32('OUTPUT0', left)] }, false);
      } else {
        this.left.delete(key);
        s.send({ outputs: [int32('OUTPUT0', left)] }, true);
      }
    });
  }

  get waiting(): number {
    return this.gates.length;
  }

  step(): void {
    this.gates.shift()?.();
  }

  async finalize(): Promise<void> {}
}

const CONTROLS = `control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]`;

function iterModel(opts: { iterative?: boolean; idleUs?: number; extra?: string } = {}) {
  return config(`
backend: "fake"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  iterative_sequence: ${opts.iterative ?? true}
  max_sequence_idle_microseconds: ${opts.idleUs ?? 5_000_000}
  ${CONTROLS}
  ${opts.extra ?? ''}
}
`);
}

function req(id: string, v: number, extra: Partial<InferenceRequestInit> = {}): InferenceRequestInit {
  return { ...emptyRequestInit('model', 1), id, inputs: [int32('INPUT0', v)], ...extra };
}

/** Every response of one request, until its final one. */
function stream(): { sender: ResponseSender; values: number[]; finals: number; done: Promise<{ values: number[]; error?: TritonError }> } {
  let finish!: (o: { values: number[]; error?: TritonError }) => void;
  const done = new Promise<{ values: number[]; error?: TritonError }>((r) => (finish = r));
  const s = {
    values: [] as number[],
    finals: 0,
    done,
    sender: {
      send(response, final) {
        if (response) s.values.push(valueOf(response.outputs.find((t) => t.name === 'OUTPUT0')!));
        if (final) {
          s.finals++;
          finish({ values: s.values });
        }
      },
      sendError(error, final) {
        if (final) {
          s.finals++;
          finish({ values: s.values, error });
        }
      },
    } as ResponseSender,
  };
  return s;
}

describe('iterative_sequence', () => {
  it('a request without a correlation id gets one (START on its first run only) and runs until its FINAL', async () => {
    const inst = new IterativeInstance();
    const { mv } = modelVersion(iterModel(), [inst]);
    const a = stream();
    mv.submit(req('a', 3), a.sender);
    expect(await a.done).toEqual({ values: [2, 1, 0] });
    const b = stream();
    mv.submit(req('b', 2), b.sender);
    expect(await b.done).toEqual({ values: [1, 0] });
    expect(a.finals + b.finals).toBe(2);
    // Triton numbers the sequences it starts from 1; the request is the same on every run.
    expect(inst.seen.map((s) => [s.corr, s.flags, s.start])).toEqual([
      [1, START, 1],
      [1, 0, 0],
      [1, 0, 0],
      [2, START, 1],
      [2, 0, 0],
    ]);
    // The controls are added per run, never piled up on the rescheduled request.
    for (const s of inst.seen) expect(s.inputs).toEqual(['INPUT0', 'START']);
    expect(inst.sawReschedule.every(Boolean)).toBe(true);
  });

  it("a client's own sequence id is kept; its request's FINAL ends the sequence (a new START is not needed twice)", async () => {
    const inst = new IterativeInstance();
    const { mv } = modelVersion(iterModel(), [inst]);
    const a = stream();
    mv.submit(req('a', 2, { correlationId: 77, flags: START }), a.sender);
    expect(await a.done).toEqual({ values: [1, 0] });
    expect(inst.seen.map((s) => [s.corr, s.flags])).toEqual([
      [77, START],
      [77, 0],
    ]);
    // Triton ends the sequence when the request is released without RESCHEDULE: 77 without START
    // is now a sequence nobody started.
    expect(() => mv.submit(req('b', 1, { correlationId: 77 }), stream().sender)).toThrow(
      "inference request for sequence 77 to model 'model' must specify the START flag on the first request of the sequence",
    );
  });

  it('the sequences the scheduler starts cannot be addressed by clients (their own id 1 is another sequence)', async () => {
    const inst = new IterativeInstance(true);
    const { mv } = modelVersion(iterModel({ extra: 'oldest { max_candidate_sequences: 4 }' }), [inst]);
    const a = stream();
    mv.submit(req('a', 3), a.sender);
    await tick();
    expect(inst.seen[0]!.corr).toBe(1);
    // Sequence 1 is live, started by the scheduler: a client's 1 without START is unknown...
    expect(() => mv.submit(req('x', 1, { correlationId: 1 }), stream().sender)).toThrow(/sequence 1 to model 'model' must specify the START flag/);
    // ...and a client's START for 1 begins the client's own sequence, not the scheduler's.
    const c = stream();
    mv.submit(req('c', 1, { correlationId: 1, flags: START }), c.sender);
    while (inst.waiting > 0) {
      inst.step();
      await tick();
    }
    expect(await a.done).toEqual({ values: [2, 1, 0] });
    expect(await c.done).toEqual({ values: [0] });
  });

  it('a sequence waiting for a slot runs once the running one ends (backlog, one slot)', async () => {
    const inst = new IterativeInstance();
    const { mv } = modelVersion(iterModel(), [inst]);
    const all = [stream(), stream(), stream(), stream()];
    all.forEach((s, i) => mv.submit(req(`r${i}`, 2), s.sender));
    const got = await Promise.all(all.map((s) => s.done));
    expect(got).toEqual(all.map(() => ({ values: [1, 0] })));
    // One slot: each sequence's two runs are back to back.
    expect(inst.seen.map((s) => s.corr)).toEqual([1, 1, 2, 2, 3, 3, 4, 4]);
  });

  it('a request cancelled between its runs gets CANCELLED and frees its slot', async () => {
    const inst = new IterativeInstance(true);
    const { mv } = modelVersion(iterModel(), [inst]);
    const a = stream();
    const request = mv.submit(req('a', 5), a.sender);
    await tick();
    request.cancelled = true;
    inst.step();
    const got = await a.done;
    expect(got.values).toEqual([4]);
    expect(got.error?.code).toBe('CANCELLED');
    const b = stream();
    mv.submit(req('b', 1), b.sender);
    await tick();
    inst.step();
    expect(await b.done).toEqual({ values: [0] });
  });

  it("a sequence released for being idle longer than max_sequence_idle_microseconds cannot be rescheduled (Triton's error)", async () => {
    const inst = new IterativeInstance(true);
    const clock = new ManualClock();
    const { mv } = modelVersion(iterModel({ idleUs: 1000 }), [inst], { clock });
    const a = stream();
    mv.submit(req('a', 3), a.sender);
    await tick();
    clock.advance(100); // far past the 1 ms idle timeout
    inst.step();
    const got = await a.done;
    // The failed reschedule is the request's FINAL: the response the backend sends after it is late.
    expect(got.values).toEqual([]);
    expect(got.error?.code).toBe('INVALID_ARG');
    expect(got.error?.message).toBe("inference request for sequence 1 to model 'model' must specify the START flag on the first request of the sequence");
  });

  it('an execution that fails ends the sequence: the next request gets the slot at once', async () => {
    const inst = new IterativeInstance();
    let fail = true;
    const failing: BackendModelInstance = {
      execute: (requests, senders) => {
        if (fail) {
          fail = false;
          return Promise.reject(new Error('backend failed'));
        }
        return inst.execute(requests, senders);
      },
      finalize: async () => {},
    };
    const { mv } = modelVersion(iterModel({ idleUs: 60_000_000 }), [failing]);
    const a = stream();
    mv.submit(req('a', 2), a.sender);
    const b = stream();
    mv.submit(req('b', 2), b.sender);
    const got = await a.done;
    expect(got.error?.message).toMatch(/backend failed/);
    // One slot, a 60 s idle timeout: b runs only because a's sequence ended with its error.
    expect(await b.done).toEqual({ values: [1, 0] });
    expect(a.finals).toBe(1);
  });

  it('a request with END is not offered reschedule (Triton adds the reschedule callback only without END)', async () => {
    const inst = new IterativeInstance();
    const { mv } = modelVersion(iterModel(), [inst]);
    const a = stream();
    mv.submit(req('a', 2, { correlationId: 9, flags: START | END }), a.sender);
    expect(await a.done).toEqual({ values: [1] });
    expect(inst.sawReschedule).toEqual([false]);
  });

  it('without iterative_sequence a backend is not offered reschedule and a request needs its correlation id', async () => {
    const inst = new IterativeInstance();
    const { mv } = modelVersion(iterModel({ iterative: false }), [inst]);
    expect(() => mv.submit(req('a', 2), stream().sender)).toThrow("inference request to model 'model' must specify a non-zero or non-empty correlation ID");
    const a = stream();
    mv.submit(req('a', 2, { correlationId: 5, flags: START }), a.sender);
    expect(await a.done).toEqual({ values: [1] });
    expect(inst.sawReschedule).toEqual([false]);
  });
});
