// Iterative sequences on a native (C ABI) backend (spec §5.6 `iterative_sequence`, §6.7 item 6):
// the test backend warden_test_iterative (test/fixtures/native/backends/iterative.c, after Triton's
// server/src/test/iterative_sequence) releases each request with
// TRITONSERVER_REQUEST_RELEASE_RESCHEDULE until it has sent as many responses as its INPUT says.
// Expected answers follow Triton's own end-to-end test, server/qa/L0_iterative_sequence/
// iterative_sequence_e2e.py: `/generate_stream` with {"INPUT": 2} streams OUTPUT 1 then 0; four
// concurrent requests on one slot all complete (test_backlog_fill); a model whose scheduler cannot
// reschedule answers Triton's "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE"
// error (test_unsupported_sequence_scheduler / test_unsupported_dynamic_scheduler).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { generateStream as streamGenerate, postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { TEST_BACKEND_DIR, requireNativeBuild, startNativeServer } from './helpers.js';

let repo: TempRepo;
let server: RunningServer;

const IO = `input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU } ]`;

const REFUSED = 'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.';

beforeAll(async () => {
  requireNativeBuild();
  repo = tempRepo([]);
  const model = (name: string, body: string) => {
    repo.write(`${name}/config.pbtxt`, `backend: "warden_test_iterative"\n${body}\n${IO}`);
    mkdirSync(join(repo.path, name, '1'), { recursive: true });
  };
  // Triton's L0_iterative_sequence model config.
  model('iterative', 'max_batch_size: 1\nmodel_transaction_policy { decoupled: true }\nsequence_batching { iterative_sequence: true }');
  model(
    'iterative_oldest',
    'max_batch_size: 1\nmodel_transaction_policy { decoupled: true }\nsequence_batching { iterative_sequence: true oldest { max_candidate_sequences: 2 } }',
  );
  model('not_iterative_direct', 'max_batch_size: 1\nsequence_batching { direct { } iterative_sequence: false }');
  model('not_iterative_oldest', 'max_batch_size: 1\nsequence_batching { oldest { } iterative_sequence: false }');
  model('dynamic', 'max_batch_size: 1\ndynamic_batching { }');
  // In a backend-host process the ring does not carry reschedulable: the release is refused.
  model(
    'iterative_isolated',
    'max_batch_size: 1\nmodel_transaction_policy { decoupled: true }\nsequence_batching { iterative_sequence: true }\nparameters { key: "warden.isolation" value: { string_value: "process" } }',
  );
  server = await startNativeServer(repo.path, { backendDirectory: TEST_BACKEND_DIR, metricsPort: -1 });
});

afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

/** `/generate_stream` of `model` on this file's server. */
const generateStream = (model: string, body: unknown) => streamGenerate(server.httpUrl, model, body);

describe('iterative_sequence on a native backend (TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)', () => {
  it('a request without sequence id streams one response per run: OUTPUT 2, 1, 0 (test_generate_stream)', async () => {
    const r = await generateStream('iterative', { INPUT: 3 });
    expect(r.status).toBe(200);
    expect(r.events.map((e) => e.error ?? e.OUTPUT)).toEqual([2, 1, 0]);
    expect(r.events[0]).toMatchObject({ model_name: 'iterative', model_version: '1' });
  });

  it('four concurrent requests on one sequence slot each get their whole stream (test_backlog_fill)', async () => {
    const all = await Promise.all([2, 3, 1, 4].map((n) => generateStream('iterative', { INPUT: n })));
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(all.map((r) => r.events.map((e) => e.error ?? e.OUTPUT))).toEqual([[1, 0], [2, 1, 0], [0], [3, 2, 1, 0]]);
  });

  it('oldest strategy, more requests than candidate sequences: every stream completes', async () => {
    const all = await Promise.all([3, 3, 3, 3, 3].map((n) => generateStream('iterative_oldest', { INPUT: n })));
    expect(all.map((r) => r.events.map((e) => e.error ?? e.OUTPUT))).toEqual(all.map(() => [2, 1, 0]));
  });

  it.each(['not_iterative_direct', 'not_iterative_oldest'])(
    "%s: a sequence batcher without iterative_sequence refuses the reschedule with Triton's error (test_unsupported_sequence_scheduler)",
    async (model) => {
      const r = await postJson(`${server.httpUrl}/v2/models/${model}/infer`, {
        inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [2] }],
        parameters: { sequence_id: 7, sequence_start: true },
      });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe(REFUSED);
    },
  );

  it("dynamic batching refuses the reschedule with Triton's error (test_unsupported_dynamic_scheduler)", async () => {
    const r = await postJson(`${server.httpUrl}/v2/models/dynamic/infer`, { inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [2] }] });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe(REFUSED);
    // The backend kept the refused request and released it with ALL: the model still serves.
    const ok = await postJson(`${server.httpUrl}/v2/models/dynamic/infer`, { inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [1] }] });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.outputs[0].data).toEqual([0]);
  });

  it("in a backend-host process (warden.isolation=process) the reschedule is refused with Triton's error, not lost", async () => {
    const r = await generateStream('iterative_isolated', { INPUT: 2 });
    expect(r.events.map((e) => e.error ?? e.OUTPUT)).toEqual([REFUSED]);
  });

  it('the model unloads cleanly after rescheduled requests: no request was left unreleased', async () => {
    await generateStream('iterative', { INPUT: 2 });
    const r = await postJson(`${server.httpUrl}/v2/repository/models/iterative/unload`, {});
    expect(r.status, r.text).toBe(200);
    // Unload answers once unloading has begun (as Triton's does); the version leaves UNLOADING
    // only when every request the backend held has been released.
    const state = async () => {
      const idx = await postJson(`${server.httpUrl}/v2/repository/index`, {});
      return idx.json.find((m: { name: string }) => m.name === 'iterative')?.state;
    };
    await expect.poll(state, { timeout: 10_000, interval: 50 }).toBe('UNAVAILABLE');
  });
});
