/**
 * The model's own log over HTTP (`GET /v2/models/{m}/log`; docs/tenant-guide.md "Your model's
 * log"), multi-tenant, on every sandbox engine: what a tenant's sandboxed guest logs is read back
 * by that tenant, escaped and bounded; another tenant asking for it gets exactly the answer of a
 * model that does not exist; an operator reads every tenant's model as `<tenant>/<model>`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_LOG_LIMITS } from '../../host/src/metrics/model-log.js';
import { fetchAs, PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ENGINES, ensureBuilt } from '../backends/wasm/helpers.js';

const TOKENS = testTokens('acme', 'bob', 'ops');
type Who = keyof typeof TOKENS;
const fixture = (name: string) => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', `${name}.wasm`)).toString('base64');
const CONFIG = JSON.stringify({
  backend: 'wasm',
  input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  // the guest's 20,000-byte line fits the per-call log budget, so it reaches the ring whole
  parameters: { log_limit_bytes: { string_value: '65536' } },
});
const FORGED = 'one\\nforged [ERROR] line\\r\\u001b[2J\\u0007 bidi\\u202e \\\\ end';

describe.each(ENGINES)('model log over HTTP (%s engine)', (engine) => {
  const suite = tenantServerPerSuite(async () => {
    await ensureBuilt();
    const tenants = [
      { id: 'acme', token: TOKENS.acme },
      { id: 'bob', token: TOKENS.bob },
      { id: 'ops', role: 'admin' as const, token: TOKENS.ops },
    ];
    return { repo: tempRepo([]), tenants, opts: { wasmEngine: engine, logger: pino({ level: 'silent' }) } };
  }, 120_000);
  const call = (who: Who, method: 'GET' | 'POST', path: string, body?: unknown) => fetchAs(TOKENS[who], method, `${suite.server.httpUrl}${path}`, body);
  const infer = (who: Who, model: string, id: string) =>
    call(who, 'POST', `/v2/models/${model}/infer`, { id, inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }] });

  beforeAll(async () => {
    const up = await call('acme', 'POST', '/v2/repository/models/chatty/load', { parameters: { config: CONFIG, 'file:1/model.wasm': fixture('log_lines') } });
    expect(up.status, up.text).toBe(200);
    const r = await infer('acme', 'chatty', 'first');
    expect(r.status, r.text).toBe(200);
  });

  it("the tenant reads its guest's lines, escaped and cut at the line bound", async () => {
    const r = await call('acme', 'GET', '/v2/models/chatty/log');
    expect(r.status, r.text).toBe(200);
    expect(r.json.model).toBe('chatty');
    const guest = r.json.lines.filter((l: { source: string }) => l.source === 'guest');
    expect(guest.slice(0, 2)).toMatchObject([
      { version: 1, level: 'info', source: 'guest', message: 'request first seen' },
      { version: 1, level: 'warn', source: 'guest', message: FORGED },
    ]);
    const huge = guest[2];
    expect(huge.level).toBe('error');
    expect(huge.message).toBe('y'.repeat(DEFAULT_MODEL_LOG_LIMITS.lineBytes));
    expect(huge.truncated_bytes).toBe(20_000 - DEFAULT_MODEL_LOG_LIMITS.lineBytes);
    // no raw control or bidi character anywhere in the answer's messages
    // eslint-disable-next-line no-control-regex
    for (const l of r.json.lines) expect(l.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(r.json.limits).toEqual(DEFAULT_MODEL_LOG_LIMITS);
  });

  it('since= returns only later lines; /versions/{v}/log one version; a bad since is 400', async () => {
    const before = await call('acme', 'GET', '/v2/models/chatty/log');
    expect((await infer('acme', 'chatty', 'second')).status).toBe(200);
    const after = await call('acme', 'GET', `/v2/models/chatty/versions/1/log?since=${before.json.next_seq - 1}`);
    expect(after.status, after.text).toBe(200);
    expect(after.json.lines.map((l: { message: string }) => l.message.slice(0, 20))).toEqual(['request second seen', FORGED.slice(0, 20), 'y'.repeat(20)]);
    expect((await call('acme', 'GET', '/v2/models/chatty/versions/2/log')).json.lines).toEqual([]);
    const bad = await call('acme', 'GET', '/v2/models/chatty/log?since=-1');
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/'since'/);
  });

  it("another tenant gets exactly the missing model's answer", async () => {
    const theirs = await call('bob', 'GET', '/v2/models/chatty/log');
    const missing = await call('bob', 'GET', '/v2/models/chatty/config');
    expect(theirs.status).toBe(404);
    expect(theirs.text).toBe(missing.text);
    expect(theirs.json.error).toBe("Request for unknown model: 'chatty' is not found");
    // nor through a qualified name
    const qualified = await call('bob', 'GET', `/v2/models/${encodeURIComponent('acme/chatty')}/log`);
    expect(qualified.status).toBe(404);
    expect(qualified.text).not.toContain('seen');
  });

  it("a tenant's model of the same name has its own log", async () => {
    const up = await call('bob', 'POST', '/v2/repository/models/chatty/load', { parameters: { config: CONFIG, 'file:1/model.wasm': fixture('identity') } });
    expect(up.status, up.text).toBe(200);
    expect((await infer('bob', 'chatty', 'bobs')).status).toBe(200);
    const r = await call('bob', 'GET', '/v2/models/chatty/log');
    expect(r.status, r.text).toBe(200);
    expect(JSON.stringify(r.json.lines)).not.toContain('seen');
  });

  it("an operator reads a tenant's model log as <tenant>/<model>", async () => {
    const r = await call('ops', 'GET', `/v2/models/${encodeURIComponent('acme/chatty')}/log`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.lines.some((l: { message: string }) => l.message === 'request first seen')).toBe(true);
  });
});
