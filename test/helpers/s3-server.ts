/**
 * A real S3-compatible server for tests: moto's standalone server (PyPI `moto[s3,server]`, pinned),
 * installed into `.venv-s3/` (gitignored) on first use and started on a free local port. It speaks
 * the S3 REST API over HTTP (ListObjectsV2, GetObject, HeadBucket, conditional requests), so
 * Warden's AWS SDK client talks to it exactly as to S3. Tests may skip only when PyPI cannot be
 * reached (the install then fails and the index does not answer); any other failure is thrown.
 */
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exec, indexReachable, PROJECT_ROOT, withLock } from '../compat/venv.js';
import { freePort } from './repo.js';
import { until } from './wait.js';

/** Pinned moto (looked up with `pip index versions moto`). */
export const MOTO_VERSION = '5.2.5';
const VENV = join(PROJECT_ROOT, '.venv-s3');
const MOTO = join(VENV, 'bin', 'moto_server');

/** Credentials the tests give both sides (moto accepts any). */
export const S3_TEST_ENV = { AWS_ACCESS_KEY_ID: 'warden-test', AWS_SECRET_ACCESS_KEY: 'warden-test-secret', AWS_DEFAULT_REGION: 'us-east-1' } as const;

/** `{ ok: false, reason }` only when PyPI is unreachable. @throws Error on any other install failure */
export async function ensureMoto(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const installed = async () =>
    existsSync(MOTO) &&
    (await exec(join(VENV, 'bin', 'python'), ['-c', 'import importlib.metadata as m; print(m.version("moto"))'], 60_000)).out.trim() === MOTO_VERSION;
  if (await installed()) return { ok: true };
  return withLock(VENV, async () => {
    if (await installed()) return { ok: true };
    if (!existsSync(join(VENV, 'bin', 'python'))) {
      const mk = await exec(process.env.WARDEN_PYTHON ?? 'python3', ['-m', 'venv', VENV], 120_000);
      if (mk.code !== 0) throw new Error(`python3 -m venv .venv-s3 failed:\n${mk.out}`);
    }
    const req = `moto[s3,server]==${MOTO_VERSION}`;
    const pip = await exec(join(VENV, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--timeout', '30', '--retries', '2', req], 8 * 60_000);
    if (pip.code !== 0) {
      const probe = await indexReachable({}, 'moto');
      if (!probe.reachable) return { ok: false, reason: `PyPI is unreachable (${probe.url}: ${probe.error}); cannot install ${req}` };
      throw new Error(`pip install ${req} failed although ${probe.url} is reachable:\n${pip.out}`);
    }
    if (!(await installed())) throw new Error(`after pip install, .venv-s3 has no moto ${MOTO_VERSION}`);
    return { ok: true };
  });
}

/** A running S3-compatible server. */
export interface S3TestServer {
  /** `127.0.0.1:<port>`, as an `s3://host:port/bucket/path` location writes it. */
  readonly hostPort: string;
  /** A client of the server (path-style, the test credentials). */
  readonly client: S3Client;
  /** Create `bucket`. */
  createBucket(bucket: string): Promise<void>;
  /** Upload every file under the local directory `dir` to `bucket` below `prefix/`. */
  putTree(bucket: string, prefix: string, dir: string): Promise<void>;
  put(bucket: string, key: string, body: string | Uint8Array): Promise<void>;
  remove(bucket: string, key: string): Promise<void>;
  stop(): Promise<void>;
}

/** Start moto's server (after {@link ensureMoto} said ok). The caller stops it. */
export async function startS3Server(): Promise<S3TestServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(MOTO, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const endpoint = `http://127.0.0.1:${port}`;
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`moto_server exited (${child.exitCode}):\n${log}`);
      return fetch(endpoint).then(
        (r) => r.ok,
        () => false,
      );
    },
    { within: 30_000, every: 100, what: 'moto_server answering' },
  );
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: S3_TEST_ENV.AWS_DEFAULT_REGION,
    credentials: { accessKeyId: S3_TEST_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: S3_TEST_ENV.AWS_SECRET_ACCESS_KEY },
  });
  const put = async (bucket: string, key: string, body: string | Uint8Array) => {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  };
  return {
    hostPort: `127.0.0.1:${port}`,
    client,
    createBucket: async (bucket) => {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
    },
    put,
    putTree: async (bucket, prefix, dir) => {
      const walk = async (d: string, rel: string): Promise<void> => {
        for (const name of readdirSync(d)) {
          const p = join(d, name);
          if (statSync(p).isDirectory()) await walk(p, `${rel}${name}/`);
          else await put(bucket, `${prefix}/${rel}${name}`, readFileSync(p));
        }
      };
      await walk(dir, '');
    },
    remove: async (bucket, key) => {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    stop: async () => {
      client.destroy();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    },
  };
}
