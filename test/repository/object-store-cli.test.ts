/** The command-line flags of object-store repositories, shared uploads and the fleet's compile-cache key. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCli } from '../../host/src/cli-options.js';
import { DEFAULT_REPOSITORY_CACHE_BYTES } from '../../host/src/repository/open-repositories.js';

const dir = mkdtempSync(join(tmpdir(), 'warden-objstore-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('object-store flags', () => {
  it('an s3:// repository beside a local one, the cache bounds, the shared upload store and its poll interval', () => {
    const o = parseCli([
      '--model-repository=s3://minio:9000/models/repo',
      '--model-repository=/models',
      '--repository-cache-directory=/var/cache/warden',
      '--repository-cache-bytes=1048576',
      '--upload-store=s3://bucket/uploads',
      '--upload-store-poll-secs=2',
    ]);
    expect([o.modelRepositories, o.repositoryCacheDirectory, o.repositoryCacheBytes, o.uploadStore, o.uploadStorePollSecs]).toEqual([
      ['s3://minio:9000/models/repo', '/models'],
      '/var/cache/warden',
      1048576,
      's3://bucket/uploads',
      2,
    ]);
    const d = parseCli(['--model-repository=/models']);
    expect([d.repositoryCacheBytes, d.uploadStore, d.uploadStorePollSecs, d.wasmCacheKey]).toEqual([DEFAULT_REPOSITORY_CACHE_BYTES, undefined, 5, undefined]);
  });

  it('--wasm-cache-key-file takes 32 raw bytes or 64 hex digits, and refuses anything else without echoing it', () => {
    const raw = join(dir, 'raw');
    writeFileSync(raw, Buffer.alloc(32, 7));
    const hex = join(dir, 'hex');
    writeFileSync(hex, `${'ab'.repeat(32)}\n`);
    const bad = join(dir, 'bad');
    writeFileSync(bad, 'secret-but-short');
    expect(parseCli(['--model-repository=/m', `--wasm-cache-key-file=${raw}`]).wasmCacheKey).toEqual(Buffer.alloc(32, 7));
    expect(parseCli(['--model-repository=/m', `--wasm-cache-key-file=${hex}`]).wasmCacheKey).toEqual(Buffer.alloc(32, 0xab));
    expect(() => parseCli(['--model-repository=/m', `--wasm-cache-key-file=${bad}`])).toThrow(/^--wasm-cache-key-file: expected 32 bytes or 64 hex digits$/);
    expect(() => parseCli(['--model-repository=/m', `--wasm-cache-key-file=${join(dir, 'absent')}`])).toThrow(
      '--wasm-cache-key-file: cannot read the file (ENOENT)',
    );
  });
});
