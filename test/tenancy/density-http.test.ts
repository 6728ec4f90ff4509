/**
 * Density with the default settings, through the load API (DESIGN "Multi-tenancy"): 40 uploads of
 * one sandboxed identity component from three tenants — more than the default sandbox memory
 * budget (4 GiB) and each tenant's `max_memory_total_bytes` (1 GiB) could hold at 256 MiB per
 * live sandbox — are all accepted and all answer, since a sandbox only holds memory while it is
 * live and idle sandboxes are released to make room; the 40 uploads hold the component's bytes
 * once on disk.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTenantServer, testTokens, type TenantServer } from '../helpers/servers.js';
import { postJson, tempRepo, type TempRepo } from '../helpers/repo.js';
import * as h from '../backends/wasm/helpers.js';

const UPLOADS = 40;
const tokens = testTokens('t0', 't1', 't2');
const tenantOf = (i: number) => (['t0', 't1', 't2'] as const)[i % 3]!;

let repo: TempRepo;
let server: TenantServer;
beforeAll(async () => {
  await h.ensureBuilt();
  repo = tempRepo([]);
  server = await startTenantServer(
    repo,
    Object.entries(tokens).map(([id, token]) => ({ id, token })),
    { separateUploads: true },
  );
});
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

describe('density with the default settings', () => {
  it('40 uploads of a sandboxed model from three tenants are accepted and all answer; their component is stored once', async () => {
    const component = readFileSync(join(h.FIXTURES, 'build', 'identity.wasm'));
    const config = (name: string) =>
      JSON.stringify({
        name,
        backend: 'wasm',
        input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
        output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      });
    const url = server.server.httpUrl;
    const auth = (i: number) => ({ authorization: `Bearer ${tokens[tenantOf(i)]}` });
    for (let i = 0; i < UPLOADS; i++) {
      const body = { parameters: { config: config(`m${i}`), 'file:1/model.wasm': component.toString('base64') } };
      const r = await postJson(`${url}/v2/repository/models/m${i}/load`, body, auth(i));
      expect(r.status, `upload ${i + 1}: ${r.text}`).toBe(200);
    }
    // every model answers (most after a cold start that releases the least recently used sandbox)
    for (let i = 0; i < UPLOADS; i++) {
      const r = await postJson(`${url}/v2/models/m${i}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [i, 1] }] }, auth(i));
      expect(r.status, `m${i}: ${r.text}`).toBe(200);
      expect(r.json.outputs[0].data).toEqual([i, 1]);
    }
    // one blob, linked by every generation
    const blobs = join(server.dir, 'uploads', '.blobs', 'sha256');
    expect(readdirSync(blobs)).toHaveLength(1);
    expect(statSync(join(blobs, readdirSync(blobs)[0]!)).nlink).toBe(UPLOADS + 1);
  }, 240_000);
});
