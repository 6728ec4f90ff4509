/**
 * Tenants file parsing: the formats, defaults, and every strictness rule with its message — none
 * of which may contain a token or a token hash.
 */
import { describe, expect, it } from 'vitest';
import { parseTenantsText } from '../../host/src/tenancy/parse.js';
import { hashToken } from '../../host/src/tenancy/token.js';
import { DEFAULT_CONFIG_BOUNDS, DEFAULT_TENANT_QUOTAS } from '../../host/src/tenancy/types.js';
import { TenancyConfigError } from '../../host/src/tenancy/format.js';

const TOKEN_A = 'A'.repeat(43);
const TOKEN_B = 'B'.repeat(43);
const HASH_A = hashToken(TOKEN_A);
const HASH_B = hashToken(TOKEN_B);
const HEX_A = HASH_A.slice('sha256:'.length);

/** Parses a JSON document and returns the error message (fails the test when it parses). */
function jsonError(doc: unknown): string {
  return errorOf(() => parseTenantsText(JSON.stringify(doc), 'json', 't.json'));
}

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TenancyConfigError);
    const msg = (err as Error).message;
    // Never a secret in a message.
    for (const secret of [TOKEN_A, TOKEN_B, HASH_A, HASH_B, HEX_A, HEX_A.slice(0, 16)]) expect(msg).not.toContain(secret);
    return msg;
  }
  throw new Error('expected a TenancyConfigError');
}

const entry = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ id: 'acme', role: 'tenant', tokens: [HASH_A], ...over });

describe('tenants file: good files', () => {
  it('parses YAML with defaults filled in', () => {
    const yaml = `# the operator's file
tenants:
  - id: acme
    role: tenant
    tokens: [${HASH_A}]
    weight: 2.5
    shared_models: [resnet50, bert]
    allow_onnx: true
    quotas:
      max_models: 4
      requests_per_second: 0.5
  - id: ops
    role: admin
    tokens:
      - ${HASH_B}
`;
    const [acme, ops] = parseTenantsText(yaml, 'yaml', 't.yaml');
    expect(acme).toEqual({
      id: 'acme',
      role: 'tenant',
      tokens: [HASH_A],
      weight: 2.5,
      shared_models: ['resnet50', 'bert'],
      allow_onnx: true,
      quotas: { ...DEFAULT_TENANT_QUOTAS, max_models: 4, requests_per_second: 0.5 },
      config_bounds: DEFAULT_CONFIG_BOUNDS,
    });
    expect(ops).toEqual({
      id: 'ops',
      role: 'admin',
      tokens: [HASH_B],
      weight: 1,
      shared_models: [],
      allow_onnx: false,
      quotas: DEFAULT_TENANT_QUOTAS,
      config_bounds: DEFAULT_CONFIG_BOUNDS,
    });
    expect(Object.isFrozen(acme)).toBe(true);
    expect(Object.isFrozen(acme!.quotas)).toBe(true);
  });

  it('parses the same data from JSON, and an empty list', () => {
    const t = parseTenantsText(JSON.stringify({ tenants: [entry()] }), 'json', 't.json');
    expect(t.map((x) => x.id)).toEqual(['acme']);
    expect(t[0]!.uid).toBeUndefined();
    expect(parseTenantsText(JSON.stringify({ tenants: [entry({ uid: '0123456789abcdef0123456789abcdef' })] }), 'json', 't.json')[0]!.uid).toBe(
      '0123456789abcdef0123456789abcdef',
    );
    expect(parseTenantsText('tenants: []\n', 'yaml', 't.yaml')).toEqual([]);
  });

  it('accepts a tenant without tokens (JWT only) and ids at the limits', () => {
    const t = parseTenantsText(
      JSON.stringify({
        tenants: [
          { id: 'a', role: 'tenant' },
          { id: `_${'x'.repeat(63)}`, role: 'tenant' },
        ],
      }),
      'json',
      't.json',
    );
    expect(t[0]!.tokens).toEqual([]);
    expect(t[1]!.id).toHaveLength(64);
  });
});

