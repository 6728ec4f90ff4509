/**
 * The sequence batcher through ModelVersion with fake instances (spec §5.6 `sequence_batching`):
 * the control tensors each request carries, slot and instance stickiness, fillers, the backlog,
 * implicit state carried across requests, idle release, the oldest strategy's batches, and
 * Triton's errors.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TritonError } from '../../host/src/contract/errors.js';
import type { BackendModelInstance, InferenceRequest, InferenceRequestInit, ResponseSender, Tensor } from '../../host/src/contract/types.js';
import { REQUEST_FLAG_SEQUENCE_END as END, REQUEST_FLAG_SEQUENCE_START as START } from '../../host/src/contract/types.js';
import { createScheduler } from '../../host/src/scheduler/index.js';
import { readConfigFiles } from '../../host/src/lifecycle/config-files.js';
import { ManualClock } from '../helpers/clock.js';
import { collector, config, modelVersion, tick, type Outcome } from '../helpers/model-version.js';
import { emptyRequestInit } from '../../host/src/dataplane/request-parameters.js';

/** A tensor's elements as numbers / bigints / booleans by datatype. */
function values(t: Tensor): (number | bigint | boolean)[] {
  const dv = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out: (number | bigint | boolean)[] = [];
  switch (t.datatype) {
    case 'INT32':
      for (let i = 0; i < t.data.length; i += 4) out.push(dv.getInt32(i, true));
      break;
    case 'FP32':
      for (let i = 0; i < t.data.length; i += 4) out.push(dv.getFloat32(i, true));
      break;
    case 'BOOL':
      for (const b of t.data) out.push(b !== 0);
      break;
    case 'INT64':
      for (let i = 0; i < t.data.length; i += 8) out.push(dv.getBigInt64(i, true));
      break;
    case 'UINT64':
      for (let i = 0; i < t.data.length; i += 8) out.push(dv.getBigUint64(i, true));
      break;
    case 'UINT32':
      for (let i = 0; i < t.data.length; i += 4) out.push(dv.getUint32(i, true));
      break;
    case 'BYTES': {
      let o = 0;
      while (o < t.data.length) {
        const n = dv.getUint32(o, true);
        out.push(new TextDecoder().decode(t.data.subarray(o + 4, o + 4 + n)) as unknown as number);
        o += 4 + n;
      }
      break;
    }
    default:
      throw new Error(`no decoder for ${t.datatype}`);
  }
  return out;
}

const int32 = (name: string, v: number, shape = [1, 1]): Tensor => ({ name, datatype: 'INT32', shape, data: new Uint8Array(Int32Array.of(v).buffer) });

/** What one request of an execution looked like to the backend. */
interface Seen {
  id: string;
  inputs: Record<string, { datatype: string; shape: number[]; values: (number | bigint | boolean)[] }>;
  outputs: string[];
}

/**
 * A fake sequence backend: records each execution; answers OUTPUT0 = INPUT0, or, when the request
 * carries STATE_IN, the accumulator STATE_IN + INPUT0 as both OUTPUT0 and STATE_OUT. With
 * `manual`, executions wait for {@link release}.
 */
class SeqInstance implements BackendModelInstance {
  readonly executions: Seen[][] = [];
  private gates: (() => void)[] = [];
  constructor(private readonly manual = false) {}

  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<void> {
    this.executions.push(
      requests.map((r) => ({
        id: r.id,
        inputs: Object.fromEntries(r.inputs.map((t) => [t.name, { datatype: t.datatype, shape: t.shape, values: values(t) }])),
        outputs: r.requestedOutputs.slice(),
      })),
    );
    await new Promise<void>((resolve) => (this.manual ? this.gates.push(resolve) : setImmediate(resolve)));
    requests.forEach((r, i) => {
      const input = values(r.inputs.find((t) => t.name === 'INPUT0')!)[0] as number;
      const state = r.inputs.find((t) => t.name === 'STATE_IN');
      if (!state) return senders[i]!.send({ outputs: [int32('OUTPUT0', input)] }, true);
      const next = (values(state)[0] as number) + input;
      senders[i]!.send({ outputs: [int32('OUTPUT0', next), int32('STATE_OUT', next)] }, true);
    });
  }

