/**
 * Multi-tenant mode over real HTTP (DESIGN "Multi-tenancy"): bearer tokens,
 * namespaces (two tenants each with a model called `m`; another tenant's model answers exactly as
 * a model that does not exist), operator models shared per tenant, uploads of sandboxed models
 * only, quotas before anything is written, rate and in-flight limits, admin-only endpoints, audit
 * lines, readiness untouched by tenants.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { fetchAs, PROJECT_ROOT, tempRepo, type TempRepo } from '../helpers/repo.js';
import { startTenantServer, type TenantServer } from '../helpers/servers.js';
import { sleep } from '../helpers/wait.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';

const TOKENS = {
  acme: 'acme-token-0123456789abcdefghijkl',
  bob: 'bob-token-0123456789abcdefghijklmn',
  flood: 'flood-token-0123456789abcdefghijkl',
  ops: 'ops-token-0123456789abcdefghijklmn',
  slow: 'slow-token-0123456789abcdefghijklm',
};
const FIXTURE = (name: string) => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', `${name}.wasm`)).toString('base64');

let repo: TempRepo;
let tenancy: TenantServer;
let server: RunningServer;
let url: string;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  await ensureBuilt();
  repo = tempRepo(['simple']);
  const tenants = [
    { id: 'acme', token: TOKENS.acme, shared_models: ['simple'], quotas: { max_models: 3, max_instances_per_model: 2, max_upload_bytes: 200_000 } },
    { id: 'bob', token: TOKENS.bob },
    { id: 'flood', token: TOKENS.flood, quotas: { requests_per_second: 5, burst: 5 } },
    { id: 'slow', token: TOKENS.slow, quotas: { max_inflight: 1 } },
    { id: 'ops', role: 'admin' as const, token: TOKENS.ops },
  ];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
      cb();
    },
  });
  ({ server } = tenancy = await startTenantServer(repo, tenants, { loadModels: ['*'], metricsTenantLabels: true, logger: pino({ level: 'info' }, sink) }));
  url = server.httpUrl;
});
afterAll(async () => {
  await tenancy?.stop();
  repo?.cleanup();
});

type Who = keyof typeof TOKENS | 'nobody';
const call = (who: Who, method: 'GET' | 'POST', path: string, body?: unknown) =>
  fetchAs(who === 'nobody' ? undefined : TOKENS[who], method, `${url}${path}`, body);

const identityConfig = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    backend: 'wasm',
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    ...extra,
  });
const upload = (who: Who, model: string, config = identityConfig(), files: Record<string, string> = { 'file:1/model.wasm': FIXTURE('identity') }) =>
  call(who, 'POST', `/v2/repository/models/${model}/load`, { parameters: { config, ...files } });
const infer = (who: Who, model: string, data: number[]) =>
  call(who, 'POST', `/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [data.length], data }] });

describe('identity', () => {
  it('missing, malformed and unknown tokens: 401 with WWW-Authenticate; health probes need none', async () => {
    const none = await call('nobody', 'GET', '/v2/models/simple');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="warden"');
    const bad = await fetch(`${url}/v2/models/simple`, { headers: { authorization: 'Bearer not-a-known-token-at-all-000000' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    const malformed = await fetch(`${url}/v2/models/simple`, { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expect(malformed.status).toBe(401);
    expect((await fetch(`${url}/v2/health/ready`)).status).toBe(200);
    expect((await fetch(`${url}/v2/health/live`)).status).toBe(200);
    const audit = logLines.filter((l) => l.audit && l.event === 'auth_failure');
    expect(audit.length).toBeGreaterThanOrEqual(3);
    expect(JSON.stringify(logLines)).not.toContain('not-a-known-token');
    expect(JSON.stringify(logLines)).not.toContain(TOKENS.acme);
  });
});

describe('namespaces', () => {
  beforeAll(async () => {
    expect((await upload('acme', 'm')).status).toBe(200);
    expect((await upload('bob', 'm')).status).toBe(200);
    expect((await upload('acme', 'only_acme')).status).toBe(200);
  });

  it('two tenants each have their own model called m', async () => {
    expect((await infer('acme', 'm', [1, 2])).json.outputs[0].data).toEqual([1, 2]);
    expect((await infer('bob', 'm', [3])).json.outputs[0].data).toEqual([3]);
    const index = await call('acme', 'POST', '/v2/repository/index', {});
    expect(index.json.map((e: any) => e.name)).toEqual(['m', 'only_acme', 'simple']);
  });

  it("another tenant's model answers exactly as a model that does not exist", async () => {
    const probes: [string, 'GET' | 'POST', string, unknown?][] = [
      ['metadata', 'GET', ''],
      ['ready', 'GET', '/ready'],
      ['config', 'GET', '/config'],
      ['stats', 'GET', '/stats'],
      ['infer', 'POST', '/infer', { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [1] }] }],
    ];
    for (const [what, method, suffix, body] of probes) {
      const theirs = await call('bob', method, `/v2/models/only_acme${suffix}`, body);
      const absent = await call('bob', method, `/v2/models/no_such_model${suffix}`, body);
      expect(theirs.status, what).toBe(absent.status);
      expect(theirs.status, what).toBeGreaterThanOrEqual(400);
      expect(theirs.text.replaceAll('only_acme', 'X'), what).toBe(absent.text.replaceAll('no_such_model', 'X'));
    }
    // Bob cannot unload or replace it: his unload is of his own (absent) model; acme's still serves.
    expect((await call('bob', 'POST', '/v2/repository/models/only_acme/unload', {})).status).toBe(200);
    expect((await infer('acme', 'only_acme', [7])).status).toBe(200);
    const stats = await call('bob', 'GET', '/v2/models/stats');
    expect(stats.json.model_stats.map((s: any) => s.name)).toEqual(['m']);
  });

  it('operator models are visible only to the tenants they are shared with', async () => {
    const body = {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(2) },
      ],
    };
    expect((await call('acme', 'POST', '/v2/models/simple/infer', body)).status).toBe(200);
    const bob = await call('bob', 'POST', '/v2/models/simple/infer', body);
    expect(bob.status).toBe(404);
    expect(bob.json.error).toBe("Request for unknown model: 'simple' is not found");
  });

  it('the admin sees every namespace and addresses tenant models as <tenant>/<model>', async () => {
    const stats = await call('ops', 'GET', '/v2/models/stats');
    const names = stats.json.model_stats.map((s: any) => `${s.tenant}/${s.name}`).sort();
    expect(names).toEqual(['/simple', 'acme/m', 'acme/only_acme', 'bob/m']);
    expect(
      (await call('ops', 'POST', `/v2/models/${encodeURIComponent('acme/m')}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [9] }] }))
        .json.outputs[0].data,
    ).toEqual([9]);
    expect((await call('ops', 'GET', '/v2/logging')).status).toBe(200);
    const tenantLogging = await call('acme', 'GET', '/v2/logging');
    expect(tenantLogging.status).toBe(403);
    expect((await call('acme', 'POST', '/v2/logging', { log_verbose_level: 1 })).status).toBe(403);
  });
});

describe('metrics', () => {
  it("with --metrics-tenant-labels, per-model series carry a tenant label, so both tenants' `m` are separate series", async () => {
    const res = await fetch(`${server.metricsUrl ?? ''}/metrics`).catch(() => undefined);
    const text = res ? await res.text() : await server.metrics.render();
    expect(text).toMatch(/nv_inference_request_success\{model="m",version="1",tenant="acme"\} [1-9]/);
    expect(text).toMatch(/nv_inference_request_success\{model="m",version="1",tenant="bob"\} [1-9]/);
    expect(text).toMatch(/nv_inference_request_success\{model="simple",version="1",tenant=""\}/);
  });
});

describe('uploads and quotas', () => {
  it('tenants may upload sandboxed models only (ONNX needs allow_onnx)', async () => {
    const onnx = readFileSync(join(PROJECT_ROOT, 'third_party', 'triton-examples', 'addsub_onnx', '1', 'model.onnx')).toString('base64');
    const io = (n: string) => ({ name: n, data_type: 'TYPE_FP32', dims: [16] });
    const cfg = JSON.stringify({ platform: 'onnxruntime_onnx', input: [io('INPUT0'), io('INPUT1')], output: [io('OUTPUT0'), io('OUTPUT1')] });
    const r = await upload('bob', 'onnx', cfg, { 'file:1/model.onnx': onnx });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/cannot be loaded from uploaded files \(allowed: wasm\)/);
    const native = await upload('bob', 'native', JSON.stringify({ backend: 'identity', input: [], output: [] }), { 'file:1/libtriton_identity.so': 'AAAA' });
    expect(native.status).toBe(400);
  });

  it('quotas are checked before anything is loaded: models, instances, upload bytes', async () => {
    const tooMany = await upload('acme', 'third'); // acme has m and only_acme; max_models 3 allows one more
    expect(tooMany.status).toBe(200);
    const fourth = await upload('acme', 'fourth');
    expect(fourth.status).toBe(403);
    expect(fourth.json.error).toMatch(/max_models/);
    await call('acme', 'POST', '/v2/repository/models/third/unload', {});
    const instances = await upload('acme', 'wide', identityConfig({ instance_group: [{ kind: 'KIND_CPU', count: 3 }] }));
    expect(instances.status).toBe(403);
    expect(instances.json.error, instances.text).toMatch(/max_instances_per_model/);
    const big = await upload('acme', 'big', identityConfig(), {
      'file:1/model.wasm': FIXTURE('identity'),
      'file:1/padding.bin': Buffer.alloc(300_000).toString('base64'),
    });
    expect(big.status).toBe(403);
    expect(big.json.error).toMatch(/max_upload_bytes/);
  });

  it("a tenant's sandbox limits are written into its model's config", async () => {
    const cfg = await call('acme', 'GET', '/v2/models/m/config');
    expect(cfg.json.parameters.memory_limit_bytes.string_value).toBe(String(256 * 1024 * 1024));
    expect(cfg.json.parameters.execute_timeout_ms.string_value).toBe('10000');
  });

  it('every load is audited with the sha256 of each file', async () => {
    const loads = logLines.filter((l) => l.audit && l.event === 'load' && l.tenant === 'acme' && l.model === 'm');
    expect(loads.length).toBeGreaterThan(0);
    const files = loads[0]!.files as { path: string; sha256: string; bytes: number }[];
    expect(files[0]!.path).toBe('1/model.wasm');
    expect(files[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a tenant deletes a model it uploaded (unload with delete_files); the deletion is audited', async () => {
    expect((await upload('bob', 'doomed')).status).toBe(200);
    const r = await call('bob', 'POST', '/v2/repository/models/doomed/unload', { parameters: { delete_files: true } });
    expect(r.status).toBe(200);
    // Gone for good: a load without files finds nothing stored.
    await sleep(200);
    const again = await call('bob', 'POST', '/v2/repository/models/doomed/load', {});
    expect([again.status, again.json]).toEqual([500, { error: "failed to load 'doomed', failed to poll from model repository" }]); // tritonserver's answer
    expect(logLines.some((l) => l.audit && l.event === 'delete' && l.tenant === 'bob' && l.model === 'doomed' && l.outcome === 'ok')).toBe(true);
  });

  it("a tenant's failed upload never affects readiness", async () => {
    expect((await upload('bob', 'broken', identityConfig(), { 'file:1/model.wasm': Buffer.from('garbage').toString('base64') })).status).toBe(400);
    expect((await fetch(`${url}/v2/health/ready`)).status).toBe(200);
  });
});

describe('rate and concurrency limits', () => {
  it('a tenant over its request rate gets 429 with Retry-After; others are unaffected', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => call('flood', 'GET', '/v2/models/m')));
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited[0]!.json.error).toMatch(/exceeded its request rate/);
    expect((await call('acme', 'GET', '/v2/models/m')).status).toBe(200);
  });

  it('requests beyond max_inflight are refused with 429', async () => {
    expect(
      (
        await upload('slow', 'spin', identityConfig({ parameters: { execute_timeout_ms: { string_value: '1500' } } }), {
          'file:1/model.wasm': FIXTURE('loop_execute'),
        })
      ).status,
    ).toBe(200);
    const first = infer('slow', 'spin', [1]);
    await sleep(200);
    const second = await infer('slow', 'spin', [1]);
    expect(second.status).toBe(429);
    expect(second.json.error).toMatch(/max_inflight/);
    expect((await first).status).toBeGreaterThanOrEqual(400); // the spinning execute hits its deadline
    // The slot is free again after the first one finished.
    const third = infer('slow', 'spin', [1]);
    expect((await third).status).not.toBe(429);
  });
});
