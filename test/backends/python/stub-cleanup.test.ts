// Warden's Python backend: the two shared-memory arena files of a stub (shm.ts,
// `warden-py-<pid>-<label>-<random>-in|out`, created by this server) are removed whenever a start
// fails — the interpreter cannot be executed, the stub exits before it is ready, it does not answer
// in time — and when a running stub dies (the server removes what it created, and only that). Only this process's files with the test's own label are looked at.
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHM_DIR } from '../../../host/src/backends/python/shm.js';
import { StubProcess } from '../../../host/src/backends/python/stub.js';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { tempRepo } from '../../helpers/repo.js';
import { childProcesses } from '../../helpers/processes.js';
import { f32, infer, pythonEnvironment, pythonModel, tensor } from './helpers.js';

const logger = pino({ level: 'silent' });
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'warden-stub-cleanup-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A label of this test's own, and the arena files under it that exist now. */
function labelled(): { label: string; arenas: () => string[] } {
  const label = `cleanup_${randomBytes(4).toString('hex')}`;
  return { label, arenas: () => readdirSync(SHM_DIR).filter((n) => n.startsWith(`warden-py-${process.pid}-${label}-`)) };
}

const start = (python: string, label: string, startTimeoutMs = 10_000) => StubProcess.start({ python, label, init: { op: 'init' }, logger, startTimeoutMs });

describe("a Python stub's arena files after a failed start", () => {
  it('the interpreter cannot be executed (EACCES: no exit event follows): the start fails, no arena is left', async () => {
    const python = join(dir, 'python-not-executable');
    writeFileSync(python, '#!/bin/sh\n');
    chmodSync(python, 0o644);
    const { label, arenas } = labelled();
    await expect(start(python, label)).rejects.toThrow(/failed to start the Python interpreter/);
    expect(arenas()).toEqual([]);
  });

  it('the interpreter exits before the stub is ready: the start fails, no arena is left', async () => {
    const python = join(dir, 'python-exits');
    writeFileSync(python, '#!/bin/sh\necho "no python here" >&2\nexit 3\n');
    chmodSync(python, 0o755);
    const { label, arenas } = labelled();
    await expect(start(python, label)).rejects.toThrow(/exited with code 3 before it was ready/);
    await expect.poll(arenas).toEqual([]);
  });

  it('the stub does not answer in time (it is killed): the start fails, no arena is left', async () => {
    const python = join(dir, 'python-hangs');
    writeFileSync(python, '#!/bin/sh\nexec sleep 60\n');
    chmodSync(python, 0o755);
    const { label, arenas } = labelled();
    await expect(start(python, label, 300)).rejects.toThrow(/did not start within 300 ms/);
    await expect.poll(arenas).toEqual([]);
  });
});

/** Live stub processes started by this process. */
const stubs = () => childProcesses('warden_python_stub.py');

describe("a running Python stub's arena files after it dies", () => {
  it('kill -9 of the stub: its arenas are removed, the restarted stub has a new pair, the model serves again', async (ctx) => {
    const skip = await pythonEnvironment();
    if (skip) return ctx.skip(skip);
    const repo = tempRepo([]);
    pythonModel(
      repo,
      'crash_py',
      'max_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 2 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 2 ] } ]\n',
      'import triton_python_backend_utils as pb_utils\nclass TritonPythonModel:\n    def execute(self, requests):\n        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", r.inputs()[0].as_numpy() + 1)]) for r in requests]\n',
    );
    let s: RunningServer | undefined;
    try {
      s = await startTestServer(repo, {
        loadModels: ['*'],
        logger,
        cacheDir: join(repo.path, '.cache'),
      });
      const mine = () => readdirSync(SHM_DIR).filter((n) => n.startsWith(`warden-py-${process.pid}-crash_py-`));
      const before = mine();
      expect(before.length).toBe(2);
      const [pid] = stubs();
      process.kill(pid!, 'SIGKILL');
      await expect.poll(() => stubs().filter((p) => p !== pid).length, { timeout: 30_000 }).toBe(1);
      const answer = async () => {
        try {
          return f32((await infer(s!, 'crash_py', [tensor('X', 'FP32', [2], new Float32Array([1, 2]))])).responses[0]?.outputs[0]);
        } catch {
          return undefined; // restarting
        }
      };
      await expect.poll(answer, { timeout: 30_000, interval: 200 }).toEqual([2, 3]);
      const after = mine();
      expect(after.length).toBe(2);
      expect(after.filter((n) => before.includes(n))).toEqual([]);
    } finally {
      await s?.stop();
      repo.cleanup();
    }
  }, 120_000);
});
