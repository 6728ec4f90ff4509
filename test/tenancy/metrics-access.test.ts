/**
 * The metrics port in multi-tenant mode (DESIGN "Multi-tenancy"; docs/tenancy.md "Metrics"): it
 * lists every model's name and traffic, so it answers only an administrator's bearer token (what
 * Prometheus sends with `authorization: {type: Bearer, credentials_file: ...}`): no token or an
 * unknown one is 401, a tenant's token 403. Series carry no `tenant` label unless
 * `--metrics-tenant-labels=true`. `--metrics-auth=false` opens the port (an operator who keeps it
 * off the network, e.g. `--metrics-address 127.0.0.1`). Single-user mode is Triton's: open.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCli } from '../../host/src/cli-options.js';
import type { RunningServer, ServerOptions } from '../../host/src/server.js';
import { startTestServer, writeTenantsFile } from '../helpers/servers.js';
import { postJson, tempRepo, type TempRepo } from '../helpers/repo.js';

const TOKENS = { acme: 'acme-metrics-token-0123456789abcdefgh', ops: 'ops-metrics-token-0123456789abcdefghi' };
const SIMPLE = {
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(2) },
  ],
};

let repo: TempRepo;
let dir: string;
const servers: RunningServer[] = [];

beforeAll(() => {
  repo = tempRepo(['simple']);
  dir = mkdtempSync(join(tmpdir(), 'warden-metrics-access-'));
  writeTenantsFile(join(dir, 'tenants.json'), [
    { id: 'acme', token: TOKENS.acme, shared_models: ['simple'] },
    { id: 'ops', role: 'admin', token: TOKENS.ops },
  ]);
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  repo?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(opts: Partial<ServerOptions>): Promise<RunningServer> {
  const s = await startTestServer(repo, {
    modelControlMode: 'none',
    metricsPort: 0,
    httpAddress: '127.0.0.1',
    allowCpuMetrics: false,
    ...opts,
  });
  servers.push(s);
  // one request of acme's, so `simple` has traffic to show
  const auth: Record<string, string> = opts.tenantsFile ? { authorization: `Bearer ${TOKENS.acme}` } : {};
  expect((await postJson(`${s.httpUrl}/v2/models/simple/infer`, SIMPLE, auth)).status).toBe(200);
  return s;
}

const scrape = (s: RunningServer, token?: string) => fetch(`${s.metricsUrl}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

describe('multi-tenant mode, defaults', () => {
  let s: RunningServer;
  beforeAll(async () => {
    s = await serve({ tenantsFile: join(dir, 'tenants.json') });
  });

  it('no token or an unknown one: 401 with WWW-Authenticate, and no model name in the answer', async () => {
    for (const token of [undefined, 'not-a-known-token-0000000000000000']) {
      const r = await scrape(s, token);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="warden"');
      const text = await r.text();
      expect(text).not.toContain('simple');
      expect(text).not.toContain('nv_inference');
    }
    const basic = await fetch(`${s.metricsUrl}/metrics`, { headers: { authorization: 'Basic b3BzOm9wcw==' } });
    expect(basic.status).toBe(401);
  });

  it("a tenant's token: 403", async () => {
    const r = await scrape(s, TOKENS.acme);
    expect(r.status).toBe(403);
    expect(await r.text()).not.toContain('nv_inference');
  });

  it("an administrator's token: the metrics, without tenant labels", async () => {
    const r = await scrape(s, TOKENS.ops);
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toMatch(/^nv_inference_request_success\{model="simple",version="1"\} 1$/m);
    expect(text).not.toMatch(/tenant=/);
  });
});

describe('multi-tenant mode, flags', () => {
  it('--metrics-tenant-labels=true: per-model series carry the tenant label', async () => {
    const s = await serve({ tenantsFile: join(dir, 'tenants.json'), metricsTenantLabels: true });
    const text = await (await scrape(s, TOKENS.ops)).text();
    expect(text).toMatch(/^nv_inference_request_success\{model="simple",version="1",tenant=""\} 1$/m);
  });

  it('--metrics-auth=false: the port answers anyone (the operator keeps it off the network)', async () => {
    const s = await serve({ tenantsFile: join(dir, 'tenants.json'), metricsAuth: false });
    const r = await scrape(s);
    expect(r.status).toBe(200);
    expect(await r.text()).toMatch(/^nv_inference_request_success\{model="simple",version="1"\} 1$/m);
  });

  it('the CLI flags: defaults and both spellings', () => {
    const base = ['--model-repository', repo.path, '--tenants', join(dir, 'tenants.json')];
    const d = parseCli(base);
    expect(d.metricsAuth).toBe(true);
    expect(d.metricsTenantLabels).toBe(false);
    const set = parseCli([...base, '--metrics-auth=false', '--metrics-tenant-labels=true']);
    expect(set.metricsAuth).toBe(false);
    expect(set.metricsTenantLabels).toBe(true);
  });
});

describe('single-user mode', () => {
  it("the port is open, as Triton's", async () => {
    const s = await serve({});
    const r = await scrape(s);
    expect(r.status).toBe(200);
    expect(await r.text()).toMatch(/^nv_inference_request_success\{model="simple",version="1"\} 1$/m);
  });
});
