/**
 * A real S3-compatible server for tests: moto's standalone server (PyPI `moto[s3,server]`, pinned),
 * installed into `.venv-s3/` (gitignored) on first use and started on a free local port. It speaks
 * the S3 REST API over HTTP (ListObjectsV2, GetObject, HeadBucket, conditional requests), so
 * Warden's AWS SDK client talks to it exactly as to S3. Tests may skip only when PyPI cannot be
 * reached (the install then fails and the index does not answer); any other failure is thrown.
 */
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type BucketTestServer, putTreeWith, startEmulator } from './object-store-server.js';
import { freePort } from './repo.js';
import { ensureVenvTool, venvBin, type VenvTool } from './venv-tool.js';

/** Pinned moto (looked up with `pip index versions moto`). */
export const MOTO_VERSION = '5.2.5';
const MOTO_TOOL: VenvTool = { venv: '.venv-s3', distribution: 'moto', version: MOTO_VERSION, extras: 's3,server' };
const MOTO = venvBin(MOTO_TOOL, 'moto_server');

/** Credentials the tests give both sides (moto accepts any). */
export const S3_TEST_ENV = { AWS_ACCESS_KEY_ID: 'warden-test', AWS_SECRET_ACCESS_KEY: 'warden-test-secret', AWS_DEFAULT_REGION: 'us-east-1' } as const;

/** `{ ok: false, reason }` only when PyPI is unreachable. @throws Error on any other install failure */
export function ensureMoto(): Promise<{ ok: true } | { ok: false; reason: string }> {
  return ensureVenvTool(MOTO_TOOL);
}

/** A running S3-compatible server. */
export interface S3TestServer extends BucketTestServer {
  /** `127.0.0.1:<port>`, as an `s3://host:port/bucket/path` location writes it. */
  readonly hostPort: string;
  /** A client of the server (path-style, the test credentials). */
  readonly client: S3Client;
}

/** Start moto's server (after {@link ensureMoto} said ok). The caller stops it. */
export async function startS3Server(): Promise<S3TestServer> {
  const port = await freePort();
  const moto = await startEmulator('moto_server', MOTO, ['-H', '127.0.0.1', '-p', String(port)], port);
  const client = new S3Client({
    endpoint: moto.endpoint,
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
    putTree: putTreeWith(put),
    remove: async (bucket, key) => {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    stop: async () => {
      client.destroy();
      await moto.stop();
    },
  };
}
