/**
 * `TritonPythonModel.is_ready` (spec §7.1; Triton python_backend's user-defined
 * readiness): a model that defines it decides its readiness as `GET /v2/models/<m>/ready`, the
 * versioned route, gRPC ModelReady, tritonclient and the repository index see it. Raising, a
 * non-bool answer and a call that hangs past `is_ready_timeout_ms` all mean "not ready" (the first
 * two logged); `async def is_ready` works; concurrent probes share one call and answers are cached
 * for `is_ready_cache_ms`; every instance is asked; inference is not gated (as Triton).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { VENV_PYTHON } from '../../compat/venv.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { sleep } from '../../helpers/wait.js';
import { f32, infer, pythonEnvironment, pythonModel, tensor, pythonServer } from './helpers.js';

const skip = await pythonEnvironment();
if (skip) console.warn(`Python readiness tests skipped: ${skip}`);

const IO = `max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 2 ] } ]
`;
const EXECUTE = `    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", r.inputs()[0].as_numpy() + 1)]) for r in requests]
`;
const param = (k: string, v: string | number) => `parameters { key: "${k}" value { string_value: "${v}" } }\n`;
const HEAD = `import asyncio, os, time
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
`;
/** is_ready() appends a line to `<model dir>/calls` each time it runs. */
const COUNT = `        with open(os.path.join(pb_utils.get_model_dir(), "calls"), "a") as f:
            f.write("x\\n")
`;

function buildRepo(): TempRepo {
  const repo = tempRepo([]);
  // Flips with a file the test writes (no cache, so each probe asks).
  pythonModel(
    repo,
    'flip_py',
    IO + param('is_ready_cache_ms', 0),
    `${HEAD}    def is_ready(self):
        return os.path.exists(os.path.join(pb_utils.get_model_dir(), "ready"))
${EXECUTE}`,
  );
  pythonModel(
    repo,
    'async_py',
    IO + param('is_ready_cache_ms', 0),
    `${HEAD}    async def is_ready(self):
        await asyncio.sleep(0.01)
        return os.path.exists(os.path.join(pb_utils.get_model_dir(), "ready"))
${EXECUTE}`,
  );
  pythonModel(
    repo,
    'raises_py',
    IO,
    `${HEAD}    def is_ready(self):
        raise RuntimeError("feature store unreachable")
${EXECUTE}`,
  );
  pythonModel(
    repo,
    'nonbool_py',
    IO,
    `${HEAD}    def is_ready(self):
        return "yes"
${EXECUTE}`,
  );
  pythonModel(
    repo,
    'hangs_py',
    IO + param('is_ready_timeout_ms', 300) + param('is_ready_cache_ms', 0),
    `${HEAD}    def is_ready(self):
${COUNT}        time.sleep(3600)
${EXECUTE}`,
  );
  pythonModel(
    repo,
    'counted_py',
    IO + param('is_ready_cache_ms', 60000),
    `${HEAD}    def is_ready(self):
${COUNT}        time.sleep(0.2)
        return True
${EXECUTE}`,
  );
  // Two instances; only the second says it is not ready: the model is not ready.
  pythonModel(
    repo,
    'two_py',
    IO.replace('max_batch_size: 0', 'max_batch_size: 0\ninstance_group [ { kind: KIND_CPU, count: 2 } ]'),
    `${HEAD}    def initialize(self, args):
        self.name = args["model_instance_name"]
    def is_ready(self):
${COUNT}        return self.name.endswith("_0")
${EXECUTE}`,
  );
  pythonModel(repo, 'plain_py', IO, `${HEAD}${EXECUTE}`);
  pythonModel(
    repo,
    'crashy_py',
    IO,
    `${HEAD}    def is_ready(self):
        return True
    def execute(self, requests):
        if requests[0].inputs()[0].as_numpy()[0] < 0:
            os._exit(3)
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", r.inputs()[0].as_numpy())]) for r in requests]
`,
  );
  return repo;
}

const readyStatus = async (s: RunningServer, path: string) => (await fetch(`${s.httpUrl}/v2/models/${path}/ready`)).status;
const calls = (repo: TempRepo, model: string) =>
  existsSync(join(repo.path, model, 'calls'))
    ? readFileSync(join(repo.path, model, 'calls'), 'utf8')
        .split('\n')
        .filter(Boolean).length
    : 0;

