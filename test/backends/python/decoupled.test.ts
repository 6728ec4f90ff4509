/**
 * Decoupled Python models (spec §7.1, §3.6): repeat_python's responses through the
 * response sender stream over `/generate_stream` and `/generate`; a cancelled request is seen by
 * the model (`is_cancelled()`); a model unloaded while streaming finishes its stream first.
 */
import { describe, expect, it } from 'vitest';
import { sleep, until } from '../../helpers/wait.js';
import { SINGLE_USER, type InferenceResponse } from '../../../host/src/contract/types.js';
import type { TritonError } from '../../../host/src/contract/errors.js';
import { PROJECT_ROOT, postJson, tempRepo, sseEvents } from '../../helpers/repo.js';
import { join } from 'node:path';
import { pythonEnvironment, pythonModel, tensor, pythonServer } from './helpers.js';

const skip = await pythonEnvironment();

describe.skipIf(skip !== undefined)('decoupled Python models', () => {
  const py = pythonServer(
    () => {
      const repo = tempRepo([]);
      pythonModel(
        repo,
        'watch_cancel_py',
        `max_batch_size: 0\nmodel_transaction_policy { decoupled: true }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
        `import threading, time
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            threading.Thread(target=self.run, args=(r,), daemon=True).start()
    def run(self, r):
        sender = r.get_response_sender()
        for i in range(200):
            if r.is_cancelled():
                pb_utils.Logger.log_info("watch_cancel_py: cancelled after %d responses" % i)
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError("cancelled", pb_utils.TritonError.CANCELLED)), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return
            sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([i], np.int32))]))
            time.sleep(0.02)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
`,
      );
      pythonModel(
        repo,
        'raise_decoupled_py',
        `max_batch_size: 0\nmodel_transaction_policy { decoupled: true }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
        `import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            v = int(r.inputs()[0].as_numpy()[0])
            if v == 0:
                raise RuntimeError("decoupled execute failed")
            s = r.get_response_sender()
            s.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([v], np.int32))]))
            if v == 2:
                raise RuntimeError("failed after one response")
            s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return [] if v == 3 else None
`,
      );
      return repo;
    },
    {
      before: [join(PROJECT_ROOT, 'model_repository')],
      loadModels: ['repeat_python', 'watch_cancel_py', 'raise_decoupled_py'],
    },
  );

  it('repeat_python streams one response per element of IN over /generate_stream, then ends', async () => {
    const res = await fetch(`${py.s.httpUrl}/v2/models/repeat_python/generate_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ IN: [7, 8, 9, 10], DELAY: [5, 5, 5, 5], WAIT: 1 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events = sseEvents(await res.text());
    expect(events).toEqual([7, 8, 9, 10].map((v, i) => ({ model_name: 'repeat_python', model_version: '1', OUT: v, IDX: i })));
  });

  it('/infer on the decoupled model is refused as Triton does; /generate with one element answers once', async () => {
    const r = await postJson(`${py.s.httpUrl}/v2/models/repeat_python/generate`, { IN: [5], DELAY: [0], WAIT: 0 });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ model_name: 'repeat_python', model_version: '1', OUT: 5, IDX: 0 });
    const inf = await postJson(`${py.s.httpUrl}/v2/models/repeat_python/infer`, {
      inputs: [
        { name: 'IN', datatype: 'INT32', shape: [1], data: [1] },
        { name: 'DELAY', datatype: 'UINT32', shape: [1], data: [0] },
        { name: 'WAIT', datatype: 'UINT32', shape: [1], data: [0] },
      ],
    });
    expect(inf.status).not.toBe(200);
  });

  it('a request cancelled by its caller is seen by the model (is_cancelled), which stops early', async () => {
    const abort = new AbortController();
    const got: InferenceResponse[] = [];
    const done = new Promise<TritonError | undefined>((resolve) => {
      py.s.api.infer(
        SINGLE_USER,
        'watch_cancel_py',
        -1,
        {
          id: '',
          model: 'watch_cancel_py',
          version: -1,
          tenant: '',
          inputs: [tensor('IN', 'INT32', [1], new Int32Array([1]))],
          requestedOutputs: [],
          parameters: {},
          correlationId: 0,
          flags: 0,
          priority: 0,
          timeoutUs: 0,
        },
        {
          send: (r, final) => {
            if (r) got.push(r);
            if (got.length === 3) abort.abort();
            if (final) resolve(undefined);
          },
          sendError: (e, final) => final && resolve(e),
        },
        abort.signal,
      );
    });
    const err = await done;
    expect(err?.code).toBe('CANCELLED');
    await until(() => py.log.some((l) => l.includes('watch_cancel_py: cancelled after')), { within: 1000, every: 20 });
    const line = py.log.find((l) => l.includes('watch_cancel_py: cancelled after'));
    expect(line).toBeDefined();
    expect(Number(/cancelled after (\d+)/.exec(line!)![1])).toBeLessThan(20);
  });

  it('a decoupled execute that raises: an error before any response, or after one (the stream carries it); returning a value is an error', async () => {
    const go = async (v: number) => {
      const res = await fetch(`${py.s.httpUrl}/v2/models/raise_decoupled_py/generate_stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ IN: v }),
      });
      return { status: res.status, text: await res.text() };
    };
    let r = await go(0);
    expect(r.status).toBe(500);
    expect(r.text).toContain('RuntimeError: decoupled execute failed');
    r = await go(2);
    expect(r.status).toBe(200);
    expect(sseEvents(r.text)).toEqual([{ model_name: 'raise_decoupled_py', model_version: '1', OUT: 2 }, { error: 'RuntimeError: failed after one response' }]);
    r = await go(3);
    expect(sseEvents(r.text)[0]).toMatchObject({ OUT: 3 });
    r = await go(1);
    expect(sseEvents(r.text)).toEqual([{ model_name: 'raise_decoupled_py', model_version: '1', OUT: 1 }]);
  });

  it('unloading while a stream is in flight: the stream completes, then the model unloads; the server keeps serving', async () => {
    const stream = fetch(`${py.s.httpUrl}/v2/models/repeat_python/generate_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ IN: [1, 2, 3, 4, 5], DELAY: [100, 100, 100, 100, 100], WAIT: 0 }),
    }).then(async (r) => ({ status: r.status, events: sseEvents(await r.text()) }));
    await sleep(150);
    const unload = await postJson(`${py.s.httpUrl}/v2/repository/models/repeat_python/unload`, {});
    expect(unload.status).toBe(200);
    const { status, events } = await stream;
    expect(status).toBe(200);
    expect(events.map((e) => e.OUT)).toEqual([1, 2, 3, 4, 5]);
    await until(async () => (await fetch(`${py.s.httpUrl}/v2/models/repeat_python/ready`)).status !== 200, { within: 5_000, every: 50 });
    expect((await fetch(`${py.s.httpUrl}/v2/models/repeat_python/ready`)).status).not.toBe(200);
    expect((await fetch(`${py.s.httpUrl}/v2/models/watch_cancel_py/ready`)).status).toBe(200);
    const reload = await postJson(`${py.s.httpUrl}/v2/repository/models/repeat_python/load`, {});
    expect(reload.status).toBe(200);
  });
});
