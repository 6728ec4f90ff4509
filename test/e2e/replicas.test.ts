/**
 * A Warden fleet on this machine (DESIGN "Multi-tenancy": tenant state in stores a fleet already
 * runs): three Warden processes sharing one S3-compatible server (moto) for tenants' uploads and
 * one `redis-server` for the response cache, behind HAProxy (Debian's), driven through the
 * balancer by NVIDIA's tritonclient (test/compat/python/replicas.py). A tenant uploads once; its
 * requests spread over the replicas; one replica is killed with SIGKILL during traffic and started
 * again (no request fails but those in flight on it); afterwards every replica serves the model; a
 * delete reaches every replica; another tenant never sees the model through any of them.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { expectAllPassed, runScript } from '../compat/harness.js';
import { ensureCompatVenv } from '../compat/venv.js';
import { spawnCli, type CliProcess } from '../helpers/cli.js';
import { redisServerMissing, startRedis, type RedisTestServer } from '../helpers/redis-server.js';
import { freePort, PROJECT_ROOT, tempRepo, type TempRepo } from '../helpers/repo.js';
import { ensureMoto, S3_TEST_ENV, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { writeTenantsFile } from '../helpers/servers.js';
import { haproxyConfig } from '../../tools/haproxy.js';
import { sleep, until } from '../helpers/wait.js';

const TOKENS = { acme: 'acme-token-0123456789abcdefghijkl', bob: 'bob-token-0123456789abcdefghijklmn' };
const WASM = join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm');
const REPLICAS = 3;

const haproxyMissing = spawnSync('haproxy', ['-v']).status === 0 ? undefined : 'haproxy is not installed (Debian package haproxy)';
const moto = await ensureMoto();
const venv = await ensureCompatVenv();
const skip = haproxyMissing ?? redisServerMissing() ?? (moto.ok ? undefined : moto.reason) ?? (venv.ok ? undefined : venv.reason);

let dir: string;
let repo: TempRepo;
let s3: S3TestServer;
let redis: RedisTestServer;
let haproxy: ChildProcess;
let balancer: string;
const replicas: { args: string[]; http: string; cli: CliProcess }[] = [];

/** One phase of replicas.py against `url` (host:port); asserts every case passed and returns what it observed. */
async function phase(url: string, name: string, extra: string[] = []): Promise<Record<string, unknown>> {
  if (!venv.ok) throw new Error('no venv');
  const run = await runScript(
    venv.python,
    'replicas.py',
    ['--url', url, '--phase', name, '--token-a', TOKENS.acme, '--token-b', TOKENS.bob, ...extra],
    120_000,
  );
  return expectAllPassed(run, [
    {
      upload: 'upload through the balancer',
      traffic: 'traffic through the balancer',
      check: 'the model answers on this replica',
      delete: 'unload with delete_files through the balancer',
      absent: 'the model is gone on this replica',
      isolated: 'another tenant sees no such model',
    }[name]!,
  ]).observed;
}

async function startReplica(i: number): Promise<void> {
  const { args } = replicas[i]!;
  const cli = spawnCli(args);
  replicas[i]!.cli = cli;
  // three replicas start at once (object store sync, Redis) beside the rest of the suite
  await cli.started(undefined, 90_000);
}

beforeAll(async () => {
  if (skip) return;
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'warden-fleet-'));
  repo = tempRepo([]);
  Object.assign(process.env, S3_TEST_ENV);
  s3 = await startS3Server();
  await s3.createBucket('fleet');
  redis = await startRedis();
  const tenantsFile = join(dir, 'tenants.json');
  writeTenantsFile(tenantsFile, [
    // A rate well above what one client at a time sends (the rate is counted per replica).
    { id: 'acme', token: TOKENS.acme, uid: 'acme-first', quotas: { requests_per_second: 100_000, burst: 100_000 } },
    { id: 'bob', token: TOKENS.bob, uid: 'bob-first' },
  ]);
  for (let i = 0; i < REPLICAS; i++) {
    const [http, grpc] = [await freePort(), await freePort()];
    const args = [
      `--model-repository=${repo.path}`,
      '--model-control-mode=explicit',
      `--tenants=${tenantsFile}`,
      `--upload-store=s3://${s3.hostPort}/fleet/uploads`,
      '--upload-store-poll-secs=1',
      `--upload-directory=${join(dir, `replica-${i}`)}`,
      '--cache-config=redis,host=127.0.0.1',
      `--cache-config=redis,port=${redis.port}`,
      '--http-address=127.0.0.1',
      `--http-port=${http}`,
      `--grpc-port=${grpc}`,
      '--allow-metrics=false',
    ];
    replicas.push({ args, http: `127.0.0.1:${http}`, cli: undefined as unknown as CliProcess });
  }
  await Promise.all(replicas.map((_, i) => startReplica(i)));
  const lb = await freePort();
  balancer = `127.0.0.1:${lb}`;
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(
    cfg,
    haproxyConfig(
      balancer,
      replicas.map((r) => r.http),
      true,
    ),
  );
  haproxy = spawn('haproxy', ['-f', cfg, '-db'], { stdio: 'ignore' });
  await until(
    () =>
      fetch(`http://${balancer}/v2/health/ready`).then(
        (r) => r.status === 200,
        () => false,
      ),
    { within: 15_000, what: 'HAProxy forwarding' },
  );
}, 240_000);

