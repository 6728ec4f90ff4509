/**
 * JWT bearer tokens against a local JWKS file: a token with the right issuer, audience and tenant
 * claim authenticates as that tenant (role from the tenants file); expired, wrong audience or
 * issuer, wrong key, unknown tenant and `alg: none` are refused.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, UnsecuredJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JwtVerifier, looksLikeJwt } from '../../host/src/tenancy/jwt.js';
import { TenantRegistry } from '../../host/src/tenancy/registry.js';
import { generateToken, hashToken } from '../../host/src/tenancy/token.js';
import { until } from '../helpers/wait.js';
import { jwtSigner, signingKey } from '../helpers/jwt.js';

/** The public half of an extractable private key, as a JWK-exportable key. */
async function exportable(priv: CryptoKey): Promise<CryptoKey> {
  const { d: _d, ...pub } = await exportJWK(priv);
  return (await importJWK(pub, 'ES256')) as CryptoKey;
}

const ISSUER = 'https://idp.example';
const AUDIENCE = 'warden';

describe('JWT authentication', () => {
  let dir: string;
  let jwksFile: string;
  let privateKey: CryptoKey;
  let otherKey: CryptoKey;
  let otherPublic: CryptoKey;
  let registry: TenantRegistry;
  const opaque = generateToken();

  const sign = jwtSigner({ kid: 'k1', issuer: ISSUER, audience: AUDIENCE, key: () => privateKey });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warden-jwt-'));
    const { privateKey: key, jwk } = await signingKey('k1');
    privateKey = key;
    ({ privateKey: otherKey, publicKey: otherPublic } = await generateKeyPair('ES256'));
    jwksFile = join(dir, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
    const tenantsFile = join(dir, 'tenants.yaml');
    writeFileSync(
      tenantsFile,
      `tenants:\n  - id: acme\n    role: tenant\n  - id: ops\n    role: admin\n  - id: beta\n    role: tenant\n    tokens: [${hashToken(opaque)}]\n`,
    );
    registry = await TenantRegistry.open(tenantsFile, {
      watch: false,
      jwt: { jwksFile, issuer: ISSUER, audience: AUDIENCE, tenantClaim: 'tenant' },
    });
  });
  afterAll(() => {
    registry.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('accepts a valid token and takes the role from the tenants file', async () => {
    const r = await registry.authenticate(`Bearer ${await sign({ tenant: 'acme' })}`);
    expect(r).toMatchObject({ ok: true, via: 'jwt', tenant: { id: 'acme' }, principal: { namespace: 'acme', role: 'tenant' } });
    const admin = await registry.authenticate(`Bearer ${await sign({ tenant: 'ops' })}`);
    expect(admin).toMatchObject({ ok: true, principal: { namespace: '', role: 'admin' } });
    // Opaque tokens still work beside JWTs.
    expect(await registry.authenticate(`Bearer ${opaque}`)).toMatchObject({ ok: true, via: 'token', tenant: { id: 'beta' } });
  });

  it('refuses expired, wrong-audience, wrong-issuer and wrongly signed tokens', async () => {
    const cases: [string, string][] = [
      [await sign({ tenant: 'acme' }, { exp: Math.floor(Date.now() / 1000) - 3600 }), 'jwt expired'],
      [await sign({ tenant: 'acme' }, { aud: 'other-service' }), "jwt claim 'aud' check failed"],
      [await sign({ tenant: 'acme' }, { iss: 'https://evil.example' }), "jwt claim 'iss' check failed"],
      [await sign({ tenant: 'acme' }, { key: otherKey }), 'jwt signature invalid'],
    ];
    for (const [jwt, detail] of cases) {
      expect(await registry.authenticate(`Bearer ${jwt}`)).toEqual({ ok: false, reason: 'unknown', detail });
    }
  });

  it('refuses a tenant the tenants file does not list, a missing claim, no exp, and alg none', async () => {
    expect(await registry.authenticate(`Bearer ${await sign({ tenant: 'mallory' })}`)).toEqual({
      ok: false,
      reason: 'unknown',
      detail: 'jwt names a tenant the tenants file does not list',
    });
    expect(await registry.authenticate(`Bearer ${await sign({ sub: 'acme' })}`)).toEqual({
      ok: false,
      reason: 'unknown',
      detail: "jwt has no string 'tenant' claim",
    });
    const noExp = await new SignJWT({ tenant: 'acme' }).setProtectedHeader({ alg: 'ES256' }).setIssuer(ISSUER).setAudience(AUDIENCE).sign(privateKey);
    expect(await registry.authenticate(`Bearer ${noExp}`)).toMatchObject({ ok: false, reason: 'unknown' });
    // `alg: none` has an empty signature segment: not even JWT-shaped, so unknown without verification.
    const none = new UnsecuredJWT({ tenant: 'acme' }).setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime('5m').encode();
    expect((await registry.authenticate(`Bearer ${none}`)).ok).toBe(false);
    expect(await registry.authenticate('Bearer aaa.bbb.ccc')).toMatchObject({ ok: false, reason: 'malformed', detail: 'not a valid jwt' });
  });

  it('validates the settings and the key set', async () => {
    await expect(JwtVerifier.create({ jwksFile, issuer: ISSUER, audience: '' })).rejects.toThrow(/--jwt-audience is required/);
    await expect(JwtVerifier.create({ jwksFile, issuer: [], audience: AUDIENCE })).rejects.toThrow(/--jwt-issuer is required/);
    await expect(JwtVerifier.create({ issuer: ISSUER, audience: AUDIENCE })).rejects.toThrow(/exactly one of/);
    await expect(JwtVerifier.create({ jwksUrl: 'ftp://x', issuer: ISSUER, audience: AUDIENCE })).rejects.toThrow(/http\(s\) URL/);
    const priv = join(dir, 'private.json');
    writeFileSync(priv, JSON.stringify({ keys: [await exportJWK(privateKey)] }));
    await expect(JwtVerifier.create({ jwksFile: priv, issuer: ISSUER, audience: AUDIENCE })).rejects.toThrow(/private or symmetric/);
    writeFileSync(priv, '{"keys": []}');
    await expect(JwtVerifier.create({ jwksFile: priv, issuer: ISSUER, audience: AUDIENCE })).rejects.toThrow(/at least one key/);
    // A URL key set is created lazily (nothing is fetched here).
    const remote = await JwtVerifier.create({ jwksUrl: 'https://idp.example/jwks.json', issuer: ISSUER, audience: AUDIENCE });
    remote.close();
  });

  it('reloads a rotated JWKS file', async () => {
    const tenantsFile = join(dir, 'tenants.yaml');
    const file = join(dir, 'rotating.json');
    writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(await exportable(privateKey))), kid: 'k1' }] }));
    const r2 = await TenantRegistry.open(tenantsFile, {
      debounceMs: 10,
      pollIntervalMs: 50,
      jwt: { jwksFile: file, issuer: ISSUER, audience: AUDIENCE, tenantClaim: 'tenant' },
    });
    try {
      const rotated = await sign({ tenant: 'acme' }, { key: otherKey });
      expect((await r2.authenticate(`Bearer ${rotated}`)).ok).toBe(false);
      writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(otherPublic)), kid: 'k1' }] }));
      await until(async () => (await r2.authenticate(`Bearer ${rotated}`)).ok, { within: 5000, what: 'the rotated key picked up' });
      expect((await r2.authenticate(`Bearer ${await sign({ tenant: 'acme' })}`)).ok).toBe(false);
    } finally {
      r2.close();
    }
  });

  it('tells JWT-shaped tokens from opaque ones', () => {
    expect(looksLikeJwt(generateToken())).toBe(false);
    expect(looksLikeJwt('a.b.c')).toBe(true);
    expect(looksLikeJwt('a.b.')).toBe(false);
  });
});
