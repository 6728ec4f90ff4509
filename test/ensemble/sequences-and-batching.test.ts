/**
 * Sequence parameters and batch dimensions across ensembles, as Triton's core handles them:
 *
 * - `sequence_id` / `sequence_start` / `sequence_end` sent to a model without a sequence batcher
 *   are accepted and ignored (core `infer_request.cc` checks the correlation ID only for models
 *   with `sequence_batching`), over HTTP and gRPC;
 * - an ensemble forwards its request's correlation ID and flags to every step (core
 *   `ensemble_scheduler.cc`, `EnsembleContext::InitStep`), so a sequence model inside an ensemble
 *   keeps its state across the ensemble's requests, next to non-sequence steps;
 * - between a non-batching ensemble and a batching step (and back) the batch-1 dimension is added
 *   or stripped (core `ensemble_scheduler.cc`, `EnsembleContext::ReshapeTensorDims`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { int32s, simpleInfer, tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../helpers/grpc.js';
import { postJson, simpleRequest, tempRepo, type TempRepo } from '../helpers/repo.js';
import { ensembleConfig, opsConfig, OpsResolver } from './ops-backend.js';

let repo: TempRepo;
let server: RunningServer;
let client: TritonGrpcClient;

const model = (name: string, config: string) => {
  repo.addModel(name, `name: "${name}"\n${config}`);
};

/** An ensemble of one step over INT32 tensors with the given dims and max_batch_size. */
const oneStep = (mbs: number, dims: string, io: [string, string][], step: string, outs: [string, string][]) => `
platform: "ensemble"
max_batch_size: ${mbs}
input [ ${io.map(([n]) => `{ name: "${n}" data_type: TYPE_INT32 dims: ${dims} }`).join(', ')} ]
output [ ${outs.map(([n]) => `{ name: "${n}" data_type: TYPE_INT32 dims: ${dims} }`).join(', ')} ]
ensemble_scheduling { step [ {
  model_name: "${step}"
  model_version: -1
  ${io.map(([e, m]) => `input_map { key: "${m}" value: "${e}" }`).join('\n  ')}
  ${outs.map(([e, m]) => `output_map { key: "${m}" value: "${e}" }`).join('\n  ')}
} ] }
`;

beforeAll(async () => {
  repo = tempRepo(['simple', 'simple_dyna_sequence']);
  model('inc', opsConfig('inc'));
  // A sequence model (direct, START control) that keeps a running sum per correlation ID; it batches.
  model(
    'acc',
    `backend: "ops"
max_batch_size: 4
sequence_batching { direct { } control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
parameters { key: "op" value: { string_value: "acc" } }
`,
  );
  // X -> inc (no sequence batcher) -> T -> acc (sequence batcher) -> Y; not batching, acc batches.
  model(
    'acc_chain',
    ensembleConfig(
      ['X'],
      ['Y'],
      [
        { model: 'inc', inputs: { IN: 'X' }, outputs: { OUT: 'T' } },
        { model: 'acc', inputs: { IN: 'T' }, outputs: { OUT: 'Y' } },
      ],
    ),
  );
  // Not batching, over Triton's batching `simple` (dims [16]) and `simple_dyna_sequence` (dims [1], CORRID).
  model(
    'simple_flat',
    oneStep(
      0,
      '[ 16 ]',
      [
        ['INPUT0', 'INPUT0'],
        ['INPUT1', 'INPUT1'],
      ],
      'simple',
      [
        ['OUTPUT0', 'OUTPUT0'],
        ['OUTPUT1', 'OUTPUT1'],
      ],
    ),
  );
  model('dyna_flat', oneStep(0, '[ 1 ]', [['INPUT', 'INPUT']], 'simple_dyna_sequence', [['OUTPUT', 'OUTPUT']]));
  // Batching, over a non-batching step.
  model('inc_batched', oneStep(8, '[ -1 ]', [['X', 'IN']], 'inc', [['Y', 'OUT']]));
  server = await startTestServer(repo, {
    modelControlMode: 'none',
    grpcPort: 0,
    backendResolvers: [new OpsResolver()],
  });
  client = tritonGrpcClient(server.grpcUrl!);
});
afterAll(async () => {
  client?.close();
  await server?.stop();
  repo?.cleanup();
});

const infer = (name: string, body: unknown) => postJson(`${server.httpUrl}/v2/models/${name}/infer`, body);
const RANGE = Array.from({ length: 16 }, (_, i) => i);
const ONES = Array(16).fill(1);

