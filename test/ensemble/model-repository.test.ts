/**
 * The default repository's ensemble over HTTP: `add_sub_ensemble` (the sandboxed add_sub_wasm
 * feeding Triton's ONNX add/sub example), loaded alone in explicit mode with its composing models.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { getJson, PROJECT_ROOT, postJson } from '../helpers/repo.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

let server: RunningServer;
let uploads: string;

beforeAll(async () => {
  uploads = mkdtempSync(join(tmpdir(), 'warden-ens-uploads-'));
  server = await startTestServer(join(PROJECT_ROOT, 'model_repository'), { loadModels: ['add_sub_ensemble'], uploadDirectory: uploads });
});
afterAll(async () => {
  await server?.stop();
  rmSync(uploads, { recursive: true, force: true });
});

describe('model_repository/add_sub_ensemble', () => {
  it('is ready with its composing models, which it loaded', async () => {
    for (const m of ['add_sub_ensemble', 'add_sub_wasm', 'addsub_onnx']) {
      expect((await fetch(`${server.httpUrl}/v2/models/${m}/ready`)).status).toBe(200);
    }
    const md = await getJson(`${server.httpUrl}/v2/models/add_sub_ensemble`);
    expect(md.json).toEqual({
      name: 'add_sub_ensemble',
      versions: ['1'],
      platform: 'ensemble',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16] },
        { name: 'INPUT1', datatype: 'FP32', shape: [16] },
      ],
      outputs: [
        { name: 'OUTPUT0', datatype: 'FP32', shape: [16] },
        { name: 'OUTPUT1', datatype: 'FP32', shape: [16] },
      ],
    });
  });

  it('infers: OUTPUT0 = 2 * INPUT0, OUTPUT1 = 2 * INPUT1', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const b = Array.from({ length: 16 }, (_, i) => 0.25 * i);
    const r = await postJson(`${server.httpUrl}/v2/models/add_sub_ensemble/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16], data: a },
        { name: 'INPUT1', datatype: 'FP32', shape: [16], data: b },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [16], data: a.map((x) => 2 * x) },
      { name: 'OUTPUT1', datatype: 'FP32', shape: [16], data: b.map((x) => 2 * x) },
    ]);
  });

  it('a wrong shape is refused by the ensemble itself (Triton wording), before any step runs', async () => {
    const r = await postJson(`${server.httpUrl}/v2/models/add_sub_ensemble/infer`, {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] },
        { name: 'INPUT1', datatype: 'FP32', shape: [2], data: [1, 2] },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/unexpected shape for input 'INPUT0' for model 'add_sub_ensemble'/);
    const s = (await getJson(`${server.httpUrl}/v2/models/add_sub_wasm/stats`)).json.model_stats[0];
    expect(s.inference_stats.fail.count).toBe(0);
  });
});

describe('unload with unload_dependents (Triton repository extension)', () => {
  const ready = async (m: string) => (await fetch(`${server.httpUrl}/v2/models/${m}/ready`)).status === 200;
  it('unloads the ensembles that use the model too; without it they stay loaded', async () => {
    expect((await postJson(`${server.httpUrl}/v2/repository/models/addsub_onnx/unload`, {})).status).toBe(200);
    expect(await ready('addsub_onnx')).toBe(false);
    expect(await ready('add_sub_ensemble')).toBe(true); // a plain unload leaves the ensemble loaded
    expect((await postJson(`${server.httpUrl}/v2/repository/models/addsub_onnx/load`, {})).status).toBe(200);
    const r = await postJson(`${server.httpUrl}/v2/repository/models/add_sub_wasm/unload`, { parameters: { unload_dependents: true } });
    expect(r.status).toBe(200);
    expect(await ready('add_sub_wasm')).toBe(false);
    expect(await ready('add_sub_ensemble')).toBe(false);
    expect(await ready('addsub_onnx')).toBe(true); // another step's model, not a dependent
  });
});
