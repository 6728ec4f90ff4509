// Native backends served over HTTP next to an ONNX model (spec §6.9 search order, §1 protocol):
// load / infer / unload / reload of the samples through the repository API, and backends that
// break in every way the issue lists — each leaves only its own model UNAVAILABLE with the reason
// while the server stays live and the other models keep serving.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { BACKEND_DIR, MODEL_REPOSITORY, TEST_BACKEND_DIR, requireNativeBuild, startNativeServer } from './helpers.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;

const ECHO_IO = `input { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
output { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }`;

/** A model directory whose backend library lives in the model dir (or its version dir). */
function brokenModel(name: string, backend: string, where: 'model' | 'version' | 'none', extra = ''): void {
  repo.write(`${name}/config.pbtxt`, `backend: "${backend}"\nmax_batch_size: 0\n${ECHO_IO}\n${extra}`);
  mkdirSync(join(repo.path, name, '1'), { recursive: true });
  if (where === 'none') return;
  const lib = `libtriton_${backend}.so`;
  const dst = where === 'model' ? join(repo.path, name, lib) : join(repo.path, name, '1', lib);
  copyFileSync(join(TEST_BACKEND_DIR, backend, lib), dst);
}

beforeAll(async () => {
  requireNativeBuild();
  repo = tempRepo(['simple']);
  for (const m of ['identity_native', 'add_sub_native', 'repeat_native']) {
    repo.write(`${m}/config.pbtxt`, readFileSync(join(MODEL_REPOSITORY, m, 'config.pbtxt')));
    mkdirSync(join(repo.path, m, '1'), { recursive: true });
  }
  // `runtime` names the library file; found in the model directory (search order step 2).
  repo.write(
    'identity_runtime/config.pbtxt',
    `backend: "my_identity"\nruntime: "libtriton_warden_identity.so"\nmax_batch_size: 0\n${ECHO_IO.replace(/INT32/g, 'FP32')}`,
  );
  mkdirSync(join(repo.path, 'identity_runtime', '1'), { recursive: true });
  copyFileSync(join(BACKEND_DIR, 'warden_identity', 'libtriton_warden_identity.so'), join(repo.path, 'identity_runtime', 'libtriton_warden_identity.so'));

  brokenModel('init_fails', 'warden_test_init_fail', 'model');
  brokenModel('no_execute', 'warden_test_no_execute', 'version');
  brokenModel('missing_symbol', 'warden_test_missing_symbol', 'model');
  brokenModel('model_init_fails', 'warden_test_errors', 'model', 'parameters { key: "mode" value: { string_value: "model_initialize" } }');
  brokenModel('instance_init_fails', 'warden_test_errors', 'model', 'parameters { key: "mode" value: { string_value: "instance_initialize" } }');
  brokenModel('execute_fails', 'warden_test_errors', 'model', 'parameters { key: "mode" value: { string_value: "execute" } }');
  brokenModel('never_responds', 'warden_test_errors', 'model', 'parameters { key: "mode" value: { string_value: "no_response" } }');
  brokenModel('no_library', 'warden_not_installed', 'none');
  server = await startNativeServer(repo.path);
  url = server.httpUrl;
});

afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

const f32Body = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [data.length], data });

async function index(): Promise<Record<string, { state: string; reason: string }>> {
  const r = await postJson(`${url}/v2/repository/index`, {});
  return Object.fromEntries((r.json as { name: string; state: string; reason: string }[]).map((m) => [m.name, m]));
}

