/**
 * `--http-restricted-api=<apis>:<key>=<value>` as tritonserver has it (server src/command_line_parser.cc
 * ParseRestrictedFeatureOption, src/restricted_features.h, src/http_server.cc RespondIfRestricted):
 * an API group is answered only to requests carrying header `<key>: <value>`; any other gets 403
 * `{"error":"This API is restricted, expecting header '<key>'"}` before the route's method check,
 * and nothing changes. The attack: a deployment that protects model control with the flag, and a
 * client without the header that tries to unload a model, read its config or run it — through
 * Fastify's routes, the `/infer` fast path, front-end threads and on top of multi-tenant tokens.
 * Invalid configurations are refused at start with tritonserver's texts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/wait.js';
import { parseCli, UsageError } from '../../../host/src/cli-options.js';
import { fastPathCounters } from '../../../host/src/frontend/http/fast-path.js';
import type { RunningServer } from '../../../host/src/server.js';
import { writeTenantsFile } from '../../helpers/servers.js';
import { exchange, JSON_TYPE, portOf, raw, simpleJson, startMatrixServer, useMatrixRepository } from '../../helpers/http-matrix.js';

const repoPath = useMatrixRepository();
const ADMIN = "This API is restricted, expecting header 'admin-key'";
const INFER = "This API is restricted, expecting header 'infer-key'";

/** Start a server from a tritonserver command line (the flags as an operator gives them), `extra` overriding. */
const startFromCli = (flags: string[], extra: object = {}) =>
  startMatrixServer(repoPath(), {
    ...parseCli([`--model-repository=${repoPath()}`, '--model-control-mode=explicit', '--load-model=*', ...flags]),
    httpPort: 0,
    metricsPort: -1,
    grpcPort: undefined,
    ...extra,
  });

/** One request on its own connection: status, headers and body text. */
async function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body: string | Buffer = '') {
  const [r] = await exchange(port, raw(method, path, body, headers));
  return { status: Number(r!.head.split(' ')[1]), head: r!.head, text: r!.body.toString() };
}

describe('--http-restricted-api: parsing (tritonserver command_line_parser.cc)', () => {
  it('parses groups, key and value; the value may hold = and :; the flag is not reported as ignored', () => {
    const o = parseCli([
      '--model-repository=/m',
      '--http-restricted-api=model-repository,model-config:admin-key=s3=c:r',
      '--http-restricted-api=inference:infer-key=abc',
    ]);
    expect(o.notes.ignoredFlags).toEqual([]);
    expect(o.httpRestrictedApis).toEqual({
      'model-repository': { header: 'admin-key', value: 's3=c:r' },
      'model-config': { header: 'admin-key', value: 's3=c:r' },
      inference: { header: 'infer-key', value: 'abc' },
    });
    expect(parseCli(['--model-repository=/m']).httpRestrictedApis).toBeUndefined();
  });

  it('refuses invalid configurations at start with tritonserver texts', () => {
    const bad = (arg: string) => () => parseCli(['--model-repository=/m', arg]);
    const format = (a: string) => `--http-restricted-api option format is '<config name>:<setting>=<value>'. Got ${a}`;
    for (const a of ['health', 'health:key', 'health:=v', ':key=v', 'health:key=', 'health=key:v']) {
      expect(bad(`--http-restricted-api=${a}`), a).toThrow(UsageError);
      expect(bad(`--http-restricted-api=${a}`), a).toThrow(format(a));
    }
    expect(bad('--http-restricted-api=admin:k=v')).toThrow("unknown restricted api 'admin'");
    expect(bad('--http-restricted-api=health,,metadata:k=v')).toThrow("unknown restricted api ''");
    expect(bad('--http-restricted-api=health,health:k=v')).toThrow("restricted api 'health' can not be specified in multiple config groups");
    expect(() => parseCli(['--model-repository=/m', '--http-restricted-api=health:a=1', '--http-restricted-api=metadata,health:b=2'])).toThrow(
      "restricted api 'health' can not be specified in multiple config groups",
    );
  });
});

