// Batch statistics of native backends as Triton's core counts them: `execution_count`,
// `batch_stats` and `last_inference` change only through a batch the backend reported
// (TRITONBACKEND_ModelInstanceReportBatchStatistics -> InferenceStatsAggregator::UpdateInferBatchStats,
// core backend_model_instance.cc / infer_stats.cc), with the batch size it reported. warden_repeat
// reports none (per-request statistics only: tritonserver 2.51 shows execution_count 0 and
// batch_stats [] for it, test/backends/native/triton-differential.test.ts); warden_add_sub reports the
// number of requests of an execution as its batch size (tritonserver 2.51, measured: a request of
// 2 batch elements to a batching warden_add_sub model is inference_count 2, batch_stats
// [{batch_size: 1}]); warden_identity the batch elements.
// Also in a backend-host process (warden.isolation=process). Warden's own backends (ONNX, wasm,
// Python) are counted on Warden's side: test/frontend/http/infer.test.ts, test/backends/wasm/http.test.ts,
// test/compat/python/statistics.py.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postJson } from '../../helpers/repo.js';
import { copyRepoModel, nativeServerPerFile } from './helpers.js';

const ISOLATED = 'parameters { key: "warden.isolation" value { string_value: "process" } }';

const native = nativeServerPerFile((repo) => {
  copyRepoModel(repo, 'repeat_native');
  copyRepoModel(repo, 'identity_native');
  // The same decoupled backend in a backend-host process.
  repo.write(
    'repeat_isolated/config.pbtxt',
    readFileSync(join(repo.path, 'repeat_native', 'config.pbtxt'), 'utf8').replace('name: "repeat_native"', 'name: "repeat_isolated"') + `\n${ISOLATED}\n`,
  );
  repo.write('repeat_isolated/1/.keep', '');
  // warden_add_sub with batching: a request of 2 batch elements is one request to the backend,
  // which reports a batch of 1 (sample_execute_each: its request count).
  const addSub = (name: string) =>
    repo.write(
      `${name}/config.pbtxt`,
      `name: "${name}"\nbackend: "warden_add_sub"\nmax_batch_size: 8\n` +
        ['INPUT0', 'INPUT1'].map((n) => `input { name: "${n}" data_type: TYPE_FP32 dims: [ 2 ] }`).join('\n') +
        '\n' +
        ['OUTPUT0', 'OUTPUT1'].map((n) => `output { name: "${n}" data_type: TYPE_FP32 dims: [ 2 ] }`).join('\n') +
        `\ninstance_group { kind: KIND_CPU count: 1 }\n`,
    );
  addSub('add_sub_batched');
  repo.write('add_sub_batched/1/.keep', '');
});

interface Entry {
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: { success: { count: number } };
  batch_stats: { batch_size: number; compute_infer: { count: number } }[];
}
const stats = async (model: string): Promise<Entry> => (await (await fetch(`${native.url}/v2/models/${model}/stats`)).json()).model_stats[0];
const view = (e: Entry) => ({
  inferences: e.inference_count,
  successes: e.inference_stats.success.count,
  executions: e.execution_count,
  batches: e.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
  lastInferenceZero: e.last_inference === 0,
});

async function stream(model: string): Promise<void> {
  const res = await fetch(`${native.url}/v2/models/${model}/generate_stream`, {
    method: 'POST',
    body: JSON.stringify({ IN: [7, 8], DELAY: [0, 0], WAIT: [0] }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(text.match(/^data: /gm)).toHaveLength(2);
}

describe('native backends: batch statistics only where the backend reports them', () => {
  for (const model of ['repeat_native', 'repeat_isolated']) {
    it(`${model}: a backend that reports no batch has requests counted, no execution, no batch_stats, last_inference 0`, async () => {
      // Three requests one after another: one instance, so the third answer comes after the first
      // two executions ended (and would have been counted).
      for (let i = 0; i < 3; i++) await stream(model);
      // A request the backend fails (its own check) moves last_inference no more than a success.
      const bad = await fetch(`${native.url}/v2/models/${model}/generate_stream`, {
        method: 'POST',
        body: JSON.stringify({ IN: [7, 8], DELAY: [0], WAIT: [0] }),
      });
      expect(await bad.text()).toContain('repeat: DELAY must have as many elements as IN');
      await expect.poll(async () => (await stats(model)).inference_stats.success.count).toBe(3);
      expect(view(await stats(model))).toEqual({ inferences: 3, successes: 3, executions: 0, batches: [], lastInferenceZero: true });
    });
  }

  it('identity_native: a reported batch is one execution of the batch size reported', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await postJson(`${native.url}/v2/models/identity_native/infer`, {
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1, 2, 3] }],
      });
      expect(r.status, r.text).toBe(200);
    }
    await expect.poll(async () => (await stats('identity_native')).execution_count).toBe(2);
    expect(view(await stats('identity_native'))).toEqual({ inferences: 2, successes: 2, executions: 2, batches: [[1, 2]], lastInferenceZero: false });
  });

  it("add_sub_batched: the batch size is the backend's (its request count), not the scheduler's batch elements", async () => {
    const body = { inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'FP32', shape: [2, 2], data: [1, 2, 3, 4] })) };
    const r = await postJson(`${native.url}/v2/models/add_sub_batched/infer`, body);
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual([2, 4, 6, 8]);
    await expect.poll(async () => (await stats('add_sub_batched')).execution_count).toBe(1);
    // inference_count counts the request's 2 batch elements; the backend reported a batch of 1.
    expect(view(await stats('add_sub_batched'))).toEqual({ inferences: 2, successes: 1, executions: 1, batches: [[1, 1]], lastInferenceZero: false });
  });
});
