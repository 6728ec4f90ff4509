/**
 * Strict validation of a tenants file (DESIGN "Multi-tenancy"). The document is a mapping with one
 * key, `tenants`: a list of entries
 *
 *     id: acme                      # required, [A-Za-z0-9_-]{1,64}, not starting with '-'
 *     role: tenant                  # required, admin | tenant
 *     tokens: [sha256:<64 hex>]     # hashes only; default []
 *     weight: 1                     # fair-share weight, > 0; default 1
 *     shared_models: [resnet50]     # operator models it may use; default []
 *     allow_onnx: false             # default false
 *     quotas: { max_models: 4 }     # any subset of TenantQuotas; the rest default
 *     config_bounds: { max_batch_size: 64 }  # any subset of TenantConfigBounds; the rest default
 *     uid: 3f9c0b1e8d2a4c6f9e1b7a5d3c2e1f00  # creation identity, optional: [A-Za-z0-9_-]{8,64}
 *
 * Unknown keys, wrong types, out-of-range numbers, duplicate ids (case-insensitively: ids become
 * directory names) and a token hash listed twice anywhere are errors that name the tenant and the
 * field. Messages never contain a token or a hash.
 */
import { parseText, TenancyConfigError, type TenantsFileFormat } from './format.js';
import { TOKEN_HASH_RE } from './token.js';
import { TENANT_ID_RE } from '../contract/names.js';
import {
  CONFIG_BOUND_KEYS,
  DEFAULT_CONFIG_BOUNDS,
  DEFAULT_TENANT_QUOTAS,
  DEFAULT_WEIGHT,
  FRACTIONAL_QUOTAS,
  MAX_WEIGHT,
  QUOTA_KEYS,
  QUOTA_MINIMUMS,
  type TenantConfig,
  type TenantConfigBounds,
  type TenantQuotas,
  type TenantRole,
} from './types.js';

export { TENANT_ID_RE } from '../contract/names.js';
/** Longest accepted shared model name. */
const MAX_MODEL_NAME_LENGTH = 256;

const ENTRY_KEYS = new Set(['id', 'role', 'tokens', 'weight', 'shared_models', 'allow_onnx', 'quotas', 'config_bounds', 'uid']);
/** A tenant's creation identity (`uid`): what `warden tenants add` writes is 32 hex digits. */
const TENANT_UID_RE = /^[A-Za-z0-9_-]{8,64}$/;

/**
 * Parses and validates a tenants file's text.
 * @param source names the file in error messages (its path).
 * @returns the tenants in file order, defaults filled in, deeply frozen.
 * @throws TenancyConfigError naming the file, the tenant (by id, or by list index when the id itself is bad) and the field.
 */
export function parseTenantsText(text: string, format: TenantsFileFormat, source: string): TenantConfig[] {
  return validateTenantsDocument(parseText(text, format, source), source);
}

/**
 * Validates already-parsed tenants file data (see {@link parseTenantsText}).
 * @throws TenancyConfigError
 */
export function validateTenantsDocument(doc: unknown, source: string): TenantConfig[] {
  const fail = (msg: string): never => {
    throw new TenancyConfigError(`tenants file ${source}: ${msg}`);
  };
  if (!isPlainObject(doc)) fail(`expected a mapping with a 'tenants' list at the top level, got ${typeName(doc)}`);
  const top = doc as Record<string, unknown>;
  for (const k of Object.keys(top)) if (k !== 'tenants') fail(`unknown top-level key ${quoteKey(k)} (only 'tenants' is allowed)`);
  if (!('tenants' in top)) fail(`missing the 'tenants' list`);
  if (!Array.isArray(top.tenants)) fail(`'tenants' must be a list, got ${typeName(top.tenants)}`);

  const out: TenantConfig[] = [];
  const ids = new Map<string, string>();
  const hashOwner = new Map<string, string>();
  (top.tenants as unknown[]).forEach((raw, index) => {
    const t = validateEntry(raw, index, fail);
    const folded = t.id.toLowerCase();
    const prev = ids.get(folded);
    if (prev !== undefined) {
      fail(prev === t.id ? `duplicate tenant id '${t.id}'` : `tenant id '${t.id}' duplicates '${prev}' (ids are compared case-insensitively)`);
    }
    ids.set(folded, t.id);
    t.tokens.forEach((h, i) => {
      const owner = hashOwner.get(h);
      if (owner !== undefined) {
        fail(
          owner === t.id
            ? `tenant '${t.id}': tokens[${i}] repeats one of its earlier token hashes`
            : `tenant '${t.id}': tokens[${i}] is also a token hash of tenant '${owner}' (a token must identify one tenant)`,
        );
      }
      hashOwner.set(h, t.id);
    });
    out.push(t);
  });
  return out;
}

