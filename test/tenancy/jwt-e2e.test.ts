/**
 * JWT bearer tokens end to end (docs/tenancy.md "Identity"; host/src/tenancy/jwt.ts): the server
 * is started with `--jwt-jwks-url` pointing at a JWKS this test serves over HTTP (node:http), and
 * requests carry JWTs signed with `jose`. A valid token authenticates as the tenant its `sub`
 * names, with that tenant's role and shared models, over HTTP (Fastify routes and the `/infer`
 * fast path) and gRPC; an administrator's JWT may scrape the metrics. Wrong issuer, wrong
 * audience, `alg: none`, expired, signed by a key outside the JWKS, or naming a tenant the tenants
 * file does not list: 401 / UNAUTHENTICATED, and the request does nothing.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { status } from '@grpc/grpc-js';
import { generateKeyPair, UnsecuredJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { hashToken } from '../../host/src/tenancy/token.js';
import { simpleInfer, tritonGrpcClient, unaryCall, int32s, type TritonGrpcClient } from '../helpers/grpc.js';
import { fetchJson, simpleRequest, tempRepo, type TempRepo } from '../helpers/repo.js';
import { jwtSigner, signingKey, type JwtOverrides } from '../helpers/jwt.js';

const ISSUER = 'https://idp.test.example';
const AUDIENCE = 'warden-e2e';

let jwks: Server;
let jwksFetches = 0;
let privateKey: CryptoKey;
let strangerKey: CryptoKey;
let repo: TempRepo;
let dir: string;
let server: RunningServer;
let client: TritonGrpcClient;

const signer = jwtSigner({ kid: 'e2e-1', issuer: ISSUER, audience: AUDIENCE, key: () => privateKey });
/** A JWT whose `sub` is `sub`. */
const sign = (sub: string, overrides?: JwtOverrides) => signer({ sub }, overrides);

beforeAll(async () => {
  const { privateKey: key, jwk: publicJwk } = await signingKey('e2e-1');
  privateKey = key;
  strangerKey = (await generateKeyPair('ES256')).privateKey;
  jwks = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') return void res.writeHead(404).end();
    jwksFetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;

  repo = tempRepo(['simple']);
  dir = mkdtempSync(join(tmpdir(), 'warden-jwt-e2e-'));
  writeFileSync(
    join(dir, 'tenants.json'),
    JSON.stringify({
      tenants: [
        // no tokens of its own: acme authenticates with JWTs only
        { id: 'acme', role: 'tenant', tokens: [], shared_models: ['simple'] },
        { id: 'bob', role: 'tenant', tokens: [hashToken('bob-opaque-token-0123456789abcdefghij')] },
        { id: 'ops', role: 'admin', tokens: [] },
      ],
    }),
  );
  server = await startTestServer(repo, {
    loadModels: ['simple'],
    grpcPort: 0,
    metricsPort: 0,
    allowCpuMetrics: false,
    tenantsFile: join(dir, 'tenants.json'),
    uploadDirectory: join(dir, 'uploads'),
    jwt: { jwksUrl, issuer: ISSUER, audience: AUDIENCE },
  });
  client = tritonGrpcClient(server.grpcUrl!);
});

afterAll(async () => {
  client?.close();
  await server?.stop();
  await new Promise((r) => jwks?.close(r));
  repo?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array(16).fill(2);
const inferSimple = (token: string) =>
  fetchJson(`${server.httpUrl}/v2/models/simple/infer`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(simpleRequest('INT32', A, B)),
  });
const metadata = (token: string) => fetchJson(`${server.httpUrl}/v2/models/simple`, { headers: { authorization: `Bearer ${token}` } });

describe('a valid JWT', () => {
  it("authenticates as the tenant its sub names, with that tenant's shared models (HTTP: fast path and Fastify)", async () => {
    const token = await sign('acme');
    const r = await inferSimple(token);
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual(A.map((x) => x + 2));
    expect((await metadata(token)).json.name).toBe('simple');
    expect(jwksFetches).toBeGreaterThanOrEqual(1);
    // bob's JWT is valid too, but `simple` is not shared with bob: it does not exist for him
    const bob = await inferSimple(await sign('bob'));
    expect(bob.status).toBe(404);
    expect(bob.json.error).toBe("Request for unknown model: 'simple' is not found");
  });

  it('over gRPC, unary and with the tenant role applied', async () => {
    const r = await unaryCall(client, 'ModelInfer', simpleInfer(A, B), await sign('acme'));
    expect(r.err, r.err?.details).toBeUndefined();
    expect(int32s(r.res.raw_output_contents[0])).toEqual(A.map((x) => x + 2));
    const log = await unaryCall(client, 'LogSettings', {}, await sign('acme'));
    expect(log.err?.code).toBe(status.PERMISSION_DENIED);
  });

  it("an administrator's JWT scrapes the metrics; a tenant's JWT may not", async () => {
    const scrape = async (token: string) => (await fetch(`${server.metricsUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status;
    expect(await scrape(await sign('ops'))).toBe(200);
    expect(await scrape(await sign('acme'))).toBe(403);
  });
});

describe('refused JWTs: 401 over HTTP, UNAUTHENTICATED over gRPC', () => {
  const cases: [string, () => Promise<string>][] = [
    ['wrong issuer', () => sign('acme', { iss: 'https://evil.example' })],
    ['wrong audience', () => sign('acme', { aud: 'another-service' })],
    ['alg none', async () => new UnsecuredJWT({}).setSubject('acme').setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('5m').encode()],
    ['expired (beyond the 30 s leeway)', () => sign('acme', { exp: Math.floor(Date.now() / 1000) - 600 })],
    ['signed by a key outside the JWKS', () => sign('acme', { key: strangerKey })],
    ['naming a tenant the tenants file does not list', () => sign('mallory')],
    [
      'a valid signature over a tampered payload',
      async () => {
        const [h, , s] = (await sign('bob')).split('.');
        const forged = Buffer.from(JSON.stringify({ sub: 'acme', iss: ISSUER, aud: AUDIENCE, exp: Math.floor(Date.now() / 1000) + 300 })).toString('base64url');
        return `${h}.${forged}.${s}`;
      },
    ],
  ];

  it.each(cases)('%s', async (_what, make) => {
    const token = await make();
    const infer = await inferSimple(token);
    expect(infer.status).toBe(401);
    expect(infer.headers.get('www-authenticate')).toMatch(/^Bearer realm="warden"/);
    expect(infer.text).not.toContain('outputs');
    expect((await metadata(token)).status).toBe(401);
    const grpc = await unaryCall(client, 'ModelInfer', simpleInfer(A, B), token);
    expect(grpc.err?.code).toBe(status.UNAUTHENTICATED);
    expect((await fetch(`${server.metricsUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
  });
});