describe('tenants file: errors name the file, tenant and field', () => {
  it('rejects syntax errors by position, without quoting the source', () => {
    const yamlMsg = errorOf(() => parseTenantsText(`tenants:\n  - id: acme\n    tokens: [${HASH_A}\n`, 'yaml', 't.yaml'));
    expect(yamlMsg).toMatch(/^tenants file t\.yaml: YAML syntax error \(\w+\) at line \d+, column \d+$/);
    const jsonMsg = errorOf(() => parseTenantsText(`{"tenants": [{"id": "acme", "tokens": ["${HASH_A}"] x]}`, 'json', 't.json'));
    expect(jsonMsg).toMatch(/^tenants file t\.json: invalid JSON( at line 1, column \d+)?$/);
  });

  it('rejects duplicate keys in both formats', () => {
    expect(errorOf(() => parseTenantsText('tenants: []\ntenants: []\n', 'yaml', 't.yaml'))).toMatch(/duplicate key at line 2/);
    expect(errorOf(() => parseTenantsText('{"tenants": [{"id": "a", "role": "tenant", "role": "admin"}]}', 'json', 't.json'))).toMatch(
      /duplicate key at line 1/,
    );
  });

  it('rejects a bad top level', () => {
    expect(jsonError([])).toBe("tenants file t.json: expected a mapping with a 'tenants' list at the top level, got a list");
    expect(errorOf(() => parseTenantsText('', 'yaml', 't.yaml'))).toMatch(/expected a mapping .* got null/);
    expect(jsonError({})).toBe("tenants file t.json: missing the 'tenants' list");
    expect(jsonError({ tenants: {} })).toBe("tenants file t.json: 'tenants' must be a list, got a mapping");
    expect(jsonError({ tenants: [], extra: 1 })).toBe("tenants file t.json: unknown top-level key 'extra' (only 'tenants' is allowed)");
  });

  it('rejects bad ids by index, without echoing them', () => {
    for (const id of ['', '-x', '.x', 'a/b', 'a b', 'x'.repeat(65), 'ü', [], TOKEN_A + '!']) {
      const msg = jsonError({ tenants: [entry(), entry({ id, tokens: [] })] });
      expect(msg).toBe("tenants file t.json: tenants[1]: id: must be 1-64 characters of [A-Za-z0-9_-], not starting with '-' or '.'");
    }
    expect(errorOf(() => parseTenantsText('tenants:\n  - {id: 0123, role: tenant}\n', 'yaml', 't.yaml'))).toBe(
      "tenants file t.yaml: tenants[0]: id: must be 1-64 characters of [A-Za-z0-9_-], not starting with '-' or '.' (write it in quotes: it was read as a number)",
    );
    expect(jsonError({ tenants: [{ role: 'tenant' }] })).toBe("tenants file t.json: tenants[0]: missing 'id'");
    expect(jsonError({ tenants: ['acme'] })).toBe('tenants file t.json: tenants[0]: expected a mapping, got a string');
  });

  it('rejects unknown keys, never echoing a key that could be a token', () => {
    expect(jsonError({ tenants: [entry({ token: 'x' })] })).toBe("tenants file t.json: tenant 'acme': unknown key 'token'");
    expect(jsonError({ tenants: [entry({ [TOKEN_A]: true })] })).toBe("tenants file t.json: tenant 'acme': unknown key (not shown)");
    expect(jsonError({ tenants: [entry({ quotas: { max_modles: 1 } })] })).toMatch(
      /^tenants file t\.json: tenant 'acme': quotas: unknown key 'max_modles' \(known: max_models, /,
    );
  });

  it('rejects wrong types and out-of-range values', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ role: 'root' }, "role: must be 'admin' or 'tenant'"],
      [{ role: undefined }, "role: must be 'admin' or 'tenant' (missing)"],
      [{ tokens: HASH_A }, 'tokens: expected a list, got a string'],
      [{ tokens: [1] }, 'tokens[0]: expected a string, got a number'],
      [{ tokens: [TOKEN_A] }, "tokens[0]: expected 'sha256:' and 64 lowercase hex digits (store the token's hash, never the token)"],
      [{ tokens: [HASH_A.toUpperCase()] }, "tokens[0]: expected 'sha256:' and 64 lowercase hex digits"],
      [{ tokens: [`sha256:${HEX_A.slice(1)}`] }, "tokens[0]: expected 'sha256:'"],
      [{ weight: 0 }, 'weight: expected a number > 0 and <= 1000000, got 0'],
      [{ weight: -1 }, 'weight: expected a number > 0 and <= 1000000, got -1'],
      [{ weight: '2' }, 'weight: expected a number > 0 and <= 1000000, got a string'],
      [{ shared_models: ['a', 'a'] }, "shared_models[1]: 'a' is listed twice"],
      [{ shared_models: ['../x'] }, 'shared_models[0]: not a valid model name'],
      [{ shared_models: [''] }, 'shared_models[0]: not a valid model name'],
      [{ allow_onnx: 'yes' }, 'allow_onnx: expected true or false, got a string'],
      [{ quotas: [] }, 'quotas: expected a mapping, got a list'],
      [{ quotas: { max_models: -1 } }, 'quotas.max_models: expected an integer >= 0, got -1'],
      [{ quotas: { max_models: 1.5 } }, 'quotas.max_models: expected an integer >= 0, got 1.5'],
      [{ quotas: { max_upload_bytes: '1MiB' } }, 'quotas.max_upload_bytes: expected an integer >= 0, got a string'],
      [{ quotas: { max_execute_ms: 0 } }, 'quotas.max_execute_ms: expected an integer >= 1, got 0'],
      [{ quotas: { burst: 0 } }, 'quotas.burst: expected an integer >= 1, got 0'],
      [{ quotas: { requests_per_second: -0.5 } }, 'quotas.requests_per_second: expected a number >= 0, got -0.5'],
      [{ quotas: { max_inflight: null } }, 'quotas.max_inflight: expected an integer >= 0, got null'],
      [{ uid: 'short' }, 'uid: expected 8-64 characters of [A-Za-z0-9_-]'],
      [{ uid: 12345678 }, 'uid: expected 8-64 characters of [A-Za-z0-9_-]'],
      [{ uid: '../../etc/x' }, 'uid: expected 8-64 characters of [A-Za-z0-9_-]'],
    ];
    for (const [over, expected] of cases) {
      expect(jsonError({ tenants: [entry(over)] })).toContain(`tenants file t.json: tenant 'acme': ${expected}`);
    }
    // YAML's own non-finite numbers are refused too.
    expect(errorOf(() => parseTenantsText('tenants:\n  - {id: a, role: tenant, quotas: {max_models: .inf}}\n', 'yaml', 't.yaml'))).toBe(
      "tenants file t.yaml: tenant 'a': quotas.max_models: expected an integer >= 0, got Infinity",
    );
  });

  it('rejects duplicate ids, case-insensitively', () => {
    expect(jsonError({ tenants: [entry(), entry({ tokens: [HASH_B] })] })).toBe("tenants file t.json: duplicate tenant id 'acme'");
    expect(jsonError({ tenants: [entry(), entry({ id: 'ACME', tokens: [HASH_B] })] })).toBe(
      "tenants file t.json: tenant id 'ACME' duplicates 'acme' (ids are compared case-insensitively)",
    );
  });

  it('rejects a token hash listed twice, within a tenant or across tenants', () => {
    expect(jsonError({ tenants: [entry({ tokens: [HASH_A, HASH_A] })] })).toBe(
      "tenants file t.json: tenant 'acme': tokens[1] repeats one of its earlier token hashes",
    );
    expect(jsonError({ tenants: [entry(), entry({ id: 'beta', tokens: [HASH_B, HASH_A] })] })).toBe(
      "tenants file t.json: tenant 'beta': tokens[1] is also a token hash of tenant 'acme' (a token must identify one tenant)",
    );
  });
});
