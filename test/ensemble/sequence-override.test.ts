/**
 * A step's response parameters `sequence_id` / `sequence_start` / `sequence_end` set the
 * correlation ID and flags of the steps downstream of it, as Triton's ensemble scheduler does
 * (core `ensemble_scheduler.cc`: `ConsumeResponse` reads them, `InitStep` applies them,
 * `CheckAndSetEnsembleOutput` writes them into the ensemble's response; ensemble/sequence-override.ts):
 *
 * - INT or STRING `sequence_id`, BOOL flags; the flags start from none once any of the three is
 *   present; a wrong type fails the request with Triton's INVALID_ARG text (400), named by the
 *   ensemble as Triton names every step's error (`FinishEnsemble`: "in ensemble '<name>', ...");
 * - the override reaches every step downstream (through steps that are not sequence models), and
 *   no step beside it (a step reading only ensemble inputs keeps the request's ID);
 * - a step whose inputs carry different settings takes its first input's;
 * - every ensemble response carries `sequence_id` (typed as the request's ID), `sequence_start`,
 *   `sequence_end` — tritonserver 2.51 answered `{"sequence_id":0,"sequence_start":false,
 *   "sequence_end":false}` for a plain two-step ensemble request, `-1` for an ID of 2^64 − 1.
 *
 * The emitting step is the JS test backend's `response_params` mode: request parameter
 * `response_<name>` (the ensemble passes its request's parameters to every step) comes back as its
 * response parameter `<name>`. Its downstream `sum` models keep a running sum per correlation ID
 * (START resets it) and record the IDs they were given (test/helpers/js-backend.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../helpers/grpc.js';
import { JsBackendResolver, correlationIdsSeen } from '../helpers/js-backend.js';
import { postJson, tempRepo, type TempRepo } from '../helpers/repo.js';
import { ensembleConfig } from './ops-backend.js';

let repo: TempRepo;
let server: RunningServer;
let client: TritonGrpcClient;

const model = (name: string, config: string) => {
  repo.addModel(name, `name: "${name}"\n${config}`);
};

const jsModel = (mode: string, inputs = ['INPUT0']) => `
backend: "jstest"
max_batch_size: 0
input [ ${inputs.map((n) => `{ name: "${n}" data_type: TYPE_INT32 dims: [ -1 ] }`).join(', ')} ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
parameters { key: "mode" value: { string_value: "${mode}" } }
`;

/** A sequence model summing INPUT0[0] per correlation ID (START resets); 8 sequences at once (one slot per instance). */
const sumModel = `
backend: "jstest"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
sequence_batching { direct { } max_sequence_idle_microseconds: 60000000 }
instance_group [ { kind: KIND_CPU, count: 8 } ]
parameters { key: "mode" value: { string_value: "corrid_sum" } }
`;

beforeAll(async () => {
  repo = tempRepo([]);
  model('emit', jsModel('response_params'));
  model('pass', jsModel('echo'));
  model('pair', jsModel('echo', ['INPUT0', 'INPUT1']));
  model('sum', sumModel);
  model('sum_beside', sumModel);
  model('sum_first', sumModel);
  // X -> emit -> T -> pass -> U -> sum -> Y (downstream of emit, through a non-sequence step);
  // X -> sum_beside -> Z (beside emit: reads only the ensemble input).
  model(
    'chain',
    ensembleConfig(
      ['X'],
      ['Y', 'Z'],
      [
        { model: 'emit', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'T' } },
        { model: 'pass', inputs: { INPUT0: 'T' }, outputs: { OUTPUT0: 'U' } },
        { model: 'sum', inputs: { INPUT0: 'U' }, outputs: { OUTPUT0: 'Y' } },
        { model: 'sum_beside', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'Z' } },
      ],
    ),
  );
  // A step reading an overridden tensor (first in its input_map) and one carrying the request's
  // settings: it takes the first input's. Its output then reaches sum_first.
  model(
    'conflict',
    ensembleConfig(
      ['X'],
      ['Y'],
      [
        { model: 'emit', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'T' } },
        { model: 'pass', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'P' } },
        { model: 'pair', inputs: { INPUT0: 'T', INPUT1: 'P' }, outputs: { OUTPUT0: 'U' } },
        { model: 'sum_first', inputs: { INPUT0: 'U' }, outputs: { OUTPUT0: 'Y' } },
      ],
    ),
  );
  model(
    'plain',
    ensembleConfig(
      ['X'],
      ['Y'],
      [
        { model: 'pass', inputs: { INPUT0: 'X' }, outputs: { OUTPUT0: 'T' } },
        { model: 'pass', inputs: { INPUT0: 'T' }, outputs: { OUTPUT0: 'Y' } },
      ],
    ),
  );
  server = await startTestServer(repo, {
    modelControlMode: 'none',
    grpcPort: 0,
    backendResolvers: [new JsBackendResolver()],
  });
  client = tritonGrpcClient(server.grpcUrl!);
});
afterAll(async () => {
  client?.close();
  await server?.stop();
  repo?.cleanup();
});