  get waiting(): number {
    return this.gates.length;
  }

  release(): void {
    this.gates.shift()?.();
  }

  async finalize(): Promise<void> {}
}

const CONTROLS = `
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ -1, 7 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 } ] }
  ]`;

/** A sequence model on the fake backend: INPUT0 / OUTPUT0 INT32 [1], max_batch_size `mbs`. */
function seqModel(strategy: string, opts: { mbs?: number; idleUs?: number; state?: string; controls?: string } = {}) {
  return config(`
backend: "fake"
max_batch_size: ${opts.mbs ?? 4}
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  ${strategy}
  max_sequence_idle_microseconds: ${opts.idleUs ?? 5_000_000}
  ${opts.controls ?? CONTROLS}
  ${opts.state ?? ''}
}
`);
}

const STATE = 'state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]';

/** A request of value `v` for sequence `id` with `flags`. */
function req(id: string, corr: number | bigint | string, v: number, flags = 0, extra: Partial<InferenceRequestInit> = {}): InferenceRequestInit {
  return { ...emptyRequestInit('model', 1), id, inputs: [int32('INPUT0', v)], correlationId: corr, flags, ...extra };
}

/** Submit and collect the outcome. */
function submit(mv: ReturnType<typeof modelVersion>['mv'], init: InferenceRequestInit): Promise<Outcome> {
  const c = collector();
  mv.submit(init, c.sender);
  return c.done;
}

const out0 = (o: Outcome): number => {
  expect(o.error, o.error?.message).toBeUndefined();
  return values(o.response!.outputs.find((t) => t.name === 'OUTPUT0')!)[0] as number;
};

function expectInvalid(fn: () => unknown, message: string | RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(TritonError);
  expect((caught as TritonError).code).toBe('INVALID_ARG');
  if (typeof message === 'string') expect((caught as TritonError).message).toBe(message);
  else expect((caught as TritonError).message).toMatch(message);
}

describe('control inputs', () => {
  it('START / END / READY / CORRID per request, with their false_true values and data types, shape [1, 1]', async () => {
    const inst = new SeqInstance();
    const { mv } = modelVersion(seqModel('direct { }'), [inst]);
    expect(out0(await submit(mv, req('a', 42, 5, START)))).toBe(5);
    expect(out0(await submit(mv, req('b', 42, 6)))).toBe(6);
    expect(out0(await submit(mv, req('c', 42, 7, END)))).toBe(7);
    expect(out0(await submit(mv, req('d', 9n, 8, START | END)))).toBe(8);
    const seen = inst.executions.map((e) => e[0]!);
    expect(seen.map((s) => s.inputs.START!.values[0])).toEqual([1, 0, 0, 1]);
    expect(seen.map((s) => s.inputs.END!.values[0])).toEqual([false, false, true, true]);
    expect(seen.map((s) => s.inputs.READY!.values[0])).toEqual([7, 7, 7, 7]);
    expect(seen.map((s) => s.inputs.CORRID!.values[0])).toEqual([42n, 42n, 42n, 9n]);
    expect(seen[0]!.inputs.START).toMatchObject({ datatype: 'FP32', shape: [1, 1] });
    expect(seen[0]!.inputs.END).toMatchObject({ datatype: 'BOOL', shape: [1, 1] });
    expect(seen[0]!.inputs.READY).toMatchObject({ datatype: 'INT32', shape: [1, 1] });
    expect(seen[0]!.inputs.CORRID).toMatchObject({ datatype: 'INT64', shape: [1, 1] });
  });

  it('without batching (max_batch_size 0) the controls have shape [1]; CORRID types UINT32 and STRING', async () => {
    const controls = (t: string) => `control_input [ { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: ${t} } ] } ]`;
    const inst = new SeqInstance();
    const cfg = config(`
backend: "fake"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1, 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1, 1 ] } ]
sequence_batching { ${controls('TYPE_UINT32')} }
`);
    const { mv } = modelVersion(cfg, [inst]);
    await submit(mv, req('a', 0x1_0000_0005, 1, START | END));
    await submit(mv, req('b', '77', 1, START | END));
    expect(inst.executions.map((e) => e[0]!.inputs.CORRID)).toEqual([
      { datatype: 'UINT32', shape: [1], values: [5] },
      { datatype: 'UINT32', shape: [1], values: [77] },
    ]);
    const sinst = new SeqInstance();
    const { mv: smv } = modelVersion(seqModel('direct { }', { controls: controls('TYPE_STRING') }), [sinst]);
    await submit(smv, req('s', 'abc-1', 1, START | END));
    await submit(smv, req('n', 12, 1, START | END));
    expect(sinst.executions.map((e) => e[0]!.inputs.CORRID)).toEqual([
      { datatype: 'BYTES', shape: [1, 1], values: ['abc-1'] },
      { datatype: 'BYTES', shape: [1, 1], values: ['12'] },
    ]);
  });
});

