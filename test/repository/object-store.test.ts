/**
 * Object-store model repositories (`--model-repository=s3://host:port/bucket/path`, Triton's
 * syntax) against a real S3-compatible server (moto's standalone server, test/helpers/s3-server.ts):
 * the default `simple` ONNX model is served from a bucket in each control mode, poll mode notices
 * added, changed and removed models, the local copy stays within its byte bound, hostile object
 * keys never become paths outside the cache, and a bucket the credentials cannot reach fails
 * start-up with Triton's message.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../host/src/project.js';
import type { RunningServer, ServerOptions } from '../../host/src/server.js';
import { ensureMoto, S3_TEST_ENV, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTestServer } from '../helpers/servers.js';
import { until } from '../helpers/wait.js';

const SIMPLE = join(PROJECT_ROOT, 'model_repository', 'simple');
const ADDSUB = join(PROJECT_ROOT, 'model_repository', 'addsub_onnx');
const BUCKET = 'models';

const moto = await ensureMoto();
const skip = moto.ok ? false : moto.reason;

let s3: S3TestServer;
let cacheDir: string;
const servers: RunningServer[] = [];
let prefixes = 0;

beforeAll(async () => {
  if (skip) return;
  Object.assign(process.env, S3_TEST_ENV);
  s3 = await startS3Server();
  await s3.createBucket(BUCKET);
});
afterAll(async () => {
  await s3?.stop();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  if (cacheDir) rmSync(cacheDir, { recursive: true, force: true });
});

/** A fresh key prefix holding `models` (name → local model directory). */
async function repository(models: Record<string, string>): Promise<{ prefix: string; url: string }> {
  const prefix = `repo${++prefixes}`;
  for (const [name, dir] of Object.entries(models)) await s3.putTree(BUCKET, `${prefix}/${name}`, dir);
  return { prefix, url: `s3://${s3.hostPort}/${BUCKET}/${prefix}` };
}

async function serve(url: string, opts: Partial<ServerOptions> = {}): Promise<RunningServer> {
  cacheDir = mkdtempSync(join(tmpdir(), 'warden-repo-cache-'));
  const s = await startTestServer(url, { repositoryCacheDirectory: cacheDir, ...opts });
  servers.push(s);
  return s;
}

