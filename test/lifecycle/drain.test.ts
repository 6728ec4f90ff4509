/**
 * Bounded drain (`--exit-timeout-secs`): a backend that never answers does not wedge unload or
 * shutdown; stuck requests get an error. The CLI exits on SIGTERM even when stdout is a closed pipe.
 */
import { describe, expect, it } from 'vitest';
import type { BackendResolver } from '../../host/src/contract/types.js';
import { startTestServer } from '../helpers/servers.js';
import { freePort, postJson, simpleRequest, tempRepo } from '../helpers/repo.js';
import { spawnCli } from '../helpers/cli.js';
import { sleep, until } from '../helpers/wait.js';
import { executeBackend, resolverOf } from '../helpers/js-backend.js';

/** `backend: "blackhole"`: execute never resolves and never answers. */
function blackHole(): BackendResolver & { executing: number } {
  const counts = { executing: 0 };
  return Object.assign(
    counts,
    resolverOf(
      executeBackend('blackhole', () => {
        counts.executing++;
        return new Promise(() => undefined);
      }),
    ),
  );
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
    repo.addModel('stuck', CONFIG);
    const resolver = blackHole();
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
    repo.addModel('stuck', CONFIG);
    const resolver = blackHole();
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
      await until(async () => (await postJson(`${server.httpUrl}/v2/repository/index`, {})).json.every((e: any) => e.state !== 'UNLOADING'), {
        within: 5000,
        every: 50,
        what: 'the unload finished',
      });
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
    const cli = spawnCli([`--model-repository=${repo.path}`, `--http-port=${port}`, '--allow-metrics=false', '--allow-grpc=false', '--log-verbose=1']);
    const { child } = cli;
    try {
      const base = `http://127.0.0.1:${port}`;
      await until(
        () =>
          fetch(`${base}/v2/health/ready`).then(
            (r) => r.status === 200,
            () => false,
          ),
        { within: 30_000, every: 100, what: 'ready' },
      );
      // Close the read end of the child's stdout: its next log lines hit EPIPE.
      child.stdout.destroy();
      const req = JSON.stringify(simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)));
      for (let i = 0; i < 5; i++) expect((await fetch(`${base}/v2/models/simple/infer`, { method: 'POST', body: req })).status).toBe(200);
      child.kill('SIGTERM');
      const code = await Promise.race([cli.exited.then((e) => e.code), sleep(15_000).then(() => 'hung')]);
      expect(code, cli.stderr).toBe(0);
    } finally {
      child.kill('SIGKILL');
      repo.cleanup();
    }
  }, 60_000);
});
