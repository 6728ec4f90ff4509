/**
 * System shared memory (dataplane/shared-memory.ts, spec §3.3) against hostile keys and callers: keys
 * never leave the shm directory (no '/', '..', symlinks, non-regular files, server-reserved
 * names), offsets and sizes are bounded by the object and the region, unknown regions are
 * NOT_FOUND, tenants see and use only their own regions and keys, counts are capped, and nothing
 * works while `--allow-client-shm` is off. Runs against a temporary directory standing in for
 * /dev/shm (the HTTP / gRPC tests use the real one).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccessError, TritonError } from '../../host/src/contract/errors.js';
import { SystemSharedMemory, shmKeyFile } from '../../host/src/dataplane/shared-memory.js';
import { accessHttpStatus } from '../../host/src/frontend/http/status.js';
import type { Principal } from '../../host/src/contract/types.js';

const OP: Principal = { namespace: '', role: 'admin' };
const ACME: Principal = { namespace: 'acme', role: 'tenant' };
const BOB: Principal = { namespace: 'bob', role: 'tenant' };

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof AccessError) return `HTTP ${accessHttpStatus(e.kind)}`;
    if (e instanceof TritonError) return e.code;
    throw e;
  }
  return 'OK';
}

let root: string;
let shm: SystemSharedMemory;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'warden-shm-'));
  writeFileSync(join(root, 'obj'), Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
  shm = new SystemSharedMemory({ enabled: true, multiTenant: true, maxReadBytes: 32, root, maxRegionsPerNamespace: 2 });
});
afterEach(() => {
  shm.close();
  rmSync(root, { recursive: true, force: true });
});

describe('keys', () => {
  it('only one plain name, never a path, never a server-reserved name', () => {
    expect(shmKeyFile('/input')).toBe('input');
    expect(shmKeyFile('input')).toBe('input');
    for (const bad of ['', '/', '/.', '/..', '../etc/passwd', '/a/b', 'a\u0000b', 'a\nb', '/' + 'x'.repeat(256), '/warden-py-1-in']) {
      expect(
        code(() => shmKeyFile(bad)),
        JSON.stringify(bad),
      ).toBe('INVALID_ARG');
    }
  });

  it("a symlink, a directory or a FIFO in the shm directory is refused; a missing object is INTERNAL (Triton's code)", () => {
    writeFileSync(join(tmpdir(), `warden-shm-target-${process.pid}`), 'secret');
    symlinkSync(join(tmpdir(), `warden-shm-target-${process.pid}`), join(root, 'link'));
    mkdirSync(join(root, 'dir'));
    execFileSync('mkfifo', [join(root, 'fifo')]);
    expect(code(() => shm.register(OP, 'a', '/link', 0, 4))).toBe('INVALID_ARG');
    expect(code(() => shm.register(OP, 'b', '/dir', 0, 4))).toBe('INVALID_ARG');
    expect(code(() => shm.register(OP, 'c', '/fifo', 0, 4))).toBe('INVALID_ARG');
    expect(code(() => shm.register(OP, 'd', '/missing', 0, 4))).toBe('INTERNAL');
    expect(shm.status(OP, '')).toEqual([]);
    rmSync(join(tmpdir(), `warden-shm-target-${process.pid}`));
  });
});

describe('bounds', () => {
  it('a region must fit its object; reads and writes must fit the region', () => {
    expect(code(() => shm.register(OP, 'r', '/obj', 60, 8))).toBe('INVALID_ARG');
    expect(code(() => shm.register(OP, 'r', '/obj', -1, 8))).toBe('INVALID_ARG');
    expect(code(() => shm.register(OP, 'r', '/obj', 2 ** 60, 8))).toBe('INVALID_ARG');
    expect(code(() => shm.register(OP, 'r', '/obj', 0, 'x'))).toBe('INVALID_ARG');
    shm.register(OP, 'r', '/obj', 16, 32);
    expect(code(() => shm.register(OP, 'r', '/obj', 0, 8))).toBe('ALREADY_EXISTS');
    expect(Array.from(shm.read(OP, 'r', 4, 4))).toEqual([20, 21, 22, 23]);
    expect(code(() => shm.read(OP, 'r', 30, 4))).toBe('INVALID_ARG');
    expect(code(() => shm.read(OP, 'nope', 0, 4))).toBe('NOT_FOUND');
    shm.write(OP, 'r', 8, 4, new Uint8Array([9, 9, 9, 9]), 'OUT');
    expect(Array.from(readFileSync(join(root, 'obj')).subarray(24, 28))).toEqual([9, 9, 9, 9]);
    expect(code(() => shm.write(OP, 'r', 0, 2, new Uint8Array(4), 'OUT'))).toBe('INVALID_ARG');
    expect(code(() => shm.write(OP, 'r', 30, 4, new Uint8Array(4), 'OUT'))).toBe('INVALID_ARG');
    // one read is bounded by the request-size limit (32 bytes here)
    shm.unregister(OP, 'r');
    shm.register(OP, 'all', '/obj', 0, 64);
    expect(code(() => shm.read(OP, 'all', 0, 48))).toBe('INVALID_ARG');
  });

  it('status and unregister (Triton: unknown names unregister without error, status is NOT_FOUND)', () => {
    shm.register(OP, 'b', '/obj', 0, 8);
    shm.register(OP, 'a', '/obj', 8, 8);
    expect(shm.status(OP, '')).toEqual([
      { name: 'a', key: '/obj', offset: 8, byte_size: 8 },
      { name: 'b', key: '/obj', offset: 0, byte_size: 8 },
    ]);
    expect(code(() => shm.status(OP, 'zzz'))).toBe('NOT_FOUND');
    shm.unregister(OP, 'zzz');
    shm.unregister(OP, 'a');
    expect(shm.status(OP, '').map((r) => r.name)).toEqual(['b']);
    shm.unregister(OP, '');
    expect(shm.status(OP, '')).toEqual([]);
  });
});

describe('tenants', () => {
  beforeEach(() => {
    writeFileSync(join(root, 'acme.in'), Buffer.alloc(16, 7));
    writeFileSync(join(root, 'bob.in'), Buffer.alloc(16, 8));
  });

  it("see, use and unregister only their own regions; keys must carry the tenant's prefix", () => {
    expect(code(() => shm.register(ACME, 'r', '/obj', 0, 8))).toBe('HTTP 403');
    expect(code(() => shm.register(ACME, 'r', '/bob.in', 0, 8))).toBe('HTTP 403');
    shm.register(ACME, 'r', '/acme.in', 0, 16);
    shm.register(BOB, 'r', '/bob.in', 0, 16);
    expect(Array.from(shm.read(ACME, 'r', 0, 2))).toEqual([7, 7]);
    expect(Array.from(shm.read(BOB, 'r', 0, 2))).toEqual([8, 8]);
    expect(shm.status(BOB, '')).toEqual([{ name: 'r', key: '/bob.in', offset: 0, byte_size: 16 }]);
    shm.unregister(BOB, '');
    expect(shm.status(ACME, '').map((r) => r.key)).toEqual(['/acme.in']);
    expect(code(() => shm.read(BOB, 'r', 0, 2))).toBe('NOT_FOUND');
    // the operator cannot take a key a tenant registered either
    expect(code(() => shm.register(OP, 'x', '/acme.in', 0, 4))).toBe('INVALID_ARG');
  });

  it("no tenant id is a prefix of another's keys: acme cannot take acme_corp's keys, nor block them", () => {
    const CORP: Principal = { namespace: 'acme_corp', role: 'tenant' };
    writeFileSync(join(root, 'acme_corp_secret'), Buffer.alloc(16, 9));
    writeFileSync(join(root, 'acme_corp.secret'), Buffer.alloc(16, 9));
    // '_' is part of tenant ids: '/acme_…' keys are nobody's (the former rule let acme take these).
    expect(code(() => shm.register(ACME, 's', '/acme_corp_secret', 0, 16))).toBe('HTTP 403');
    expect(code(() => shm.register(ACME, 's', '/acme_corp.secret', 0, 16))).toBe('HTTP 403');
    expect(code(() => shm.register(CORP, 's', '/acme_corp_secret', 0, 16))).toBe('HTTP 403');
    shm.register(CORP, 's', '/acme_corp.secret', 0, 16);
    expect(Array.from(shm.read(CORP, 's', 0, 2))).toEqual([9, 9]);
    expect(shm.status(ACME, '')).toEqual([]);
    expect(code(() => shm.read(ACME, 's', 0, 2))).toBe('NOT_FOUND');
  });

  it('regions per namespace are capped', () => {
    shm.register(OP, 'a', '/obj', 0, 4);
    shm.register(OP, 'b', '/obj', 0, 4);
    expect(code(() => shm.register(OP, 'c', '/obj', 0, 4))).toBe('HTTP 403');
    shm.register(ACME, 'a', '/acme.in', 0, 4);
  });
});

it('everything is UNSUPPORTED while --allow-client-shm is off (status lists nothing)', () => {
  const off = new SystemSharedMemory({ enabled: false, multiTenant: false, maxReadBytes: 32, root });
  expect(code(() => off.register(OP, 'r', '/obj', 0, 4))).toBe('UNSUPPORTED');
  expect(code(() => off.read(OP, 'r', 0, 4))).toBe('UNSUPPORTED');
  expect(code(() => off.unregister(OP, ''))).toBe('UNSUPPORTED');
  expect(off.status(OP, '')).toEqual([]);
  expect(off.access(OP)).toBeUndefined();
});
