/**
 * Authentication against the tenants file: header parsing, token → principal, the constant-time
 * comparison, and hot reload (a good edit takes effect within a bounded wait; a broken one keeps
 * the previous tenants and logs no secret).
 */
import { mkdtempSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseTenantsText } from '../../host/src/tenancy/parse.js';
import { TenantRegistry, type AuthResult } from '../../host/src/tenancy/registry.js';
import { generateToken, hashesEqual, hashToken, parseBearer, tokenDigest } from '../../host/src/tenancy/token.js';
import { TenancyConfigError } from '../../host/src/tenancy/format.js';
import { sleep, until } from '../helpers/wait.js';

const tokA = generateToken();
const tokB = generateToken();
const tokOps = generateToken();

function fileText(tenants: { id: string; role: string; tokens: string[] }[]): string {
  return JSON.stringify({ tenants });
}
const base = [
  { id: 'acme', role: 'tenant', tokens: [hashToken(tokA)] },
  { id: 'beta', role: 'tenant', tokens: [hashToken(tokB)] },
  { id: 'ops', role: 'admin', tokens: [hashToken(tokOps)] },
];

function okTenant(r: AuthResult): string {
  if (!r.ok) throw new Error(`not authenticated: ${r.reason}`);
  return r.tenant.id;
}

