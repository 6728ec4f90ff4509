/**
 * Triton's own, unmodified Python backend (`libtriton_python.so` + `triton_python_backend_stub`
 * from PyPI's nvidia-pytriton wheel, test/backends/native/triton-wheel.ts) served by Warden's native
 * backend host, compared answer for answer with the real `tritonserver` from the same wheel
 * serving the same model.py files (spec §6, §6.4 in-process API, §6.9 search order).
 *
 * Models (test/backends/native/triton-python-models, written for these tests in Triton's documented
 * model.py style): tp_add_sub (FP32 [4]), tp_repeat (decoupled), tp_bls (BLS into the ONNX model
 * `simple`: Warden only, the wheel has no ONNX Runtime backend), tp_control
 * (`pb_utils.is_model_ready` / `load_model` / `unload_model` under explicit model control).
 *
 * Skips (with the reason) when PyPI is unreachable or the machine cannot run the wheel
 * (x86_64 glibc >= 2.35 with the system libpython3.11).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, getJson, postJson, generateStream } from '../../helpers/repo.js';
import { NativeBackend } from '../../../host/src/backends/native/index.js';
import { PythonBackend, PythonBackendResolver } from '../../../host/src/backends/python/index.js';
import { backendResolveRequest } from '../../../host/src/contract/load-context.js';
import { LIBTRITONSERVER, MODEL_REPOSITORY, PROJECT_ROOT, pbtxtConfig, resolver, silent } from './helpers.js';
import { waitTritonReady, WHEEL_TRITONSERVER_LIB, wheelServers } from './triton-wheel.js';

const MODELS = join(import.meta.dirname, 'triton-python-models');
/** Compared with the real tritonserver (it has no ONNX backend for tp_bls's target). */
const SHARED_MODELS = ['tp_add_sub', 'tp_repeat'];

const addSubBody = {
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2.5, -3, 4] },
    { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [0.5, 0.5, 10, -4] },
  ],
};

const control = (op: string, model: string) => ({
  inputs: [
    { name: 'OP', datatype: 'BYTES', shape: [1], data: [op] },
    { name: 'MODEL', datatype: 'BYTES', shape: [1], data: [model] },
  ],
});

describe('backend: "python" — Triton\'s libtriton_python.so or Warden\'s Python backend (spec §6.9)', () => {
  const pythonConfig = () =>
    pbtxtConfig(
      'm',
      'backend: "python"\nmax_batch_size: 0\ninput { name: "I" data_type: TYPE_FP32 dims: [ 1 ] }\noutput { name: "O" data_type: TYPE_FP32 dims: [ 1 ] }',
    );
  const python = (backendDirectory: string) => new PythonBackendResolver({ backendDirectory, cacheDir: tmpdir(), logger: silent });

  it("Warden's Python backend by default; Triton's library in <backend-directory>/python/ wins and the native host serves it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-pybackends-'));
    const model = mkdtempSync(join(tmpdir(), 'warden-pymodel-'));
    try {
      const req = backendResolveRequest(pythonConfig(), model, 1);
      expect(await python(dir).resolve(req)).toBeInstanceOf(PythonBackend);
      mkdirSync(join(dir, 'python'));
      writeFileSync(join(dir, 'python', 'libtriton_python.so'), 'not loaded by this test');
      expect(await python(dir).resolve(req)).toBeUndefined();
      // ...and the native resolver picks exactly that file (it would load it at loadModel).
      const native = await resolver({ backendDirectory: dir }).resolve(req);
      expect(native).toBeInstanceOf(NativeBackend);
      expect((native as NativeBackend).libraryPath).toBe(join(dir, 'python', 'libtriton_python.so'));
      // A runtime naming a .py file keeps Warden's Python backend.
      const py = backendResolveRequest(pbtxtConfig('m', 'backend: "python"\nruntime: "model.py"\nmax_batch_size: 0'), model, 1);
      expect(await python(dir).resolve(py)).toBeInstanceOf(PythonBackend);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(model, { recursive: true, force: true });
    }
  });

  it("an uploaded model never reaches either: Triton's library in the upload is refused by the native host", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-pybackends-'));
    const model = mkdtempSync(join(tmpdir(), 'warden-pyupload-'));
    try {
      writeFileSync(join(model, 'libtriton_python.so'), 'uploaded bytes');
      const req = backendResolveRequest(pythonConfig(), model, 1, { kind: 'upload', tenant: 't1' });
      // The library is in the model directory: Warden's Python backend steps aside...
      expect(await python(dir).resolve(req)).toBeUndefined();
      // ...and the native host refuses uploads before any search or dlopen.
      await expect(resolver({ backendDirectory: dir }).resolve(req)).rejects.toThrow(/uploaded: native backend 'python' cannot serve uploaded models/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(model, { recursive: true, force: true });
    }
  });
});