function validateEntry(raw: unknown, index: number, fail: (msg: string) => never): TenantConfig {
  if (!isPlainObject(raw)) fail(`tenants[${index}]: expected a mapping, got ${typeName(raw)}`);
  const e = raw as Record<string, unknown>;
  if (!('id' in e)) fail(`tenants[${index}]: missing 'id'`);
  if (typeof e.id !== 'string' || !TENANT_ID_RE.test(e.id)) {
    // The bad value is not echoed: it could be a pasted token.
    const hint = e.id !== undefined && typeof e.id !== 'string' && typeof e.id !== 'object' ? ` (write it in quotes: it was read as ${typeName(e.id)})` : '';
    fail(`tenants[${index}]: id: must be 1-64 characters of [A-Za-z0-9_-], not starting with '-' or '.'${hint}`);
  }
  const id = e.id as string;
  const where = `tenant '${id}'`;
  for (const k of Object.keys(e)) if (!ENTRY_KEYS.has(k)) fail(`${where}: unknown key ${quoteKey(k)}`);

  if (e.role !== 'admin' && e.role !== 'tenant') {
    fail(`${where}: role: must be 'admin' or 'tenant'${e.role === undefined ? ' (missing)' : ''}`);
  }
  const tokens = stringList(e.tokens, `${where}: tokens`, fail);
  tokens.forEach((h, i) => {
    if (!TOKEN_HASH_RE.test(h)) fail(`${where}: tokens[${i}]: expected 'sha256:' and 64 lowercase hex digits (store the token's hash, never the token)`);
  });
  let weight = DEFAULT_WEIGHT;
  if (e.weight !== undefined) {
    if (typeof e.weight !== 'number' || !Number.isFinite(e.weight) || e.weight <= 0 || e.weight > MAX_WEIGHT) {
      fail(`${where}: weight: expected a number > 0 and <= ${MAX_WEIGHT}, got ${describe(e.weight)}`);
    }
    weight = e.weight as number;
  }
  const shared = stringList(e.shared_models, `${where}: shared_models`, fail);
  shared.forEach((name, i) => {
    if (name === '' || name.length > MAX_MODEL_NAME_LENGTH || /[/\\\0]/.test(name) || name === '.' || name === '..') {
      fail(`${where}: shared_models[${i}]: not a valid model name`);
    }
    if (shared.indexOf(name) !== i) fail(`${where}: shared_models[${i}]: '${name}' is listed twice`);
  });
  if (e.allow_onnx !== undefined && typeof e.allow_onnx !== 'boolean') {
    fail(`${where}: allow_onnx: expected true or false, got ${typeName(e.allow_onnx)}`);
  }
  if (e.uid !== undefined && (typeof e.uid !== 'string' || !TENANT_UID_RE.test(e.uid))) {
    fail(`${where}: uid: expected 8-64 characters of [A-Za-z0-9_-]`);
  }
  return deepFreeze({
    id,
    role: e.role as TenantRole,
    tokens,
    weight,
    shared_models: shared,
    allow_onnx: e.allow_onnx === true,
    quotas: validateQuotas(e.quotas, where, fail),
    config_bounds: validateConfigBounds(e.config_bounds, where, fail),
    ...(e.uid !== undefined ? { uid: e.uid as string } : {}),
  });
}

