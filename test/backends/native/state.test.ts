// Implicit state for native (C ABI) sequence backends (spec §5.6 sequence_batching.state, §6
// TRITONBACKEND_StateNew / StateBuffer / StateUpdate / StateBufferAttributes) over HTTP: the
// sample `warden_accumulate` keeps a running sum in the state the sequence batcher feeds back,
// with interleaved and concurrent sequences (direct, batched), an initial state from a data_file
// (oldest), START resetting the state; and a backend misusing the API gets clear errors.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { BACKEND_DIR, TEST_BACKEND_DIR, loadNative, pbtxtConfig, request, requireNativeBuild, resolver, run, tensor } from './helpers.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;

const state = (initial: string) =>
  `state [ { input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 dims: [ 1 ] initial_state [ { data_type: TYPE_INT32 dims: [ 1 ] ${initial} name: "init" } ] } ]`;
const IO = `input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]`;

beforeAll(async () => {
  requireNativeBuild();
  repo = tempRepo([]);
  const model = (name: string, config: string) => {
    repo.write(`${name}/config.pbtxt`, config);
    mkdirSync(join(repo.path, name, '1'), { recursive: true });
  };
  model(
    'acc_direct',
    `backend: "warden_accumulate"\nmax_batch_size: 2\nsequence_batching {\n  max_sequence_idle_microseconds: 5000000\n  direct { max_queue_delay_microseconds: 2000 }\n  ${state('zero_data: true')}\n}\n${IO}\ninstance_group [ { kind: KIND_CPU count: 1 } ]`,
  );
  model(
    'acc_oldest',
    `backend: "warden_accumulate"\nmax_batch_size: 0\nsequence_batching {\n  oldest { max_candidate_sequences: 4 }\n  ${state('data_file: "hundred.bin"')}\n}\n${IO}`,
  );
  repo.write('acc_oldest/initial_state/hundred.bin', Buffer.from(Int32Array.of(100).buffer));
  model(
    'state_misuse',
    `backend: "warden_test_errors"\nmax_batch_size: 0\nparameters { key: "mode" value: { string_value: "state_misuse" } }\nsequence_batching {\n  ${state('zero_data: true')}\n}\ninput [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 4 ] } ]`,
  );
  // The misuse fixture is a test backend: its library sits in the model directory.
  const { copyFileSync } = await import('node:fs');
  copyFileSync(
    join(TEST_BACKEND_DIR, 'warden_test_errors', 'libtriton_warden_test_errors.so'),
    join(repo.path, 'state_misuse', 'libtriton_warden_test_errors.so'),
  );
  server = await startTestServer(repo, {
    loadModels: ['*'],
    backendDirectory: BACKEND_DIR,
  });
  url = server.httpUrl;
});
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