describe('native models over HTTP', () => {
  it("a backend's custom metrics (TRITONSERVER_MetricFamilyNew) appear on /metrics", async () => {
    const scrape = async (): Promise<number> => {
      const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
      expect(text).toMatch(/^# TYPE input_byte_size_counter counter$/m);
      const m = /^input_byte_size_counter\{[^}]*model="identity_native"[^}]*\} ([0-9.e+]+)$/m.exec(text);
      expect(m, text.slice(0, 400)).not.toBeNull();
      return Number(m![1]);
    };
    await postJson(`${url}/v2/models/identity_native/infer`, { inputs: [f32Body('INPUT0', [1])] });
    const before = await scrape();
    const r = await postJson(`${url}/v2/models/identity_native/infer`, { inputs: [f32Body('INPUT0', [1, 2, 3])] });
    expect(r.status).toBe(200);
    expect((await scrape()) - before).toBe(12); // 3 FP32 elements
    // Warden's own series are still there.
    expect(await (await fetch(`${server.metricsUrl}/metrics`)).text()).toMatch(/^nv_inference_count\{model="identity_native",version="1"\} \d+$/m);
  });

  it('statistics: compute_input + compute_infer + compute_output of native requests fit inside their request time', async () => {
    for (let i = 0; i < 20; i++) {
      expect((await postJson(`${url}/v2/models/identity_native/infer`, { inputs: [f32Body('INPUT0', [i])] })).status).toBe(200);
    }
    const st = (await (await fetch(`${url}/v2/models/identity_native/stats`)).json()).model_stats[0].inference_stats;
    const ns = (k: string) => Number(st[k].ns);
    // compute_output used to run until the JS thread had delivered the responses (after the
    // final response): larger than the whole request. Now it ends when Execute returned.
    expect(ns('compute_output')).toBeLessThan(ns('success'));
    expect(ns('queue') + ns('compute_input') + ns('compute_infer') + ns('compute_output')).toBeLessThanOrEqual(ns('success'));
  });

  it('serves identity_native, add_sub_native and a runtime-named library beside the ONNX simple model', async () => {
    const id = await postJson(`${url}/v2/models/identity_native/infer`, { inputs: [f32Body('INPUT0', [1, 2.5, -3])] });
    expect(id.status).toBe(200);
    expect(id.json.outputs).toEqual([{ name: 'OUTPUT0', datatype: 'FP32', shape: [3], data: [1, 2.5, -3] }]);

    const as = await postJson(`${url}/v2/models/add_sub_native/infer`, { inputs: [f32Body('INPUT0', [5, 6]), f32Body('INPUT1', [1, 2])] });
    expect(as.status).toBe(200);
    const byName = Object.fromEntries(as.json.outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
    expect(byName).toEqual({ OUTPUT0: [6, 8], OUTPUT1: [4, 4] });

    const rt = await postJson(`${url}/v2/models/identity_runtime/infer`, { inputs: [f32Body('INPUT0', [9])] });
    expect(rt.status).toBe(200);
    expect(rt.json.outputs[0].data).toEqual([9]);

    const a = Array.from({ length: 16 }, (_, i) => i);
    const simple = await postJson(`${url}/v2/models/simple/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: a },
      ],
    });
    expect(simple.status).toBe(200);
  });

  it('handles binary tensor data and concurrent requests', async () => {
    const results = await Promise.all(
      Array.from({ length: 24 }, async (_, k) => {
        const data = new Float32Array(1000).map((_, i) => i * k);
        const json = Buffer.from(
          JSON.stringify({
            inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1000], parameters: { binary_data_size: 4000 } }],
            outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
          }),
        );
        const res = await fetch(`${url}/v2/models/identity_native/infer`, {
          method: 'POST',
          headers: { 'Inference-Header-Content-Length': String(json.length), 'content-type': 'application/octet-stream' },
          body: Buffer.concat([json, Buffer.from(data.buffer)]),
        });
        const body = Buffer.from(await res.arrayBuffer());
        const headerLen = Number(res.headers.get('inference-header-content-length'));
        return { status: res.status, out: new Float32Array(body.subarray(headerLen).buffer.slice(body.byteOffset + headerLen)), data };
      }),
    );
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(Array.from(r.out)).toEqual(Array.from(r.data));
    }
  });

  it('streams repeat_native responses over /generate_stream, and /infer answers 501 for it', async () => {
    const res = await fetch(`${url}/v2/models/repeat_native/generate_stream`, {
      method: 'POST',
      body: JSON.stringify({ IN: [4, 5, 6], DELAY: [0, 10, 10], WAIT: [0], id: 'r1' }),
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.replace(/^data: /, '')));
    expect(events).toEqual([4, 5, 6].map((v, i) => ({ id: 'r1', model_name: 'repeat_native', model_version: '1', OUT: v, IDX: i })));
    const infer = await postJson(`${url}/v2/models/repeat_native/infer`, { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }] });
    expect(infer.status).toBe(501);
  });

  it('unloads and reloads a native model through the repository API', async () => {
    expect((await postJson(`${url}/v2/repository/models/identity_native/unload`, {})).status).toBe(200);
    await expect.poll(async () => (await index()).identity_native?.state).toBe('UNAVAILABLE');
    const gone = await postJson(`${url}/v2/models/identity_native/infer`, { inputs: [f32Body('INPUT0', [1])] });
    expect(gone.status).not.toBe(200);
    expect((await postJson(`${url}/v2/repository/models/identity_native/load`, {})).status).toBe(200);
    expect((await index()).identity_native?.state).toBe('READY');
    const back = await postJson(`${url}/v2/models/identity_native/infer`, { inputs: [f32Body('INPUT0', [4, 2])] });
    expect(back.status).toBe(200);
    expect(back.json.outputs[0].data).toEqual([4, 2]);
  });
});

describe('broken native backends', () => {
  it('leave only their own models UNAVAILABLE, each with the reason', async () => {
    const idx = await index();
    const expected: Record<string, RegExp> = {
      init_fails: /TRITONBACKEND_Initialize refused to start/,
      no_execute: /unable to find required entrypoint 'TRITONBACKEND_ModelInstanceExecute'/,
      missing_symbol: /undefined symbol: TRITONSERVER_WardenTestMissingFunction/,
      model_init_fails: /ModelInitialize failed on purpose/,
      instance_init_fails: /ModelInstanceInitialize failed on purpose/,
      no_library: /unable to find backend library 'libtriton_warden_not_installed\.so'/,
    };
    for (const [model, reason] of Object.entries(expected)) {
      expect(idx[model], model).toMatchObject({ state: 'UNAVAILABLE' });
      expect(idx[model]!.reason, model).toMatch(reason);
    }
    for (const model of ['identity_native', 'add_sub_native', 'repeat_native', 'identity_runtime', 'simple', 'execute_fails', 'never_responds']) {
      expect(idx[model]?.state, model).toBe('READY');
    }
    expect((await fetch(`${url}/v2/health/live`)).status).toBe(200);
    expect((await fetch(`${url}/v2/health/ready`)).status).toBe(200);
  });

  it('answer requests with the backend error, or an INTERNAL error when the backend never responds, and the server keeps serving', async () => {
    const body = { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [2], data: [1, 2] }] };
    const failed = await postJson(`${url}/v2/models/execute_fails/infer`, body);
    expect(failed.status).toBe(503); // UNAVAILABLE from TRITONBACKEND_ModelInstanceExecute
    expect(failed.json.error).toBe('warden_test_errors: execute failed on purpose');
    const silent = await postJson(`${url}/v2/models/never_responds/infer`, body);
    expect(silent.status).toBe(500);
    expect(silent.json.error).toMatch(/released request .* without sending a final response/);
    const ok = await postJson(`${url}/v2/models/identity_native/infer`, { inputs: [f32Body('INPUT0', [3])] });
    expect(ok.status).toBe(200);
  });

  it('a broken model can be fixed and reloaded without restarting', async () => {
    const failing = await postJson(`${url}/v2/repository/models/model_init_fails/load`, {});
    expect(failing.status).toBe(400);
    repo.write(
      'model_init_fails/config.pbtxt',
      `backend: "warden_test_errors"\nmax_batch_size: 0\n${ECHO_IO}\nparameters { key: "mode" value: { string_value: "error_response" } }`,
    );
    expect((await postJson(`${url}/v2/repository/models/model_init_fails/load`, {})).status).toBe(200);
    const r = await postJson(`${url}/v2/models/model_init_fails/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [1] }] });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('warden_test_errors: bad request on purpose');
  });
});