describe('direct strategy', () => {
  it('a sequence keeps its instance and its batch slot; empty slots below it get not-ready fillers', async () => {
    const a = new SeqInstance(true);
    const b = new SeqInstance(true);
    const { mv } = modelVersion(seqModel('direct { }', { mbs: 4 }), [a, b]);
    // Four sequences: s1 → a slot 0, s2 → b slot 0, s3 → a slot 1, s4 → b slot 1.
    const first = [1, 2, 3, 4].map((k) => submit(mv, req(`s${k}-0`, k, k * 10, START)));
    await tick();
    expect([a.executions.length, b.executions.length]).toEqual([1, 1]);
    // While both instances are busy, s3 and s4 queue more; s1 stays quiet.
    const more = [submit(mv, req('s3-1', 3, 31)), submit(mv, req('s4-1', 4, 41)), submit(mv, req('s2-1', 2, 21))];
    a.release();
    b.release();
    await tick();
    a.release();
    b.release();
    await tick();
    // The first batches: a = [s1], then [s3] had to wait for a; b likewise.
    const ids = (inst: SeqInstance) => inst.executions.map((e) => e.map((s) => s.id));
    while (a.waiting + b.waiting > 0) {
      a.release();
      b.release();
      await tick();
    }
    const outs = await Promise.all([...first, ...more]);
    expect(outs.map(out0)).toEqual([10, 20, 30, 40, 31, 41, 21]);
    const all = [...ids(a), ...ids(b)].flat();
    for (const s of ['s1-0', 's3-0', 's3-1']) expect(ids(a).flat(), s).toContain(s);
    for (const s of ['s2-0', 's4-0', 's4-1', 's2-1']) expect(ids(b).flat(), s).toContain(s);
    expect(all.filter((x) => x !== '')).toHaveLength(7);
    // Slot order: s3's requests sit at batch index 1 (slot 1), a filler (READY -1) at index 0.
    const s3batch = a.executions.find((e) => e.some((s) => s.id === 's3-1'))!;
    expect(s3batch.map((s) => s.id)).toEqual(['', 's3-1']);
    expect(s3batch[0]!.inputs.READY!.values).toEqual([-1]);
    expect(s3batch[0]!.inputs.START!.values).toEqual([0]);
    expect(s3batch[1]!.inputs.READY!.values).toEqual([7]);
    expect(b.executions.find((e) => e.some((s) => s.id === 's4-0'))!.map((s) => s.id)).toEqual(['s2-1', 's4-0']);
    expect(b.executions.find((e) => e.some((s) => s.id === 's4-1'))!.map((s) => s.id)).toEqual(['', 's4-1']);
  });

  it('sequences beyond the free slots wait in the backlog until a slot frees (END or idle)', async () => {
    const inst = new SeqInstance();
    const { mv } = modelVersion(seqModel('direct { }', { mbs: 1 }), [inst]);
    const a0 = submit(mv, req('a0', 1, 1, START));
    const b0 = submit(mv, req('b0', 2, 2, START)); // backlog: the only slot is taken by sequence 1
    expect(out0(await a0)).toBe(1);
    await tick();
    expect(inst.executions.flat().map((s) => s.id)).toEqual(['a0']);
    // b's later request joins it in the backlog (a START was seen).
    const b1 = submit(mv, req('b1', 2, 3, END));
    const a1 = submit(mv, req('a1', 1, 4, END));
    expect(out0(await a1)).toBe(4);
    expect(out0(await b0)).toBe(2);
    expect(out0(await b1)).toBe(3);
    expect(inst.executions.flat().map((s) => s.id)).toEqual(['a0', 'a1', 'b0', 'b1']);
    expect(mv.pendingCount).toBe(0);
  });

  it('max_queue_delay_microseconds with minimum_slot_utilization waits for more slots to have work', async () => {
    const inst = new SeqInstance();
    const clock = new ManualClock();
    const { mv } = modelVersion(seqModel('direct { max_queue_delay_microseconds: 300000 minimum_slot_utilization: 0.5 }', { mbs: 4 }), [inst], { clock });
    const p1 = submit(mv, req('x', 1, 1, START));
    await tick();
    clock.advance(299);
    await tick();
    expect(inst.executions).toHaveLength(0); // 1 of 4 slots ready < 0.5, and the 300 ms are not up
    const p2 = submit(mv, req('y', 2, 2, START));
    await Promise.all([p1, p2]);
    expect(inst.executions.map((e) => e.map((s) => s.id))).toEqual([['x', 'y']]);
  });
});