function validateQuotas(raw: unknown, where: string, fail: (msg: string) => never): TenantQuotas {
  return validateNumbers(raw, 'quotas', QUOTA_KEYS, DEFAULT_TENANT_QUOTAS, quotaValueProblem, where, fail);
}

function validateConfigBounds(raw: unknown, where: string, fail: (msg: string) => never): TenantConfigBounds {
  const problem = (_key: string, v: unknown) => (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 ? 'expected an integer >= 0' : undefined);
  return validateNumbers(raw, 'config_bounds', CONFIG_BOUND_KEYS, DEFAULT_CONFIG_BOUNDS, problem, where, fail);
}

/**
 * A tenant's mapping of numeric settings named `field` (`quotas`, `config_bounds`): `defaults`,
 * with each key given in `raw` set to its value. Calls `fail` (which throws) for a `raw` that is
 * not a mapping, a key not in `keys`, or a value `problem` names a problem with.
 */
function validateNumbers<T extends { [K in keyof T]: number }>(
  raw: unknown,
  field: string,
  keys: readonly (keyof T & string)[],
  defaults: T,
  problem: (key: keyof T & string, value: unknown) => string | undefined,
  where: string,
  fail: (msg: string) => never,
): T {
  const out: T = { ...defaults };
  if (raw === undefined) return out;
  if (!isPlainObject(raw)) fail(`${where}: ${field}: expected a mapping, got ${typeName(raw)}`);
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (!(keys as readonly string[]).includes(k)) {
      fail(`${where}: ${field}: unknown key ${quoteKey(k)} (known: ${keys.join(', ')})`);
    }
    const key = k as keyof T & string;
    const why = problem(key, v);
    if (why) fail(`${where}: ${field}.${key}: ${why}, got ${describe(v)}`);
    out[key] = v as T[keyof T & string];
  }
  return out;
}

/**
 * Why `value` is not acceptable for quota `key` (undefined when it is). Shared with the CLI's
 * `--quota key=value`.
 */
export function quotaValueProblem(key: keyof TenantQuotas, value: unknown): string | undefined {
  const min = QUOTA_MINIMUMS[key] ?? 0;
  const integer = !FRACTIONAL_QUOTAS.has(key);
  const kind = integer ? 'an integer' : 'a number';
  if (typeof value !== 'number' || !Number.isFinite(value)) return `expected ${kind} >= ${min}`;
  if (integer && !Number.isSafeInteger(value)) return `expected ${kind} >= ${min}`;
  if (value < min) return `expected ${kind} >= ${min}`;
  return undefined;
}

function stringList(v: unknown, where: string, fail: (msg: string) => never): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) fail(`${where}: expected a list, got ${typeName(v)}`);
  (v as unknown[]).forEach((s, i) => {
    if (typeof s !== 'string') fail(`${where}[${i}]: expected a string, got ${typeName(s)}`);
  });
  return [...(v as string[])];
}

function isPlainObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `a ${typeof v}`;
}

/** Numbers and booleans are echoed (they are never secrets); strings and structures only by type. */
function describe(v: unknown): string {
  return typeof v === 'number' || typeof v === 'boolean' ? String(v) : typeName(v);
}

/**
 * A key for an error message. Only identifier-like keys up to 32 characters are echoed: anything
 * else could be a token pasted in the wrong place (tokens are 43 characters, hashes longer).
 */
function quoteKey(k: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]{0,31}$/.test(k) ? `'${k}'` : '(not shown)';
}

function deepFreeze<T>(o: T): T {
  if (typeof o === 'object' && o !== null && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}
