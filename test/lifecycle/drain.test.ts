/**
 * Bounded drain (`--exit-timeout-secs`): a backend that never answers does not wedge unload or
 * shutdown; stuck requests get an error. The CLI exits on SIGTERM even when stdout is a closed pipe.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Backend, BackendModel, BackendResolveRequest, BackendResolver } from '../../host/src/contract/types.js';
import { startTestServer } from '../helpers/servers.js';
import { freePort, PROJECT_ROOT, postJson, simpleRequest, tempRepo } from '../helpers/repo.js';
import { sleep, until } from '../helpers/wait.js';

/** `backend: "blackhole"`: execute never resolves and never answers. */
class BlackHoleResolver implements BackendResolver {
  executing = 0;
  private readonly backend: Backend = {
    name: 'blackhole',
    loadModel: async (): Promise<BackendModel> => ({
      createInstance: async () => ({
        execute: () => {
          this.executing++;
          return new Promise(() => undefined);
        },
        finalize: async () => undefined,
      }),
      finalize: async () => undefined,
    }),
    finalize: async () => undefined,
  };
  async resolve({ config }: BackendResolveRequest) {
    return config.backend === 'blackhole' ? this.backend : undefined;
  }
  async finalizeAll() {}
}

const CONFIG = `
backend: "blackhole"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;
const body = { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [1] }] };

describe('bounded drain', () => {
  it('shutdown fails requests stuck in a backend after --exit-timeout-secs and completes', async () => {
    const repo = tempRepo([]);
    repo.write('stuck/config.pbtxt', CONFIG);
    repo.write('stuck/1/.keep', '');
    const resolver = new BlackHoleResolver();
    const server = await startTestServer(repo, {
      modelControlMode: 'none',
      backendResolvers: [resolver],
      exitTimeoutSecs: 1,
    });
    try {
      const pending = postJson(`${server.httpUrl}/v2/models/stuck/infer`, body);
      await until(() => resolver.executing === 1);
      const t0 = Date.now();
      await server.stop();
      const elapsed = Date.now() - t0;
      expect(elapsed).toBeGreaterThanOrEqual(900);
      expect(elapsed).toBeLessThan(5000);
      const r = await pending;
      expect(r.status).toBe(503);
      expect(r.json.error).toMatch(/exit timeout/);
    } finally {
      await server.stop();
      repo.cleanup();
    }
  });

  it('an unload of a model with a stuck request finishes after the bound; the request gets an error', async () => {
    const repo = tempRepo([]);
    repo.write('stuck/config.pbtxt', CONFIG);
    repo.write('stuck/1/.keep', '');
    const resolver = new BlackHoleResolver();
    const server = await startTestServer(repo, {
      loadModels: ['stuck'],
      backendResolvers: [resolver],
      exitTimeoutSecs: 1,
    });
    try {
      const pending = postJson(`${server.httpUrl}/v2/models/stuck/infer`, body);
      await until(() => resolver.executing === 1);
      expect((await postJson(`${server.httpUrl}/v2/repository/models/stuck/unload`, {})).status).toBe(200);
      const r = await pending;
      expect(r.status).toBe(503);
      expect(r.json.error).toMatch(/exit timeout/);
      // The version finished unloading (no longer UNLOADING).
      for (let i = 0; i < 100; i++) {
        const idx = await postJson(`${server.httpUrl}/v2/repository/index`, {});
        if (idx.json.every((e: any) => e.state !== 'UNLOADING')) break;
        await sleep(50);
      }
      const idx = await postJson(`${server.httpUrl}/v2/repository/index`, {});
      expect(idx.json.find((e: any) => e.name === 'stuck').state).toBe('UNAVAILABLE');
    } finally {
      await server.stop();
      repo.cleanup();
    }
  });
});

describe('process', () => {
  it('exits 0 on SIGTERM when stdout is a closed pipe (EPIPE while logging)', async () => {
    const repo = tempRepo(['simple']);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(PROJECT_ROOT, 'host/src/cli.ts'),
        `--model-repository=${repo.path}`,
        `--http-port=${port}`,
        '--allow-metrics=false',
        '--allow-grpc=false',
        '--log-verbose=1',
      ],
      {
        cwd: PROJECT_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const base = `http://127.0.0.1:${port}`;
      for (let i = 0; i < 300; i++) {
        const ok = await fetch(`${base}/v2/health/ready`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        await sleep(100);
      }
      // Close the read end of the child's stdout: its next log lines hit EPIPE.
      child.stdout.destroy();
      const req = JSON.stringify(simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)));
      for (let i = 0; i < 5; i++) expect((await fetch(`${base}/v2/models/simple/infer`, { method: 'POST', body: req })).status).toBe(200);
      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('hung'), 15_000))]);
      expect(code, err).toBe(0);
    } finally {
      child.kill('SIGKILL');
      repo.cleanup();
    }
  }, 60_000);
});
