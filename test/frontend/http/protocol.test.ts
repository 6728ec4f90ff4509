/**
 * Protocol paths that need particular backends, driven through an in-process JS test backend:
 * decoupled models (/infer 501, /generate, /generate_stream SSE), dynamic batching, queue policy,
 * response parameters, and a backend that breaks the output contract.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { JsBackendResolver, REPEAT_CONFIG, echoConfig, executed } from '../../helpers/js-backend.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { sleep } from '../../helpers/wait.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;

beforeAll(async () => {
  repo = tempRepo(['simple']);
  const model = (name: string, config: string) => {
    repo.addModel(name, config);
  };
  model('repeat', REPEAT_CONFIG);
  model('echo', echoConfig());
  model(
    'batched',
    echoConfig(
      'dynamic_batching { max_queue_delay_microseconds: 200000 preferred_batch_size: [ 8 ] }\nparameters { key: "delay_ms" value: { string_value: "20" } }',
    ),
  );
  model(
    'tiny_queue',
    echoConfig('dynamic_batching { default_queue_policy { max_queue_size: 1 } }\nparameters { key: "delay_ms" value: { string_value: "300" } }'),
  );
  model(
    'timeouts',
    echoConfig('dynamic_batching { default_queue_policy { allow_timeout_override: true } }\nparameters { key: "delay_ms" value: { string_value: "300" } }'),
  );
  model('bad_output', echoConfig('parameters { key: "mode" value: { string_value: "bad" } }'));
  server = await startTestServer(repo, { modelControlMode: 'none', backendResolvers: [new JsBackendResolver()] });
  url = server.httpUrl;
});
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

const echoBody = (x: number) => ({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4], data: [x, x, x, x] }] });

describe('decoupled models', () => {
  it('/infer on a decoupled model: 501', async () => {
    const r = await postJson(`${url}/v2/models/repeat/infer`, { inputs: [{ name: 'IN', datatype: 'INT32', shape: [2], data: [1, 2] }] });
    expect(r.status).toBe(501);
    expect(r.json.error).toBe("HTTP end point doesn't support models with decoupled transaction policy");
  });

  it('/generate_stream streams one SSE event per response', async () => {
    const res = await fetch(`${url}/v2/models/repeat/generate_stream`, { method: 'POST', body: JSON.stringify({ IN: [7, 8, 9], id: 'g1' }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.replace(/^data: /, '')));
    expect(events).toEqual([
      { id: 'g1', model_name: 'repeat', model_version: '1', OUT: 7, IDX: 0 },
      { id: 'g1', model_name: 'repeat', model_version: '1', OUT: 8, IDX: 1 },
      { id: 'g1', model_name: 'repeat', model_version: '1', OUT: 9, IDX: 2 },
    ]);
  });

  it('/generate needs exactly one response', async () => {
    const one = await postJson(`${url}/v2/models/repeat/generate`, { IN: 5 });
    expect(one.status).toBe(200);
    expect(one.json).toEqual({ model_name: 'repeat', model_version: '1', OUT: 5, IDX: 0 });
    const many = await postJson(`${url}/v2/models/repeat/generate`, { IN: [1, 2] });
    expect(many.status).toBe(400);
    expect(many.json.error).toMatch(/generate expects model to produce exactly 1 response/);
  });

  it('/generate on a non-decoupled ONNX model maps keys to inputs', async () => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const r = await postJson(`${url}/v2/models/simple/generate`, { INPUT0: a, parameters: { INPUT1: a, note: 'x' } });
    expect(r.status).toBe(200);
    expect(r.json.OUTPUT0).toEqual(a.map((x) => 2 * x));
    expect(r.json.OUTPUT1).toEqual(a.map(() => 0));
    const wrong = await postJson(`${url}/v2/models/simple/generate`, { INPUT0: [1, 2, 3], INPUT1: a });
    expect(wrong.status).toBe(400);
  });
});

describe('scheduling', () => {
  it('the dynamic batcher gathers concurrent requests into one execution', async () => {
    executed.length = 0;
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => postJson(`${url}/v2/models/batched/infer`, echoBody(i))));
    results.forEach((r, i) => {
      expect(r.status).toBe(200);
      expect(r.json.outputs[0].data).toEqual([i, i, i, i]);
      expect(r.json.parameters).toEqual({ echoed: true });
    });
    const batches = executed.filter((e) => e.model === 'batched');
    expect(batches.reduce((n, b) => n + b.batchSizes.length, 0)).toBe(8);
    expect(Math.max(...batches.map((b) => b.batchSizes.length))).toBeGreaterThan(1);
    const stats = (await (await fetch(`${url}/v2/models/batched/stats`)).json()).model_stats[0];
    expect(stats.inference_count).toBe(8);
    expect(stats.execution_count).toBe(batches.length);
  });

  it('without dynamic batching every request executes alone', async () => {
    executed.length = 0;
    await Promise.all(Array.from({ length: 4 }, (_, i) => postJson(`${url}/v2/models/echo/infer`, echoBody(i))));
    expect(executed.filter((e) => e.model === 'echo').every((e) => e.batchSizes.length === 1)).toBe(true);
  });

  it('a full queue answers 503 "Exceeds maximum queue size"', async () => {
    const all = await Promise.all(Array.from({ length: 4 }, (_, i) => postJson(`${url}/v2/models/tiny_queue/infer`, echoBody(i))));
    const rejected = all.filter((r) => r.status === 503);
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected[0]!.json.error).toBe('Exceeds maximum queue size');
    expect(all.filter((r) => r.status === 200).length).toBeGreaterThan(0);
  });

  it('a request whose timeout expires in the queue is rejected', async () => {
    const first = postJson(`${url}/v2/models/timeouts/infer`, echoBody(1));
    await sleep(20);
    const late = await postJson(`${url}/v2/models/timeouts/infer`, { ...echoBody(2), parameters: { timeout: 1000 } });
    const next = await postJson(`${url}/v2/models/timeouts/infer`, echoBody(3));
    expect((await first).status).toBe(200);
    expect(late.status).toBe(503);
    expect(late.json.error).toBe('Request timeout expired');
    expect(next.status).toBe(200);
  });

  it('outputs that break the config are refused with 500, the server keeps serving', async () => {
    const r = await postJson(`${url}/v2/models/bad_output/infer`, echoBody(1));
    expect(r.status).toBe(500);
    expect(r.json.error).toMatch(/backend produced output 'OUTPUT0' of shape \[1000\]/);
    expect((await postJson(`${url}/v2/models/echo/infer`, echoBody(2))).status).toBe(200);
  });
});
