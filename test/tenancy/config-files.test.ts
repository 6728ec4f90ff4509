/**
 * The rule for files a config names, end to end (DESIGN "Multi-tenancy"): a tenant's uploaded
 * wasm model whose `label_filename` climbs out of its directory is refused at load, and asking for
 * `classification` on it never returns a byte of the host file; a label file uploaded with the
 * model works. On every sandbox engine.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { PROJECT_ROOT, fetchJson, tempRepo, type TempRepo } from '../helpers/repo.js';
import { startTenantServer, type TenantServer } from '../helpers/servers.js';
import { ENGINES, ensureBuilt } from '../backends/wasm/helpers.js';

const TOKEN = 'acme-token-0123456789abcdefghijkl';
const IDENTITY = () => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm')).toString('base64');
const PASSWD = readFileSync('/etc/passwd', 'utf8');
const FIRST_PASSWD_NAME = PASSWD.split('\n')[0]!.split(':')[0]!;

describe.each(ENGINES)('label files of an upload (%s engine)', (engine) => {
  let repo: TempRepo;
  let tenancy: TenantServer;
  let dir: string;
  let server: RunningServer;
  const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    fetchJson(`${server.httpUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const config = (label: string) =>
    JSON.stringify({
      backend: 'wasm',
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1], label_filename: label }],
    });
  const classify = (model: string) =>
    call('POST', `/v2/models/${model}/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [40], data: Array.from({ length: 40 }, (_, i) => 40 - i) }],
      outputs: [{ name: 'OUTPUT0', parameters: { classification: 40 } }],
    });

  beforeAll(async () => {
    await ensureBuilt();
    repo = tempRepo([]);
    ({ server, dir } = tenancy = await startTenantServer(repo, [{ id: 'acme', token: TOKEN }], { wasmEngine: engine }));
  });
  afterAll(async () => {
    await tenancy?.stop();
    repo?.cleanup();
  });

  it.each([['../../../../../../../../../../etc/passwd'], ['/etc/passwd'], ['../../../../../../../../../../dev/zero'], ['missing.txt']])(
    'label_filename %j: the load is refused (400, no host path), classification never answers with the file',
    async (label) => {
      const r = await call('POST', '/v2/repository/models/evil/load', { parameters: { config: config(label), 'file:1/model.wasm': IDENTITY() } });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatch(/output 'OUTPUT0' label_filename/);
      expect(r.json.error).not.toContain(repo.path);
      expect(r.json.error).not.toContain(dir);
      const c = await classify('evil');
      expect(c.status).not.toBe(200);
      expect(c.text).not.toContain(`:${FIRST_PASSWD_NAME}`);
      expect(c.text).not.toContain('/bin/');
    },
  );

  it('a label file uploaded with the model labels the classes', async () => {
    const r = await call('POST', '/v2/repository/models/good/load', {
      parameters: { config: config('labels.txt'), 'file:1/model.wasm': IDENTITY(), 'file:labels.txt': Buffer.from('a\nb\nc\n').toString('base64') },
    });
    expect(r.status, r.text).toBe(200);
    const c = await classify('good');
    expect(c.status, c.text).toBe(200);
    expect(c.json.outputs[0].data.slice(0, 4)).toEqual(['40.000000:0:a', '39.000000:1:b', '38.000000:2:c', '37.000000:3']);
  });
});
