/**
 * Trust boundary and backend search order of the Python backend (spec §6.9, §7;
 * DESIGN "Multi-tenancy"): Python code runs only from the operator's disk — an upload of
 * `model.py` is refused in single-user mode too, never imported (a marker it would write stays
 * absent), and the resolver and backend refuse uploads even when asked directly. Python-based
 * backends resolve to `<backend-directory>/<name>/model.py` when no native library is found.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PythonBackend, PythonBackendResolver, PythonMetrics } from '../../../host/src/backends/python/index.js';
import { backendResolveRequest } from '../../../host/src/contract/load-context.js';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { PROJECT_ROOT, addSubIo, postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { cpSync } from 'node:fs';
import { f32, infer, pythonEnvironment, tensor } from './helpers.js';
import { sleep } from '../../helpers/wait.js';

const skip = await pythonEnvironment();
const b64 = (s: string) => Buffer.from(s).toString('base64');
const io = { input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [2] }], output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [2] }] };

describe.skipIf(skip !== undefined)('Python models come only from the operator', () => {
  let repo: TempRepo;
  let backends: string;
  let s: RunningServer;
  const marker = join(mkdtempSync(join(tmpdir(), 'warden-pymarker-')), 'pwned');
  beforeAll(async () => {
    repo = tempRepo([]);
    cpSync(join(PROJECT_ROOT, 'model_repository', 'add_sub_python'), join(repo.path, 'add_sub_python'), { recursive: true });
    backends = mkdtempSync(join(tmpdir(), 'warden-backends-'));
    // A Python-based backend: <backend-directory>/doubler/model.py, importing a sibling module.
    mkdirSync(join(backends, 'doubler'));
    writeFileSync(join(backends, 'doubler', 'doubler_util.py'), 'FACTOR = 2\n');
    writeFileSync(
      join(backends, 'doubler', 'model.py'),
      `import triton_python_backend_utils as pb_utils
from doubler_util import FACTOR
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", r.inputs()[0].as_numpy() * FACTOR)]) for r in requests]
`,
    );
    // A backend with both a native library and model.py: the library wins (Triton's order).
    mkdirSync(join(backends, 'both'));
    writeFileSync(join(backends, 'both', 'libtriton_both.so'), 'not really a library');
    writeFileSync(join(backends, 'both', 'model.py'), 'raise SystemExit(1)\n');
    repo.write(
      'doubled/config.pbtxt',
      `backend: "doubler"\nmax_batch_size: 0\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ 2 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] } ]\n`,
    );
    repo.write('doubled/1/.keep', '');
    s = await startTestServer(repo, {
      backendDirectory: backends,
      loadModels: ['add_sub_python', 'doubled'],
      exitOnError: true,
    });
  });
  afterAll(async () => {
    await s?.stop();
    repo?.cleanup();
    rmSync(backends, { recursive: true, force: true });
    rmSync(join(marker, '..'), { recursive: true, force: true });
  });

  const evil = `open(${JSON.stringify(marker)}, "w").write("x")\nclass TritonPythonModel:\n    def execute(self, requests):\n        return []\n`;

  it('single-user mode: a load with a model.py file override is refused (400) and never imported', async () => {
    for (const parameters of [
      { config: JSON.stringify({ backend: 'python', ...io }), 'file:1/model.py': b64(evil) },
      { config: JSON.stringify({ backend: 'python', default_model_filename: 'other.py', ...io }), 'file:1/other.py': b64(evil) },
      { config: JSON.stringify({ backend: 'doubler', ...io }), 'file:1/model.py': b64(evil) },
      { config: JSON.stringify({ backend: 'onnxruntime', runtime: 'model.py', ...io }), 'file:1/model.py': b64(evil) },
    ]) {
      const r = await postJson(`${s.httpUrl}/v2/repository/models/evil_py/load`, { parameters });
      expect(r.status, r.text).toBe(400);
      expect(r.json.error).toMatch(/cannot be loaded from uploaded files|uploaded models may not set/);
    }
    // overriding the operator's own Python model with uploaded files: refused, the original keeps serving
    const r = await postJson(`${s.httpUrl}/v2/repository/models/add_sub_python/load`, {
      parameters: {
        config: JSON.stringify({ backend: 'python', ...addSubIo(4) }),
        'file:1/model.py': b64(evil),
      },
    });
    expect(r.status).toBe(400);
    await sleep(300);
    expect(existsSync(marker)).toBe(false);
    const ok = await infer(s, 'add_sub_python', [
      tensor('INPUT0', 'FP32', [4], new Float32Array([1, 1, 1, 1])),
      tensor('INPUT1', 'FP32', [4], new Float32Array([1, 1, 1, 1])),
    ]);
    expect(f32(ok.responses[0]!.outputs[0])).toEqual([2, 2, 2, 2]);
  });

  it('the resolver and the backend refuse an uploaded model even when asked directly', async () => {
    const logger = pino({ level: 'silent' });
    const resolver = new PythonBackendResolver({ backendDirectory: backends, cacheDir: tmpdir(), logger });
    const upload = { kind: 'upload', tenant: '' } as const;
    const config = { name: 'evil', backend: 'python', runtime: '', platform: '', parameters: {} } as never;
    await expect(resolver.resolve(backendResolveRequest(config, join(tmpdir(), 'evil'), 1, upload))).rejects.toThrow(/cannot serve uploaded models/);
    const based = { name: 'evil', backend: 'doubler', runtime: '', platform: '', parameters: {} } as never;
    await expect(resolver.resolve(backendResolveRequest(based, join(tmpdir(), 'evil'), 1, upload))).rejects.toThrow(/cannot serve uploaded models/);
    const backend = new PythonBackend({ name: 'python', metrics: new PythonMetrics(), cacheDir: tmpdir(), logger });
    await expect(
      backend.loadModel({
        key: { namespace: '', name: 'evil' },
        name: 'evil',
        version: 1,
        origin: upload,
        modelPath: tmpdir(),
        versionPath: tmpdir(),
        config,
        autoCompleteConfig: true,
        logger,
        server: s.api,
      }),
    ).rejects.toThrow(/Python models run only from the operator's repositories/);
  });

  it('backend "<name>" resolves to <backend-directory>/<name>/model.py when no native library exists (its directory on sys.path)', async () => {
    const r = await infer(s, 'doubled', [tensor('IN', 'FP32', [2], new Float32Array([1.5, -3]))]);
    expect(f32(r.responses[0]!.outputs[0])).toEqual([3, -6]);
  });

  it('a native library of the name wins over model.py; names that are neither are left to the native resolver', async () => {
    const resolver = new PythonBackendResolver({ backendDirectory: backends, cacheDir: tmpdir(), logger: pino({ level: 'silent' }) });
    const req = (backend: string) => backendResolveRequest({ name: 'm', backend, runtime: '', platform: '', parameters: {} } as never, join(tmpdir(), 'm'), 1);
    expect(await resolver.resolve(req('both'))).toBeUndefined();
    expect(await resolver.resolve(req('nothing_here'))).toBeUndefined();
    expect((await resolver.resolve(req('doubler')))?.name).toBe('doubler');
    expect((await resolver.resolve(req('python')))?.name).toBe('python');
    await expect(resolver.resolve(req('../escape'))).rejects.toThrow(/plain name/);
  });
});
