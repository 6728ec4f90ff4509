/**
 * The fleet suite (`BENCH_ONLY=fleet`): Warden replicas sharing an S3-compatible store (moto's
 * server from `.venv-s3/`, which the tests install; skipped with the reason when absent) and,
 * for the throughput rows, HAProxy (Debian's). Prints:
 *   - start-up of the default `model_repository/` from local disk vs from `s3://` (cold local
 *     copy, then warm), wall time to ready;
 *   - cold load of an uploaded model on a replica that never saw it, first request over HTTP,
 *     p50 / p90, on V8 and on wasmtime (with the fleet's shared compile cache), first model (the
 *     component new to the replica) and later ones (component known, model not);
 *   - propagation of a re-upload and of a delete to another replica (--upload-store-poll-secs=1);
 *   - throughput of `simple` through HAProxy over three replicas vs one replica directly (this
 *     machine has 2 cores: the rows show the balancer's and replication's overhead, not scaling).
 */
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { haproxyConfig } from '../tools/haproxy.js';
import type { BenchContext, ChildServer } from './ctx.js';

const MOTO = '.venv-s3/bin/moto_server';
const ENV = { AWS_ACCESS_KEY_ID: 'warden-bench', AWS_SECRET_ACCESS_KEY: 'warden-bench-secret', AWS_DEFAULT_REGION: 'us-east-1' };
const TOKEN = 'bench-token-0123456789abcdefghijklmn';
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const ms = (x: number) => x.toFixed(0);

async function until(cond: () => Promise<boolean>, withinMs = 30_000): Promise<void> {
  const end = Date.now() + withinMs;
  while (!(await cond().catch(() => false))) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: auth, body: JSON.stringify(body) });
const inferBody = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1, 2, 3] }] };
const wasmConfig = (engine: string, dims = [-1]) =>
  JSON.stringify({
    backend: 'wasm',
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims }],
    parameters: { engine: { string_value: engine } },
  });

/**
 * Every file under `dir` as `[relative path, bytes]`, and every empty directory as `[path + '/', '']`
 * (a directory marker: an object store has no empty directories, and a native model's version
 * directory is empty).
 */
function tree(dir: string): [string, Buffer][] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).flatMap((e): [string, Buffer][] => {
    const p = join(e.parentPath, e.name);
    if (e.isFile()) return [[relative(dir, p), readFileSync(p)]];
    if (e.isDirectory() && readdirSync(p).length === 0) return [[`${relative(dir, p)}/`, Buffer.alloc(0)]];
    return [];
  });
}

