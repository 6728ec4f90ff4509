/**
 * Object-store model repositories (`--model-repository=s3://host:port/bucket/path`,
 * `gs://bucket/path`, `as://account/container/path`, Triton's syntax) against real emulated
 * stores that the tests start: moto's S3 server (test/helpers/s3-server.ts), gcp-storage-emulator
 * (test/helpers/gcs-server.ts, via `STORAGE_EMULATOR_HOST`) and Azurite's blob service
 * (test/helpers/azurite-server.ts, via `AZURE_STORAGE_CONNECTION_STRING`). For each store: the
 * default `simple` ONNX model is served in each control mode, poll mode notices added, changed and
 * removed models, the local copy stays within its byte bound, hostile object names never become
 * paths outside the cache, and a bucket (container) the server cannot reach fails start-up with
 * Triton's message for that store.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../host/src/project.js';
import type { RunningServer, ServerOptions } from '../../host/src/server.js';
import { AZURITE_ACCOUNT, startAzurite } from '../helpers/azurite-server.js';
import { ensureGcsEmulator, startGcsServer } from '../helpers/gcs-server.js';
import type { BucketTestServer } from '../helpers/object-store-server.js';
import { ensureMoto, S3_TEST_ENV, startS3Server } from '../helpers/s3-server.js';
import { startTestServer } from '../helpers/servers.js';
import { until } from '../helpers/wait.js';

const SIMPLE = join(PROJECT_ROOT, 'model_repository', 'simple');
const ADDSUB = join(PROJECT_ROOT, 'model_repository', 'addsub_onnx');
const BUCKET = 'models';

const moto = await ensureMoto();
const gcsEmulator = await ensureGcsEmulator();

/** One kind of store: its emulator, and how a location names a prefix of its bucket. */
interface StoreCase {
  scheme: string;
  /** Why the store's tests skip (its emulator cannot be installed), or false. */
  skip: false | string;
  /** Start the emulator and point Warden's client at it (process environment). */
  start(): Promise<{ server: BucketTestServer; url(bucket: string, prefix: string): string }>;
  /** A key below a model that is not a plain relative path, as the emulator stores it unchanged. */
  hostileKey: string;
  /** The start-up failure for a bucket that does not exist. */
  unreachable: RegExp;
}

const STORES: StoreCase[] = [
  {
    scheme: 's3',
    skip: moto.ok ? false : moto.reason,
    start: async () => {
      Object.assign(process.env, S3_TEST_ENV);
      const server = await startS3Server();
      return { server, url: (bucket, prefix) => `s3://${server.hostPort}/${bucket}/${prefix}` };
    },
    hostileKey: '1/../../../escaped.txt',
    unreachable: /^Unable to create S3 filesystem client\. Check account credentials\. Exception: 'NotFound'/,
  },
  {
    scheme: 'gs',
    skip: gcsEmulator.ok ? false : gcsEmulator.reason,
    start: async () => {
      const server = await startGcsServer();
      process.env.STORAGE_EMULATOR_HOST = server.endpoint;
      return { server, url: (bucket, prefix) => `gs://${bucket}/${prefix}` };
    },
    // The emulator refuses `..` in a name (Cloud Storage itself stores it; s3 covers that rule).
    hostileKey: '1//escaped.txt',
    unreachable: /^Could not get MetaData for bucket with name no-such-bucket : /,
  },
  {
    scheme: 'as',
    skip: false,
    start: async () => {
      const server = await startAzurite();
      process.env.AZURE_STORAGE_CONNECTION_STRING = server.connectionString;
      return { server, url: (container, prefix) => `as://${AZURITE_ACCOUNT}/${container}/${prefix}` };
    },
    // The SDK resolves `..` in a blob's URL before it is sent; an empty component is kept.
    hostileKey: '1//escaped.txt',
    unreachable: /^Unable to create Azure filesystem client\. Check account credentials\. Exception: 'ContainerNotFound'/,
  },
];

let cacheDir: string;
const servers: RunningServer[] = [];
let prefixes = 0;

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  if (cacheDir) rmSync(cacheDir, { recursive: true, force: true });
});

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

