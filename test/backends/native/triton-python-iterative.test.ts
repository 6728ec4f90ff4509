/**
 * Iterative sequences with Triton's own, unmodified Python backend (`libtriton_python.so` from
 * PyPI's nvidia-pytriton wheel, test/backends/native/triton-wheel.ts) in Warden's native backend host,
 * compared answer for answer with the real `tritonserver` from the same wheel serving the same
 * models (spec §5.6 `iterative_sequence`, §6.7 item 6). python_be.cc releases a request with the
 * flags `request.set_release_flags` set, so TRITONBACKEND_RequestRelease(RESCHEDULE) and Warden's
 * iterative sequence batcher are what this exercises. Models: Triton's
 * server/qa/python_models/iterative_sequence (decoupled) and request_rescheduling_addsub.
 *
 * Skips (with the reason) when PyPI is unreachable or the machine cannot run the wheel.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postJson, generateStream } from '../../helpers/repo.js';
import { wheelServers } from './triton-wheel.js';

const MODELS = ['iterative_sequence', 'request_rescheduling_addsub'];

/** server/qa/python_models/iterative_sequence/model.py (its checks of the config left out). */
const ITERATIVE_SEQUENCE = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'python', 'iterative_sequence', 'model.py'), 'utf8');

/** server/qa/python_models/request_rescheduling_addsub/model.py. */
const RESCHEDULING_ADDSUB = `import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.idx = 0

    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            response = pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", in_0 + in_1), pb_utils.Tensor("OUTPUT1", in_0 - in_1)])
            # Explicitly reschedule the first request
            if self.idx == 0:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                responses.append(None)
                self.idx += 1
            else:
                responses.append(response)
        return responses
`;

describe("iterative sequences: Triton's real Python backend in Warden's native host vs the real tritonserver", () => {
  const tp = wheelServers(
    'tpyit',
    (repo) => {
      repo.write(
        'iterative_sequence/config.pbtxt',
        `name: "iterative_sequence"\nbackend: "python"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: True }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\nsequence_batching { iterative_sequence : true }\ninstance_group [{ kind: KIND_CPU }]\n`,
      );
      repo.write('iterative_sequence/1/model.py', ITERATIVE_SEQUENCE);
      repo.write(
        'request_rescheduling_addsub/config.pbtxt',
        `name: "request_rescheduling_addsub"\nbackend: "python"\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]\nsequence_batching { iterative_sequence : true }\ninstance_group [{ kind: KIND_CPU }]\n`,
      );
      repo.write('request_rescheduling_addsub/1/model.py', RESCHEDULING_ADDSUB);
    },
    { warden: { loadModels: MODELS, metricsPort: -1 }, tritonModels: MODELS },
  );

  it('iterative_sequence: {"IN": 3} streams OUT 2, 1, 0 from both servers', async (ctx) => {
    if (!tp.wheel.ok) return ctx.skip(`Triton's Python backend wheel unavailable: ${tp.wheel.reason}`);
    const w = await generateStream(tp.warden!.httpUrl, 'iterative_sequence', { IN: 3 });
    const t = await generateStream(tp.triton!.url, 'iterative_sequence', { IN: 3 });
    expect(t.status).toBe(200);
    expect(w.status).toBe(200);
    expect(w.events).toEqual([2, 1, 0].map((v) => ({ model_name: 'iterative_sequence', model_version: '1', OUT: v })));
    expect(w.events).toEqual(t.events);
  });

  it('request_rescheduling_addsub: the rescheduled first request is answered by its second run on both servers', async (ctx) => {
    if (!tp.wheel.ok) return ctx.skip(`Triton's Python backend wheel unavailable: ${tp.wheel.reason}`);
    const a = Array.from({ length: 16 }, (_, i) => i - 4);
    const b = Array.from({ length: 16 }, (_, i) => 3 * i);
    const body = {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16], data: a },
        { name: 'INPUT1', datatype: 'FP32', shape: [16], data: b },
      ],
    };
    const w = await postJson(`${tp.warden!.httpUrl}/v2/models/request_rescheduling_addsub/infer`, body);
    const t = await postJson(`${tp.triton!.url}/v2/models/request_rescheduling_addsub/infer`, body);
    expect(t.status, t.text).toBe(200);
    expect(w.status, w.text).toBe(200);
    const byName = (o: { name: string }[]) => [...o].sort((x, y) => x.name.localeCompare(y.name));
    expect(byName(w.json.outputs)).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [16], data: a.map((x, i) => x + b[i]!) },
      { name: 'OUTPUT1', datatype: 'FP32', shape: [16], data: a.map((x, i) => x - b[i]!) },
    ]);
    expect(byName(w.json.outputs)).toEqual(byName(t.json.outputs));
  });
});