/** `simple` adds and subtracts INPUT0 and INPUT1 (Triton's example model). */
async function inferSimple(s: RunningServer, model = 'simple'): Promise<{ status: number; out0?: number[] }> {
  const data = Array.from({ length: 16 }, (_, i) => i);
  const r = await fetch(`${s.httpUrl}/v2/models/${model}/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: data.map(() => 1) },
      ],
    }),
  });
  const body = (await r.json()) as { outputs?: { name: string; data: number[] }[] };
  return { status: r.status, out0: body.outputs?.find((o) => o.name === 'OUTPUT0')?.data };
}

async function index(s: RunningServer): Promise<{ name: string; state?: string; reason?: string }[]> {
  const r = await fetch(`${s.httpUrl}/v2/repository/index`, { method: 'POST', body: '{}' });
  return (await r.json()) as { name: string; state?: string; reason?: string }[];
}

/** Bytes of the files under `dir`. */
const treeBytes = (dir: string): number =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((n, e) => n + statSync(join(e.parentPath, e.name)).size, 0);

const load = (s: RunningServer, name: string) => fetch(`${s.httpUrl}/v2/repository/models/${name}/load`, { method: 'POST', body: '{}' });

describe.skipIf(skip)('s3:// model repository', () => {
  it('serves the bucket in mode none: every model loaded from its fetched copy', async () => {
    const { url } = await repository({ simple: SIMPLE });
    const s = await serve(url, { modelControlMode: 'none' });
    expect(await inferSimple(s)).toEqual({ status: 200, out0: Array.from({ length: 16 }, (_, i) => i + 1) });
    expect((await index(s)).map((m) => [m.name, m.state])).toEqual([['simple', 'READY']]);
    // The copy is in the cache directory, below the repository's scope and the listing's stamp.
    const [scope] = readdirSync(cacheDir);
    expect(readdirSync(join(cacheDir, scope!))).toHaveLength(1);
  });

  it('explicit mode: the index lists the bucket, load and unload work, an unknown name is Triton\'s "failed to poll"', async () => {
    const { url } = await repository({ simple: SIMPLE, addsub_onnx: ADDSUB });
    const s = await serve(url);
    expect((await index(s)).map((m) => m.name).sort()).toEqual(['addsub_onnx', 'simple']);
    expect((await load(s, 'simple')).status).toBe(200);
    expect((await inferSimple(s)).status).toBe(200);
    const missing = await load(s, 'absent');
    expect([missing.status, await missing.json()]).toEqual([500, { error: "failed to load 'absent', failed to poll from model repository" }]);
    expect((await fetch(`${s.httpUrl}/v2/repository/models/simple/unload`, { method: 'POST', body: '{}' })).status).toBe(200);
    await until(async () => (await index(s)).find((m) => m.name === 'simple')?.state === 'UNAVAILABLE', { what: 'simple unloaded' });
  });

  it('poll mode notices an added, a changed and a removed model', async () => {
    const { prefix, url } = await repository({ simple: SIMPLE });
    const s = await serve(url, { modelControlMode: 'poll', repositoryPollSecs: 3600 });
    expect((await inferSimple(s)).status).toBe(200);

    await s3.putTree(BUCKET, `${prefix}/addsub_onnx`, ADDSUB);
    await s.manager.poll();
    expect((await fetch(`${s.httpUrl}/v2/models/addsub_onnx/ready`)).status).toBe(200);

    // A changed config reloads the model from a new copy.
    const config = (await (await fetch(`${s.httpUrl}/v2/models/simple/config`)).json()) as { max_batch_size: number };
    expect(config.max_batch_size).toBe(8);
    await s3.put(BUCKET, `${prefix}/simple/config.pbtxt`, 'name: "simple"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 2\n');
    await s.manager.poll();
    expect(((await (await fetch(`${s.httpUrl}/v2/models/simple/config`)).json()) as { max_batch_size: number }).max_batch_size).toBe(2);

    // Removing every object of a model unloads it.
    for (const key of ['config.pbtxt', '1/model.onnx']) await s3.remove(BUCKET, `${prefix}/addsub_onnx/${key}`);
    await s.manager.poll();
    expect((await fetch(`${s.httpUrl}/v2/models/addsub_onnx/ready`)).status).not.toBe(200);
    expect((await inferSimple(s)).status).toBe(200);
  });

  it('an object key that is not a plain relative path fails the load, names the key, and writes nothing outside the cache', async () => {
    const { prefix, url } = await repository({ simple: SIMPLE });
    await s3.put(BUCKET, `${prefix}/simple/1/../../../escaped.txt`, 'x');
    const s = await serve(url);
    const r = await load(s, 'simple');
    const body = (await r.json()) as { error: string };
    expect(r.status).toBe(400);
    expect(body.error).toContain(`failed to load 'simple': object "1/../../../escaped.txt" is not a plain relative path`);
    expect(body.error).not.toContain(cacheDir);
    expect(existsSync(join(cacheDir, '..', 'escaped.txt'))).toBe(false);
    expect(readdirSync(cacheDir).flatMap((scope) => readdirSync(join(cacheDir, scope)))).toEqual([]);
  });

  it('the copies stay within --repository-cache-bytes: a model larger than the cache is refused, unused copies are evicted', async () => {
    const { url } = await repository({ simple: SIMPLE, addsub_onnx: ADDSUB });
    const tiny = await serve(url, { repositoryCacheBytes: 64 });
    const refused = await load(tiny, 'simple');
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^failed to load 'simple': its \d+ bytes exceed the repository cache of 64 bytes/);
    await tiny.stop();
    servers.splice(servers.indexOf(tiny), 1);

    // Room for either model but not both: loading the second evicts the first once the first is
    // unloaded, never while it serves.
    const s = await serve(url, { repositoryCacheBytes: treeBytes(SIMPLE) + treeBytes(ADDSUB) - 1 });
    expect((await load(s, 'simple')).status).toBe(200);
    const full = await load(s, 'addsub_onnx');
    expect(full.status).toBe(503);
    expect(((await full.json()) as { error: string }).error).toContain('is held by loaded models');
    expect((await inferSimple(s)).status).toBe(200);
    expect((await fetch(`${s.httpUrl}/v2/repository/models/simple/unload`, { method: 'POST', body: '{}' })).status).toBe(200);
    await until(async () => (await index(s)).find((m) => m.name === 'simple')?.state === 'UNAVAILABLE', { what: 'simple unloaded' });
    expect((await load(s, 'addsub_onnx')).status).toBe(200);
    const [scope] = readdirSync(cacheDir);
    expect(readdirSync(join(cacheDir, scope!))).toHaveLength(1);
  });

  it('a bucket the server cannot reach fails start-up with Triton\'s "Unable to create S3 filesystem client"', async () => {
    await expect(serve(`s3://${s3.hostPort}/no-such-bucket/repo`)).rejects.toThrow(
      /^Unable to create S3 filesystem client\. Check account credentials\. Exception: 'NotFound'/,
    );
  });
});