/** One sequence request; returns OUTPUT's value (and the whole reply for checks). */
async function step(model: string, id: number | string, value: number, flags: { start?: boolean; end?: boolean }, batched: boolean) {
  const r = await postJson(`${url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: batched ? [1, 1] : [1], data: [value] }],
    parameters: { sequence_id: id, sequence_start: flags.start ?? false, sequence_end: flags.end ?? false },
  });
  expect(r.status, r.text).toBe(200);
  // The state output never reaches the client: the batcher takes it out of the response.
  expect(r.json.outputs.map((o: { name: string }) => o.name)).toEqual(['OUTPUT']);
  return r.json.outputs[0].data[0] as number;
}

async function sequence(model: string, id: number | string, values: number[], batched: boolean): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) {
    out.push(await step(model, id, values[i]!, { start: i === 0, end: i === values.length - 1 }, batched));
  }
  return out;
}

const runningSums = (init: number, values: number[]) => values.map((_, i) => init + values.slice(0, i + 1).reduce((a, b) => a + b, 0));

describe('native implicit state (warden_accumulate)', () => {
  it('interleaved sequences keep separate running sums (direct, one request at a time)', async () => {
    const a = [1, 2, 3, 4];
    const b = [10, -20, 30, -40];
    const got: Record<string, number[]> = { a: [], b: [] };
    for (let i = 0; i < a.length; i++) {
      const flags = { start: i === 0, end: i === a.length - 1 };
      got.a!.push(await step('acc_direct', 11, a[i]!, flags, true));
      got.b!.push(await step('acc_direct', 'seq-b', b[i]!, flags, true));
    }
    expect(got.a).toEqual(runningSums(0, a));
    expect(got.b).toEqual(runningSums(0, b));
  });

  it('concurrent sequences batched together on one instance stay apart', async () => {
    const seqs = [
      [5, 5, 5, 5, 5],
      [1, 2, 3, 4, 5],
      [-7, 7, -7, 7, -7],
    ];
    const results = await Promise.all(seqs.map((v, k) => sequence('acc_direct', 100 + k, v, true)));
    results.forEach((r, k) => expect(r).toEqual(runningSums(0, seqs[k]!)));
  });

  it('a new START resets the state to the initial state', async () => {
    expect(await sequence('acc_direct', 12, [3, 4], true)).toEqual([3, 7]);
    expect(await sequence('acc_direct', 12, [3, 4], true)).toEqual([3, 7]);
  });

  it('initial state from a data_file (oldest strategy, no batching)', async () => {
    const [x, y] = await Promise.all([sequence('acc_oldest', 1, [1, 2, 3], false), sequence('acc_oldest', 2, [-1, -2], false)]);
    expect(x).toEqual([101, 103, 106]);
    expect(y).toEqual([99, 97]);
  });

  it('misuse of the state API gets clear errors, and the model keeps serving', async () => {
    const r = await postJson(`${url}/v2/models/state_misuse/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [1] }],
      parameters: { sequence_id: 5, sequence_start: true, sequence_end: true },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual([
      "state 'OUTPUT0' is not a valid state of model 'state_misuse': a state is the output_name of a sequence_batching state, requested by the sequence batcher",
      "state 'NOT_A_STATE' is not a valid state of model 'state_misuse': a state is the output_name of a sequence_batching state, requested by the sequence batcher",
      "state 'OUTPUT_STATE' of shape [1] and type INT32 needs 4 bytes, got a request for 3",
      "no buffer was allocated for state 'OUTPUT_STATE' (TRITONBACKEND_StateBuffer) before TRITONBACKEND_StateUpdate",
    ]);
    expect(await sequence('acc_direct', 13, [2, 2], true)).toEqual([2, 4]);
  });
});

describe('a state update before a flags-only FINAL (decoupled backend)', () => {
  it('travels in a response of its own, made by the host, carrying only the state', async () => {
    const errors = resolver({ backendDirectory: TEST_BACKEND_DIR });
    const config = pbtxtConfig(
      'state_final',
      `backend: "warden_test_errors" max_batch_size: 0
      model_transaction_policy { decoupled: true }
      input { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] }
      output { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] }
      parameters { key: "mode" value: { string_value: "state_flags_final" } }`,
    );
    const m = await loadNative(errors, config, '/nonexistent/state_final');
    // As the sequence batcher sends it: the state's output_name is requested.
    const { collected } = await run(m.instances[0]!, [
      request('state_final', [tensor('INPUT0', 'INT32', [1], new Int32Array([7]))], ['OUTPUT0', 'OUTPUT_STATE']),
    ]);
    const rs = collected[0]!.responses;
    expect(rs.map((r) => [r.final, r.response?.outputs.map((o) => o.name)])).toEqual([
      [false, ['OUTPUT0']],
      [true, ['OUTPUT_STATE']],
    ]);
    expect(Array.from(new Int32Array(rs[1]!.response!.outputs[0]!.data.slice().buffer))).toEqual([42]);
    await m.unload();
    await errors.finalizeAll();
  });
});