afterAll(async () => {
  haproxy?.kill('SIGKILL');
  for (const r of replicas) {
    if (r.cli && r.cli.child.exitCode === null) {
      r.cli.child.kill('SIGTERM');
      await r.cli.exited;
    }
  }
  await redis?.stop();
  await s3?.stop();
  repo?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(skip)('three replicas behind HAProxy, one S3 store, one Redis', () => {
  it('a tenant upload through the balancer is served by every replica, also through a SIGKILL and restart during traffic', async () => {
    await phase(balancer, 'upload', ['--wasm', WASM]);

    // Traffic for 6 s through the balancer; replica 1 is killed at ~1.5 s and started again.
    const traffic = phase(balancer, 'traffic', ['--seconds', '6']);
    await sleep(1500);
    const killedAt = Date.now() / 1000;
    replicas[1]!.cli.child.kill('SIGKILL');
    await replicas[1]!.cli.exited;
    await startReplica(1);
    const outcomes = (await traffic).outcomes as { start: number; end: number; ok: boolean; error: string }[];
    const failed = outcomes.filter((o) => !o.ok);
    expect(outcomes.length).toBeGreaterThan(20);
    // At most the one request in flight on the killed replica may fail (one request at a time).
    expect(failed.length, JSON.stringify(failed)).toBeLessThanOrEqual(1);
    for (const f of failed) expect(f.start).toBeLessThanOrEqual(killedAt + 0.5);

    // The requests were spread: the replicas never killed served some of them, and every one of
    // them answered from the shared Redis cache (one request computed the response for the fleet;
    // a replica at most computes it once more, racing the first insert).
    for (const i of [0, 2]) {
      const stats = await fetch(`http://${replicas[i]!.http}/v2/models/fleet_identity/stats`, { headers: { authorization: `Bearer ${TOKENS.acme}` } });
      const body = (await stats.json()) as {
        model_stats: { inference_count: number; inference_stats: { success: { count: number }; cache_hit: { count: number } } }[];
      };
      const s = body.model_stats[0]!;
      expect(s.inference_stats.success.count, `replica ${i}`).toBeGreaterThan(0);
      expect(s.inference_stats.cache_hit.count, `replica ${i} cache hits`).toBeGreaterThan(0);
      expect(s.inference_count, `replica ${i} computed`).toBeLessThanOrEqual(1);
    }
    // Every replica serves the model, the restarted one included (loaded there on its first request).
    for (const r of replicas) await phase(r.http, 'check');
  });

  it('another tenant never reaches the model, through any replica: it looks exactly like a missing one', async () => {
    for (const r of replicas) await phase(r.http, 'isolated');
    await phase(balancer, 'isolated');
  });

  it('a replica killed with SIGKILL in the middle of an upload leaves no model for any replica, itself restarted included', async () => {
    const blobs = async () =>
      new Set(((await s3.client.send(new ListObjectsV2Command({ Bucket: 'fleet', Prefix: 'uploads/blobs/' }))).Contents ?? []).map((o) => o.Key!));
    const before = await blobs();
    const big = () => randomBytes(12 * 1024 * 1024).toString('base64');
    const config = JSON.stringify({
      backend: 'wasm',
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    });
    // Three files: the blobs go first (in path order), the pointer last; the kill lands after the first new blob.
    const upload = fetch(`http://${replicas[2]!.http}/v2/repository/models/partial/load`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.acme}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        parameters: { config, 'file:1/a.bin': big(), 'file:1/b.bin': big(), 'file:1/model.wasm': readFileSync(WASM).toString('base64') },
      }),
    }).catch((e: unknown) => e);
    await until(async () => [...(await blobs())].some((k) => !before.has(k)), { within: 30_000, every: 5, what: 'the first blob of the upload stored' });
    replicas[2]!.cli.child.kill('SIGKILL');
    await replicas[2]!.cli.exited;
    expect(await upload).toBeInstanceOf(Error); // the connection died with the replica
    const pointers = ((await s3.client.send(new ListObjectsV2Command({ Bucket: 'fleet', Prefix: 'uploads/models/acme/' }))).Contents ?? []).map((o) => o.Key);
    expect(pointers).not.toContain('uploads/models/acme/partial');
    await startReplica(2);
    for (const r of replicas) {
      const res = await fetch(`http://${r.http}/v2/models/partial/ready`, { headers: { authorization: `Bearer ${TOKENS.acme}` } });
      expect(res.status, r.http).not.toBe(200);
      const inf = await fetch(`http://${r.http}/v2/models/partial/infer`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.acme}` },
        body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }] }),
      });
      expect(inf.status, r.http).toBe(404);
    }
  });

  it('a delete through the balancer reaches every replica within the sync interval', async () => {
    const t0 = Date.now();
    await phase(balancer, 'delete');
    for (const r of replicas) {
      await until(
        async () => {
          const res = await fetch(`http://${r.http}/v2/models/fleet_identity/ready`, { headers: { authorization: `Bearer ${TOKENS.acme}` } });
          return res.status !== 200;
        },
        { within: 10_000, what: `model gone on ${r.http}` },
      );
      await phase(r.http, 'absent');
    }
    console.log(`delete converged on ${REPLICAS} replicas in ${Date.now() - t0} ms (--upload-store-poll-secs=1)`);
  });
});