describe('sequence parameters on a model without a sequence batcher (core infer_request.cc)', () => {
  it('HTTP: accepted and ignored', async () => {
    for (const parameters of [{ sequence_id: 5 }, { sequence_id: 'x' }, { sequence_id: 7, sequence_start: true }, { sequence_end: true }]) {
      const r = await infer('simple', simpleRequest('INT32', RANGE, ONES, 1, { parameters }));
      expect(r.status, r.text).toBe(200);
      expect(r.json.outputs[0].data).toEqual(RANGE.map((x) => x + 1));
    }
  });

  it('gRPC: accepted and ignored', async () => {
    for (const parameters of [
      { sequence_id: { int64_param: 5 } },
      { sequence_id: { string_param: 'x' } },
      { sequence_id: { int64_param: 9 }, sequence_start: { bool_param: true }, sequence_end: { bool_param: true } },
    ]) {
      const { res, err } = await unaryCall(client, 'ModelInfer', simpleInfer(RANGE, ONES, { parameters }));
      expect(err?.message).toBeUndefined();
      expect(int32s(res.raw_output_contents[0])).toEqual(RANGE.map((x) => x + 1));
    }
  });
});

describe('a sequence model inside an ensemble (core ensemble_scheduler.cc)', () => {
  const accStep = async (id: number | string, x: number[], start: boolean, end = false) => {
    const r = await infer('acc_chain', {
      inputs: [{ name: 'X', datatype: 'INT32', shape: [x.length], data: x }],
      parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].shape).toEqual([x.length]);
    return r.json.outputs[0].data as number[];
  };

  it('keeps its state across the ensemble requests of one sequence, apart from an interleaved sequence (HTTP)', async () => {
    expect(await accStep(11, [1, 2], true)).toEqual([2, 3]);
    expect(await accStep('other', [10, 10], true)).toEqual([11, 11]);
    expect(await accStep(11, [1, 2], false)).toEqual([4, 6]);
    expect(await accStep('other', [0, 0], false)).toEqual([12, 12]);
    expect(await accStep(11, [0, 0], false, true)).toEqual([5, 7]);
    // A new sequence with the same id starts from nothing.
    expect(await accStep(11, [0, 0], true, true)).toEqual([1, 1]);
  });

  it('over gRPC too', async () => {
    const step = async (x: number[], start: boolean) => {
      const { res, err } = await unaryCall(client, 'ModelInfer', {
        model_name: 'acc_chain',
        inputs: [{ name: 'X', datatype: 'INT32', shape: [x.length] }],
        raw_input_contents: [Buffer.from(new Int32Array(x).buffer)],
        parameters: { sequence_id: { int64_param: 77 }, sequence_start: { bool_param: start } },
      });
      expect(err?.message).toBeUndefined();
      expect(res.outputs[0].shape.map(Number)).toEqual([x.length]);
      return int32s(res.raw_output_contents[0]);
    };
    expect(await step([5], true)).toEqual([6]);
    expect(await step([5], false)).toEqual([12]);
  });

  it("the sequence step's own rules still hold: no correlation ID is Triton's 400", async () => {
    const r = await infer('acc_chain', { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], data: [1] }] });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe("in ensemble 'acc_chain', inference request to model 'acc' must specify a non-zero or non-empty correlation ID");
  });

  it("Triton's simple_dyna_sequence through a non-batching ensemble: the CORRID control gets the ensemble's correlation ID", async () => {
    // OUTPUT = READY × (INPUT + START + END × CORRID)
    const values = [0, 11, 7, 5];
    const got: number[] = [];
    for (const [i, v] of values.entries()) {
      const r = await infer('dyna_flat', {
        inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1], data: [v] }],
        parameters: { sequence_id: 1000, sequence_start: i === 0, sequence_end: i === values.length - 1 },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json.outputs[0].shape).toEqual([1]);
      got.push(r.json.outputs[0].data[0]);
    }
    expect(got).toEqual([1, 11, 7, 5 + 1000]);
  });
});

describe('batch dimension between an ensemble and its steps (ReshapeTensorDims)', () => {
  it('a non-batching ensemble over a batching step: [16] goes in as [1,16] and comes back as [16]', async () => {
    const r = await infer('simple_flat', {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [16], data: RANGE },
        { name: 'INPUT1', datatype: 'INT32', shape: [16], data: ONES },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const by = Object.fromEntries(r.json.outputs.map((o: any) => [o.name, o]));
    expect(by.OUTPUT0).toMatchObject({ shape: [16], data: RANGE.map((x) => x + 1) });
    expect(by.OUTPUT1).toMatchObject({ shape: [16], data: RANGE.map((x) => x - 1) });
  });

  it('a batching ensemble over a non-batching step: [1,3] goes in as [3] and comes back as [1,3]', async () => {
    const r = await infer('inc_batched', { inputs: [{ name: 'X', datatype: 'INT32', shape: [1, 3], data: [1, 2, 3] }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0]).toMatchObject({ name: 'Y', shape: [1, 3], data: [2, 3, 4] });
  });

  it('a batch of 2 is not stripped (as Triton): the non-batching step refuses [2,3]', async () => {
    const r = await infer('inc_batched', { inputs: [{ name: 'X', datatype: 'INT32', shape: [2, 3], data: [1, 2, 3, 4, 5, 6] }] });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(
      /^in ensemble 'inc_batched', \[request id: <id_unknown>\] unexpected shape for input 'IN' for model 'inc'\. Expected \[-1\], got \[2,3\]/,
    );
  });
});