/** One ensemble request with X = [x]: the outputs by name (first element), the response parameters, or the error. */
async function run(
  ensemble: string,
  x: number,
  parameters: Record<string, unknown>,
): Promise<{ status: number; out: Record<string, number>; parameters?: Record<string, unknown>; error?: string }> {
  const r = await postJson(`${server.httpUrl}/v2/models/${ensemble}/infer`, { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], data: [x] }], parameters });
  if (r.status !== 200) return { status: r.status, out: {}, error: r.json?.error ?? r.text };
  return { status: 200, out: Object.fromEntries(r.json.outputs.map((o: any) => [o.name, o.data[0]])), parameters: r.json.parameters };
}

/** The correlation IDs `model` was given since `from` (an index into correlationIdsSeen). */
const idsSeen = (model: string, from: number) =>
  correlationIdsSeen
    .slice(from)
    .filter((s) => s.model === model)
    .map((s) => s.correlationId);

describe("a step's response parameters set the sequence of the steps downstream", () => {
  it('INT sequence_id with START, then without, then END: the steps downstream follow it, the step beside keeps the request ID', async () => {
    const from = correlationIdsSeen.length;
    const base = { sequence_id: 7, response_sequence_id: 42 };
    expect(await run('chain', 5, { ...base, sequence_start: true, response_sequence_start: true })).toMatchObject({
      status: 200,
      out: { Y: 5, Z: 5 },
      // The first output's (Y: made by sum, whose request had 42 with START).
      parameters: { sequence_id: 42, sequence_start: true, sequence_end: false },
    });
    expect(await run('chain', 3, base)).toMatchObject({
      status: 200,
      out: { Y: 8, Z: 8 },
      parameters: { sequence_id: 42, sequence_start: false, sequence_end: false },
    });
    expect(await run('chain', 1, { ...base, response_sequence_end: true })).toMatchObject({
      status: 200,
      out: { Y: 9, Z: 9 },
      parameters: { sequence_id: 42, sequence_end: true },
    });
    expect(idsSeen('sum', from)).toEqual([42, 42, 42]);
    expect(idsSeen('sum_beside', from)).toEqual([7, 7, 7]);
    // The END came from the response: sequence 42 of `sum` is over, 7 of `sum_beside` is not.
    expect(await run('chain', 1, base)).toEqual({
      status: 400,
      out: {},
      error: "in ensemble 'chain', inference request for sequence 42 to model 'sum' must specify the START flag on the first request of the sequence",
    });
    // A START from the response begins it again (Z: the failed request's sum_beside step may or may not have run).
    expect(await run('chain', 1, { sequence_id: 7, response_sequence_id: 42, response_sequence_start: true })).toMatchObject({ status: 200, out: { Y: 1 } });
  });

  it('the flags start from none: a response naming only sequence_id drops the START the request had', async () => {
    expect(await run('chain', 1, { sequence_id: 9, sequence_start: true, response_sequence_id: 43 })).toEqual({
      status: 400,
      out: {},
      error: "in ensemble 'chain', inference request for sequence 43 to model 'sum' must specify the START flag on the first request of the sequence",
    });
  });

  it("a response naming only a flag keeps the step's ID and drops the request's other flag", async () => {
    const from = correlationIdsSeen.length;
    // The request has START and END; the response says START only: sequence 11 of `sum` stays open.
    expect(await run('chain', 4, { sequence_id: 11, sequence_start: true, sequence_end: true, response_sequence_start: true })).toMatchObject({
      status: 200,
      out: { Y: 4, Z: 4 },
      parameters: { sequence_id: 11, sequence_start: true, sequence_end: false },
    });
    expect(await run('chain', 2, { sequence_id: 11, sequence_start: true, response_sequence_start: false })).toMatchObject({
      status: 200,
      out: { Y: 6, Z: 2 },
    });
    expect(idsSeen('sum', from)).toEqual([11, 11]);
  });

  it("STRING sequence_id; the response's sequence_id is typed as the request's ID (Triton reads it by the request's type)", async () => {
    const from = correlationIdsSeen.length;
    expect(await run('chain', 2, { sequence_id: 5, sequence_start: true, response_sequence_id: 'abc', response_sequence_start: true })).toMatchObject({
      status: 200,
      out: { Y: 2 },
      parameters: { sequence_id: 0, sequence_start: true },
    });
    expect(await run('chain', 2, { sequence_id: 'r', sequence_start: true, response_sequence_id: 44, response_sequence_start: true })).toMatchObject({
      status: 200,
      parameters: { sequence_id: '', sequence_start: true },
    });
    expect(await run('chain', 2, { sequence_id: 'r', response_sequence_id: 'abc' })).toMatchObject({
      status: 200,
      out: { Y: 4 },
      parameters: { sequence_id: 'abc' },
    });
    expect(idsSeen('sum', from)).toEqual(['abc', 44, 'abc']);
  });

  it('an INT sequence_id is read as unsigned 64 bits: -1 is 2^64 − 1, written back as int64 -1', async () => {
    const from = correlationIdsSeen.length;
    const r = await run('chain', 1, { sequence_id: 1, sequence_start: true, response_sequence_id: -1, response_sequence_start: true });
    expect(r).toMatchObject({ status: 200, parameters: { sequence_id: -1, sequence_start: true } });
    expect(idsSeen('sum', from)).toEqual([18446744073709551615n]);
  });

  it.each([
    [{ response_sequence_id: true }, "expected parameter 'sequence_id' to be TRITONSERVER_PARAMETER_INT or TRITONSERVER_PARAMETER_STRING"],
    [{ response_sequence_id: 1.5 }, "expected parameter 'sequence_id' to be TRITONSERVER_PARAMETER_INT or TRITONSERVER_PARAMETER_STRING"],
    [{ response_sequence_start: 1 }, "expect parameter 'sequence_start' to be TRITONSERVER_PARAMETER_BOOL"],
    [{ response_sequence_end: 'yes' }, "expect parameter 'sequence_end' to be TRITONSERVER_PARAMETER_BOOL"],
  ])("a wrong type (%o) fails the request with Triton's INVALID_ARG text; no step downstream runs", async (params, error) => {
    const from = correlationIdsSeen.length;
    expect(await run('chain', 1, { sequence_id: 21, sequence_start: true, ...params })).toEqual({
      status: 400,
      out: {},
      error: `in ensemble 'chain', ${error}`,
    });
    expect(idsSeen('sum', from)).toEqual([]);
  });

  it("a step whose inputs carry different settings takes its first input's (input_map order)", async () => {
    const from = correlationIdsSeen.length;
    expect(await run('conflict', 3, { sequence_id: 8, sequence_start: true, response_sequence_id: 45, response_sequence_start: true })).toMatchObject({
      status: 200,
      out: { Y: 3 },
      parameters: { sequence_id: 45, sequence_start: true },
    });
    expect(idsSeen('sum_first', from)).toEqual([45]);
  });
});

