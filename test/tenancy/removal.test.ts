/**
 * Removing a tenant (DESIGN "Multi-tenancy"), end to end with `warden tenants` editing the file
 * under a running server (hot reload): the removed tenant's models are unloaded, its stored
 * uploads moved aside to `<uploads>/.removed/`, its shared-memory regions and cache entries
 * dropped; a tenant added again under the same id starts empty — also when the removal and the new
 * `add` happened while the server was down (creation identity `uid`). Other tenants keep theirs.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { PROJECT_ROOT, fetchJson, tempRepo, type TempRepo } from '../helpers/repo.js';
import { until as poll } from '../helpers/wait.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { tenantsCommand } from '../helpers/tenants-cli.js';

const IDENTITY = () => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm')).toString('base64');
const CONFIG = JSON.stringify({
  backend: 'wasm',
  input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
});

let repo: TempRepo;
let dir: string;
let file: string;
let server: RunningServer | undefined;
const shmFiles: string[] = [];

beforeAll(async () => {
  await ensureBuilt();
});
afterEach(async () => {
  await server?.stop();
  server = undefined;
  repo?.cleanup();
  rmSync(dir, { recursive: true, force: true });
  for (const f of shmFiles.splice(0)) rmSync(f, { force: true });
});

/** `warden tenants <argv>` on this test's tenants file: the token it printed (add). */
const cli = (...argv: string[]): Promise<string> => tenantsCommand(file, ...argv);

async function start(): Promise<RunningServer> {
  server = await startTestServer(repo, {
    allowClientShm: true,
    responseCacheBytes: 1 << 20,
    tenantsFile: file,
  });
  return server;
}

function call(token: string, method: 'GET' | 'POST', path: string, body?: unknown) {
  return fetchJson(`${server!.httpUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
const upload = (token: string, model: string) =>
  call(token, 'POST', `/v2/repository/models/${model}/load`, { parameters: { config: CONFIG, 'file:1/model.wasm': IDENTITY() } });
const infer = (token: string, model: string) =>
  call(token, 'POST', `/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }] });
const uploads = () => join(repo.path, '.warden-uploads');
const quarantined = () => (existsSync(join(uploads(), '.removed')) ? readdirSync(join(uploads(), '.removed')) : []);

/** Wait until `check` holds (the file watcher's debounce or poll), at most 15 s. */
const until = (check: () => boolean | Promise<boolean>): Promise<void> => poll(check, { within: 15_000, every: 50, what: 'the tenants file applied' });

/**
 * A fresh repository and tenants file, `warden tenants add` for each tenant of `models` (in order),
 * a server on them, then each tenant's models uploaded (the identity component): the tokens by id.
 */
async function serveTenants<T extends string>(models: Record<T, string[]>): Promise<Record<T, string>> {
  repo = tempRepo([]);
  dir = mkdtempSync(join(tmpdir(), 'warden-removal-'));
  file = join(dir, 'tenants.yaml');
  const ids = Object.keys(models) as T[];
  const tokens = {} as Record<T, string>;
  for (const id of ids) tokens[id] = await cli('add', id);
  await start();
  for (const id of ids) for (const m of models[id]) expect((await upload(tokens[id], m)).status).toBe(200);
  return tokens;
}

describe('removing a tenant under a running server', () => {
  it('unloads its models, moves its uploads aside, drops its shm regions; a new tenant of the same id starts empty; others keep theirs', async () => {
    const { acme, bob } = await serveTenants({ acme: ['m', 'only_acme'], bob: ['b'] });
    expect((await infer(acme, 'm')).json.outputs[0].data).toEqual([1, 2]);
    const shmName = `acme.r-${randomBytes(6).toString('hex')}`;
    writeFileSync(join('/dev/shm', shmName), Buffer.alloc(16));
    shmFiles.push(join('/dev/shm', shmName));
    expect((await call(acme, 'POST', '/v2/systemsharedmemory/region/r/register', { key: `/${shmName}`, offset: 0, byte_size: 16 })).status).toBe(200);
    expect(existsSync(join(uploads(), 'acme', 'm'))).toBe(true);

    await cli('remove', 'acme');
    await until(() => !existsSync(join(uploads(), 'acme')));
    expect((await infer(acme, 'm')).status).toBe(401);
    expect(quarantined()).toHaveLength(1);
    expect(quarantined()[0]).toMatch(/^acme-/);
    expect(readdirSync(join(uploads(), '.removed', quarantined()[0]!)).sort()).toEqual(['.tenant', 'm', 'only_acme']);
    // Its models are gone from the server, not just unreachable.
    expect(server!.manager.isKnown({ namespace: 'acme', name: 'm' })).toBe(false);
    expect(server!.manager.isKnown({ namespace: 'acme', name: 'only_acme' })).toBe(false);
    // bob is untouched.
    expect((await infer(bob, 'b')).json.outputs[0].data).toEqual([1, 2]);

    // A tenant added again under the same id has nothing of the old one's.
    const acme2 = await cli('add', 'acme');
    await until(async () => (await call(acme2, 'GET', '/v2/models/stats')).status === 200);
    expect((await call(acme2, 'POST', '/v2/repository/index', {})).json).toEqual([]);
    expect((await infer(acme2, 'm')).status).toBe(404);
    expect((await call(acme2, 'GET', '/v2/systemsharedmemory/status')).json).toEqual([]);
    const reload = await call(acme2, 'POST', '/v2/repository/models/m/load', {});
    expect(reload.status).toBeGreaterThanOrEqual(400);
    expect((await call(acme2, 'POST', '/v2/repository/index', {})).json).toEqual([]);
    // It uploads its own m, into a fresh directory.
    expect((await upload(acme2, 'm')).status).toBe(200);
    expect(readdirSync(join(uploads(), 'acme')).filter((n) => !n.startsWith('.'))).toEqual(['m']);
    expect(quarantined()).toHaveLength(1);
  });

  it('a tenant removed and added again within one reload (a new uid) still starts empty', async () => {
    await serveTenants({ acme: ['m'] });
    // Both edits land before the server reads the file again.
    const text = readFileSync(file, 'utf8');
    await cli('remove', 'acme');
    const acme2 = await cli('add', 'acme');
    expect(readFileSync(file, 'utf8')).not.toBe(text);
    await until(async () => (await call(acme2, 'GET', '/v2/models/stats')).status === 200);
    await until(() => quarantined().length === 1);
    expect((await infer(acme2, 'm')).status).toBe(404);
    expect((await call(acme2, 'POST', '/v2/repository/index', {})).json).toEqual([]);
  });
});

describe('removing a tenant while the server is down', () => {
  it('the next start serves none of its uploads, also when a tenant of the same id was added meanwhile', async () => {
    const { bob } = await serveTenants({ acme: ['m'], bob: ['b'] });
    await server!.stop();
    server = undefined;
    await cli('remove', 'acme');
    const acme2 = await cli('add', 'acme');
    await start();
    expect((await infer(acme2, 'm')).status).toBe(404);
    expect((await call(acme2, 'POST', '/v2/repository/index', {})).json).toEqual([]);
    expect(quarantined()).toHaveLength(1);
    // bob's upload is restored as before.
    await until(async () => (await infer(bob, 'b')).status === 200);
  });
});
