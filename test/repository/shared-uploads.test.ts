/**
 * Tenants' uploads shared by every replica (`--upload-store=s3://...`), against a real
 * S3-compatible server (moto, test/helpers/s3-server.ts): two Warden replicas with their own local
 * upload directories and one bucket. An upload through one replica is served by the other on its
 * first request; a re-upload and a delete reach the other replica at its next sync; identical
 * files are stored once; a pointer never written (a replica killed mid-upload), a damaged one, or
 * one of an earlier tenant of the same id is never served; tenants stay isolated through both.
 */
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchAs, PROJECT_ROOT, tempRepo, type TempRepo } from '../helpers/repo.js';
import { ensureMoto, S3_TEST_ENV, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { startTenantServer, type TenantServer, type TestTenant } from '../helpers/servers.js';
import { pino } from 'pino';
import { openSharedUploads } from '../../host/src/repository/open-repositories.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { until } from '../helpers/wait.js';

const BUCKET = 'uploads';
const TOKENS = {
  acme: 'acme-token-0123456789abcdefghijkl',
  bob: 'bob-token-0123456789abcdefghijklmn',
  carol: 'carol-token-0123456789abcdefghijk',
  dave: 'dave-token-0123456789abcdefghijklm',
};
const TENANTS: TestTenant[] = [
  { id: 'acme', token: TOKENS.acme, uid: 'acme-first' },
  { id: 'bob', token: TOKENS.bob, uid: 'bob-first' },
  { id: 'carol', token: TOKENS.carol, uid: 'carol-first', quotas: { max_models: 1 } },
  { id: 'dave', token: TOKENS.dave, uid: 'dave-first', quotas: { max_instances_total: 3 } },
];
const IDENTITY = () => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm')).toString('base64');
const config = (dims = [-1], instances?: number) =>
  JSON.stringify({
    backend: 'wasm',
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims }],
    ...(instances === undefined ? {} : { instance_group: [{ kind: 'KIND_CPU', count: instances }] }),
  });

const moto = await ensureMoto();
const skip = moto.ok ? false : moto.reason;

let s3: S3TestServer;
let repo: TempRepo;
let a: TenantServer;
let b: TenantServer;

beforeAll(async () => {
  if (skip) return;
  await ensureBuilt();
  Object.assign(process.env, S3_TEST_ENV);
  s3 = await startS3Server();
  await s3.createBucket(BUCKET);
  repo = tempRepo([]);
  const opts = { separateUploads: true, uploadStore: `s3://${s3.hostPort}/${BUCKET}/fleet`, uploadStorePollSecs: 3600 };
  a = await startTenantServer(repo, TENANTS, opts);
  b = await startTenantServer(repo, TENANTS, opts);
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await s3?.stop();
  repo?.cleanup();
});

type Who = keyof typeof TOKENS;
const call = (replica: TenantServer, who: Who, path: string, body?: unknown) => fetchAs(TOKENS[who], 'POST', `${replica.server.httpUrl}${path}`, body);
const upload = (replica: TenantServer, who: Who, model: string, cfg = config()) =>
  call(replica, who, `/v2/repository/models/${model}/load`, { parameters: { config: cfg, 'file:1/model.wasm': IDENTITY() } });
