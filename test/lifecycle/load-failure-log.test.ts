/**
 * A failed load logs its reason at the error level (shown at the default level) on every path
 * that loads: start-up, a repository poll, the load API (operator), and a tenant's upload refused
 * before the lifecycle (upload quota) or by the upload source (instance quota).
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { fetchAs, tempRepo, type TempRepo } from '../helpers/repo.js';
import { startTenantServer, startTestServer, testTokens, type TenantServer } from '../helpers/servers.js';

const BROKEN =
  'backend: "no_such_backend"\nmax_batch_size: 0\ninput [ { name: "I" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "O" data_type: TYPE_INT32 dims: [ 1 ] } ]\n';

/** A logger at pino's default level (info) whose records are kept, parsed. */
function capture(): { logger: pino.Logger; records: Record<string, any>[] } {
  const records: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) records.push(JSON.parse(line));
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, sink), records };
}

/** The error-level records about `model`. */
const errorsAbout = (records: Record<string, any>[], model: string) => records.filter((r) => r.level === 50 && r.model === model);

describe('start-up and poll (poll mode)', () => {
  let repo: TempRepo;
  let server: RunningServer;
  const log = capture();
  beforeAll(async () => {
    repo = tempRepo(['simple']);
    repo.addModel('broken_at_start', BROKEN);
    server = await startTestServer(repo, { modelControlMode: 'poll', repositoryPollSecs: 3600, exitOnError: false, logger: log.logger });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it('a model failing at start-up: its reason at the error level', () => {
    const lines = errorsAbout(log.records, 'broken_at_start');
    expect(lines.length).toBeGreaterThan(0);
    expect(lines[0]!.reason).toMatch(/no_such_backend/);
    expect(lines[0]!.msg).toMatch(/^failed to load 'broken_at_start'.*no_such_backend/);
  });

  it('a model failing on a poll: its reason at the error level', async () => {
    repo.addModel('broken_on_poll', BROKEN);
    await server.manager.poll();
    const lines = errorsAbout(log.records, 'broken_on_poll');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toMatch(/^failed to load 'broken_on_poll'.*no_such_backend/);
  });
});

describe('the load API (explicit mode, multi-tenant)', () => {
  const TOKENS = testTokens('acme', 'ops');
  let repo: TempRepo;
  let tenancy: TenantServer;
  const log = capture();
  beforeAll(async () => {
    repo = tempRepo(['simple']);
    repo.addModel('broken', BROKEN);
    tenancy = await startTenantServer(
      repo,
      [
        { id: 'acme', token: TOKENS.acme, quotas: { max_instances_per_model: 1, max_upload_bytes: 1000 } },
        { id: 'ops', token: TOKENS.ops, role: 'admin' },
      ],
      { logger: log.logger },
    );
  });
  afterAll(async () => {
    await tenancy?.stop();
    repo?.cleanup();
  });
  const load = (who: keyof typeof TOKENS, model: string, body: unknown = {}) =>
    fetchAs(TOKENS[who], 'POST', `${tenancy.server.httpUrl}/v2/repository/models/${model}/load`, body);
  const config = (instances: number) =>
    JSON.stringify({
      backend: 'wasm',
      instance_group: [{ kind: 'KIND_CPU', count: instances }],
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    });

  it("an operator's explicit load that fails: its reason at the error level", async () => {
    const r = await load('ops', 'broken');
    expect(r.status).toBe(400);
    const lines = errorsAbout(log.records, 'broken');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toMatch(/^failed to load 'broken'.*no_such_backend/);
  });

  it("a tenant's upload over its upload quota (refused before the lifecycle): its reason at the error level", async () => {
    const r = await load('acme', 'too_big', { parameters: { config: config(1), 'file:1/model.wasm': Buffer.alloc(2000).toString('base64') } });
    expect(r.status).toBe(403);
    const lines = errorsAbout(log.records, 'too_big');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.namespace).toBe('acme');
    expect(lines[0]!.reason).toMatch(/max_upload_bytes/);
    expect(lines[0]!.msg).toMatch(/^failed to load 'too_big': .*max_upload_bytes/);
  });

  it("a tenant's upload refused by the upload source (instance quota): its reason at the error level", async () => {
    const r = await load('acme', 'too_wide', { parameters: { config: config(2), 'file:1/model.wasm': Buffer.alloc(10).toString('base64') } });
    expect(r.status).toBe(403);
    const lines = errorsAbout(log.records, 'too_wide');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.namespace).toBe('acme');
    expect(lines[0]!.msg).toMatch(/^failed to load 'too_wide': .*max_instances_per_model/);
  });
});