describe("Triton's real Python backend through Warden's native host", () => {
  // Triton's python backend names its /dev/shm regions with a prefix: one per server here.
  const tp = wheelServers(
    'tpy',
    (repo) => {
      for (const m of readdirSync(MODELS)) cpSync(join(MODELS, m), join(repo.path, m), { recursive: true });
      // tp_control's load/unload target: another add_sub, not loaded at start.
      cpSync(join(MODELS, 'tp_add_sub'), join(repo.path, 'tp_target'), { recursive: true });
      cpSync(join(MODEL_REPOSITORY, 'simple'), join(repo.path, 'simple'), { recursive: true });
    },
    { warden: { loadModels: ['simple', 'tp_add_sub', 'tp_repeat', 'tp_bls', 'tp_control'] }, tritonModels: SHARED_MODELS },
  );
  const skipUnlessWheel = (ctx: { skip: (note?: string) => void }) => {
    if (!tp.wheel.ok) ctx.skip(`Triton's Python backend wheel unavailable: ${tp.wheel.reason}`);
  };

  it("selects Triton's libtriton_python.so (not Warden's Python backend) and binds it to Warden's libtritonserver", async (ctx) => {
    skipUnlessWheel(ctx);
    if (!tp.wheel.ok) return;
    // Loaded into this process (Warden's native host), from the Warden backend directory (the
    // kernel names mapped files by their resolved path).
    const maps = readFileSync('/proc/self/maps', 'utf8');
    expect(maps).toContain(realpathSync(join(tp.wheel.wardenBackends, 'python', 'libtriton_python.so')));
    // Triton's own core library is never mapped: the auditwheel name resolved to Warden's file.
    expect(maps).not.toContain(WHEEL_TRITONSERVER_LIB);
    expect(maps).toContain(realpathSync(LIBTRITONSERVER));
    const ready = await getJson(`${tp.warden!.httpUrl}/v2/models/tp_add_sub/ready`);
    expect(ready.status).toBe(200);
  });

  it('LD_DEBUG=bindings: every TRITONSERVER_*/TRITONBACKEND_* import of libtriton_python.so binds to Warden', async (ctx) => {
    skipUnlessWheel(ctx);
    if (!tp.wheel.ok) return;
    // A separate Warden process (the loader's debug output is per process) serving tp_add_sub.
    const out = mkdtempSync(join(tmpdir(), 'warden-lddebug-'));
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(PROJECT_ROOT, 'host/src/cli.ts'),
        `--model-repository=${tp.repo!.path}`,
        `--backend-directory=${tp.wheel.wardenBackends}`,
        '--model-control-mode=explicit',
        '--load-model=tp_add_sub',
        `--http-port=${port}`,
        '--allow-metrics=false',
        '--allow-grpc=false',
        `--backend-config=python,shm-region-prefix-name=warden_tpyld_${process.pid}_`,
      ],
      { env: { ...process.env, LD_DEBUG: 'bindings', LD_DEBUG_OUTPUT: join(out, 'ld') }, stdio: 'ignore' },
    );
    try {
      const url = `http://127.0.0.1:${port}`;
      const log: string[] = [];
      await waitTritonReady(url, child, log, 120_000);
      const r = await postJson(`${url}/v2/models/tp_add_sub/infer`, addSubBody);
      expect(r.status, r.text).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
    }
    const lines = readdirSync(out).flatMap((f) => readFileSync(join(out, f), 'utf8').split('\n'));
    rmSync(out, { recursive: true, force: true });
    // "binding file <from> [0] to <to> [0]: normal symbol `NAME'"
    const imports = lines
      .map((l) => /binding file (\S*libtriton_python\.so) \[\d+\] to (\S+) \[\d+\]: normal symbol `(TRITON(?:SERVER|BACKEND)_\w+)'/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null && m[2] !== m[1]); // the backend's own entry points bind to itself
    expect(imports.length).toBeGreaterThan(100); // the backend imports ~125 host functions
    const elsewhere = imports.filter((m) => realpathSync(m[2]!) !== realpathSync(LIBTRITONSERVER)).map((m) => `${m[3]} -> ${m[2]}`);
    expect(elsewhere).toEqual([]);
  });

  it('add_sub (FP32 [4]): the same answer as the real tritonserver', async (ctx) => {
    skipUnlessWheel(ctx);
    const w = await postJson(`${tp.warden!.httpUrl}/v2/models/tp_add_sub/infer`, addSubBody);
    const t = await postJson(`${tp.triton!.url}/v2/models/tp_add_sub/infer`, addSubBody);
    expect(w.status, w.text).toBe(200);
    expect(t.status, t.text).toBe(200);
    expect(w.json.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [4], data: [1.5, 3, 7, 0] },
      { name: 'OUTPUT1', datatype: 'FP32', shape: [4], data: [0.5, 2, -13, 8] },
    ]);
    const byName = (o: { name: string }[]) => [...o].sort((a, b) => a.name.localeCompare(b.name));
    expect(byName(w.json.outputs)).toEqual(byName(t.json.outputs));
    expect({ model_name: w.json.model_name, model_version: w.json.model_version }).toEqual({
      model_name: t.json.model_name,
      model_version: t.json.model_version,
    });
  });

  it('add_sub: a wrong shape is refused by both with 400', async (ctx) => {
    skipUnlessWheel(ctx);
    const bad = { inputs: [addSubBody.inputs[0], { ...addSubBody.inputs[1], shape: [2], data: [1, 2] }] };
    const w = await postJson(`${tp.warden!.httpUrl}/v2/models/tp_add_sub/infer`, bad);
    const t = await postJson(`${tp.triton!.url}/v2/models/tp_add_sub/infer`, bad);
    expect(w.status).toBe(400);
    expect(t.status).toBe(400);
  });

  it('decoupled repeat: the same stream of responses as the real tritonserver', async (ctx) => {
    skipUnlessWheel(ctx);
    const body = { IN: [5, -6, 7, 0] };
    const w = await generateStream(tp.warden!.httpUrl, 'tp_repeat', body);
    const t = await generateStream(tp.triton!.url, 'tp_repeat', body);
    expect(w.status).toBe(200);
    expect(t.status).toBe(200);
    expect(w.events).toEqual([5, -6, 7, 0].map((v, i) => ({ model_name: 'tp_repeat', model_version: '1', OUT: v, IDX: i })));
    expect(w.events).toEqual(t.events);
  });

  it('BLS: pb_utils.InferenceRequest.exec() into the ONNX model simple (Warden only)', async (ctx) => {
    skipUnlessWheel(ctx);
    const a = Array.from({ length: 16 }, (_, i) => i * 3 - 7);
    const b = Array.from({ length: 16 }, (_, i) => 100 - i);
    const r = await postJson(`${tp.warden!.httpUrl}/v2/models/tp_bls/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: b },
      ],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: a.map((x, i) => x + b[i]!) },
      { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: a.map((x, i) => x - b[i]!) },
    ]);
    // simple's statistics count the in-process requests.
    const stats = await getJson(`${tp.warden!.httpUrl}/v2/models/simple/stats`);
    expect(stats.json.model_stats[0].inference_count).toBeGreaterThanOrEqual(1);
  });

  // KNOWN ISSUE (Triton's Python backend): the failed pb_utils.load_model('no_such_model') at the end
  // of this test can end with `terminate called after throwing an instance of
  // 'boost::interprocess::lock_exception'` inside Triton's libtriton_python.so, which aborts the whole
  // in-process server. The real tritonserver 2.51 aborts the same way on the same call
  // (test/backends/native/triton-differential.test.ts, docs/triton-compatibility.md "Known issue"). The same
  // calls on Warden's own Python backend are tested in test/backends/python/model-control.test.ts.
  // WARDEN_TRITON_PY_CONTROL=1 runs it.
  it.skipIf(process.env.WARDEN_TRITON_PY_CONTROL !== '1')('pb_utils.is_model_ready / load_model / unload_model under explicit model control', async (ctx) => {
    skipUnlessWheel(ctx);
    const ready = async (op: string) => {
      const r = await postJson(`${tp.warden!.httpUrl}/v2/models/tp_control/infer`, control(op, 'tp_target'));
      expect(r.status, r.text).toBe(200);
      return r.json.outputs[0].data[0] as boolean;
    };
    expect(await ready('ready')).toBe(false);
    expect(await ready('load')).toBe(true);
    expect((await getJson(`${tp.warden!.httpUrl}/v2/models/tp_target/ready`)).status).toBe(200);
    // The model a Python model loaded serves (Triton's python backend again).
    const inf = await postJson(`${tp.warden!.httpUrl}/v2/models/tp_target/infer`, addSubBody);
    expect(inf.json.outputs[0].data).toEqual([1.5, 3, 7, 0]);
    expect(await ready('unload')).toBe(false);
    expect((await getJson(`${tp.warden!.httpUrl}/v2/models/tp_target/ready`)).status).not.toBe(200);
    // A model that does not exist: load_model raises, the request gets the error.
    const missing = await postJson(`${tp.warden!.httpUrl}/v2/models/tp_control/infer`, control('load', 'no_such_model'));
    expect(missing.status).toBeGreaterThanOrEqual(400);
    expect(missing.text).toMatch(/no_such_model/);
  });
});
