/**
 * Sandboxed sample backends through the HTTP server (startServer): /infer on identity_wasm,
 * add_sub_wasm and preprocess_wasm, the decoupled repeat_wasm over /generate_stream (SSE, one
 * event per response) and /generate, and /infer on a decoupled model answering 501; on every
 * sandbox engine (the engine's resolver is handed to the server as an extra backend resolver,
 * which comes before the built-in one).
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINES, newResolver, REPO, wasmServer } from './helpers.js';

describe.each(ENGINES)('%s engine', (engine) => {
  const server = wasmServer('warden-wasm-http-repo-', (repo) => {
    for (const m of ['identity_wasm', 'add_sub_wasm', 'repeat_wasm', 'preprocess_wasm']) cpSync(join(REPO, m), join(repo, m), { recursive: true });
    return { modelControlMode: 'none', backendResolvers: [newResolver(engine)] };
  });

  const post = (path: string, body: unknown) =>
    fetch(server.httpUrl + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  describe('sandboxed models over HTTP', () => {
    it('all sample models are READY', async () => {
      for (const m of ['identity_wasm', 'add_sub_wasm', 'repeat_wasm', 'preprocess_wasm']) {
        const r = await fetch(`${server.httpUrl}/v2/models/${m}/ready`);
        expect(r.status, m).toBe(200);
      }
    });

    it('/infer on identity_wasm and add_sub_wasm', async () => {
      const id = await post('/v2/models/identity_wasm/infer', { inputs: [{ name: 'INPUT0', shape: [3], datatype: 'FP32', data: [1.5, -2, 3] }] });
      expect(id.status).toBe(200);
      const idBody = await id.json();
      expect(idBody.outputs).toEqual([{ name: 'OUTPUT0', datatype: 'FP32', shape: [3], data: [1.5, -2, 3] }]);
      const as = await post('/v2/models/add_sub_wasm/infer', {
        inputs: [
          { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [10, 10, 10, 10] },
        ],
      });
      const asBody = await as.json();
      expect(asBody.outputs.find((o: { name: string }) => o.name === 'OUTPUT0').data).toEqual([11, 12, 13, 14]);
      expect(asBody.outputs.find((o: { name: string }) => o.name === 'OUTPUT1').data).toEqual([-9, -8, -7, -6]);
    });

    it('statistics count sandboxed inferences the same way on every engine (compute times from the engine)', async () => {
      const before = await (await fetch(`${server.httpUrl}/v2/models/identity_wasm/stats`)).json();
      const n0 = before.model_stats[0].inference_count as number;
      for (let i = 0; i < 3; i++) {
        const r = await post('/v2/models/identity_wasm/infer', { inputs: [{ name: 'INPUT0', shape: [2], datatype: 'FP32', data: [i, i] }] });
        expect(r.status).toBe(200);
      }
      const s = (await (await fetch(`${server.httpUrl}/v2/models/identity_wasm/stats`)).json()).model_stats[0];
      expect(s.inference_count).toBe(n0 + 3);
      expect(s.execution_count).toBeGreaterThanOrEqual(n0 + 3);
      expect(s.inference_stats.success.count).toBeGreaterThanOrEqual(3);
      expect(s.inference_stats.compute_infer.count).toBeGreaterThanOrEqual(3);
      expect(s.inference_stats.compute_infer.ns).toBeGreaterThan(0);
    });

    it('a guest error reaches the client with its code', async () => {
      const r = await post('/v2/models/add_sub_wasm/infer', {
        inputs: [
          { name: 'INPUT0', shape: [2], datatype: 'FP32', data: [1, 2] },
          { name: 'INPUT1', shape: [1], datatype: 'FP32', data: [1] },
        ],
      });
      expect(r.status).toBe(400);
      expect((await r.json()).error).toMatch(/INPUT0 shape \[2\] and INPUT1 shape \[1\] differ/);
    });

    it('/infer on the decoupled repeat_wasm is 501', async () => {
      const r = await post('/v2/models/repeat_wasm/infer', {
        inputs: [
          { name: 'IN', shape: [1], datatype: 'INT32', data: [1] },
          { name: 'DELAY', shape: [1], datatype: 'UINT32', data: [0] },
          { name: 'WAIT', shape: [1], datatype: 'UINT32', data: [0] },
        ],
      });
      expect(r.status).toBe(501);
    });

    it('/generate_stream on repeat_wasm streams one SSE event per response', async () => {
      const r = await post('/v2/models/repeat_wasm/generate_stream', { IN: [4, 5, 6], DELAY: [30, 30, 30], WAIT: [0] });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
      const text = await r.text();
      const events = text
        .split('\n\n')
        .filter((e) => e.startsWith('data: '))
        .map((e) => JSON.parse(e.slice(6)));
      expect(events.map((e) => [e.OUT, e.IDX])).toEqual([
        [4, 0],
        [5, 1],
        [6, 2],
      ]);
      expect(events[0].model_name).toBe('repeat_wasm');
    });

    it('/generate works for a decoupled model with exactly one response, and for identity', async () => {
      const one = await post('/v2/models/repeat_wasm/generate', { IN: [7], DELAY: [0], WAIT: [0] });
      expect(one.status).toBe(200);
      expect(await one.json()).toMatchObject({ model_name: 'repeat_wasm', OUT: 7, IDX: 0 });
      const id = await post('/v2/models/identity_wasm/generate', { INPUT0: [1, 2] });
      expect(id.status).toBe(200);
      expect((await id.json()).OUTPUT0).toEqual([1, 2]);
    });
  });
});
