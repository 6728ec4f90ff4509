/**
 * Uploads across restarts (DESIGN "Multi-tenancy"): a tenant's upload is stored under the upload
 * directory and served again by the next server on the same repository; the operator namespace's
 * uploads (single-user mode, Triton's behaviour) are ephemeral. The HTTP frontend cannot address
 * tenant namespaces yet, so these tests drive the repository manager and the data plane directly.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { perTestServers } from '../helpers/servers.js';
import { TritonError } from '../../host/src/contract/errors.js';
import type { ModelKey, Principal } from '../../host/src/contract/types.js';
import type { TempRepo } from '../helpers/repo.js';
import { until } from '../helpers/wait.js';
import { inferVariant, uploadFiles, variantConfig } from './fixtures/models.js';

const ACME: ModelKey = { namespace: 'acme', name: 'm' };
const TENANT: Principal = { namespace: 'acme', role: 'tenant' };
const OPERATOR: Principal = { namespace: '', role: 'admin' };

const { repository, serve } = perTestServers();

/** The TritonError a promise rejects with (fails the test if it resolves). */
async function failure(p: Promise<unknown>): Promise<TritonError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(TritonError);
  return e as TritonError;
}

const uploads = (repo: TempRepo) => join(repo.path, '.warden-uploads');