describe('implicit state', () => {
  it('carried across the requests of a sequence, separately per interleaved sequence, reset by START; not shown to the client', async () => {
    const a = new SeqInstance();
    const b = new SeqInstance();
    const { mv } = modelVersion(seqModel('direct { }', { state: STATE }), [a, b]);
    const results: Record<string, number[]> = { x: [], y: [] };
    const steps: [string, number, number, number][] = [
      ['x', 100, 1, START],
      ['y', '200' as unknown as number, 10, START],
      ['x', 100, 2, 0],
      ['y', '200' as unknown as number, 20, 0],
      ['x', 100, 3, 0],
      ['y', '200' as unknown as number, 30, END],
      ['x', 100, 4, START], // a new START on a live sequence resets its state
      ['x', 100, 5, END],
    ];
    for (const [name, id, v, flags] of steps) {
      const o = await submit(mv, req(`${name}${v}`, id, v, flags));
      expect(o.response!.outputs.map((t) => t.name)).toEqual(['OUTPUT0']);
      results[name]!.push(out0(o));
    }
    expect(results).toEqual({ x: [1, 3, 6, 4, 9], y: [10, 30, 60] });
    const seen = [...a.executions, ...b.executions].flat();
    expect(seen[0]!.outputs).toEqual(['OUTPUT0', 'STATE_OUT']);
    expect(seen.find((s) => s.id === 'x1')!.inputs.STATE_IN).toEqual({ datatype: 'INT32', shape: [1, 1], values: [0] });
  });

  it("a state carried by a states-only FINAL (a decoupled backend's flags-only final) reaches the client as a FINAL alone", async () => {
    /** Decoupled: OUTPUT0 = STATE_IN + INPUT0 (not final), then STATE_OUT alone with FINAL. */
    const inst: BackendModelInstance = {
      async execute(requests: InferenceRequest[], senders: ResponseSender[]) {
        requests.forEach((r, i) => {
          const next = (values(r.inputs.find((t) => t.name === 'STATE_IN')!)[0] as number) + (values(r.inputs.find((t) => t.name === 'INPUT0')!)[0] as number);
          senders[i]!.send({ outputs: [int32('OUTPUT0', next)] }, false);
          senders[i]!.send({ outputs: [int32('STATE_OUT', next)] }, true);
        });
      },
      async finalize() {},
    };
    const cfg = config(`
backend: "fake"
max_batch_size: 4
model_transaction_policy { decoupled: true }
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching { direct { } ${STATE} }
`);
    const { mv } = modelVersion(cfg, [inst]);
    const run = (id: string, v: number, flags: number) =>
      new Promise<{ out: number[]; finals: (string[] | null)[] }>((resolve) => {
        const out: number[] = [];
        const finals: (string[] | null)[] = [];
        mv.submit(req(id, 7, v, flags), {
          send(response, final) {
            if (!final) out.push(values(response!.outputs[0]!)[0] as number);
            else {
              finals.push(response ? response.outputs.map((t) => t.name) : null);
              resolve({ out, finals });
            }
          },
          sendError(e) {
            throw e;
          },
        });
      });
    expect(await run('a', 5, START)).toEqual({ out: [5], finals: [null] });
    expect(await run('b', 6, 0)).toEqual({ out: [11], finals: [null] });
    expect(await run('c', 1, END)).toEqual({ out: [12], finals: [null] });
  });

  it('initial_state from zero_data or from <model>/initial_state/<data_file>', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-seq-'));
    try {
      mkdirSync(join(dir, 'initial_state'));
      writeFileSync(join(dir, 'initial_state', 'start.bin'), new Uint8Array(Int32Array.of(1000).buffer));
      const cfg = seqModel('direct { }', {
        state: `state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32 dims: [ 1 ]
          initial_state [ { data_type: TYPE_INT32 dims: [ 1 ] data_file: "start.bin" name: "init" } ] } ]`,
      });
      const inst = new SeqInstance();
      const { mv } = modelVersion(cfg, [inst], { files: await readConfigFiles(cfg, dir) });
      expect(out0(await submit(mv, req('a', 5, 1, START)))).toBe(1001);
      expect(out0(await submit(mv, req('b', 5, 2, END)))).toBe(1003);
      // Without the model directory, or with a path leaving the model directory, the load fails.
      expect(() => createScheduler(cfg, [inst], { onExecuted() {} }, { version: 1 })).toThrow(/data_file is not supported here/);
      const escape = seqModel('direct { }', {
        state: `state [ { input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 1 ]
          initial_state [ { data_type: TYPE_INT32 dims: [ 1 ] data_file: "../x" name: "i" } ] } ]`,
      });
      await expect(readConfigFiles(escape, dir)).rejects.toThrow(/initial_state data_file '\.\.\/x' must be a path inside the model directory/);
      const zero = seqModel('direct { }', {
        state: `state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32 dims: [ -1 ]
          initial_state [ { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "z" } ] } ]`,
      });
      const zinst = new SeqInstance();
      const { mv: zmv } = modelVersion(zero, [zinst]);
      expect(out0(await submit(zmv, req('z', 1, 4, START | END)))).toBe(4);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('idle sequences', () => {
  it('released after max_sequence_idle_microseconds: the slot goes to the backlog, a later request without START fails', async () => {
    const inst = new SeqInstance();
    const clock = new ManualClock();
    const { mv } = modelVersion(seqModel('direct { }', { mbs: 1, idleUs: 150_000 }), [inst], { clock });
    expect(out0(await submit(mv, req('a0', 1, 1, START)))).toBe(1);
    const waiting = submit(mv, req('b0', 2, 2, START)); // backlog behind the idle sequence 1
    await tick();
    clock.advance(149);
    await tick();
    expect(inst.executions).toHaveLength(1); // sequence 1 idle for 149 ms still holds the slot
    clock.advance(2);
    expect(out0(await waiting)).toBe(2); // past 150 ms sequence 1 is released
    expectInvalid(
      () => mv.submit(req('a1', 1, 3), collector().sender),
      "inference request for sequence 1 to model 'model' must specify the START flag on the first request of the sequence",
    );
    // Sequence 2 holds the slot now: its idle time counts from when it got the slot, so 100 ms
    // later (251 ms after it was queued) it is still live.
    clock.advance(100);
    await tick();
    expect(out0(await submit(mv, req('b1', 2, 4, END)))).toBe(4);
  });
});

describe('oldest strategy', () => {
  it('batches the oldest sequences, one request per sequence, up to the preferred size; the delay flushes smaller batches', async () => {
    const inst = new SeqInstance(true);
    const clock = new ManualClock();
    const cfg = seqModel('oldest { max_candidate_sequences: 8 preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 200000 }', { mbs: 4 });
    const { mv } = modelVersion(cfg, [inst], { clock });
    const p = [submit(mv, req('a0', 1, 1, START)), submit(mv, req('a1', 1, 2)), submit(mv, req('b0', 2, 3, START))];
    await tick();
    // a0 and b0 form a batch of the preferred size 2 at once; a1 (same sequence as a0) waits.
    expect(inst.executions.map((e) => e.map((s) => s.id))).toEqual([['a0', 'b0']]);
    expect(inst.executions[0]!.map((s) => s.inputs.CORRID!.values[0])).toEqual([1n, 2n]);
    inst.release();
    await tick();
    // a1 alone is below the preferred size: it waits for the delay (no second sequence is ready).
    expect(inst.executions).toHaveLength(1);
    clock.advance(199);
    await tick();
    expect(inst.executions).toHaveLength(1);
    clock.advance(1);
    await tick();
    expect(inst.executions.map((e) => e.map((s) => s.id))).toEqual([['a0', 'b0'], ['a1']]);
    inst.release();
    expect((await Promise.all(p)).map(out0)).toEqual([1, 2, 3]);
  });

  it('with no delay, whatever is ready runs at once; the state of each sequence follows it', async () => {
    const inst = new SeqInstance();
    const cfg = seqModel('oldest { max_candidate_sequences: 4 }', { mbs: 4, state: STATE });
    const { mv } = modelVersion(cfg, [inst]);
    const r = await Promise.all([
      submit(mv, req('a0', 1, 1, START)),
      submit(mv, req('b0', '2', 10, START)),
      submit(mv, req('a1', 1, 2)),
      submit(mv, req('b1', '2', 20, END)),
      submit(mv, req('a2', 1, 3, END)),
    ]);
    expect(r.map(out0)).toEqual([1, 10, 3, 30, 6]);
    for (const e of inst.executions) {
      const seqs = e.map((s) => s.inputs.CORRID!.values[0]);
      expect(new Set(seqs).size, 'one request per sequence per batch').toBe(seqs.length);
    }
  });
});

describe("Triton's errors", () => {
  it('no correlation id, no START, batch size above 1, a non-integer string id for an integer CORRID', () => {
    const { mv } = modelVersion(seqModel('direct { }'), [new SeqInstance()]);
    const m = "inference request to model 'model' must specify a non-zero or non-empty correlation ID";
    for (const id of [0, '', 0n]) expectInvalid(() => mv.submit(req('x', id, 1, START), collector().sender), m);
    expectInvalid(
      () => mv.submit(req('x', 'abc', 1), collector().sender),
      "inference request for sequence abc to model 'model' must specify the START flag on the first request of the sequence",
    );
    expectInvalid(
      () => mv.submit(req('x', 3, 1, START, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [2, 1], data: new Uint8Array(8) }] }), collector().sender),
      "inference request to model 'model' must specify batch-size 1 due to requirements of sequence batcher",
    );
    expectInvalid(() => mv.submit(req('x', 'seq-a', 1, START), collector().sender), /sequence ID 'seq-a' for model 'model' must be an unsigned integer/);
    expect(mv.pendingCount).toBe(0);
  });

  it('integer and string ids are different sequences', async () => {
    const inst = new SeqInstance();
    const { mv } = modelVersion(seqModel('direct { }', { state: STATE }), [inst]);
    expect(out0(await submit(mv, req('n', 7, 1, START)))).toBe(1);
    expect(out0(await submit(mv, req('s', '7', 100, START)))).toBe(100);
    expect(out0(await submit(mv, req('n2', 7n, 2, END)))).toBe(3);
    expect(out0(await submit(mv, req('s2', '7', 5, END)))).toBe(105);
  });

  it('sequence parameters on a model without a sequence batcher are accepted and passed on (Triton core infer_request.cc)', () => {
    const cfg = config(`
backend: "fake"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
`);
    const { mv } = modelVersion(cfg, [new SeqInstance()]);
    for (const [id, flags] of [
      [5, 0],
      ['x', 0],
      [0, START],
      [0, END],
      [2n ** 60n, 0],
    ] as const) {
      const r = mv.submit(req('x', id, 1, flags), collector().sender);
      expect(r.correlationId).toBe(id);
      expect(r.flags).toBe(flags);
    }
  });

  it('unload fails the queued requests of every sequence', async () => {
    const inst = new SeqInstance(true);
    const { mv } = modelVersion(seqModel('direct { }', { mbs: 1 }), [inst]);
    const running = submit(mv, req('a0', 1, 1, START));
    const queued = submit(mv, req('a1', 1, 2));
    const backlog = submit(mv, req('b0', 2, 3, START));
    await tick();
    const fin = mv.finalize();
    inst.release();
    await fin;
    expect(out0(await running)).toBe(1);
    for (const o of [await queued, await backlog]) expect(o.error?.code).toBe('UNAVAILABLE');
  });
});
