/**
 * Iterative sequences on Warden's Python backend (spec §5.6 `iterative_sequence`, §7.1
 * `request.set_release_flags`): Triton's own test models from server/qa/python_models —
 * `iterative_sequence` (decoupled: one response per run, rescheduled until the last),
 * `request_rescheduling_addsub` (non-decoupled: the first request is rescheduled once with None as
 * its response) and `wrong_return_type` (a response for a rescheduled request is an error) — with
 * the answers Triton's tests expect (L0_iterative_sequence, L0_backend_python/request_rescheduling),
 * plus a model keyed by correlation id serving concurrent requests, and a model without
 * `iterative_sequence` that reschedules (Triton core's INVALID_ARG).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { postJson, tempRepo, type TempRepo, generateStream } from '../../helpers/repo.js';
import { pythonEnvironment, pythonModel } from './helpers.js';

const skip = await pythonEnvironment();

const REFUSED = 'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.';

const DECOUPLED_IO = `max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU } ]
`;
const ADDSUB_IO = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { kind: KIND_CPU } ]
`;

/** server/qa/python_models/iterative_sequence/model.py (its checks of the config left out). */
const ITERATIVE_SEQUENCE = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'python', 'iterative_sequence', 'model.py'), 'utf8');

/** The same, with what is left kept per correlation id (concurrent requests). */
const BY_ID = `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.left = {}

    def execute(self, requests):
        for request in requests:
            cid = request.correlation_id()
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            left = self.left.get(cid, n) - 1
            sender = request.get_response_sender()
            out = pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([left], np.int32))])
            if left <= 0:
                self.left.pop(cid, None)
                sender.send(out, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                self.left[cid] = left
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                sender.send(out)
        return None
`;

/** server/qa/python_models/request_rescheduling_addsub/model.py. */
const RESCHEDULING_ADDSUB = `import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])

        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")

        self.output0_dtype = pb_utils.triton_string_to_numpy(
            output0_config["data_type"]
        )
        self.output1_dtype = pb_utils.triton_string_to_numpy(
            output1_config["data_type"]
        )

        self.idx = 0

    def execute(self, requests):
        output0_dtype = self.output0_dtype
        output1_dtype = self.output1_dtype

        responses = []

        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")

            out_0, out_1 = (
                in_0.as_numpy() + in_1.as_numpy(),
                in_0.as_numpy() - in_1.as_numpy(),
            )

            out_tensor_0 = pb_utils.Tensor("OUTPUT0", out_0.astype(output0_dtype))
            out_tensor_1 = pb_utils.Tensor("OUTPUT1", out_1.astype(output1_dtype))

            inference_response = pb_utils.InferenceResponse(
                output_tensors=[out_tensor_0, out_tensor_1]
            )

            # Explicitly reschedule the first request
            if self.idx == 0:
                request.set_release_flags(
                    pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
                )
                responses.append(None)
                self.idx += 1
            else:
                responses.append(inference_response)

        return responses
`;

/** server/qa/python_models/wrong_return_type/model.py (a response for a rescheduled request). */
const WRONG_RETURN_TYPE = `import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            out_tensor_0 = pb_utils.Tensor("OUTPUT0", in_0.as_numpy())
            request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            # Should append \`None\` for rescheduled requests.
            responses.append(pb_utils.InferenceResponse(output_tensors=[out_tensor_0]))
        return responses
`;

const addSub = (a: number[], b: number[]) => ({
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [16], data: a },
    { name: 'INPUT1', datatype: 'FP32', shape: [16], data: b },
  ],
});

describe.skipIf(skip !== undefined)("iterative sequences on Warden's Python backend (request.set_release_flags)", () => {
  let repo: TempRepo;
  let s: RunningServer;
  beforeAll(async () => {
    repo = tempRepo([]);
    pythonModel(repo, 'iterative_sequence', `${DECOUPLED_IO}sequence_batching { iterative_sequence: true }\n`, ITERATIVE_SEQUENCE);
    pythonModel(repo, 'iterative_by_id', `${DECOUPLED_IO}sequence_batching { iterative_sequence: true }\n`, BY_ID);
    pythonModel(repo, 'request_rescheduling_addsub', `${ADDSUB_IO}sequence_batching { iterative_sequence: true }\n`, RESCHEDULING_ADDSUB);
    pythonModel(repo, 'rescheduling_not_iterative', ADDSUB_IO, RESCHEDULING_ADDSUB);
    pythonModel(
      repo,
      'wrong_return_type',
      `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\nsequence_batching { iterative_sequence: true }\ninstance_group [ { kind: KIND_CPU } ]\n`,
      WRONG_RETURN_TYPE,
    );
    s = await startTestServer(repo, {
      loadModels: ['*'],
    });
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    repo?.cleanup();
  });

  it('iterative_sequence (decoupled): {"IN": 3} streams OUT 2, 1, 0, one response per run (test_grpc_decoupled)', async () => {
    const r = await generateStream(s.httpUrl, 'iterative_sequence', { IN: 3 });
    expect(r.status).toBe(200);
    expect(r.events.map((e) => e.error ?? e.OUT)).toEqual([2, 1, 0]);
  });

  it('concurrent requests each run in a sequence of their own, numbered by the scheduler', async () => {
    const all = await Promise.all([3, 2, 4].map((n) => generateStream(s.httpUrl, 'iterative_by_id', { IN: n })));
    expect(all.map((r) => r.events.map((e) => e.error ?? e.OUT))).toEqual([
      [2, 1, 0],
      [1, 0],
      [3, 2, 1, 0],
    ]);
  });

  it('request_rescheduling_addsub (not decoupled): the rescheduled request is answered by its second run (test_grpc_non_decoupled)', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i * 0.5 - 3);
    const b = Array.from({ length: 16 }, (_, i) => 2 - i);
    const r = await postJson(`${s.httpUrl}/v2/models/request_rescheduling_addsub/infer`, addSub(a, b));
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs.find((o: { name: string }) => o.name === 'OUTPUT0').data).toEqual(a.map((x, i) => x + b[i]!));
    expect(r.json.outputs.find((o: { name: string }) => o.name === 'OUTPUT1').data).toEqual(a.map((x, i) => x - b[i]!));
    // The model ran twice for one request: its statistics count both executions.
    const stats = await fetch(`${s.httpUrl}/v2/models/request_rescheduling_addsub/stats`).then((x) => x.json());
    expect(stats.model_stats[0].execution_count).toBe(2);
  });

  it("a model without iterative_sequence that reschedules: the request gets Triton core's INVALID_ARG", async () => {
    const r = await postJson(`${s.httpUrl}/v2/models/rescheduling_not_iterative/infer`, addSub(new Array(16).fill(1), new Array(16).fill(2)));
    expect(r.status).toBe(400);
    expect(r.json.error).toBe(REFUSED);
    // Only the first request was rescheduled: the next is answered.
    const ok = await postJson(`${s.httpUrl}/v2/models/rescheduling_not_iterative/infer`, addSub(new Array(16).fill(1), new Array(16).fill(2)));
    expect(ok.status, ok.text).toBe(200);
  });

  it("wrong_return_type: a response returned for a rescheduled request is the request's error (pb_stub.cc's text)", async () => {
    const r = await postJson(`${s.httpUrl}/v2/models/wrong_return_type/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] }],
    });
    expect(r.status).toBe(500);
    expect(r.json.error).toContain(
      "Expected a None object in the execute function return list for reschduled request, found type '<class 'triton_python_backend_utils.InferenceResponse'>'.",
    );
  });
});
