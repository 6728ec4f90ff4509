/**
 * The stub's reading discipline (no thread hand-off per request): the idle main
 * thread reads the socket and runs `execute` itself, so whatever must arrive while a model is busy
 * is read by someone else — a BLS call waiting in a background thread (while the main thread sits
 * in its read), `is_cancelled()` polled by a long `execute`, and the watchdog for an `execute` that
 * reads nothing (readiness checks keep being answered).
 */
import { describe, expect, it } from 'vitest';
import { sleep } from '../../helpers/wait.js';
import { inferAndCollect } from '../../../host/src/dataplane/inference.js';
import { emptyRequestInit } from '../../../host/src/dataplane/request-parameters.js';
import { SINGLE_USER } from '../../../host/src/contract/types.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { i32, pythonEnvironment, pythonModel, tensor, pythonServer } from './helpers.js';

const skip = await pythonEnvironment();
if (skip) console.warn(`Python stub thread tests skipped: ${skip}`);

const X = `max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 16 ] } ]
`;

function buildRepo(): TempRepo {
  const repo = tempRepo(['simple']);
  // Decoupled: each request is answered from a background thread after a BLS call to simple,
  // while the main thread is back reading the socket.
  pythonModel(
    repo,
    'bg_bls_py',
    X + 'model_transaction_policy { decoupled: true }\n',
    `import threading
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            threading.Thread(target=self.run, args=(r,), daemon=True).start()
        return None
    def run(self, r):
        x = r.inputs()[0].as_numpy().reshape(1, 16)
        bls = pb_utils.InferenceRequest(model_name="simple", requested_output_names=["OUTPUT0"],
                                        inputs=[pb_utils.Tensor("INPUT0", x), pb_utils.Tensor("INPUT1", x)]).exec()
        out = pb_utils.get_output_tensor_by_name(bls, "OUTPUT0").as_numpy().reshape(16)
        r.get_response_sender().send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", out)]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
`,
  );
  // A long execute that stops when its request is cancelled (it reads nothing else).
  pythonModel(
    repo,
    'poll_cancel_py',
    X,
    `import time
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20 and not all(r.is_cancelled() for r in requests):
            time.sleep(0.005)
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", r.inputs()[0].as_numpy())]) for r in requests]
`,
  );
  // A long execute that never reads; is_ready must still be answered.
  pythonModel(
    repo,
    'busy_py',
    X + 'parameters { key: "is_ready_cache_ms" value { string_value: "0" } }\n',
    `import time
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def is_ready(self):
        return True
    def execute(self, requests):
        time.sleep(3)
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", r.inputs()[0].as_numpy())]) for r in requests]
`,
  );
  return repo;
}

const x16 = (k: number) => new Int32Array(Array.from({ length: 16 }, (_, i) => i + k));

describe.skipIf(skip !== undefined)('Python stub reading discipline', () => {
  const py = pythonServer(buildRepo, { logLevel: 'silent' });

  it('BLS calls from background threads get their answers while the main thread reads (several at once)', async () => {
    const run = (k: number) =>
      inferAndCollect(py.s.api, SINGLE_USER, 'bg_bls_py', -1, { ...emptyRequestInit('bg_bls_py', -1), inputs: [tensor('X', 'INT32', [16], x16(k))] });
    const rs = await Promise.all([1, 2, 3, 4].map(run));
    rs.forEach((r, j) => expect(i32(r.responses[0]!.outputs[0])).toEqual([...x16(j + 1)].map((v) => 2 * v)));
  });

  it('a long execute polling is_cancelled() sees its cancellation', async () => {
    const abort = new AbortController();
    const first = inferAndCollect(
      py.s.api,
      SINGLE_USER,
      'poll_cancel_py',
      -1,
      { ...emptyRequestInit('poll_cancel_py', -1), inputs: [tensor('X', 'INT32', [16], x16(0))] },
      abort.signal,
    ).catch((e: Error) => e);
    await sleep(300);
    const t0 = Date.now();
    abort.abort();
    await first; // answered once that execute returned (it would run 20 s without seeing the cancellation)
    expect(Date.now() - t0).toBeLessThan(5_000);
  }, 30_000);

  it('readiness checks are answered while execute runs without reading (watchdog)', async () => {
    const busy = postJson(`${py.s.httpUrl}/v2/models/busy_py/infer`, { inputs: [{ name: 'X', datatype: 'INT32', shape: [16], data: [...x16(0)] }] });
    await sleep(300);
    const t0 = Date.now();
    const status = (await fetch(`${py.s.httpUrl}/v2/models/busy_py/ready`)).status;
    const took = Date.now() - t0;
    expect(status).toBe(200);
    expect(took).toBeLessThan(1_500); // the execute still has ~2.7 s to go
    expect((await busy).status).toBe(200);
  }, 30_000);
});
