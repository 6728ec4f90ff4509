/**
 * `warden tenants add|rotate|remove|list` on YAML and JSON files: the token is printed once and
 * only its hash is stored, rotate invalidates the old token, the format (and YAML comments)
 * survive edits, concurrent adds both land, and nothing is left behind but the file.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatOfPath } from '../../host/src/tenancy/format.js';
import { parseTenantsText } from '../../host/src/tenancy/parse.js';
import { TenantRegistry } from '../../host/src/tenancy/registry.js';
import { hashToken } from '../../host/src/tenancy/token.js';
import { runTenants, type TenantsCliRun } from '../helpers/tenants-cli.js';
import { DEFAULT_TENANT_QUOTAS } from '../../host/src/tenancy/types.js';

/** The token `add` / `rotate` printed: stdout is exactly one line, the token. */
function tokenOf(r: TenantsCliRun): string {
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
  const token = r.stdout.trim();
  expect(r.stderr).not.toContain(token);
  return token;
}

async function authAs(path: string, token: string): Promise<string | undefined> {
  const reg = await TenantRegistry.open(path, { watch: false });
  const r = await reg.authenticate(`Bearer ${token}`);
  reg.close();
  return r.ok ? r.tenant.id : undefined;
}

function tenantsIn(path: string) {
  return parseTenantsText(readFileSync(path, 'utf8'), formatOfPath(path), path);
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'warden-tenants-cli-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe.each(['yaml', 'json'] as const)('warden tenants on a %s file', (format) => {
  const file = () => join(dir, `tenants.${format}`);

  it('add creates the file, prints the token once and stores only its hash', async () => {
    const token = tokenOf(await runTenants('add', 'acme', '--tenants', file()));
    const text = readFileSync(file(), 'utf8');
    expect(text).not.toContain(token);
    expect(text).toContain(hashToken(token));
    if (format === 'json') expect(() => JSON.parse(text)).not.toThrow();
    else expect(text).toMatch(/^tenants:\n {2}- id: acme\n/m);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    expect(await authAs(file(), token)).toBe('acme');
    expect(readdirSync(dir)).toEqual([`tenants.${format}`]); // no temp or lock file left
    // A fresh creation identity per add: the same id added again is another tenant.
    const uid = tenantsIn(file())[0]!.uid;
    expect(uid).toMatch(/^[0-9a-f]{32}$/);
    expect((await runTenants('remove', 'acme', '--tenants', file())).code).toBe(0);
    tokenOf(await runTenants('add', 'acme', '--tenants', file()));
    expect(tenantsIn(file())[0]!.uid).toMatch(/^[0-9a-f]{32}$/);
    expect(tenantsIn(file())[0]!.uid).not.toBe(uid);
  });

  it('add takes role, weight, shared models, allow-onnx and quotas', async () => {
    tokenOf(await runTenants('add', 'ops', '--tenants', file(), '--role', 'admin'));
    tokenOf(
      await runTenants(
        'add',
        'acme',
        `--tenants=${file()}`,
        '--weight',
        '2.5',
        '--share',
        'resnet50',
        '--share=bert',
        '--allow-onnx',
        '--quota',
        'max_models=3',
        '--quota',
        'max_upload_bytes=16MiB',
        '--quota',
        'requests_per_second=0.5',
      ),
    );
    const [ops, acme] = tenantsIn(file());
    expect(ops).toMatchObject({ id: 'ops', role: 'admin', weight: 1, allow_onnx: false });
    expect(acme).toMatchObject({ id: 'acme', role: 'tenant', weight: 2.5, shared_models: ['resnet50', 'bert'], allow_onnx: true });
    expect(acme!.quotas).toEqual({ ...DEFAULT_TENANT_QUOTAS, max_models: 3, max_upload_bytes: 16 * 1024 * 1024, requests_per_second: 0.5 });
    // Only what was given is written; the defaults stay implicit.
    expect(readFileSync(file(), 'utf8')).not.toContain('max_inflight');
  });

  it('add refuses an existing id (any case) and leaves the file alone', async () => {
    tokenOf(await runTenants('add', 'acme', '--tenants', file()));
    const before = readFileSync(file(), 'utf8');
    const r = await runTenants('add', 'ACME', '--tenants', file());
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe(`warden tenants add: tenant 'acme' already exists in ${file()}\n`);
    expect(readFileSync(file(), 'utf8')).toBe(before);
  });

  it('rotate replaces the tokens: the old one stops working, the new one works', async () => {
    const old = tokenOf(await runTenants('add', 'acme', '--tenants', file()));
    const other = tokenOf(await runTenants('add', 'beta', '--tenants', file()));
    const fresh = tokenOf(await runTenants('rotate', 'acme', '--tenants', file()));
    expect(fresh).not.toBe(old);
    expect(await authAs(file(), old)).toBeUndefined();
    expect(await authAs(file(), fresh)).toBe('acme');
    expect(await authAs(file(), other)).toBe('beta');
    expect(tenantsIn(file())[0]!.tokens).toEqual([hashToken(fresh)]);
    expect(readFileSync(file(), 'utf8')).not.toContain(fresh);
  });

  it('remove deletes the tenant; unknown ids are errors', async () => {
    const a = tokenOf(await runTenants('add', 'acme', '--tenants', file()));
    tokenOf(await runTenants('add', 'beta', '--tenants', file()));
    expect(await runTenants('remove', 'acme', '--tenants', file())).toMatchObject({ code: 0, stdout: '' });
    expect(tenantsIn(file()).map((t) => t.id)).toEqual(['beta']);
    expect(await authAs(file(), a)).toBeUndefined();
    for (const cmd of ['remove', 'rotate']) {
      const r = await runTenants(cmd, 'acme', '--tenants', file());
      expect(r).toMatchObject({ code: 1, stdout: '' });
      expect(r.stderr).toBe(`warden tenants ${cmd}: no tenant 'acme' in ${file()}\n`);
    }
  });

  it('list prints tenants and never a token or hash', async () => {
    const token = tokenOf(await runTenants('add', 'acme', '--tenants', file(), '--share', 'm1', '--quota', 'max_models=2'));
    tokenOf(await runTenants('add', 'ops', '--tenants', file(), '--role', 'admin'));
    const r = await runTenants('list', '--tenants', file());
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      'ID    ROLE    WEIGHT  TOKENS  ONNX  SHARED_MODELS  QUOTAS',
      'acme  tenant  1       1       no    m1             max_models=2',
      'ops   admin   1       1       no    -              defaults',
      '',
    ]);
    const j = await runTenants('list', '--json', '--tenants', file());
    expect(JSON.parse(j.stdout)).toEqual([
      { id: 'acme', role: 'tenant', weight: 1, tokens: 1, shared_models: ['m1'], allow_onnx: false, quotas: { ...DEFAULT_TENANT_QUOTAS, max_models: 2 } },
      { id: 'ops', role: 'admin', weight: 1, tokens: 1, shared_models: [], allow_onnx: false, quotas: DEFAULT_TENANT_QUOTAS },
    ]);
    for (const out of [r.stdout, j.stdout]) {
      expect(out).not.toContain(token);
      expect(out).not.toContain('sha256:');
    }
  });

  it('concurrent adds all survive (the lock serialises read-modify-write)', async () => {
    const ids = ['t0', 't1', 't2', 't3', 't4', 't5'];
    const runs = await Promise.all(ids.map((id) => runTenants('add', id, '--tenants', file())));
    const tokens = runs.map(tokenOf);
    expect(
      tenantsIn(file())
        .map((t) => t.id)
        .sort(),
    ).toEqual(ids);
    for (const [i, id] of ids.entries()) expect(await authAs(file(), tokens[i]!)).toBe(id);
    expect(readdirSync(dir)).toEqual([`tenants.${format}`]);
  });

  it('keeps the file mode, and refuses to edit an invalid file', async () => {
    tokenOf(await runTenants('add', 'acme', '--tenants', file()));
    chmodSync(file(), 0o640);
    tokenOf(await runTenants('rotate', 'acme', '--tenants', file()));
    expect(statSync(file()).mode & 0o777).toBe(0o640);
    const bad = format === 'json' ? '{"tenants": [{"id": "x"}]}' : 'tenants:\n  - id: x\n';
    writeFileSync(file(), bad);
    const r = await runTenants('add', 'beta', '--tenants', file());
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toContain(`tenant 'x': role: must be 'admin' or 'tenant' (missing)`);
    expect(readFileSync(file(), 'utf8')).toBe(bad);
  });
});