export async function benchFleet(ctx: BenchContext): Promise<unknown> {
  ctx.log('\n==================== fleet: object store, shared uploads, replicas ====================');
  const moto = join(ctx.root, MOTO);
  if (!existsSync(moto)) {
    ctx.section('fleet', `skipped: ${MOTO} is missing (the tests install moto there on first use: npx vitest run test/repository/object-store.test.ts)`);
    return undefined;
  }
  Object.assign(process.env, ENV);
  const s3Port = await ctx.freePort();
  const motoChild = spawn(moto, ['-H', '127.0.0.1', '-p', String(s3Port)], { stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${s3Port}`;
  const servers: ChildServer[] = [];
  const stopAll = async () => Promise.all(servers.splice(0).map((s) => s.stop()));
  try {
    await until(() => fetch(endpoint).then((r) => r.ok));
    const client = new S3Client({
      endpoint,
      forcePathStyle: true,
      region: ENV.AWS_DEFAULT_REGION,
      credentials: { accessKeyId: ENV.AWS_ACCESS_KEY_ID, secretAccessKey: ENV.AWS_SECRET_ACCESS_KEY },
    });
    await client.send(new CreateBucketCommand({ Bucket: 'bench' }));
    const results: Record<string, unknown> = {};

    // 1. Start-up of the default repository: local vs s3:// (cold local copy, then warm).
    const local = join(ctx.root, 'model_repository');
    for (const [path, bytes] of tree(local)) {
      if (path.startsWith('.')) continue;
      await client.send(new PutObjectCommand({ Bucket: 'bench', Key: `repo/${path}`, Body: bytes }));
    }
    const cacheDir = mkdtempSync(join(tmpdir(), 'warden-bench-repo-cache-'));
    const startup = async (repo: string) => {
      const t0 = performance.now();
      const s = await ctx.startWarden(repo, [`--repository-cache-directory=${cacheDir}`]);
      const t = performance.now() - t0;
      await s.stop();
      return t;
    };
    const startRows: (string | number)[][] = [];
    const localMs = await startup(local);
    const s3Cold = await startup(`s3://127.0.0.1:${s3Port}/bench/repo`);
    const s3Warm = await startup(`s3://127.0.0.1:${s3Port}/bench/repo`);
    startRows.push(['local model_repository/', ms(localMs), '1.00'], ['s3://, cold local copy', ms(s3Cold), (s3Cold / localMs).toFixed(2)]);
    startRows.push(['s3://, warm local copy', ms(s3Warm), (s3Warm / localMs).toFixed(2)]);
    results.startup = { localMs, s3Cold, s3Warm };
    ctx.section('fleet: start-up of the default model_repository/ (17 models) to ready', ctx.table(['repository', 'ms', '÷ local'], startRows));

    // 2. and 3. Two replicas sharing an upload store: cold loads on the other replica, propagation.
    const dir = mkdtempSync(join(tmpdir(), 'warden-bench-fleet-'));
    const tenants = join(dir, 'tenants.json');
    const { hashToken } = (await import('../host/src/tenancy/token.js')) as { hashToken: (t: string) => string };
    writeFileSync(
      tenants,
      JSON.stringify({
        tenants: [
          {
            id: 'bench',
            role: 'tenant',
            tokens: [hashToken(TOKEN)],
            quotas: { max_models: 1000, requests_per_second: 1e6, burst: 1e6, max_memory_total_bytes: 64 * 1024 ** 3 },
          },
        ],
      }),
    );
    const keyFile = join(dir, 'cache.key');
    writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
    const empty = await ctx.makeRepository([]);
    const wasm = ['test/fixtures/wasm/build/identity.wasm', 'model_repository/identity_wasm/1/model.wasm'].map((p) => join(ctx.root, p)).find(existsSync)!;
    const wasmB64 = readFileSync(wasm).toString('base64');
    const replica = (i: number, prefix: string) =>
      ctx.startWarden(empty, [
        '--model-control-mode=explicit',
        `--tenants=${tenants}`,
        `--upload-store=s3://127.0.0.1:${s3Port}/bench/${prefix}`,
        '--upload-store-poll-secs=1',
        `--upload-directory=${join(dir, `${prefix}-uploads-${i}`)}`,
        `--wasm-cache-key-file=${keyFile}`,
        // A compile cache of its own per replica: a component is new to each.
        `--wasm-cache-directory=${join(dir, `${prefix}-cache-${i}`)}`,
      ]);
    const coldRows: (string | number)[][] = [];
    const propRows: (string | number)[][] = [];
    for (const engine of ['v8', 'wasmtime']) {
      const a = await replica(0, engine);
      const b = await replica(1, engine);
      servers.push(a, b);
      const first: number[] = [];
      const later: number[] = [];
      for (let k = 0; k < 11; k++) {
        const name = `m${k}`;
        const up = await post(`${a.url}/v2/repository/models/${name}/load`, { parameters: { config: wasmConfig(engine), 'file:1/model.wasm': wasmB64 } });
        if (up.status !== 200) throw new Error(`upload ${name}: ${up.status} ${await up.text()}`);
        const t0 = performance.now();
        const r = await post(`${b.url}/v2/models/${name}/infer`, inferBody);
        const t = performance.now() - t0;
        if (r.status !== 200) throw new Error(`cold infer ${name} on the other replica: ${r.status} ${await r.text()}`);
        (k === 0 ? first : later).push(t);
      }
      // Where replica B took the first model's component from (wasmtime: compiled, or the fleet's shared tier).
      const loaded = b
        .output()
        .split('\n')
        .find((l) => l.includes('"model":"m0"') && l.includes('sandboxed model loaded'));
      const from = /"compiledFrom":"([a-z-]+)"/.exec(loaded ?? '')?.[1] ?? '—';
      coldRows.push([engine, ms(first[0]!), from, ms(pct(later, 50)), ms(pct(later, 90))]);
      // Propagation of a re-upload (a new config) and of a delete, seen on the other replica.
      const upd: number[] = [];
      const del: number[] = [];
      for (let k = 1; k <= 5; k++) {
        const name = `m${k}`;
        const t0 = performance.now();
        await post(`${a.url}/v2/repository/models/${name}/load`, { parameters: { config: wasmConfig(engine, [3]), 'file:1/model.wasm': wasmB64 } });
        await until(async () => {
          const c = (await (await fetch(`${b.url}/v2/models/${name}/config`, { headers: auth })).json()) as { input?: { dims: number[] }[] };
          return c.input?.[0]?.dims.length === 1 && c.input[0].dims[0] === 3;
        });
        upd.push(performance.now() - t0);
        const t1 = performance.now();
        await post(`${a.url}/v2/repository/models/${name}/unload`, { parameters: { delete_files: true } });
        await until(async () => (await fetch(`${b.url}/v2/models/${name}/ready`, { headers: auth })).status !== 200);
        del.push(performance.now() - t1);
      }
      propRows.push([engine, ms(pct(upd, 50)), ms(pct(upd, 90)), ms(pct(del, 50)), ms(pct(del, 90))]);
      await stopAll();
    }
    ctx.section(
      'fleet: cold load of an uploaded model on a replica that never loaded it (first request over HTTP, ms; wasmtime with the shared compile cache)',
      ctx.table(['engine', 'first model (component new here)', 'its compiled component from', 'later models p50', 'later p90'], coldRows),
    );
    ctx.section(
      'fleet: propagation to the other replica (--upload-store-poll-secs=1; ms from the request on one replica to the change served by the other)',
      ctx.table(['engine', 're-upload p50', 're-upload p90', 'delete p50', 'delete p90'], propRows),
    );
    results.cold = coldRows;
    results.propagation = propRows;

    // 4. Throughput of `simple`: one replica directly vs three behind HAProxy.
    if (spawnSync('haproxy', ['-v']).status !== 0) {
      ctx.section('fleet: throughput', 'skipped: haproxy is not installed (apt-get install -y haproxy)');
      return results;
    }
    const repo = await ctx.makeRepository(['simple']);
    const three = [await ctx.startWarden(repo), await ctx.startWarden(repo), await ctx.startWarden(repo)];
    servers.push(...three);
    const lbPort = await ctx.freePort();
    const cfg = join(dir, 'haproxy.cfg');
    writeFileSync(
      cfg,
      haproxyConfig(
        `127.0.0.1:${lbPort}`,
        three.map((s) => `127.0.0.1:${s.port}`),
      ),
    );
    const lb = await ctx.startChild('haproxy', 'haproxy', ['-f', cfg, '-db'], lbPort, '/v2/health/ready');
    servers.push(lb);
    const body = JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
      ],
    });
    const request = { path: '/v2/models/simple/infer', method: 'POST' as const, headers: { 'content-type': 'application/json' }, body };
    const summary = await ctx.measure([
      { label: 'simple c=16', target: 'one replica, direct', server: three[0]!, request, connections: 16 },
      { label: 'simple c=16', target: 'three replicas behind HAProxy', server: lb, request, connections: 16 },
    ]);
    ctx.section(
      'fleet: throughput of simple, c=16 (2 cores: shows the overhead of the balancer and of replicas sharing the cores, not scaling)',
      ctx.table(
        ['target', 'req/s (median)', 'p99 ms'],
        summary.map((s) => [s.target, s.rps.toFixed(0), s.p99Ms.toFixed(2)]),
      ),
    );
    results.throughput = summary;
    return results;
  } finally {
    await stopAll();
    motoChild.kill('SIGTERM');
  }
}
