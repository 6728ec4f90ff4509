/**
 * A Google Cloud Storage emulator for tests: gcp-storage-emulator (PyPI, pinned), installed into
 * `.venv-gcs/` (gitignored) on first use and started in memory on a free local port. It speaks the
 * Cloud Storage JSON API (bucket metadata, object listings with prefixes and page tokens, media
 * downloads), so Warden's `@google-cloud/storage` client, pointed at it by the standard
 * `STORAGE_EMULATOR_HOST`, talks to it as to Cloud Storage. Tests may skip only when PyPI cannot
 * be reached; any other failure is thrown.
 */
import { Storage } from '@google-cloud/storage';
import { type BucketTestServer, putTreeWith, startEmulator } from './object-store-server.js';
import { freePort } from './repo.js';
import { ensureVenvTool, venvBin, type VenvTool } from './venv-tool.js';

/** Pinned gcp-storage-emulator (looked up with `pip index versions gcp-storage-emulator`). */
export const GCS_EMULATOR_VERSION = '2026.7.19';
const TOOL: VenvTool = { venv: '.venv-gcs', distribution: 'gcp-storage-emulator', version: GCS_EMULATOR_VERSION };

/** `{ ok: false, reason }` only when PyPI is unreachable. @throws Error on any other install failure */
export function ensureGcsEmulator(): Promise<{ ok: true } | { ok: false; reason: string }> {
  return ensureVenvTool(TOOL);
}

/** A running Cloud Storage emulator. */
export interface GcsTestServer extends BucketTestServer {
  /** `http://127.0.0.1:<port>`: the value of `STORAGE_EMULATOR_HOST` that points a client at it. */
  readonly endpoint: string;
}

/** Start the emulator (after {@link ensureGcsEmulator} said ok). The caller stops it. */
export async function startGcsServer(): Promise<GcsTestServer> {
  const port = await freePort();
  const emulator = await startEmulator(
    'gcp-storage-emulator',
    venvBin(TOOL, 'gcp-storage-emulator'),
    ['start', '--host', '127.0.0.1', '--port', String(port), '--in-memory', '--quiet'],
    port,
  );
  const storage = new Storage({ apiEndpoint: emulator.endpoint, projectId: 'warden-test' });
  const put = async (bucket: string, key: string, body: string | Uint8Array) => {
    await storage.bucket(bucket).file(key).save(Buffer.from(body), { resumable: false });
  };
  return {
    endpoint: emulator.endpoint,
    createBucket: async (bucket) => {
      await storage.createBucket(bucket);
    },
    put,
    putTree: putTreeWith(put),
    remove: async (bucket, key) => {
      await storage.bucket(bucket).file(key).delete();
    },
    stop: () => emulator.stop(),
  };
}
