/**
 * Triton's own Python backend (`libtriton_python.so`, the wheel of test/backends/native/triton-wheel.ts)
 * in Warden's native host, where its stub process meets the host's process rules:
 * - the stub is forked and exec'd by libtriton_python.so without resetting fds 0-2
 *   (python_backend stub_launcher.cc): it must get valid stdin/stdout/stderr, as under
 *   tritonserver (print() reaches the log, sys.stderr is not None);
 * - after the stub is killed, requests still reach the backend's Execute, which answers each
 *   with "Stub process ... is not healthy" (python_be.cc); Triton asks
 *   TRITONBACKEND_ModelInstanceReady only for readiness checks (core backend_model_instance.cc),
 *   so no request may wait on that hook.
 * Skips (with the reason) when the wheel cannot be fetched or run here.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { postJson } from '../../helpers/repo.js';
import { wheelServers } from './triton-wheel.js';

const MODEL_PY = `
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        # Which standard streams the stub has ("1" each when present): None without fds 0-2.
        self.streams = "".join("0" if s is None else "1" for s in (sys.stdin, sys.stdout, sys.stderr))
        print("tp_stdio: print() works", flush=True)
        sys.stderr.write("tp_stdio: sys.stderr works\\n")

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            if int(x[0]) == -9:
                os.kill(os.getpid(), 9)
            out = np.array([self.streams.encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", out)]))
        return responses
`;

const tp = wheelServers(
  'tpstub',
  (repo) => {
    repo.write(
      'tp_stdio/config.pbtxt',
      'backend: "python"\nmax_batch_size: 0\ninput { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] }\noutput { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] }\ninstance_group { kind: KIND_CPU count: 1 }\n',
    );
    mkdirSync(join(repo.path, 'tp_stdio', '1'), { recursive: true });
    writeFileSync(join(repo.path, 'tp_stdio', '1', 'model.py'), MODEL_PY);
  },
  { warden: { loadModels: ['tp_stdio'] } },
);

const body = (v: number) => ({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [v] }] });

/** An inference that must be answered: one left waiting fails the test instead of hanging it. */
function infer(v: number): Promise<{ status: number; json: any; text: string }> {
  return Promise.race([
    postJson(`${tp.warden!.httpUrl}/v2/models/tp_stdio/infer`, body(v)),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('request was never answered')), 60_000).unref()),
  ]);
}

describe("Triton's python backend stub in Warden's native host", () => {
  it('the stub has stdin, stdout and stderr (print() and sys.stderr work in initialize)', async (ctx) => {
    if (!tp.wheel.ok) return ctx.skip(`Triton's Python backend wheel unavailable: ${tp.wheel.reason}`);
    const r = await infer(1);
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual(['111']);
  }, 120_000);

  it("after the stub is killed every later request is answered with the backend's error, none waits", async (ctx) => {
    if (!tp.wheel.ok) return ctx.skip(`Triton's Python backend wheel unavailable: ${tp.wheel.reason}`);
    const crash = await infer(-9);
    expect(crash.status).not.toBe(200);
    // As under tritonserver: the requests reach the backend's Execute, which answers each with its
    // error (this python_backend does not restart a crashed stub; python_be.cc). The wheel's
    // backend (2.51) exports no TRITONBACKEND_ModelInstanceReady; later ones do, and fail it from
    // now on: requests must not wait on it either (test/backends/native/instance-ready.test.ts).
    for (let i = 0; i < 4; i++) {
      const r = await infer(2);
      expect(r.status, r.text).toBe(500);
      expect(r.json.error).toMatch(/Stub process .*is not healthy/);
    }
  }, 300_000);
});
