/**
 * A tenant's uploads are rate-limited in bytes (`upload_bytes_per_minute`, tenancy/request-rate.ts;
 * DESIGN "Multi-tenancy": one tenant's uploads must not keep the server parsing, hashing and
 * writing): over HTTP a load request is charged its Content-Length before its body is read, over
 * gRPC its file overrides; past the quota 429 / RESOURCE_EXHAUSTED with the time to wait, a single
 * request larger than the whole quota 403; the operator is not limited; HTTP and gRPC share the
 * count.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { unaryCall } from '../helpers/grpc.js';
import { PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';

const TOKENS = testTokens('acme', 'grpc', 'ops');
type Who = keyof typeof TOKENS;
const QUOTA = 250_000;

let wasm: Buffer;

const suite = tenantServerPerSuite(async () => {
  await ensureBuilt();
  wasm = readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm'));
  const repo = tempRepo([]);
  const entry = (id: Who, role: 'tenant' | 'admin' = 'tenant') => ({ id, role, token: TOKENS[id], quotas: { upload_bytes_per_minute: QUOTA } });
  const tenants = [entry('acme'), entry('grpc'), entry('ops', 'admin')];
  return { repo, tenants, opts: { grpcPort: 0, separateUploads: true, logger: pino({ level: 'silent' }) } };
}, 120_000);

const CONFIG = JSON.stringify({
  backend: 'wasm',
  max_batch_size: 0,
  input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
});

/** A load request of about `padding` bytes more than the component. */
function loadBody(padding: number): string {
  return JSON.stringify({
    parameters: { config: CONFIG, 'file:1/model.wasm': wasm.toString('base64'), 'file:1/pad.bin': Buffer.alloc(padding).toString('base64') },
  });
}
async function load(who: Who, name: string, body: string) {
  const res = await fetch(`${suite.server.httpUrl}/v2/repository/models/${name}/load`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS[who]}`, 'content-type': 'application/json' },
    body,
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), json: (await res.json().catch(() => ({}))) as { error?: string } };
}

describe('upload_bytes_per_minute', () => {
  it('HTTP: charged by Content-Length; past the quota 429 with Retry-After, more than the quota at once 403; the operator is not limited', async () => {
    const body = loadBody(60_000); // ~ 80 kB of JSON + the component
    expect(body.length).toBeLessThan(QUOTA / 2);
    expect((await load('acme', 'a1', body)).status).toBe(200);
    expect((await load('acme', 'a2', body)).status).toBe(200);
    const limited = await load('acme', 'a3', body);
    expect(limited.status).toBe(429);
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
    expect(limited.json.error).toMatch(/tenant 'acme' exceeded its upload rate \(upload_bytes_per_minute 250000\)/);
    const huge = await load('acme', 'a4', loadBody(QUOTA));
    expect(huge.status).toBe(403);
    expect(huge.json.error).toMatch(/more than tenant 'acme' may upload per minute/);
    // the operator's uploads are not counted
    for (const n of ['o1', 'o2', 'o3']) expect((await load('ops', n, body)).status).toBe(200);
  });

  it('gRPC: charged by its file overrides, sharing the count with HTTP (RESOURCE_EXHAUSTED past it)', async () => {
    const params = { config: { string_param: CONFIG }, 'file:1/model.wasm': { bytes_param: wasm }, 'file:1/pad.bin': { bytes_param: Buffer.alloc(70_000) } };
    expect((await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'g1', parameters: params }, TOKENS.grpc)).err).toBeUndefined();
    expect((await load('grpc', 'g2', loadBody(60_000))).status).toBe(200);
    const r = await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'g3', parameters: params }, TOKENS.grpc);
    expect(r.err?.code).toBe(8); // RESOURCE_EXHAUSTED
    expect(r.err?.details).toMatch(/exceeded its upload rate/);
  });

  it('a refused load request closes its connection instead of reading the rest of its body', async () => {
    // acme is over its quota now: a 20 MB body is refused from its headers
    const res = await new Promise<{ status: number; connection: string | undefined; closed: boolean }>((resolve, reject) => {
      const req = httpRequest(`${suite.server.httpUrl}/v2/repository/models/big/load`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.acme}`, 'content-type': 'application/json', 'content-length': String(20 * 1024 * 1024) },
      });
      req.on('response', (r) => {
        r.resume();
        r.on('close', () => resolve({ status: r.statusCode ?? 0, connection: r.headers.connection, closed: true }));
      });
      req.on('error', reject);
      req.write(Buffer.alloc(64 * 1024, 0x20)); // a first slice only; the rest never comes
    });
    expect([403, 429]).toContain(res.status);
    expect(res.connection).toBe('close');
    expect(res.closed).toBe(true);
  });
});