describe.each(STORES)('$scheme:// model repository', (store) => {
  let server: BucketTestServer;
  let locate: (bucket: string, prefix: string) => string;
  beforeAll(async () => {
    if (store.skip) return;
    ({ server, url: locate } = await store.start());
    await server.createBucket(BUCKET);
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** A fresh key prefix holding `models` (name → local model directory). */
  async function repository(models: Record<string, string>): Promise<{ prefix: string; url: string }> {
    const prefix = `repo${++prefixes}`;
    for (const [name, dir] of Object.entries(models)) await server.putTree(BUCKET, `${prefix}/${name}`, dir);
    return { prefix, url: locate(BUCKET, prefix) };
  }

  it.skipIf(store.skip)('serves the bucket in mode none: every model loaded from its fetched copy', async () => {
    const { url } = await repository({ simple: SIMPLE });
    const s = await serve(url, { modelControlMode: 'none' });
    expect(await inferSimple(s)).toEqual({ status: 200, out0: Array.from({ length: 16 }, (_, i) => i + 1) });
    expect((await index(s)).map((m) => [m.name, m.state])).toEqual([['simple', 'READY']]);
    // The copy is in the cache directory, below the repository's scope and the listing's stamp.
    const [scope] = readdirSync(cacheDir);
    expect(readdirSync(join(cacheDir, scope!))).toHaveLength(1);
  });

  it.skipIf(store.skip)('explicit mode: the index lists the bucket, load and unload work, an unknown name is Triton\'s "failed to poll"', async () => {
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

  it.skipIf(store.skip)('poll mode notices an added, a changed and a removed model', async () => {
    const { prefix, url } = await repository({ simple: SIMPLE });
    const s = await serve(url, { modelControlMode: 'poll', repositoryPollSecs: 3600 });
    expect((await inferSimple(s)).status).toBe(200);

    await server.putTree(BUCKET, `${prefix}/addsub_onnx`, ADDSUB);
    await s.manager.poll();
    expect((await fetch(`${s.httpUrl}/v2/models/addsub_onnx/ready`)).status).toBe(200);

    // A changed config reloads the model from a new copy.
    const config = (await (await fetch(`${s.httpUrl}/v2/models/simple/config`)).json()) as { max_batch_size: number };
    expect(config.max_batch_size).toBe(8);
    await server.put(BUCKET, `${prefix}/simple/config.pbtxt`, 'name: "simple"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 2\n');
    await s.manager.poll();
    expect(((await (await fetch(`${s.httpUrl}/v2/models/simple/config`)).json()) as { max_batch_size: number }).max_batch_size).toBe(2);

    // Removing every object of a model unloads it.
    for (const key of ['config.pbtxt', '1/model.onnx']) await server.remove(BUCKET, `${prefix}/addsub_onnx/${key}`);
    await s.manager.poll();
    expect((await fetch(`${s.httpUrl}/v2/models/addsub_onnx/ready`)).status).not.toBe(200);
    expect((await inferSimple(s)).status).toBe(200);
  });

  it.skipIf(store.skip)('an object key that is not a plain relative path fails the load, names the key, and writes nothing outside the cache', async () => {
    const { prefix, url } = await repository({ simple: SIMPLE });
    await server.put(BUCKET, `${prefix}/simple/${store.hostileKey}`, 'x');
    const s = await serve(url);
    const r = await load(s, 'simple');
    const body = (await r.json()) as { error: string };
    expect(r.status).toBe(400);
    expect(body.error).toContain(`failed to load 'simple': object ${JSON.stringify(store.hostileKey)} is not a plain relative path`);
    expect(body.error).not.toContain(cacheDir);
    expect(existsSync(join(cacheDir, '..', 'escaped.txt'))).toBe(false);
    expect(readdirSync(cacheDir).flatMap((scope) => readdirSync(join(cacheDir, scope)))).toEqual([]);
  });

  it.skipIf(store.skip)('the copies stay within --repository-cache-bytes: a model larger than the cache is refused, unused copies are evicted', async () => {
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

  it.skipIf(store.skip)("a bucket the server cannot reach fails start-up with Triton's message", async () => {
    await expect(serve(locate('no-such-bucket', 'repo'))).rejects.toThrow(store.unreachable);
  });
});