const infer = (replica: TenantServer, who: Who, model: string) =>
  call(replica, who, `/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1, 2, 3] }] });
const keys = async (prefix: string) =>
  ((await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `fleet/${prefix}` }))).Contents ?? []).map((o) => o.Key!.slice(6)).sort();

describe.skipIf(skip)('--upload-store=s3://: uploads shared by every replica', () => {
  it('an upload through one replica is served by the other on its first request (loaded there on demand)', async () => {
    expect((await upload(a, 'acme', 'shared')).status).toBe(200);
    expect(await keys('models/')).toEqual(['models/acme/shared']);
    const t0 = performance.now();
    const r = await infer(b, 'acme', 'shared');
    const coldMs = performance.now() - t0;
    expect([r.status, r.json.outputs?.[0]?.data]).toEqual([200, [1, 2, 3]]);
    console.log(`cold start of an uploaded model on a replica that never saw it: ${coldMs.toFixed(0)} ms (wasm, identity C guest)`);
    expect((await b.server.manager.index(false, 'acme')).map((e) => [e.name, e.state])).toEqual([['shared', 'READY']]);
  });

  it('identical files are stored once: a second model with the same component adds a pointer, not a blob', async () => {
    const blobs = await keys('blobs/');
    expect((await upload(b, 'acme', 'twin')).status).toBe(200);
    expect(await keys('blobs/')).toEqual(blobs);
    expect(await keys('models/acme/')).toEqual(['models/acme/shared', 'models/acme/twin']);
  });

  it('a re-upload and a delete on one replica reach the other at its next sync', async () => {
    expect((await infer(b, 'acme', 'shared')).status).toBe(200);
    expect((await upload(a, 'acme', 'shared', config([3]))).status).toBe(200);
    await b.server.manager.syncUploads();
    const cfg = await fetchAs(TOKENS.acme, 'GET', `${b.server.httpUrl}/v2/models/shared/config`);
    expect([cfg.status, cfg.json.input?.[0]?.dims]).toEqual([200, [3]]);

    const del = await call(a, 'acme', '/v2/repository/models/shared/unload', { parameters: { delete_files: true } });
    expect(del.status).toBe(200);
    // The pointer goes once the unloaded versions have drained (the unload answers when it begins).
    await until(async () => (await keys('models/acme/')).join() === 'models/acme/twin', { what: 'pointer removed' });
    await b.server.manager.syncUploads();
    await until(async () => (await b.server.manager.index(true, 'acme')).map((e) => e.name).join() === 'twin', {
      what: "'shared' unloaded on the other replica",
    });
    const gone = await infer(b, 'acme', 'shared');
    expect(gone.status).toBe(404);
  });

  it("tenants stay isolated through every replica: another tenant's stored model looks missing", async () => {
    const theirs = await infer(b, 'bob', 'twin');
    const missing = await infer(b, 'bob', 'no-such-model');
    expect([theirs.status, theirs.json.error.replace('twin', 'X')]).toEqual([missing.status, missing.json.error.replace('no-such-model', 'X')]);
    expect((await b.server.manager.index(false, 'bob')).map((e) => e.name)).toEqual([]);
  });

  it("uploads by digest: a digest of the tenant's own stored models loads on any replica; another tenant's is refused like an unknown one", async () => {
    const digest = createHash('sha256').update(Buffer.from(IDENTITY(), 'base64')).digest('hex');
    const byDigest = (replica: TenantServer, who: Who, model: string, hex: string) =>
      call(replica, who, `/v2/repository/models/${model}/load`, { parameters: { config: config(), 'file_sha256:1/model.wasm': hex } });
    for (const replica of [a, b]) {
      const r = await byDigest(replica, 'acme', 'by-digest', digest);
      expect(r.status, r.text).toBe(200);
      expect((await infer(replica, 'acme', 'by-digest')).status).toBe(200);
    }
    expect(await keys('models/acme/')).toContain('models/acme/by-digest');
    // a replica without a local copy of the blob takes the bucket's (checked against the digest)
    rmSync(join(b.dir, 'uploads', '.blobs', 'sha256', digest));
    expect((await byDigest(b, 'acme', 'by-digest-2', digest)).status).toBe(200);
    expect(existsSync(join(b.dir, 'uploads', '.blobs', 'sha256', digest))).toBe(true);
    const theirs = await byDigest(b, 'bob', 'stolen', digest);
    const nobody = createHash('sha256').update('nobody').digest('hex');
    const unknown = await byDigest(b, 'bob', 'stolen', nobody);
    expect([theirs.status, theirs.json.error.replace(digest, 'X')]).toEqual([404, unknown.json.error.replace(nobody, 'X')]);
    expect(await keys('models/bob/')).toEqual([]);
  });

  it('blobs without a pointer (a replica killed mid-upload) are never a model; a damaged pointer fails only its own load', async () => {
    await s3.put(BUCKET, 'fleet/blobs/sha256/' + 'ab'.repeat(32), 'orphan');
    expect((await infer(a, 'acme', 'orphan')).status).toBe(404);
    await s3.put(BUCKET, 'fleet/models/acme/damaged', '{"format":"warden-shared-upload/1","files":{"../x":{"sha256":"00","size":1}}}');
    const r = await infer(a, 'acme', 'damaged');
    expect(r.json.error).toBe("stored model 'damaged' is damaged in the shared upload store: a file path");
    expect((await infer(a, 'acme', 'twin')).status).toBe(200);
  });

  it("max_models holds across replicas: the tenant's models stored through another replica count", async () => {
    expect((await upload(a, 'carol', 'first')).status).toBe(200);
    const second = await upload(b, 'carol', 'second');
    expect(second.status).toBe(403);
    expect(second.json.error).toContain('max_models');
    // Re-uploading the stored model itself is not a new model.
    expect((await upload(b, 'carol', 'first')).status).toBe(200);
  });

  it("max_instances_total holds across replicas: the instances of the tenant's models stored through another replica count", async () => {
    expect((await upload(a, 'dave', 'two', config([-1], 2))).status).toBe(200);
    const over = await upload(b, 'dave', 'two-more', config([-1], 2));
    expect(over.status).toBe(403);
    expect(over.json.error).toContain('max_instances_total');
    expect((await upload(b, 'dave', 'one-more', config([-1], 1))).status).toBe(200);
  });

  it('a pointer of an earlier tenant of the same id (another uid) is never served', async () => {
    const pointer = JSON.parse(await (await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'fleet/models/acme/twin' }))).Body!.transformToString());
    await s3.put(BUCKET, 'fleet/models/acme/former', JSON.stringify({ ...pointer, owner: 'acme-earlier' }));
    expect((await infer(b, 'acme', 'former')).status).toBe(404);
  });

  it('the shared tier of the wasmtime compile cache stores and finds entries by name prefix, and ignores names it did not make', async () => {
    const tier = (await openSharedUploads(`s3://${s3.hostPort}/${BUCKET}/fleet`)).compileCache(pino({ level: 'silent' }));
    const name = `${'a'.repeat(64)}-${'b'.repeat(16)}-${'c'.repeat(64)}.cwasm`;
    await tier.store({ name, bytes: Buffer.from('artifact') });
    await tier.store({ name: '../escape.cwasm', bytes: Buffer.from('x') });
    expect(await keys('compiled/')).toEqual([`compiled/wasmtime/${name}`]);
    const got = await tier.fetch(`${'a'.repeat(64)}-${'b'.repeat(16)}-`, 1024);
    expect([got?.name, Buffer.from(got!.bytes).toString()]).toEqual([name, 'artifact']);
    expect(await tier.fetch(`${'a'.repeat(64)}-${'b'.repeat(16)}-`, 4)).toBeUndefined(); // larger than the cache takes
    expect(await tier.fetch(`${'d'.repeat(64)}-${'b'.repeat(16)}-`, 1024)).toBeUndefined();
    expect(await tier.fetch('../', 1024)).toBeUndefined();
  });
});
