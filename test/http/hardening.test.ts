/**
 * The load API attacked as a hostile client would (issue "Multi-tenant hosting", point 1): each
 * test is an attack that worked before the fix. Real server, real sockets.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer, type ServerOptions } from '../../host/src/server.js';
import { postJson, tempRepo, type TempRepo } from '../helpers/repo.js';

const running: RunningServer[] = [];
const repos: TempRepo[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});
afterAll(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

async function serve(opts: Partial<ServerOptions> = {}, examples = ['simple']): Promise<{ s: RunningServer; repo: TempRepo }> {
  const repo = tempRepo(examples);
  repos.push(repo);
  const s = await startServer({ modelRepositories: [repo.path], modelControlMode: 'explicit', loadModels: ['*'], httpPort: 0, metricsPort: -1, logLevel: 'silent', ...opts });
  running.push(s);
  return { s, repo };
}

const b64 = (x: string | Uint8Array) => Buffer.from(x).toString('base64');
const ready = async (s: RunningServer) => (await fetch(`${s.httpUrl}/v2/health/ready`)).status;

describe('readiness is not hostage to a load', () => {
  it('a failed upload never makes /v2/health/ready fail', async () => {
    const { s } = await serve();
    expect(await ready(s)).toBe(200);
    const config = JSON.stringify({ backend: 'wasm', input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }], output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }] });
    const r = await postJson(`${s.httpUrl}/v2/repository/models/broken_upload/load`, { parameters: { config, 'file:1/model.wasm': b64('not a component') } });
    expect(r.status).toBe(400);
    expect(await ready(s)).toBe(200);
  });

  it('a failed repository model fails readiness until it is unloaded', async () => {
    const { s, repo } = await serve();
    repo.write('no_version/config.pbtxt', 'platform: "onnxruntime_onnx"\n');
    expect((await postJson(`${s.httpUrl}/v2/repository/models/no_version/load`, {})).status).toBe(400);
    expect(await ready(s)).toBe(400);
    expect((await postJson(`${s.httpUrl}/v2/repository/models/no_version/unload`, {})).status).toBe(200);
    expect(await ready(s)).toBe(200);
  });
});
