/**
 * `pb_utils.load_model` / `unload_model` / `is_model_ready` (spec §7.2): a Python model
 * drives Warden's repository API — the same path as `POST /v2/repository/models/<m>/load|unload`,
 * with the model owner's principal. Explicit model-control mode only (Triton's text otherwise);
 * config override JSON and file overrides checked as the HTTP load API checks them; Python code by
 * upload refused and never run; bad names refused; a model that unloads itself does not deadlock.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/wait.js';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { ADDSUB_CONFIG, EXAMPLES, postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { pythonEnvironment, pythonModel } from './helpers.js';

const skip = await pythonEnvironment();
if (skip) console.warn(`Python model-control tests skipped: ${skip}`);

/** Runs one command (JSON in CMD) through pb_utils and answers {"ok": value} or {"error", "type"}. */
const CONTROLLER = `import base64, json
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            c = json.loads(r.inputs()[0].as_numpy()[0])
            try:
                if c["op"] == "load":
                    files = {k: base64.b64decode(v) for k, v in c["files"].items()} if "files" in c else None
                    value = pb_utils.load_model(c["model"], config=c.get("config", ""), files=files)
                elif c["op"] == "raw":  # a hand-made message, as a buggy stub could send
                    value = pb_utils._model_control(c["msg"], "Failed to load model")
                elif c["op"] == "unload":
                    value = pb_utils.unload_model(c["model"], unload_dependents=c.get("dependents", False))
                else:
                    value = pb_utils.is_model_ready(c["model"], c.get("version", ""))
                res = {"ok": value}
            except Exception as e:
                res = {"error": str(e), "type": type(e).__name__}
            out.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([json.dumps(res).encode()], dtype=object))]))
        return out
`;
const CONTROLLER_IO = `max_batch_size: 0
input [ { name: "CMD" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ 1 ] } ]
`;
/** Unloads itself from execute, then answers. */
const SELF_UNLOAD = `import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_name"]
    def execute(self, requests):
        pb_utils.unload_model(self.name)
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", r.inputs()[0].as_numpy() * 3)]) for r in requests]
`;

function buildRepo(): TempRepo {
  const repo = tempRepo(['simple']);
  pythonModel(repo, 'controller_py', CONTROLLER_IO, CONTROLLER);
  // An ensemble over simple: what unload_dependents=True reaches.
  repo.write(
    'simple_ens/config.pbtxt',
    `name: "simple_ens"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "S" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling { step [ { model_name: "simple" model_version: -1
  input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } output_map { key: "OUTPUT0" value: "S" } } ] }
`,
  );
  repo.write('simple_ens/1/.keep', '');
  pythonModel(
    repo,
    'self_unload_py',
    'max_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
    SELF_UNLOAD,
  );
  return repo;
}

type Answer = { ok?: unknown; error?: string; type?: string };
async function control(s: RunningServer, cmd: Record<string, unknown>): Promise<Answer> {
  const r = await postJson(`${s.httpUrl}/v2/models/controller_py/infer`, {
    inputs: [{ name: 'CMD', datatype: 'BYTES', shape: [1], data: [JSON.stringify(cmd)] }],
  });
  expect(r.status, r.text).toBe(200);
  return JSON.parse(r.json.outputs[0].data[0]) as Answer;
}
const ready = async (s: RunningServer, m: string) => (await fetch(`${s.httpUrl}/v2/models/${m}/ready`)).status === 200;
const onnx = () => readFileSync(join(EXAMPLES, 'addsub_onnx/1/model.onnx')).toString('base64');