describe('tenant uploads survive a restart', () => {
  it('a tenant model is READY and infers after a restart; an operator upload is gone', async () => {
    const repo = repository();
    let s = await serve(repo);
    await s.manager.load(ACME, { configOverride: variantConfig('A'), files: uploadFiles(0, 3) });
    await s.manager.load({ namespace: '', name: 'op' }, { configOverride: variantConfig('B'), files: uploadFiles(1) });
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('A');
    expect(await inferVariant(s.api, OPERATOR, 'op')).toBe('B');
    // The tenant's model is not in the operator's namespace, nor the reverse.
    expect(await inferVariant(s.api, OPERATOR, 'm')).toBe(null);
    expect(await inferVariant(s.api, TENANT, 'op')).toBe(null);
    expect(readdirSync(uploads(repo)).sort()).toEqual(['.blobs', '.operator', '.staging', 'acme']);
    // The store is invisible to the repository index.
    expect((await s.api.repositoryIndex(OPERATOR, false)).map((e) => e.name)).toEqual(['op', 'simple']);
    await s.stop();
    // Graceful stop: the operator's upload was removed with its unload; the tenant's is kept.
    expect(readdirSync(uploads(repo)).sort()).toEqual(['.blobs', '.operator', '.staging', 'acme']);
    expect(readdirSync(join(uploads(repo), '.operator'))).toEqual([]);

    s = await serve(repo);
    expect(s.manager.getVersion(ACME, -1).version).toBe(1);
    expect(await s.api.repositoryIndex(TENANT, false)).toEqual([{ name: 'm', version: '1', state: 'READY' }]);
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('A');
    expect(s.manager.isKnown({ namespace: '', name: 'op' })).toBe(false);
    expect(await s.api.repositoryIndex(OPERATOR, false)).toEqual([{ name: 'simple' }]);
    expect(existsSync(join(uploads(repo), '.operator'))).toBe(false);
  });

  it("a crashed server's operator uploads are removed at start; tenant leftovers outside the committed generation too", async () => {
    const repo = repository();
    let s = await serve(repo);
    await s.manager.load(ACME, { configOverride: variantConfig('A'), files: uploadFiles(0) });
    await s.stop();
    // What a crash leaves: an operator upload, a staging directory, an uncommitted generation.
    mkdirSync(join(uploads(repo), '.operator/op/g4/1'), { recursive: true });
    writeFileSync(join(uploads(repo), '.operator/op/g4/1/model.wasm'), 'x');
    mkdirSync(join(uploads(repo), '.staging/s-0123456789abcdef/1'), { recursive: true });
    mkdirSync(join(uploads(repo), 'acme/m/g2/1'), { recursive: true });
    // Not the store's: survives.
    writeFileSync(join(uploads(repo), 'README'), 'operator notes');
    s = await serve(repo);
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('A');
    expect(readdirSync(uploads(repo)).sort()).toEqual(['.blobs', '.staging', 'README', 'acme']);
    expect(readdirSync(join(uploads(repo), '.staging'))).toEqual([]);
    expect(readdirSync(join(uploads(repo), 'acme/m')).sort()).toEqual(['CURRENT', 'g1']);
  });

  it('unload keeps the files, a load without files serves them again, deleteFiles removes them', async () => {
    const repo = repository();
    let s = await serve(repo);
    await s.manager.load(ACME, { configOverride: variantConfig('B'), files: uploadFiles(1) });
    await s.manager.unload(ACME);
    await until(() => s.manager.servingVersions({ key: ACME }).length === 0, { what: 'unloaded' });
    expect(await inferVariant(s.api, TENANT, 'm')).toBe(null);
    await s.manager.load(ACME);
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('B');
    // A config-only reload of the stored files is stored too.
    const cfg = { ...variantConfig('B'), parameters: { variant: { string_value: 'B' }, note: { string_value: 'reloaded' } } };
    await s.manager.load(ACME, { configOverride: cfg });
    expect(s.manager.getVersion(ACME, -1).config.parameters.note?.string_value).toBe('reloaded');
    await s.stop();
    s = await serve(repo);
    expect(s.manager.getVersion(ACME, -1).config.parameters.note?.string_value).toBe('reloaded');
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('B');
    // Unloaded at shutdown, still restored: an unload is not a delete.
    await s.manager.unload(ACME);
    await s.stop();
    s = await serve(repo);
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('B');
    await s.manager.unload(ACME, false, { deleteFiles: true });
    await until(() => !existsSync(join(uploads(repo), 'acme/m')), { what: 'files deleted' });
    const again = await failure(s.manager.load(ACME));
    expect(again.message).toMatch(/failed to load 'm', failed to poll from model repository/);
    await s.stop();
    s = await serve(repo);
    expect(s.manager.isKnown(ACME)).toBe(false);
  });

  it('a replacement removes the old generation once it retired; a failed one leaves the old serving and stored', async () => {
    const repo = repository();
    let s = await serve(repo);
    await s.manager.load(ACME, { configOverride: variantConfig('A'), files: uploadFiles(0) });
    await s.manager.load(ACME, { configOverride: variantConfig('B'), files: uploadFiles(1) });
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('B');
    await until(
      () =>
        readdirSync(join(uploads(repo), 'acme/m'))
          .sort()
          .join() === 'CURRENT,g2',
      { what: 'g1 removed' },
    );
    // A broken model: the load fails, g3 is removed, g2 serves and stays committed.
    const broken = uploadFiles(2);
    broken.set('1/model.wasm', new Uint8Array(Buffer.from('not a component')));
    const e = await failure(s.manager.load(ACME, { configOverride: variantConfig('A'), files: broken }));
    // No host path in the reason: the model directory is named by the model's name.
    expect(e.message).not.toContain(repo.path);
    expect(e.message).not.toContain('.warden-uploads');
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('B');
    expect(readdirSync(join(uploads(repo), 'acme/m')).sort()).toEqual(['CURRENT', 'g2']);
    // Too large for the caller's limit: rejected before anything is written.
    const big = await failure(s.manager.load(ACME, { configOverride: variantConfig('A'), files: uploadFiles(0, 4, 1000), maxUploadBytes: 4000 }));
    expect(big.code).toBe('INVALID_ARG');
    expect(big.message).toMatch(/exceeds the limit of 4000 bytes/);
    expect(readdirSync(join(uploads(repo), 'acme/m')).sort()).toEqual(['CURRENT', 'g2']);
    // Names that are not plain file names never reach the file system.
    for (const name of ['..', 'a/b', '.']) {
      const bad = await failure(s.manager.load({ namespace: 'acme', name }, { configOverride: variantConfig('A'), files: uploadFiles(0) }));
      expect(bad.code, name).toBe('INVALID_ARG');
    }
    await s.stop();
    s = await serve(repo);
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('B');
  });

  it('a stored model that fails to load is UNAVAILABLE with the reason; start-up and readiness are unaffected', async () => {
    const repo = repository();
    let s = await serve(repo, { loadModels: ['simple'] });
    await s.manager.load(ACME, { configOverride: variantConfig('A'), files: uploadFiles(0) });
    await s.manager.load({ namespace: 'acme', name: 'gone' }, { configOverride: variantConfig('A'), files: uploadFiles(0) });
    await s.stop();
    writeFileSync(join(uploads(repo), 'acme/m/g1/1/model.wasm'), 'corrupted');
    writeFileSync(join(uploads(repo), 'acme/gone/CURRENT'), '{"format":"warden-upload/1","generation":7}');
    s = await serve(repo, { loadModels: ['simple'], exitOnError: true });
    const index = await s.api.repositoryIndex(TENANT, false);
    expect(index.map((e) => [e.name, e.state])).toEqual([
      ['gone', 'UNAVAILABLE'],
      ['m', 'UNAVAILABLE'],
    ]);
    const reasons = index.map((e) => e.reason ?? '');
    expect(reasons[0]).toBe("stored model 'gone' is damaged: generation 7 is missing");
    expect(reasons[1]).not.toBe('');
    for (const r of reasons) {
      expect(r).not.toContain(repo.path);
      expect(r).not.toContain('.warden-uploads');
    }
    expect(s.api.isReady()).toBe(true);
    expect(await inferVariant(s.api, TENANT, 'm')).toBe(null);
    // A good upload over the broken one serves.
    await s.manager.load(ACME, { configOverride: variantConfig('B'), files: uploadFiles(1) });
    expect(await inferVariant(s.api, TENANT, 'm')).toBe('B');
  });
});