describe.skipIf(skip !== undefined)('Python is_ready', () => {
  const py = pythonServer(buildRepo, { grpcPort: 0 });

  it('the answer flips /ready and /versions/1/ready; inference is still served while not ready (as Triton)', async () => {
    const flag = join(py.repo.path, 'flip_py', 'ready');
    rmSync(flag, { force: true });
    expect(await readyStatus(py.s, 'flip_py')).toBe(400);
    expect(await readyStatus(py.s, 'flip_py/versions/1')).toBe(400);
    const r = await infer(py.s, 'flip_py', [tensor('X', 'FP32', [2], new Float32Array([1, 2]))]);
    expect(f32(r.responses[0]?.outputs[0])).toEqual([2, 3]);
    writeFileSync(flag, '');
    expect(await readyStatus(py.s, 'flip_py')).toBe(200);
    expect(await readyStatus(py.s, 'flip_py/versions/1')).toBe(200);
    rmSync(flag);
    expect(await readyStatus(py.s, 'flip_py')).toBe(400);
  });

  it('async def is_ready is awaited', async () => {
    const flag = join(py.repo.path, 'async_py', 'ready');
    rmSync(flag, { force: true });
    expect(await readyStatus(py.s, 'async_py')).toBe(400);
    writeFileSync(flag, '');
    expect(await readyStatus(py.s, 'async_py')).toBe(200);
  });

  it('raising or answering a non-bool means not ready, and the log says why', async () => {
    expect(await readyStatus(py.s, 'raises_py')).toBe(400);
    expect(await readyStatus(py.s, 'nonbool_py')).toBe(400);
    expect(py.log.some((l) => l.includes('is_ready() failed') && l.includes('feature store unreachable'))).toBe(true);
    expect(py.log.some((l) => l.includes('is_ready() must return a bool, got str'))).toBe(true);
    // A model without is_ready is ready while its process runs.
    expect(await readyStatus(py.s, 'plain_py')).toBe(200);
  });

  it('a hanging is_ready is bounded by is_ready_timeout_ms; probes meanwhile wait for the same call', async () => {
    const t0 = Date.now();
    const answers = await Promise.all([readyStatus(py.s, 'hangs_py'), readyStatus(py.s, 'hangs_py'), readyStatus(py.s, 'hangs_py')]);
    expect(answers).toEqual([400, 400, 400]);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(await readyStatus(py.s, 'hangs_py')).toBe(400);
    await sleep(100);
    expect(calls(py.repo, 'hangs_py')).toBe(1); // one call in the stub, still running
    expect(py.log.some((l) => l.includes('is_ready() did not answer within 300 ms'))).toBe(true);
    // The model still serves (readiness runs on its own thread in the stub).
    const r = await infer(py.s, 'hangs_py', [tensor('X', 'FP32', [2], new Float32Array([5, 6]))]);
    expect(f32(r.responses[0]?.outputs[0])).toEqual([6, 7]);
  });

  it('a flood of probes reaches is_ready once (shared call, cached answer)', async () => {
    const answers = await Promise.all(Array.from({ length: 40 }, () => readyStatus(py.s, 'counted_py')));
    expect(answers.every((a) => a === 200)).toBe(true);
    expect(await readyStatus(py.s, 'counted_py')).toBe(200);
    expect(calls(py.repo, 'counted_py')).toBe(1);
  });

  it('every instance is asked; one instance not ready makes the model not ready', async () => {
    expect(await readyStatus(py.s, 'two_py')).toBe(400);
    expect(calls(py.repo, 'two_py')).toBeGreaterThanOrEqual(2);
  });

  it('the repository index shows a not-ready model UNAVAILABLE with the reason', async () => {
    rmSync(join(py.repo.path, 'flip_py', 'ready'), { force: true });
    const idx = (await postJson(`${py.s.httpUrl}/v2/repository/index`, {})).json as { name: string; state?: string; reason?: string }[];
    const e = (n: string) => idx.find((x) => x.name === n);
    expect(e('flip_py')).toMatchObject({ state: 'UNAVAILABLE', reason: 'is_ready() returned False' });
    expect(e('raises_py')?.reason).toContain('feature store unreachable');
    expect(e('plain_py')).toMatchObject({ state: 'READY' });
    const readyOnly = (await postJson(`${py.s.httpUrl}/v2/repository/index`, { ready: true })).json as { name: string }[];
    expect(readyOnly.map((x) => x.name)).not.toContain('flip_py');
    expect(readyOnly.map((x) => x.name)).toContain('plain_py');
  });

  it('tritonclient (HTTP and gRPC) sees the flip', async () => {
    const flag = join(py.repo.path, 'flip_py', 'ready');
    const script = `
import sys, os
import tritonclient.http as h, tritonclient.grpc as g
hc, gc = h.InferenceServerClient(sys.argv[1]), g.InferenceServerClient(sys.argv[2])
flag = sys.argv[3]
out = []
for present in (False, True, False):
    if present:
        open(flag, "w").close()
    elif os.path.exists(flag):
        os.remove(flag)
    out.append([hc.is_model_ready("flip_py"), gc.is_model_ready("flip_py"), gc.is_model_ready("flip_py", "1")])
print(out)
`;
    const { stdout } = await promisify(execFile)(VENV_PYTHON, ['-c', script, py.s.httpUrl.replace('http://', ''), py.s.grpcUrl!, flag]);
    expect(stdout.trim()).toBe('[[False, False, False], [True, True, True], [False, False, False]]');
  });

  it('a crashed instance is not ready until its process is back', async () => {
    expect(await readyStatus(py.s, 'crashy_py')).toBe(200);
    const bad = await postJson(`${py.s.httpUrl}/v2/models/crashy_py/infer`, { inputs: [{ name: 'X', datatype: 'FP32', shape: [2], data: [-1, 0] }] });
    expect(bad.status).toBe(503);
    expect(await readyStatus(py.s, 'crashy_py')).toBe(400);
    let back = false;
    for (let i = 0; i < 100 && !back; i++) {
      back = (await readyStatus(py.s, 'crashy_py')) === 200;
      if (!back) await sleep(100);
    }
    expect(back).toBe(true);
  }, 30_000);
});