describe('warden tenants: YAML specifics and usage', () => {
  it('keeps comments and layout of an existing YAML file', async () => {
    const path = join(dir, 't.yml');
    writeFileSync(path, '# Operator notes: do not remove ops.\ntenants:\n  # the on-call admin\n  - id: ops\n    role: admin\n');
    tokenOf(await runTenants('add', 'acme', '--tenants', path));
    const text = readFileSync(path, 'utf8');
    expect(text.startsWith('# Operator notes: do not remove ops.\ntenants:\n  # the on-call admin\n  - id: ops\n    role: admin\n  - id: acme\n')).toBe(true);
    expect(await runTenants('remove', 'acme', '--tenants', path)).toMatchObject({ code: 0 });
    expect(readFileSync(path, 'utf8')).toBe('# Operator notes: do not remove ops.\ntenants:\n  # the on-call admin\n  - id: ops\n    role: admin\n');
  });

  it('adds to an empty flow list in block style', async () => {
    const path = join(dir, 't.yaml');
    writeFileSync(path, 'tenants: []\n');
    tokenOf(await runTenants('add', 'acme', '--tenants', path));
    expect(readFileSync(path, 'utf8')).toMatch(/^tenants:\n {2}- id: acme\n {4}role: tenant\n {4}tokens:\n {6}- sha256:[0-9a-f]{64}\n {4}uid: [0-9a-f]{32}\n$/);
  });

  it('answers bad usage with exit code 2 and the usage text', async () => {
    const f = join(dir, 't.yaml');
    const cases: [string[], string][] = [
      [[], 'missing command'],
      [['frobnicate', '--tenants', f], "unknown command 'frobnicate'"],
      [['add', 'acme'], '--tenants <path> is required'],
      [['add', '--tenants', f], 'add takes one tenant id'],
      [['add', '-acme', '--tenants', f], 'invalid tenant id'],
      [['add', 'acme', '--tenants', f, '--role', 'root'], '--role must be admin or tenant'],
      [['add', 'acme', '--tenants', f, '--weight', '0'], '--weight must be a number > 0'],
      [['add', 'acme', '--tenants', f, '--quota', 'max_cats=1'], '--quota expects key=value'],
      [['add', 'acme', '--tenants', f, '--quota', 'max_models=-1'], '--quota max_models: not a number'],
      [['add', 'acme', '--tenants', f, '--quota', 'max_models=1GiB'], '--quota max_models: not a number'],
      [['add', 'acme', '--tenants', f, '--quota', 'burst=0'], '--quota burst: expected an integer >= 1'],
      [['rotate', 'acme', '--tenants', f, '--role', 'admin'], 'rotate does not take --role'],
      [['list', 'extra', '--tenants', f], 'list takes no arguments'],
      [['list', '--tenants'], '--tenants needs a value'],
      [['list', '--tenants', f, '--json=yes'], '--json takes no value'],
      [['list', '--tenants', f, '--verbose'], 'unknown option --verbose'],
    ];
    for (const [argv, msg] of cases) {
      const r = await runTenants(...argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stderr).toContain(`warden tenants: ${msg}`);
      expect(r.stderr).toContain('usage: warden tenants');
    }
    expect(readdirSync(dir)).toEqual([]);
    expect(await runTenants('--help')).toMatchObject({ code: 0, stdout: expect.stringContaining('usage: warden tenants') });
  });

  it('reports a missing file for list, and an unknown extension', async () => {
    expect(await runTenants('list', '--tenants', join(dir, 'none.yaml'))).toMatchObject({ code: 1, stderr: expect.stringContaining('cannot read (ENOENT)') });
    expect(await runTenants('add', 'a', '--tenants', join(dir, 't.toml'))).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("unknown extension '.toml'"),
    });
  });
});