describe("the ensemble's response carries sequence_id / sequence_start / sequence_end (as tritonserver 2.51)", () => {
  it("HTTP: without any sequence parameter, 0 / false / false; with the request's own", async () => {
    expect((await run('plain', 1, {})).parameters).toEqual({ sequence_id: 0, sequence_start: false, sequence_end: false });
    expect((await run('plain', 1, { sequence_id: 'abc', sequence_end: true })).parameters).toEqual({
      sequence_id: 'abc',
      sequence_start: false,
      sequence_end: true,
    });
    expect((await run('plain', 1, { sequence_id: 18446744073709551615n.toString() })).parameters).toEqual({
      sequence_id: '18446744073709551615',
      sequence_start: false,
      sequence_end: false,
    });
    const big = await postJson(
      `${server.httpUrl}/v2/models/plain/infer`,
      '{"inputs":[{"name":"X","datatype":"INT32","shape":[1],"data":[1]}],"parameters":{"sequence_id":18446744073709551615}}',
    );
    expect(big.text).toContain('"parameters":{"sequence_id":-1,"sequence_start":false,"sequence_end":false}');
  });

  it('gRPC: the same parameters', async () => {
    const { res, err } = await unaryCall(client, 'ModelInfer', {
      model_name: 'chain',
      inputs: [{ name: 'X', datatype: 'INT32', shape: [1] }],
      raw_input_contents: [Buffer.from(Int32Array.of(1).buffer)],
      parameters: {
        sequence_id: { int64_param: 31 },
        sequence_start: { bool_param: true },
        response_sequence_id: { string_param: 'g' },
        response_sequence_start: { bool_param: true },
      },
    });
    expect(err?.message).toBeUndefined();
    const p = res.parameters as Record<string, { parameter_choice: string; [k: string]: unknown }>;
    expect({ id: Number(p.sequence_id!.int64_param), start: p.sequence_start!.bool_param, end: p.sequence_end!.bool_param }).toEqual({
      id: 0,
      start: true,
      end: false,
    });
  });
});
