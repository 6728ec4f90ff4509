/**
 * Warden's Python backend (spec §7): TritonPythonModel models served over
 * HTTP and in-process — initialize args, every datatype (BYTES, BF16 included), the dynamic
 * batcher, shared-memory tensors (64 MiB), execute raising / crashing / hanging with a
 * well-behaved model served meanwhile and the process restarted, auto_complete_config, Logger and
 * custom metrics, EXECUTION_ENV_PATH.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { until } from '../../helpers/wait.js';
import { postJson, PROJECT_ROOT, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { MAX_MESSAGE_BYTES } from '../../../host/src/backends/python/ipc.js';
import { f32, i32, infer, pythonEnvironment, pythonModel, tensor, pythonServer } from './helpers.js';

const skip = await pythonEnvironment();
if (skip) console.warn(`Python backend tests skipped: ${skip}`);

const TYPES: [string, string][] = [
  ['BOOL', 'TYPE_BOOL'],
  ['UINT8', 'TYPE_UINT8'],
  ['UINT16', 'TYPE_UINT16'],
  ['UINT32', 'TYPE_UINT32'],
  ['UINT64', 'TYPE_UINT64'],
  ['INT8', 'TYPE_INT8'],
  ['INT16', 'TYPE_INT16'],
  ['INT32', 'TYPE_INT32'],
  ['INT64', 'TYPE_INT64'],
  ['FP16', 'TYPE_FP16'],
  ['FP32', 'TYPE_FP32'],
  ['FP64', 'TYPE_FP64'],
  ['BYTES', 'TYPE_STRING'],
  ['BF16', 'TYPE_BF16'],
];

function buildRepo(): TempRepo {
  const repo = tempRepo([]);
  cpSync(join(PROJECT_ROOT, 'model_repository', 'add_sub_python'), join(repo.path, 'add_sub_python'), { recursive: true });
  const io = (prefix: string) => TYPES.map(([dt, ct]) => `{ name: "${prefix}_${dt}" data_type: ${ct} dims: [ -1 ] }`).join(',\n');
  pythonModel(
    repo,
    'types_py',
    `max_batch_size: 0\ninput [\n${io('IN')}\n]\noutput [\n${io('OUT')}\n]\n`,
    `import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            ts = []
            for t in r.inputs():
                name = "OUT_" + t.name()[3:]
                if t.name() == "IN_BF16":
                    try:
                        t.as_numpy()
                        raise RuntimeError("as_numpy on BF16 should raise")
                    except pb_utils.TritonModelException:
                        pass
                    ts.append(pb_utils.Tensor.from_dlpack(name, t.to_dlpack()))
                else:
                    a = t.as_numpy()
                    if t.name() == "IN_BYTES":
                        assert a.dtype == object and all(isinstance(x, bytes) for x in a), a
                    ts.append(pb_utils.Tensor(name, a.copy()))
            out.append(pb_utils.InferenceResponse(output_tensors=ts))
        return out
`,
  );
  pythonModel(
    repo,
    'args_py',
    `max_batch_size: 0\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] } ]\ninstance_group [ { kind: KIND_CPU count: 2 } ]\n`,
    `import json
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def initialize(self, args):
        self.args = args
    def execute(self, requests):
        out = []
        for r in requests:
            info = {"args": self.args, "id": r.request_id(), "correlation_id": r.correlation_id(), "flags": r.flags(),
                    "correlation_id_type": type(r.correlation_id()).__name__, "correlation_id_text": str(r.correlation_id()),
                    "parameters": r.parameters(), "requested": r.requested_output_names(), "model_dir": pb_utils.get_model_dir()}
            out.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("INFO", np.array([json.dumps(info).encode()], dtype=object))]))
        return out
`,
  );
  pythonModel(
    repo,
    'batch_py',
    `max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 200000 }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
    `import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        n = len(requests)
        return [pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() * 10),
            pb_utils.Tensor("N", np.full((r.inputs()[0].shape()[0], 1), n, dtype=np.int32))]) for r in requests]
`,
  );
  pythonModel(
    repo,
    'faulty_py',
    `max_batch_size: 0\nparameters { key: "execute_timeout_ms" value { string_value: "1500" } }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "PID" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
    `import ctypes, os, time
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            v = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0])
            if v == -1:
                raise ValueError("bad value -1")
            if v == -2:
                os._exit(3)
            if v == -3:
                ctypes.string_at(0)
            if v == -4:
                time.sleep(3600)
            if v == -5:
                out.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("not found here", pb_utils.TritonError.NOT_FOUND)))
                continue
            out.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([v], np.int32)), pb_utils.Tensor("PID", np.array([os.getpid()], np.int32))]))
        return out
`,
  );
  pythonModel(
    repo,
    'big_py',
    `max_batch_size: 0\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`,
    `import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", r.inputs()[0].as_numpy())]) for r in requests]
`,
  );
  pythonModel(
    repo,
    'metrics_py',
    `max_batch_size: 0\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n`,
    `import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def initialize(self, args):
        self.family = pb_utils.MetricFamily("py_requests_total", "Requests seen by metrics_py", pb_utils.MetricFamily.COUNTER)
        self.counter = self.family.Metric(labels={"model": args["model_name"]})
        self.hist = pb_utils.MetricFamily("py_value", "IN values", pb_utils.MetricFamily.HISTOGRAM).Metric(labels={}, buckets=[1, 10])
    def execute(self, requests):
        for r in requests:
            self.counter.increment(1)
            self.hist.observe(float(r.inputs()[0].as_numpy()[0]))
            pb_utils.Logger.log_info("metrics_py saw a request")
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", r.inputs()[0].as_numpy())]) for r in requests]
`,
  );
  repo.write('autocomplete_py/config.pbtxt', 'backend: "python"\n');
  repo.write(
    'autocomplete_py/1/model.py',
    `import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.set_max_batch_size(4)
        config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [2]})
        config.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [2]})
        config.set_dynamic_batching()
        return config
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", r.inputs()[0].as_numpy() * 2)]) for r in requests]
`,
  );
  // EXECUTION_ENV_PATH: a virtualenv inside the model directory (a link to the project's .venv).
  pythonModel(
    repo,
    'env_py',
    `max_batch_size: 0\nparameters { key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/env" } }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "EXE" data_type: TYPE_STRING dims: [ 1 ] } ]\n`,
    `import sys
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("EXE", np.array([sys.executable.encode()], dtype=object))]) for r in requests]
`,
  );
  symlinkSync(join(PROJECT_ROOT, '.venv'), join(repo.path, 'env_py', 'env'));
  return repo;
}

describe.skipIf(skip !== undefined)('Python backend', () => {
  const py = pythonServer(buildRepo, { logLevel: 'debug', metricsPort: 0 });

  it('add_sub_python over HTTP: Triton add/sub semantics, FP32 [4]', async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/add_sub_python/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [0.5, 1, 1.5, 2] },
      ],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [4], data: [1.5, 3, 4.5, 6] },
      { name: 'OUTPUT1', datatype: 'FP32', shape: [4], data: [0.5, 1, 1.5, 2] },
    ]);
  });

  it("initialize gets Triton's args (strings); requests carry id, correlation id, parameters as JSON, requested outputs", async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/args_py/infer`, {
      id: 'req-7',
      parameters: { sequence_id: 0, temperature: 0.5, tag: 'x' },
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }],
      outputs: [{ name: 'INFO' }],
    });
    expect(r.status, r.text).toBe(200);
    const info = JSON.parse(r.json.outputs[0].data[0]);
    expect(info.args).toMatchObject({
      model_name: 'args_py',
      model_version: '1',
      model_instance_kind: 'CPU',
      model_instance_device_id: '0',
      model_repository: join(py.repo.path, 'args_py'),
    });
    expect(info.args.model_instance_name).toMatch(/^args_py_0_[01]$/);
    expect(JSON.parse(info.args.model_config)).toMatchObject({ name: 'args_py', backend: 'python' });
    expect(info).toMatchObject({ id: 'req-7', correlation_id: 0, flags: 0, requested: ['INFO'] });
    expect(JSON.parse(info.parameters)).toEqual({ temperature: 0.5, tag: 'x' });
    expect(info.model_dir).toBe(join(py.repo.path, 'args_py'));
  });

  it('a correlation id above 2^53 reaches the model as an int (exact), a string id as a str', async () => {
    for (const [raw, type, text] of [
      ['9223372036854775813', 'int', '9223372036854775813'],
      ['"order-7"', 'str', 'order-7'],
    ]) {
      const body = `{"parameters":{"sequence_id":${raw}},"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1]}]}`;
      const r = await fetch(`${py.s.httpUrl}/v2/models/args_py/infer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const json = (await r.json()) as { outputs: { data: string[] }[] };
      expect(r.status).toBe(200);
      expect(JSON.parse(json.outputs[0]!.data[0]!)).toMatchObject({ correlation_id_type: type, correlation_id_text: text });
    }
  });

  it('every datatype crosses both ways through shared memory, BYTES as object arrays, BF16 through DLPack', async () => {
    const n = 5;
    const inputs = TYPES.map(([dt]) => {
      const name = `IN_${dt}`;
      switch (dt) {
        case 'BOOL':
          return tensor(name, 'BOOL', [n], new Uint8Array([1, 0, 1, 1, 0]));
        case 'UINT8':
          return tensor(name, 'UINT8', [n], new Uint8Array([0, 1, 127, 200, 255]));
        case 'UINT16':
          return tensor(name, 'UINT16', [n], new Uint16Array([0, 1, 300, 40000, 65535]));
        case 'UINT32':
          return tensor(name, 'UINT32', [n], new Uint32Array([0, 1, 2 ** 31, 4e9, 2 ** 32 - 1]));
        case 'UINT64':
          return tensor(name, 'UINT64', [n], new BigUint64Array([0n, 1n, 2n ** 63n, 5n, 2n ** 64n - 1n]));
        case 'INT8':
          return tensor(name, 'INT8', [n], new Int8Array([-128, -1, 0, 1, 127]));
        case 'INT16':
          return tensor(name, 'INT16', [n], new Int16Array([-32768, -1, 0, 1, 32767]));
        case 'INT32':
          return tensor(name, 'INT32', [n], new Int32Array([-(2 ** 31), -1, 0, 1, 2 ** 31 - 1]));
        case 'INT64':
          return tensor(name, 'INT64', [n], new BigInt64Array([-(2n ** 63n), -1n, 0n, 1n, 2n ** 63n - 1n]));
        case 'FP16':
          return tensor(name, 'FP16', [n], new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000]));
        case 'FP32':
          return tensor(name, 'FP32', [n], new Float32Array([1.5, -2, 3.25, 1e-30, -0]));
        case 'FP64':
          return tensor(name, 'FP64', [n], new Float64Array([Math.PI, -1e300, 0, 2 ** -1074, 7]));
        case 'BF16':
          return tensor(name, 'BF16', [n], new Uint16Array([0x3f80, 0xc000, 0x7f7f, 0x0001, 0x8000]));
        default: {
          const els = ['', 'a', 'héllo', '\u0000bin\u0001', 'x'.repeat(1000)].map((e) => Buffer.from(e, 'utf8'));
          const buf = Buffer.concat(els.flatMap((e) => [Buffer.from(new Uint32Array([e.length]).buffer), e]));
          return tensor(name, 'BYTES', [n], buf);
        }
      }
    });
    const { responses } = await infer(py.s, 'types_py', inputs);
    expect(responses).toHaveLength(1);
    for (const inp of inputs) {
      const out = responses[0]!.outputs.find((o) => o.name === `OUT_${inp.name.slice(3)}`);
      expect(out, inp.name).toBeDefined();
      expect(out!.datatype).toBe(inp.datatype);
      expect(out!.shape).toEqual([n]);
      expect(Buffer.from(out!.data).equals(Buffer.from(inp.data)), inp.name).toBe(true);
    }
  });

  it('the dynamic batcher hands execute several requests; each gets its own rows back', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => infer(py.s, 'batch_py', [tensor('IN', 'INT32', [1, 1], new Int32Array([i]))])));
    results.forEach((r, i) => expect(i32(r.responses[0]!.outputs.find((o) => o.name === 'OUT'))).toEqual([i * 10]));
    const sizes = results.map((r) => i32(r.responses[0]!.outputs.find((o) => o.name === 'N'))[0]!);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
  });

  it('a 64 MiB FP32 tensor round-trips through shared memory (the control socket bound is 16 MiB: it cannot travel there)', async () => {
    const n = 16 * 1024 * 1024;
    expect(n * 4).toBeGreaterThan(MAX_MESSAGE_BYTES);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i += 4099) data[i] = i * 0.5;
    data[n - 1] = -42.25;
    const { responses } = await infer(py.s, 'big_py', [tensor('IN', 'FP32', [n], data)]);
    const out = responses[0]!.outputs[0]!;
    expect(out.shape).toEqual([n]);
    expect(out.data.byteLength).toBe(n * 4);
    expect(Buffer.from(out.data).equals(Buffer.from(data.buffer))).toBe(true);
  });

  it("execute raising: the request gets the model's error, the process is not restarted", async () => {
    const ok = await infer(py.s, 'faulty_py', [tensor('IN', 'INT32', [1], new Int32Array([5]))]);
    const pid = i32(ok.responses[0]!.outputs.find((o) => o.name === 'PID'))[0];
    const r = await postJson(`${py.s.httpUrl}/v2/models/faulty_py/infer`, { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [-1] }] });
    expect(r.status).toBe(500);
    expect(r.json.error).toContain('ValueError: bad value -1');
    // An error response (TritonError with its code) maps to that code's status.
    const nf = await postJson(`${py.s.httpUrl}/v2/models/faulty_py/infer`, { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [-5] }] });
    expect(nf.status).toBe(404);
    expect(nf.json.error).toBe('not found here');
    const again = await infer(py.s, 'faulty_py', [tensor('IN', 'INT32', [1], new Int32Array([6]))]);
    expect(i32(again.responses[0]!.outputs.find((o) => o.name === 'PID'))[0]).toBe(pid);
  });

  for (const [what, value, reason] of [
    ['os._exit', -2, /exited with code 3/],
    ['a segfault', -3, /signal SIGSEGV/],
    ['a hang past execute_timeout_ms', -4, /did not return within its deadline/],
  ] as const) {
    it(`${what}: the in-flight request gets an error, the log says why, another model keeps serving, the process restarts`, async () => {
      const before = await infer(py.s, 'faulty_py', [tensor('IN', 'INT32', [1], new Int32Array([1]))]);
      const pid = i32(before.responses[0]!.outputs.find((o) => o.name === 'PID'))[0];
      const bad = postJson(`${py.s.httpUrl}/v2/models/faulty_py/infer`, { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [value] }] });
      // meanwhile another Python model serves
      for (let i = 0; i < 5; i++) {
        const r = await infer(py.s, 'add_sub_python', [
          tensor('INPUT0', 'FP32', [4], new Float32Array([i, 0, 0, 0])),
          tensor('INPUT1', 'FP32', [4], new Float32Array([1, 1, 1, 1])),
        ]);
        expect(f32(r.responses[0]!.outputs[0])[0]).toBe(i + 1);
      }
      const r = await bad;
      expect(r.status).toBe(503);
      expect(r.json.error).toMatch(reason);
      expect(r.json.error).toContain("Python model 'faulty_py'");
      expect(py.log.some((l) => l.includes('"model":"faulty_py"') && reason.test(l) && l.includes('restarting it'))).toBe(true);
      // the instance comes back with a new process
      let after: Awaited<ReturnType<typeof infer>> | undefined;
      const answered = async () =>
        (after = await infer(py.s, 'faulty_py', [tensor('IN', 'INT32', [1], new Int32Array([2]))]).catch(() => undefined)) !== undefined;
      await until(answered, { within: 10_000, every: 100, what: 'faulty_py answering again' });
      expect(after).toBeDefined();
      expect(i32(after!.responses[0]!.outputs.find((o) => o.name === 'PID'))[0]).not.toBe(pid);
      expect((await fetch(`${py.s.httpUrl}/v2/health/ready`)).status).toBe(200);
    }, 30_000);
  }

  it('auto_complete_config runs at load and fills I/O, max_batch_size and the dynamic batcher', async () => {
    const cfg = await (await fetch(`${py.s.httpUrl}/v2/models/autocomplete_py/config`)).json();
    expect(cfg).toMatchObject({
      max_batch_size: 4,
      input: [{ name: 'X', data_type: 'TYPE_FP32', dims: [2] }],
      output: [{ name: 'Y', data_type: 'TYPE_FP32', dims: [2] }],
    });
    expect(cfg.dynamic_batching).toBeDefined();
    const r = await infer(py.s, 'autocomplete_py', [tensor('X', 'FP32', [1, 2], new Float32Array([1, 2]))]);
    expect(f32(r.responses[0]!.outputs[0])).toEqual([2, 4]);
  });

  it("Logger goes into Warden's log; MetricFamily / Metric appear on /metrics", async () => {
    for (const v of [0.5, 5, 50]) await infer(py.s, 'metrics_py', [tensor('IN', 'FP32', [1], new Float32Array([v]))]);
    const text = await (await fetch(`${py.s.metricsUrl}/metrics`)).text();
    expect(text).toContain('# TYPE py_requests_total counter');
    expect(text).toContain('py_requests_total{model="metrics_py"} 3');
    expect(text).toContain('py_value_bucket{le="1"} 1');
    expect(text).toContain('py_value_bucket{le="10"} 2');
    expect(text).toContain('py_value_count 3');
    expect(py.log.filter((l) => l.includes('"model":"metrics_py"') && l.includes('metrics_py saw a request')).length).toBe(3);
  });

  it('EXECUTION_ENV_PATH selects the interpreter of the environment it names', async () => {
    const r = await infer(py.s, 'env_py', [tensor('IN', 'INT32', [1], new Int32Array([1]))]);
    const exe = Buffer.from(r.responses[0]!.outputs[0]!.data).subarray(4).toString();
    expect(exe).toBe(join(py.repo.path, 'env_py', 'env', 'bin', 'python'));
  });

  it('EXECUTION_ENV_PATH may name a packed environment (.tar.gz), unpacked once', async () => {
    const envDir = join(py.repo.path, 'packed_src');
    mkdirSync(join(envDir, 'bin'), { recursive: true });
    writeFileSync(join(envDir, 'bin', 'python'), `#!/bin/sh\nexec ${join(PROJECT_ROOT, '.venv', 'bin', 'python')} "$@"\n`, { mode: 0o755 });
    pythonModel(
      py.repo,
      'packed_py',
      `max_batch_size: 0\nparameters { key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
      'import numpy as np\nimport triton_python_backend_utils as pb_utils\nclass TritonPythonModel:\n    def execute(self, requests):\n        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", r.inputs()[0].as_numpy() + 1)]) for r in requests]\n',
    );
    execFileSync('tar', ['-czf', join(py.repo.path, 'packed_py', 'env.tar.gz'), '-C', envDir, 'bin']);
    const r = await postJson(`${py.s.httpUrl}/v2/repository/models/packed_py/load`, {});
    expect(r.status, r.text).toBe(200);
    const out = await infer(py.s, 'packed_py', [tensor('IN', 'INT32', [1], new Int32Array([41]))]);
    expect(i32(out.responses[0]!.outputs[0])).toEqual([42]);
  });

  // A model whose EXECUTION_ENV_PATH holds no environment, whose model.py fails to import or
  // defines no model, or whose config is invalid: `status` (when given) and `reason` of its load.
  it.each([
    {
      model: 'noenv_py',
      config: 'parameters { key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/missing" } }\n',
      modelPy: 'x = 1\n',
      status: 400,
      reason: 'names no Python environment',
      hidesRepository: true,
    },
    { model: 'broken_py', config: '', modelPy: 'import no_such_module_xyz\n', status: 500, reason: "No module named 'no_such_module_xyz'" },
    { model: 'noclass_py', config: '', modelPy: 'class Other: pass\n', reason: 'defines no class TritonPythonModel' },
    {
      model: 'escape_py',
      config: 'default_model_filename: "../../escape.py"\n',
      modelPy: 'x = 1\n',
      status: 400,
      reason: "invalid default_model_filename '../../escape.py'",
    },
    {
      model: 'badtimeout_py',
      config: 'parameters { key: "execute_timeout_ms" value { string_value: "-5" } }\n',
      modelPy: 'class TritonPythonModel:\n    pass\n',
      status: 400,
      reason: "parameter 'execute_timeout_ms'",
    },
  ] as { model: string; config: string; modelPy: string; status?: number; reason: string; hidesRepository?: boolean }[])(
    '$model fails to load with the reason',
    async ({ model, config, modelPy, status, reason, hidesRepository }) => {
      pythonModel(
        py.repo,
        model,
        `${config}input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
        modelPy,
      );
      const r = await postJson(`${py.s.httpUrl}/v2/repository/models/${model}/load`, {});
      if (status !== undefined) expect(r.status).toBe(status);
      expect(r.json.error).toContain(reason);
      if (hidesRepository) expect(r.json.error).not.toContain(py.repo.path);
    },
  );

  it('the server keeps serving after models that fail to load', async () => {
    const ok = await infer(py.s, 'big_py', [tensor('IN', 'FP32', [2], new Float32Array([1, 2]))]);
    expect(f32(ok.responses[0]!.outputs[0])).toEqual([1, 2]);
  });
});