describe('--http-restricted-api: a client without the header (single-user)', () => {
  let server: RunningServer;
  let port: number;
  beforeAll(async () => {
    server = await startFromCli(['--http-restricted-api=model-repository,model-config:admin-key=s3cret', '--http-restricted-api=inference:infer-key=abc']);
    port = portOf(server);
  });
  afterAll(async () => server?.stop());

  it('cannot unload a model (no header, wrong value, the header of another group): 403, the model stays ready', async () => {
    for (const headers of [{}, { 'admin-key': 'wrong' }, { 'admin-key': 's3cretx' }, { 'infer-key': 'abc' }, { 'admin-key': '' }] as Record<string, string>[]) {
      const r = await send(port, 'POST', '/v2/repository/models/simple/unload', { ...JSON_TYPE, ...headers }, '{}');
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(JSON.parse(r.text)).toEqual({ error: ADMIN });
      expect(r.head.toLowerCase()).toContain('content-type: application/json');
    }
    for (const path of ['/v2/repository/index', '/v2/repository/models/simple/load', '/v2/repository/models/x/load', '/v2/repository/other/index']) {
      expect((await send(port, 'POST', path, JSON_TYPE, '{}')).status, path).toBe(403);
    }
    expect((await send(port, 'GET', '/v2/models/simple/ready')).status).toBe(200);
  });

  it('is refused before the method check and before the body is read (connection closed)', async () => {
    const r = await send(port, 'GET', '/v2/repository/models/simple/unload');
    expect([r.status, r.text]).toEqual([403, JSON.stringify({ error: ADMIN })]);
    const big = await send(port, 'GET', '/v2/models/simple/config', {});
    expect(big.status).toBe(403);
    // a body the server need not read: the 403 closes the connection rather than draining it
    const [partial] = await exchange(
      port,
      Buffer.concat([Buffer.from('POST /v2/repository/models/simple/unload HTTP/1.1\r\nHost: x\r\nContent-Length: 90000\r\n\r\n'), Buffer.alloc(10, 0x20)]),
    );
    expect(partial!.head.split(' ')[1]).toBe('403');
    expect(partial!.head.toLowerCase()).toContain('connection: close');
  });

  it('cannot read a config or run a model, neither through Fastify nor through the /infer fast path', async () => {
    expect(JSON.parse((await send(port, 'GET', '/v2/models/simple/config')).text)).toEqual({ error: ADMIN });
    const claimed = fastPathCounters.claimed;
    for (const path of ['/v2/models/simple/infer', '/v2/models/simple/versions/1/infer', '/v2/models/simple/infer?x=1']) {
      const r = await send(port, 'POST', path, JSON_TYPE, simpleJson());
      expect([r.status, r.text], path).toEqual([403, JSON.stringify({ error: INFER })]);
    }
    expect(fastPathCounters.claimed).toBe(claimed);
    for (const path of ['/v2/models/simple/generate', '/v2/models/simple/generate_stream'])
      expect((await send(port, 'POST', path, JSON_TYPE, '{}')).status, path).toBe(403);
    expect((await send(port, 'GET', '/v2/models/simple/infer')).status).toBe(403);
  });

  it('on the native data path (the default): only requests holding the header are served natively, the rest get the 403', async () => {
    const dataPath = server.dataPath!;
    await until(() => dataPath.routes.includes('simple'), { what: "simple's native route" });
    const served = dataPath.counters().served;
    for (const headers of [{}, { 'infer-key': 'abd' }, { 'infer-key': 'ab' }, { 'infer-key': 'abcd' }] as Record<string, string>[]) {
      const r = await send(port, 'POST', '/v2/models/simple/infer', { ...JSON_TYPE, ...headers }, simpleJson());
      expect([r.status, r.text], JSON.stringify(headers)).toEqual([403, JSON.stringify({ error: INFER })]);
    }
    expect(dataPath.counters().served).toBe(served);
    expect((await send(port, 'POST', '/v2/models/simple/infer', { ...JSON_TYPE, 'INFER-KEY': 'abc' }, simpleJson())).status).toBe(200);
    expect(dataPath.counters().served).toBe(served + 1);
  });

  it('with the header (any letter case of its name) the same requests are served; unrestricted groups need none', async () => {
    expect((await send(port, 'POST', '/v2/models/simple/infer', { ...JSON_TYPE, 'Infer-Key': 'abc' }, simpleJson())).status).toBe(200);
    expect((await send(port, 'GET', '/v2/models/simple/config', { 'ADMIN-KEY': 's3cret' })).status).toBe(200);
    expect((await send(port, 'GET', '/v2/models/simple')).status).toBe(200);
    expect((await send(port, 'GET', '/v2/health/ready')).status).toBe(200);
    expect((await send(port, 'GET', '/v2/models/stats')).status).toBe(200);
    // a wrong method with the header is 405 again, and a path no route has stays 404
    expect((await send(port, 'GET', '/v2/repository/models/simple/unload', { 'admin-key': 's3cret' })).status).toBe(405);
    expect((await send(port, 'GET', '/v2/models/simple/versions/x/config')).status).toBe(404);
    expect((await send(port, 'POST', '/v2/repository/models/repeat/unload', { ...JSON_TYPE, 'admin-key': 's3cret' }, '{}')).status).toBe(200);
  });
});

describe('--http-restricted-api with front-end threads and tenants', () => {
  const TOKEN = 'acme-token-0123456789abcdefghijklmn';
  let dir: string;
  let server: RunningServer;
  let port: number;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warden-restricted-'));
    writeTenantsFile(join(dir, 'tenants.json'), [{ id: 'acme', token: TOKEN, shared_models: ['simple'] }]);
    server = await startFromCli([
      '--http-restricted-api=inference,health:infer-key=abc',
      '--http-threads=1',
      '--http-main-listener=false',
      `--tenants=${join(dir, 'tenants.json')}`,
    ]);
    port = portOf(server);
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a tenant with its token but without the header cannot infer (the thread does not claim it)', async () => {
    const auth = { ...JSON_TYPE, Authorization: `Bearer ${TOKEN}` };
    const r = await send(port, 'POST', '/v2/models/simple/infer', auth, simpleJson());
    expect([r.status, r.text]).toEqual([403, JSON.stringify({ error: INFER })]);
    expect((await send(port, 'POST', '/v2/models/simple/infer', { ...auth, 'infer-key': 'nope' }, simpleJson())).status).toBe(403);
    expect((await send(port, 'POST', '/v2/models/simple/infer', { ...auth, 'infer-key': 'abc' }, simpleJson())).status).toBe(200);
  });

  it('the header does not replace the token (401), and health probes need the header, not a token', async () => {
    expect((await send(port, 'POST', '/v2/models/simple/infer', { ...JSON_TYPE, 'infer-key': 'abc' }, simpleJson())).status).toBe(401);
    const ready = await send(port, 'GET', '/v2/health/ready');
    expect([ready.status, ready.text]).toEqual([403, JSON.stringify({ error: INFER })]);
    expect((await send(port, 'GET', '/v2/health/live', { 'infer-key': 'abc' })).status).toBe(200);
  });
});
