/**
 * BLS from Python models (spec §7.2): `InferenceRequest(...).exec()`,
 * `.async_exec()` and `exec(decoupled=True)` run on other models through Warden's scheduler —
 * ONNX (`simple`), wasm (`add_sub_wasm`), native (`add_sub_native`, `repeat_native`) and Python
 * (`add_sub_python`, `repeat_python`) — with the target's errors as `TritonError`s; the
 * bls_python sample over HTTP.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT, postJson, tempRepo, sseEvents } from '../../helpers/repo.js';
import { f32, i32, infer, pythonEnvironment, pythonModel, tensor, pythonServer } from './helpers.js';

const skip = await pythonEnvironment();

describe.skipIf(skip !== undefined)('BLS from Python models', () => {
  const py = pythonServer(
    () => {
      const repo = tempRepo([]);
      pythonModel(
        repo,
        'bls_generic_py',
        `max_batch_size: 0\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]\n`,
        `import json
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    async def execute(self, requests):
        out = []
        for r in requests:
            p = json.loads(r.parameters())
            if p.get("mode") == "ready":
                ready = [pb_utils.is_model_ready(m) for m in ("simple", "no_such_model")] + [pb_utils.is_model_ready("simple", "1"), pb_utils.is_model_ready("simple", "7")]
                v = np.array([1.0 if x else 0.0 for x in ready], np.float32)
                out.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT0", v), pb_utils.Tensor("OUTPUT1", v)]))
                continue
            bls = pb_utils.InferenceRequest(model_name=p["target"], requested_output_names=["OUTPUT0", "OUTPUT1"], inputs=r.inputs())
            res = (await bls.async_exec()) if p.get("mode") == "async" else bls.exec()
            if res.has_error():
                e = res.error()
                out.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("%s|%d" % (e.message(), e.code()), e.code())))
                continue
            out.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", pb_utils.get_output_tensor_by_name(res, "OUTPUT0").as_numpy()),
                pb_utils.Tensor("OUTPUT1", pb_utils.get_output_tensor_by_name(res, "OUTPUT1").as_numpy())]))
        return out
`,
      );
      pythonModel(
        repo,
        'bls_stream_py',
        `max_batch_size: 0\nmodel_transaction_policy { decoupled: true }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]\n`,
        `import json
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    async def execute(self, requests):
        for r in requests:
            p = json.loads(r.parameters())
            sender = r.get_response_sender()
            ins = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            bls = pb_utils.InferenceRequest(model_name=p["target"], requested_output_names=["OUT", "IDX"], inputs=[
                pb_utils.Tensor("IN", ins.copy()),
                pb_utils.Tensor("DELAY", np.zeros(len(ins), np.uint32)),
                pb_utils.Tensor("WAIT", np.zeros(1, np.uint32))])
            responses = (await bls.async_exec(decoupled=True)) if p.get("mode") == "async" else bls.exec(decoupled=True)
            for res in responses:
                if res.has_error():
                    sender.send(pb_utils.InferenceResponse(error=res.error()), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    break
                if res.output_tensors():
                    out = pb_utils.get_output_tensor_by_name(res, "OUT").as_numpy() * 100
                    sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", out), pb_utils.get_output_tensor_by_name(res, "IDX")]))
            else:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
`,
      );
      return repo;
    },
    {
      before: [join(PROJECT_ROOT, 'model_repository')],
      loadModels: [
        'simple',
        'add_sub_wasm',
        'add_sub_native',
        'add_sub_python',
        'repeat_native',
        'repeat_python',
        'bls_python',
        'bls_generic_py',
        'bls_stream_py',
      ],
    },
  );

  const ints = (f: (i: number) => number) => Array.from({ length: 16 }, (_, i) => f(i));

  for (const mode of ['sync', 'async', 'decoupled']) {
    it(`bls_python calls simple (ONNX) with ${mode === 'sync' ? 'exec()' : mode === 'async' ? 'async_exec()' : 'exec(decoupled=True)'}`, async () => {
      const r = await postJson(`${py.s.httpUrl}/v2/models/bls_python/infer`, {
        parameters: { bls_mode: mode },
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: ints((i) => i) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: ints(() => 3) },
        ],
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json.outputs[0]).toEqual({ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: ints((i) => i + 3) });
      expect(r.json.outputs[1]).toEqual({ name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: ints((i) => i - 3) });
    });
  }

  for (const target of ['add_sub_wasm', 'add_sub_native', 'add_sub_python']) {
    for (const mode of ['sync', 'async']) {
      it(`exec / async_exec reach ${target} (${mode})`, async () => {
        const r = await infer(
          py.s,
          'bls_generic_py',
          [tensor('INPUT0', 'FP32', [4], new Float32Array([1, 2, 3, 4])), tensor('INPUT1', 'FP32', [4], new Float32Array([4, 3, 2, 1]))],
          {
            parameters: { target, mode },
          },
        );
        expect(f32(r.responses[0]!.outputs.find((o) => o.name === 'OUTPUT0'))).toEqual([5, 5, 5, 5]);
        expect(f32(r.responses[0]!.outputs.find((o) => o.name === 'OUTPUT1'))).toEqual([-3, -1, 1, 3]);
      });
    }
  }

  it('errors of the call come back as TritonErrors with their codes (unknown model: NOT_FOUND; bad input: INVALID_ARG)', async () => {
    let r = await postJson(`${py.s.httpUrl}/v2/models/bls_generic_py/infer`, {
      parameters: { target: 'no_such_model' },
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      ],
    });
    expect(r.status).toBe(404);
    expect(r.json.error).toMatch(/no_such_model.*\|2$/);
    // simple wants INT32 [16]: FP32 [4] is refused by its validator
    r = await postJson(`${py.s.httpUrl}/v2/models/bls_generic_py/infer`, {
      parameters: { target: 'simple', mode: 'async' },
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/\|3$/);
    // a decoupled target through exec() without decoupled=True
    r = await postJson(`${py.s.httpUrl}/v2/models/bls_generic_py/infer`, {
      parameters: { target: 'repeat_python' },
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toContain("model 'repeat_python' is decoupled: use exec(decoupled=True)");
  });

  for (const [target, mode] of [
    ['repeat_python', 'sync'],
    ['repeat_python', 'async'],
    ['repeat_native', 'sync'],
  ]) {
    it(`exec(decoupled=True) streams ${target}'s responses (${mode}), forwarded over /generate_stream`, async () => {
      const res = await fetch(`${py.s.httpUrl}/v2/models/bls_stream_py/generate_stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ IN: [3, 1, 4, 1, 5], parameters: { target, mode } }),
      });
      expect(res.status).toBe(200);
      const events = sseEvents(await res.text());
      expect(events.map((e) => [e.OUT, e.IDX])).toEqual([300, 100, 400, 100, 500].map((v, i) => [v, i]));
    });
  }

  it('a call back into the model itself is refused (recursion: it would wait on itself), as for sandboxed backends', async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/bls_generic_py/infer`, {
      parameters: { target: 'bls_generic_py' },
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/call to model 'bls_generic_py' refused: the model is already on this call chain \(recursion\).*\|3$/);
  });

  it('pb_utils.is_model_ready asks Warden', async () => {
    const r = await infer(py.s, 'bls_generic_py', [tensor('INPUT0', 'FP32', [4], new Float32Array(4)), tensor('INPUT1', 'FP32', [4], new Float32Array(4))], {
      parameters: { mode: 'ready' },
    });
    expect(f32(r.responses[0]!.outputs[0])).toEqual([1, 0, 1, 0]);
  });

  it('many concurrent BLS calls complete, and the arenas do not leak', async () => {
    const all = await Promise.all(
      Array.from({ length: 40 }, (_, k) =>
        infer(
          py.s,
          'bls_generic_py',
          [tensor('INPUT0', 'FP32', [4], new Float32Array([k, 0, 0, 0])), tensor('INPUT1', 'FP32', [4], new Float32Array([1, 1, 1, 1]))],
          {
            parameters: { target: k % 2 ? 'add_sub_python' : 'add_sub_wasm', mode: k % 3 ? 'sync' : 'async' },
          },
        ),
      ),
    );
    all.forEach((r, k) => expect(f32(r.responses[0]!.outputs[0])[0]).toBe(k + 1));
    const i = await infer(py.s, 'bls_python', [
      tensor('INPUT0', 'INT32', [1, 16], new Int32Array(16).fill(2)),
      tensor('INPUT1', 'INT32', [1, 16], new Int32Array(16).fill(1)),
    ]);
    expect(i32(i.responses[0]!.outputs[0])).toEqual(Array(16).fill(3));
  });
});
