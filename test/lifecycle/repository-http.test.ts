/**
 * Model repository and lifecycle over HTTP: health / metadata / config / ready, the repository
 * extension (index, load, unload, config and file overrides), failed loads (syntax errors, unknown
 * fields, no version directory) leaving the server serving, reload without failing in-flight
 * requests, poll mode and graceful unload.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningServer, ServerOptions } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import {
  addBadSequence,
  ADDSUB_CONFIG,
  addsubModelBase64,
  EXAMPLES,
  getJson,
  postJson,
  SIMPLE_METADATA,
  simpleRequest,
  tempRepo,
  type TempRepo,
} from '../helpers/repo.js';
import { sleep, until } from '../helpers/wait.js';

const range = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function serve(repo: TempRepo, opts: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const s = await startTestServer(repo, { modelControlMode: 'none', ...opts });
  cleanups.push(
    () => s.stop(),
    () => repo.cleanup(),
  );
  return s;
}

const inferSimple = (url: string, model = 'simple') =>
  postJson(
    `${url}/v2/models/${model}/infer`,
    simpleRequest(
      'INT32',
      range(16, (i) => i),
      range(16, () => 2),
    ),
  );

describe('health and metadata', () => {
  it('live, ready, server metadata, model metadata, config, ready', async () => {
    const s = await serve(tempRepo(['simple', 'addsub_onnx']));
    const live = await fetch(`${s.httpUrl}/v2/health/live`);
    expect(live.status).toBe(200);
    // Triton's status with the Open Inference Protocol's body (KServe's clients read it; tritonclient reads the status).
    expect(live.headers.get('content-type')).toBe('application/json');
    expect(await live.json()).toEqual({ live: true });
    expect((await fetch(`${s.httpUrl}/v2/health/ready`)).status).toBe(200);
    const meta = (await getJson(`${s.httpUrl}/v2`)).json;
    expect(meta.extensions).toContain('binary_tensor_data');
    expect(meta.extensions).toContain('model_repository');
    const m = await getJson(`${s.httpUrl}/v2/models/simple`);
    expect(m.json).toEqual(SIMPLE_METADATA);
    const nb = await getJson(`${s.httpUrl}/v2/models/addsub_onnx/versions/1`);
    expect(nb.json.inputs[0].shape).toEqual([16]);
    const cfg = await getJson(`${s.httpUrl}/v2/models/simple/config`);
    expect(cfg.json).toMatchObject({ name: 'simple', platform: 'onnxruntime_onnx', max_batch_size: 8 });
    expect(cfg.json.input[0]).toMatchObject({ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16], optional: false });
    expect(cfg.json.instance_group[0].kind).toBe('KIND_CPU');
    expect((await fetch(`${s.httpUrl}/v2/models/simple/ready`)).status).toBe(200);
    expect((await fetch(`${s.httpUrl}/v2/models/simple/versions/1/ready`)).status).toBe(200);
    const v2 = await fetch(`${s.httpUrl}/v2/models/simple/versions/2/ready`);
    expect(v2.status).toBe(400);
    expect(await v2.json()).toEqual({ error: 'Model version not ready' });
    // An unknown model is "not ready", as tritonserver answers it (test/backends/native/triton-differential.test.ts).
    const unknown = await fetch(`${s.httpUrl}/v2/models/nope/ready`);
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toEqual({ error: 'Model version not ready' });
    expect((await fetch(`${s.httpUrl}/v2/models/nope`)).status).toBe(404);
  });
});

describe('bad model directories: UNAVAILABLE with a reason, the rest serving', () => {
  it('syntax error, unknown field, no version directory, a bad sequence control', async () => {
    const repo = tempRepo(['simple']);
    repo.addExample('simple', 'broken_syntax');
    repo.write('broken_syntax/config.pbtxt', 'name: "broken_syntax"\nplatform: "onnxruntime_onnx"\ninput [ { name: "INPUT0" ');
    repo.addExample('simple', 'unknown_field');
    repo.write(
      'unknown_field/config.pbtxt',
      readFileSync(join(EXAMPLES, 'simple/config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "unknown_field"\nmax_batch_sizes: 3'),
    );
    repo.write('no_version/config.pbtxt', 'platform: "onnxruntime_onnx"\nmax_batch_size: 0\n');
    addBadSequence(repo);
    const s = await serve(repo);
    const index = (await postJson(`${s.httpUrl}/v2/repository/index`, {})).json as { name: string; state?: string; reason?: string; version?: string }[];
    const by = Object.fromEntries(index.map((e) => [e.name, e]));
    expect(by.simple).toEqual({ name: 'simple', version: '1', state: 'READY' });
    for (const bad of ['broken_syntax', 'unknown_field', 'no_version', 'bad_sequence']) {
      expect(by[bad]?.state, bad).toBe('UNAVAILABLE');
    }
    expect(by.unknown_field!.reason).toMatch(/max_batch_sizes/);
    expect(by.broken_syntax!.reason).toMatch(/config\.pbtxt:\d+:\d+/);
    expect(by.no_version!.reason).toMatch(/no version is available/);
    expect(by.bad_sequence!.reason).toMatch(/'int32_false_true' must have exactly 2 entries/);
    // Strict readiness: not ready; the good model serves anyway.
    expect((await fetch(`${s.httpUrl}/v2/health/ready`)).status).toBe(400);
    expect((await inferSimple(s.httpUrl)).status).toBe(200);
    const r = await inferSimple(s.httpUrl, 'broken_syntax');
    expect(r.status).toBe(404);
    expect(r.json.error).toBe("Request for unknown model: 'broken_syntax' has no available versions");
    expect((await fetch(`${s.httpUrl}/v2/models/broken_syntax/ready`)).status).toBe(400);
    const ready = (await postJson(`${s.httpUrl}/v2/repository/index`, { ready: true })).json;
    expect(ready).toEqual([{ name: 'simple', version: '1', state: 'READY' }]);
    expect((await postJson(`${s.httpUrl}/v2/repository/index`, { ready: 'yes' })).status).toBe(400);
  });

  it('--strict-readiness=false: ready once responsive', async () => {
    const repo = tempRepo(['simple']);
    repo.write('no_version/config.pbtxt', 'platform: "onnxruntime_onnx"\n');
    const s = await serve(repo, { strictReadiness: false });
    expect((await fetch(`${s.httpUrl}/v2/health/ready`)).status).toBe(200);
  });

  it('exit-on-error refuses to start when a model fails', async () => {
    const repo = tempRepo(['simple']);
    repo.write('no_version/config.pbtxt', 'platform: "onnxruntime_onnx"\n');
    cleanups.push(() => repo.cleanup());
    await expect(startTestServer(repo, { modelControlMode: 'none', exitOnError: true })).rejects.toThrow(/no_version/);
  });
});

describe('repository extension (explicit mode)', () => {
  it('load, unload, index states; load/unload refused in mode none', async () => {
    const s = await serve(tempRepo(['simple', 'addsub_onnx']), { modelControlMode: 'explicit', loadModels: ['simple'] });
    let index = (await postJson(`${s.httpUrl}/v2/repository/index`, '')).json;
    expect(index).toEqual([{ name: 'addsub_onnx' }, { name: 'simple', version: '1', state: 'READY' }]);
    expect((await postJson(`${s.httpUrl}/v2/repository/models/addsub_onnx/load`, '')).status).toBe(200);
    expect((await fetch(`${s.httpUrl}/v2/models/addsub_onnx/ready`)).status).toBe(200);
    expect((await postJson(`${s.httpUrl}/v2/repository/models/simple/unload`, {})).status).toBe(200);
    await sleep(100);
    index = (await postJson(`${s.httpUrl}/v2/repository/index`, {})).json;
    expect(index.find((e: any) => e.name === 'simple')).toEqual({ name: 'simple', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
    expect((await inferSimple(s.httpUrl)).status).toBe(404);
    // Unloading something never loaded succeeds; loading something absent fails clearly.
    expect((await postJson(`${s.httpUrl}/v2/repository/models/never/unload`, {})).status).toBe(200);
    const missing = await postJson(`${s.httpUrl}/v2/repository/models/absent/load`, {});
    expect([missing.status, missing.json]).toEqual([500, { error: "failed to load 'absent', failed to poll from model repository" }]); // tritonserver's
    expect((await postJson(`${s.httpUrl}/v2/repository/models/simple/load`, { parameters: { bogus: 'x' } })).status).toBe(500);
    expect((await postJson(`${s.httpUrl}/v2/repository/myrepo/index`, {})).status).toBe(501);
  });

  it('load with a config override and with file overrides (base64)', async () => {
    const s = await serve(tempRepo(['simple']), { modelControlMode: 'explicit' });
    const config = readFileSync(join(EXAMPLES, 'addsub_onnx/config.pbtxt'), 'utf8');
    expect(config).toContain('addsub_onnx');
    const jsonConfig = { name: 'uploaded', ...ADDSUB_CONFIG };
    const model = addsubModelBase64();
    const noConfig = await postJson(`${s.httpUrl}/v2/repository/models/uploaded/load`, { parameters: { 'file:1/model.onnx': model } });
    expect(noConfig.status).toBe(400);
    expect(noConfig.json.error).toMatch(/configuration must be provided/);
    const escape = await postJson(`${s.httpUrl}/v2/repository/models/uploaded/load`, {
      parameters: { config: JSON.stringify(jsonConfig), 'file:../../x': model },
    });
    expect(escape.status).toBe(400);
    const ok = await postJson(`${s.httpUrl}/v2/repository/models/uploaded/load`, {
      parameters: { config: JSON.stringify(jsonConfig), 'file:1/model.onnx': model },
    });
    expect(ok.status, ok.text).toBe(200);
    const r = await postJson(`${s.httpUrl}/v2/models/uploaded/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16], data: range(16, (i) => i) },
        { name: 'INPUT1', datatype: 'FP32', shape: [16], data: range(16, () => 1) },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.outputs.find((o: any) => o.name === 'OUTPUT0').data).toEqual(range(16, (i) => i + 1));
    // A config override on a repository model reloads it with the new config.
    const simpleCfg = (await getJson(`${s.httpUrl}/v2/models/simple/config`)).status;
    expect(simpleCfg).toBe(404);
    await postJson(`${s.httpUrl}/v2/repository/models/simple/load`, {});
    const cfg = (await getJson(`${s.httpUrl}/v2/models/simple/config`)).json;
    cfg.max_batch_size = 4;
    expect((await postJson(`${s.httpUrl}/v2/repository/models/simple/load`, { parameters: { config: JSON.stringify(cfg) } })).status).toBe(200);
    expect((await getJson(`${s.httpUrl}/v2/models/simple/config`)).json.max_batch_size).toBe(4);
    const b8 = await postJson(
      `${s.httpUrl}/v2/models/simple/infer`,
      simpleRequest(
        'INT32',
        range(128, () => 1),
        range(128, () => 1),
        8,
      ),
    );
    expect(b8.status).toBe(400);
    expect(b8.json.error).toMatch(/must be <= 4/);
  });

  it('a failed reload keeps the old version serving', async () => {
    const s = await serve(tempRepo(['simple']), { modelControlMode: 'explicit', loadModels: ['simple'] });
    const bad = await postJson(`${s.httpUrl}/v2/repository/models/simple/load`, { parameters: { config: '{"name":"simple","max_batch_size":-3}' } });
    expect(bad.status).toBe(400);
    expect((await inferSimple(s.httpUrl)).status).toBe(200);
    const index = (await postJson(`${s.httpUrl}/v2/repository/index`, {})).json;
    expect(index).toEqual([{ name: 'simple', version: '1', state: 'READY' }]);
  });

  it('reloading swaps the model without failing requests in flight', async () => {
    const s = await serve(tempRepo(['simple']), { modelControlMode: 'explicit', loadModels: ['simple'] });
    let stop = false;
    const statuses: number[] = [];
    const load = (async () => {
      while (!stop) statuses.push((await inferSimple(s.httpUrl)).status);
    })();
    const load2 = (async () => {
      while (!stop) statuses.push((await inferSimple(s.httpUrl)).status);
    })();
    for (let i = 0; i < 4; i++) {
      const r = await postJson(`${s.httpUrl}/v2/repository/models/simple/load`, {
        parameters: { config: JSON.stringify({ name: 'simple', platform: 'onnxruntime_onnx', max_batch_size: 8 - i }) },
      });
      expect(r.status, r.text).toBe(200);
    }
    stop = true;
    await Promise.all([load, load2]);
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses.filter((x) => x !== 200)).toEqual([]);
    expect((await getJson(`${s.httpUrl}/v2/models/simple/config`)).json.max_batch_size).toBe(5);
  });
});

describe('poll mode', () => {
  it('picks up added, changed and removed models', async () => {
    const repo = tempRepo(['simple']);
    const s = await serve(repo, { modelControlMode: 'poll', repositoryPollSecs: 1 });
    expect((await postJson(`${s.httpUrl}/v2/repository/models/simple/unload`, {})).status).toBe(503);
    repo.addExample('addsub_onnx');
    const poll = { within: 6000, every: 100 };
    await until(async () => (await fetch(`${s.httpUrl}/v2/models/addsub_onnx/ready`)).status === 200, poll);
    // A broken change keeps the old version; a fixed one reloads.
    const cfg = readFileSync(join(repo.path, 'simple/config.pbtxt'), 'utf8');
    repo.write('simple/config.pbtxt', cfg + '\nbogus_field: 1\n');
    await sleep(2500);
    expect((await inferSimple(s.httpUrl)).status).toBe(200);
    repo.write('simple/config.pbtxt', cfg.replace('max_batch_size: 8', 'max_batch_size: 2'));
    await until(async () => (await getJson(`${s.httpUrl}/v2/models/simple/config`)).json?.max_batch_size === 2, poll);
    repo.remove('addsub_onnx');
    await until(async () => (await fetch(`${s.httpUrl}/v2/models/addsub_onnx/ready`)).status !== 200, poll);
  }, 30_000);
});