describe('token helpers', () => {
  it('generates 32-byte base64url tokens and hashes them as sha256:<hex>', () => {
    const t = generateToken();
    expect(t).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(t, 'base64url')).toHaveLength(32);
    expect(generateToken()).not.toBe(t);
    expect(hashToken('abc')).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('parses Bearer headers', () => {
    expect(parseBearer(undefined)).toEqual({ kind: 'missing' });
    expect(parseBearer('  ')).toEqual({ kind: 'missing' });
    expect(parseBearer('Bearer abc')).toEqual({ kind: 'token', token: 'abc' });
    expect(parseBearer('bEaReR   abc== ')).toEqual({ kind: 'token', token: 'abc==' });
    for (const bad of ['Bearer', 'Bearer ', 'Basic abc', 'abc', 'Bearer a b', 'Bearer a=b', 'Bearer ab\u00e9', `Bearer ${'a'.repeat(8193)}`]) {
      expect(parseBearer(bad), bad).toEqual({ kind: 'malformed' });
    }
  });

  it('compares digests with timingSafeEqual: an equal-length wrong hash is rejected', () => {
    const right = tokenDigest(tokA);
    const wrong = Buffer.from(right);
    wrong[31] ^= 1; // differs in the last byte only
    expect(hashesEqual(right, Buffer.from(right))).toBe(true);
    expect(hashesEqual(right, wrong)).toBe(false);
    expect(hashesEqual(right, tokenDigest(tokB))).toBe(false);
    expect(hashesEqual(right, right.subarray(0, 31))).toBe(false); // length differs: no throw
  });
});

describe('TenantRegistry.authenticate', () => {
  const registry = TenantRegistry.fromTenants(parseTenantsText(fileText(base), 'json', 'mem'));

  it('maps each token to its own tenant and principal', async () => {
    const a = await registry.authenticate(`Bearer ${tokA}`);
    expect(a).toMatchObject({ ok: true, via: 'token', principal: { namespace: 'acme', role: 'tenant' } });
    expect(okTenant(a)).toBe('acme');
    expect(okTenant(await registry.authenticate(`bearer ${tokB}`))).toBe('beta');
    // Admins act in the operator's namespace.
    expect(await registry.authenticate(`Bearer ${tokOps}`)).toMatchObject({ ok: true, principal: { namespace: '', role: 'admin' } });
  });

  it('refuses missing, malformed and unknown credentials with the right reason', async () => {
    expect(await registry.authenticate(undefined)).toEqual({ ok: false, reason: 'missing' });
    expect(await registry.authenticate('Basic dXNlcjpwYXNz')).toEqual({ ok: false, reason: 'malformed' });
    expect(await registry.authenticate(`Bearer ${tokA} extra`)).toEqual({ ok: false, reason: 'malformed' });
    expect(await registry.authenticate(`Bearer ${generateToken()}`)).toEqual({ ok: false, reason: 'unknown' });
    // A token's hash is not a token.
    expect(await registry.authenticate(`Bearer ${hashToken(tokA).slice(7)}`)).toEqual({ ok: false, reason: 'unknown' });
    // A JWT-shaped token without JWT configured is just unknown.
    expect(await registry.authenticate('Bearer eyJh.eyJi.c2ln')).toEqual({ ok: false, reason: 'unknown' });
  });

  it('looks tenants up by id', () => {
    expect(registry.get('beta')?.role).toBe('tenant');
    expect(registry.get('nobody')).toBeUndefined();
    expect(registry.list().map((t) => t.id)).toEqual(['acme', 'beta', 'ops']);
  });
});

describe('TenantRegistry hot reload', () => {
  let dir: string;
  let path: string;
  let logged: string;
  let registry: TenantRegistry | undefined;
  const logger = () =>
    pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, cb) {
          logged += String(chunk);
          cb();
        },
      }),
    );

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'warden-tenants-'));
    path = join(dir, 'tenants.json');
    logged = '';
    writeFileSync(path, fileText(base.slice(0, 1)));
  });
  afterEach(() => {
    registry?.close();
    registry = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a bad file at startup', async () => {
    writeFileSync(path, '{"tenants": 1}');
    await expect(TenantRegistry.open(path)).rejects.toThrow(TenancyConfigError);
    await expect(TenantRegistry.open(join(dir, 'missing.yaml'))).rejects.toThrow(/cannot read \(ENOENT\)/);
    await expect(TenantRegistry.open(join(dir, 'tenants.txt'))).rejects.toThrow(/unknown extension/);
  });

  it('picks up an edit (written in place) and an atomic replace, without a restart', async () => {
    registry = await TenantRegistry.open(path, { logger: logger(), debounceMs: 20, pollIntervalMs: 200 });
    const seen: number[] = [];
    registry.onReload((t) => seen.push(t.length));
    expect(okTenant(await registry.authenticate(`Bearer ${tokA}`))).toBe('acme');
    expect((await registry.authenticate(`Bearer ${tokB}`)).ok).toBe(false);

    writeFileSync(path, fileText(base.slice(0, 2)));
    await until(async () => (await registry!.authenticate(`Bearer ${tokB}`)).ok);

    const tmp = join(dir, '.tenants.json.tmp');
    writeFileSync(tmp, fileText(base.slice(1)));
    renameSync(tmp, path);
    await until(async () => !(await registry!.authenticate(`Bearer ${tokA}`)).ok);
    expect(okTenant(await registry.authenticate(`Bearer ${tokOps}`))).toBe('ops');
    expect(seen).toEqual([2, 2]);
    expect(logged).toContain('tenants file reloaded');
  });

  it('keeps the previous tenants when the new file is broken, and logs no secret', async () => {
    registry = await TenantRegistry.open(path, { logger: logger(), debounceMs: 20, pollIntervalMs: 200 });
    // Broken: tokB's hash is listed for two tenants.
    const broken = fileText([
      { id: 'acme', role: 'tenant', tokens: [hashToken(tokB)] },
      { id: 'beta', role: 'tenant', tokens: [hashToken(tokB)] },
    ]);
    writeFileSync(path, broken);
    await until(async () => logged.includes('tenants file not reloaded'));
    expect(okTenant(await registry.authenticate(`Bearer ${tokA}`))).toBe('acme');
    expect((await registry.authenticate(`Bearer ${tokB}`)).ok).toBe(false);
    expect(logged).toContain("tenant 'beta': tokens[0] is also a token hash of tenant 'acme'");
    // Syntax error whose line holds a hash: the log has the position only.
    writeFileSync(path, `{"tenants": [{"id": "acme", "role": "tenant", "tokens": ["${hashToken(tokB)}"]`);
    await until(async () => logged.includes('invalid JSON'));
    for (const secret of [tokA, tokB, hashToken(tokA).slice(7), hashToken(tokB).slice(7)]) expect(logged).not.toContain(secret);
    // A good file afterwards is picked up again.
    writeFileSync(path, fileText(base));
    await until(async () => (await registry!.authenticate(`Bearer ${tokB}`)).ok);
  });

  it('close() stops reloading', async () => {
    registry = await TenantRegistry.open(path, { debounceMs: 10, pollIntervalMs: 50 });
    writeFileSync(path, fileText(base));
    await until(async () => (await registry!.authenticate(`Bearer ${tokB}`)).ok, { within: 3000 });
    registry.close();
    writeFileSync(path, fileText(base.slice(0, 1)));
    await sleep(300); // six polls' worth: a registry still watching would have reloaded
    expect((await registry.authenticate(`Bearer ${tokB}`)).ok).toBe(true);
  });

  it('watch: false loads once; reload() is then a no-op', async () => {
    registry = await TenantRegistry.open(path, { watch: false });
    writeFileSync(path, fileText(base));
    await registry.reload();
    expect((await registry.authenticate(`Bearer ${tokB}`)).ok).toBe(false);
  });
});