describe.skipIf(skip !== undefined)('pb_utils model control', () => {
  let repo: TempRepo;
  let s: RunningServer;
  let none: RunningServer;
  const log: string[] = [];
  beforeAll(async () => {
    repo = buildRepo();
    const logger = pino({ level: 'info' }, { write: (line: string) => void log.push(line) });
    const common = { logger, exitOnError: true, cacheDir: join(repo.path, '.cache') };
    s = await startTestServer(repo, { ...common, loadModels: ['controller_py', 'self_unload_py'] });
    none = await startTestServer(repo, { ...common, modelControlMode: 'none' });
  });
  afterAll(async () => {
    await s?.stop();
    await none?.stop();
    repo?.cleanup();
  });

  it('load_model / is_model_ready / unload_model of a model on disk, seen over HTTP too', async () => {
    expect(await control(s, { op: 'ready', model: 'simple' })).toEqual({ ok: false });
    expect(await control(s, { op: 'load', model: 'simple' })).toEqual({ ok: null });
    expect(await control(s, { op: 'ready', model: 'simple' })).toEqual({ ok: true });
    expect(await control(s, { op: 'ready', model: 'simple', version: '1' })).toEqual({ ok: true });
    expect(await control(s, { op: 'ready', model: 'simple', version: '7' })).toEqual({ ok: false });
    expect(await ready(s, 'simple')).toBe(true);
    expect(await control(s, { op: 'unload', model: 'simple' })).toEqual({ ok: null });
    expect(await control(s, { op: 'ready', model: 'simple' })).toEqual({ ok: false });
    expect(await ready(s, 'simple')).toBe(false);
  });

  it('unload_model(unload_dependents=True) also unloads the ensembles that use the model; a plain unload leaves them', async () => {
    const load = (m: string) => fetch(`${s.httpUrl}/v2/repository/models/${m}/load`, { method: 'POST' });
    expect((await load('simple')).status).toBe(200);
    expect((await load('simple_ens')).status).toBe(200);
    expect(await control(s, { op: 'unload', model: 'simple' })).toEqual({ ok: null });
    expect(await ready(s, 'simple_ens')).toBe(true); // as Triton: a plain unload leaves dependents loaded
    expect((await load('simple')).status).toBe(200);
    expect(await control(s, { op: 'unload', model: 'simple', dependents: true })).toEqual({ ok: null });
    expect(await ready(s, 'simple')).toBe(false);
    expect(await ready(s, 'simple_ens')).toBe(false);
  });

  it('a config override (JSON) with file overrides loads an uploaded ONNX model that then serves', async () => {
    const a = await control(s, { op: 'load', model: 'addsub_up', config: JSON.stringify(ADDSUB_CONFIG), files: { 'file:1/model.onnx': onnx() } });
    expect(a).toEqual({ ok: null });
    const x = Array.from({ length: 16 }, (_, i) => i);
    const r = await postJson(`${s.httpUrl}/v2/models/addsub_up/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16], data: x },
        { name: 'INPUT1', datatype: 'FP32', shape: [16], data: x },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.outputs.find((o: { name: string }) => o.name === 'OUTPUT0').data).toEqual(x.map((v) => 2 * v));
    expect(await control(s, { op: 'unload', model: 'addsub_up' })).toEqual({ ok: null });
  });

  it('errors come back as TritonModelException with "Failed to load model: <the load API\'s reason>"', async () => {
    const bad = await control(s, { op: 'load', model: 'x_py', config: '{not json' });
    expect(bad.type).toBe('TritonModelException');
    expect(bad.error).toMatch(/^Failed to load model: failed to load 'x_py': invalid 'config' parameter, not JSON/);
    const unknown = await control(s, { op: 'load', model: 'no_such_model' });
    expect(unknown.error).toMatch(/^Failed to load model: /);
    expect(unknown.error).toContain('no_such_model');
  });

  it('bad names and file paths are refused before anything touches the disk', async () => {
    for (const model of ['../escape', 'a/b', '']) {
      const r = await control(s, { op: 'load', model });
      expect(r.type, model).toBe('TritonModelException');
      expect(r.error, model).toContain('Failed to load model:');
    }
    const traversal = await control(s, { op: 'load', model: 'trav', config: JSON.stringify(ADDSUB_CONFIG), files: { 'file:../../etc/x': 'AAAA' } });
    expect(traversal.error).toMatch(/^Failed to load model: /);
    expect(existsSync(join(repo.path, '..', 'etc', 'x'))).toBe(false);
    const notFile = await control(s, { op: 'load', model: 'trav', config: JSON.stringify(ADDSUB_CONFIG), files: { 'model.onnx': onnx() } });
    expect(notFile.error).toContain("unrecognized load parameter 'model.onnx'");
    expect(await control(s, { op: 'unload', model: '../escape' })).toMatchObject({
      type: 'TritonModelException',
      error: expect.stringMatching(/^Failed to unload model: invalid model name/),
    });
  });

  it('a malformed load message (too many files, one region named many times, a region past the arena) is refused before anything is read', async () => {
    const many = await control(s, {
      op: 'raw',
      msg: { op: 'load_model', model: 'm', config: '', files: Array.from({ length: 5000 }, (_, i) => [`file:1/f${i}`, 0, 64]) },
    });
    expect(many.error).toContain('more than 4096 file overrides');
    const amplified = await control(s, {
      op: 'raw',
      msg: { op: 'load_model', model: 'm', config: '', files: Array.from({ length: 4000 }, (_, i) => [`file:1/f${i}`, 0, 2 ** 31]) },
    });
    expect(amplified.error).toMatch(/file overrides of \d+ bytes exceed/);
    const past = await control(s, { op: 'raw', msg: { op: 'load_model', model: 'm', config: '{}', files: [['file:1/model.onnx', 2 ** 40, 16]] } });
    expect(past.error).toMatch(/^Failed to load model: /);
    expect(await ready(s, 'controller_py')).toBe(true);
  });

  it('Python code by upload is refused and never runs', async () => {
    const marker = join(repo.path, 'pwned');
    const py = Buffer.from(
      `open(${JSON.stringify(marker)}, "w").close()\nclass TritonPythonModel:\n    def execute(self, requests):\n        return []\n`,
    ).toString('base64');
    const config = JSON.stringify({
      backend: 'python',
      max_batch_size: 0,
      input: [{ name: 'X', data_type: 'TYPE_FP32', dims: [1] }],
      output: [{ name: 'Y', data_type: 'TYPE_FP32', dims: [1] }],
    });
    const r = await control(s, { op: 'load', model: 'evil_py', config, files: { 'file:1/model.py': py } });
    expect(r.error).toMatch(/^Failed to load model: /);
    expect(r.error).toContain('cannot be loaded from uploaded files');
    expect(existsSync(marker)).toBe(false);
    expect(await ready(s, 'evil_py')).toBe(false);
  });

  it("outside explicit mode: Triton's error text", async () => {
    expect(await control(none, { op: 'load', model: 'simple' })).toEqual({
      type: 'TritonModelException',
      error: 'Failed to load model: explicit model load / unload is not allowed if polling is enabled',
    });
    expect(await control(none, { op: 'unload', model: 'simple' })).toEqual({
      type: 'TritonModelException',
      error: 'Failed to unload model: explicit model load / unload is not allowed if polling is enabled',
    });
    // is_model_ready needs no model control
    expect(await control(none, { op: 'ready', model: 'simple' })).toEqual({ ok: true });
  });

  it('a model unloading itself from execute answers its request and then unloads (no deadlock)', async () => {
    const t0 = Date.now();
    const r = await postJson(`${s.httpUrl}/v2/models/self_unload_py/infer`, { inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [2] }] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual([6]);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const gone = async () => {
      const idx = (await postJson(`${s.httpUrl}/v2/repository/index`, {})).json as { name: string; state?: string }[];
      return idx.find((e) => e.name === 'self_unload_py')?.state === 'UNAVAILABLE';
    };
    await until(gone, { within: 10_000, every: 100, what: 'self_unload_py UNAVAILABLE' });
    expect(await gone()).toBe(true);
    expect(await ready(s, 'self_unload_py')).toBe(false);
    expect(await ready(s, 'controller_py')).toBe(true);
  }, 30_000);
});
