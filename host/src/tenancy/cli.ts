/**
 * `warden tenants add|rotate|remove|list --tenants <path>`: edits the tenants file the server
 * hot-reloads (DESIGN "Multi-tenancy"). `add` and `rotate` print the new token once, alone on
 * stdout (so `TOKEN=$(warden tenants add acme --tenants t.yaml)` works); everything else goes to
 * stderr. The file only ever holds the token's hash. Edits run under a lock file and replace the
 * file atomically, keeping its format (YAML stays YAML with its comments, JSON stays JSON).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { withFileLock, writeFileAtomic } from './atomic-file.js';
import { TenantsDocument, type TenantEntryInput } from './document.js';
import { formatOfPath, TenancyConfigError } from './format.js';
import { quotaValueProblem, TENANT_ID_RE } from './parse.js';
import { generateToken, hashToken } from './token.js';
import { DEFAULT_TENANT_QUOTAS, MAX_WEIGHT, QUOTA_KEYS, type TenantConfig, type TenantQuotas } from './types.js';

/** Where the CLI writes: `process.stdout` / `process.stderr`, or a capture in tests. */
export interface TenantsCliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
}

export const TENANTS_USAGE = `usage: warden tenants <command> --tenants <path> [options]

commands:
  add <id> [--role admin|tenant] [--weight n] [--share model]... [--allow-onnx] [--quota key=value]...
      add a tenant (role defaults to tenant) and print its new token once
  rotate <id>    replace the tenant's tokens with one new token, printed once
  remove <id>    remove the tenant
  list [--json]  list tenants (never tokens or hashes)

The tenants file is YAML (.yaml, .yml) or JSON (.json); 'add' creates it when missing.
quota keys: ${QUOTA_KEYS.join(', ')}
  (*_bytes values accept KiB/MiB/GiB/TiB suffixes, e.g. max_upload_bytes=64MiB)
`;

class UsageError extends Error {}

interface Parsed {
  command: string;
  id?: string;
  tenants?: string;
  role?: string;
  weight?: string;
  share: string[];
  allowOnnx: boolean;
  quota: string[];
  json: boolean;
  help: boolean;
}

/** Flags each command accepts (besides --tenants and --help). */
const COMMAND_FLAGS: Record<string, readonly string[]> = {
  add: ['--role', '--weight', '--share', '--allow-onnx', '--quota'],
  rotate: [],
  remove: [],
  list: ['--json'],
};
const VALUE_FLAGS = new Set(['--tenants', '--role', '--weight', '--share', '--quota']);

/**
 * Runs `warden tenants ...`; `argv` is what follows `tenants` (e.g. `['add', 'acme', '--tenants', 't.yaml']`).
 * @returns the exit code: 0 done, 1 failed (message on stderr), 2 bad usage.
 */
export async function runTenantsCli(argv: readonly string[], io: TenantsCliIo): Promise<number> {
  let p: Parsed;
  try {
    p = parseArgs(argv);
  } catch (err) {
    io.stderr.write(`warden tenants: ${(err as Error).message}\n\n${TENANTS_USAGE}`);
    return 2;
  }
  if (p.help) {
    io.stdout.write(TENANTS_USAGE);
    return 0;
  }
  try {
    switch (p.command) {
      case 'add':
        return await add(p, io);
      case 'rotate':
        return await rotate(p, io);
      case 'remove':
        return await remove(p, io);
      default:
        return await list(p, io);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`warden tenants: ${err.message}\n\n${TENANTS_USAGE}`);
      return 2;
    }
    const e = err as NodeJS.ErrnoException;
    const msg = err instanceof TenancyConfigError ? e.message : `${e.code ?? 'error'}: ${e.message}`;
    io.stderr.write(`warden tenants ${p.command}: ${msg}\n`);
    return 1;
  }
}

function parseArgs(argv: readonly string[]): Parsed {
  const p: Parsed = { command: '', share: [], allowOnnx: false, quota: [], json: false, help: false };
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') {
      p.help = true;
      continue;
    }
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    let value: string | undefined;
    if (VALUE_FLAGS.has(flag)) {
      value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined) throw new UsageError(`${flag} needs a value`);
    } else if (eq >= 0) throw new UsageError(`${flag} takes no value`);
    switch (flag) {
      case '--tenants':
        p.tenants = value;
        break;
      case '--role':
        p.role = value;
        break;
      case '--weight':
        p.weight = value;
        break;
      case '--share':
        p.share.push(value!);
        break;
      case '--quota':
        p.quota.push(value!);
        break;
      case '--allow-onnx':
        p.allowOnnx = true;
        break;
      case '--json':
        p.json = true;
        break;
      default:
        throw new UsageError(`unknown option ${flag}`);
    }
  }
  if (p.help) return p;
  const [command, ...rest] = positional;
  if (command === undefined) throw new UsageError('missing command');
  const allowed = COMMAND_FLAGS[command];
  if (allowed === undefined) throw new UsageError(`unknown command '${command}'`);
  for (const f of ['--role', '--weight', '--share', '--allow-onnx', '--quota', '--json']) {
    if (given(p, f) && !allowed.includes(f)) throw new UsageError(`${command} does not take ${f}`);
  }
  p.command = command;
  if (command === 'list') {
    if (rest.length > 0) throw new UsageError('list takes no arguments');
  } else {
    if (rest.length !== 1) throw new UsageError(`${command} takes one tenant id`);
    p.id = rest[0];
    if (!TENANT_ID_RE.test(p.id!)) throw new UsageError(`invalid tenant id: use 1-64 characters of [A-Za-z0-9_-], not starting with '-'`);
  }
  if (p.tenants === undefined || p.tenants === '') throw new UsageError('--tenants <path> is required');
  return p;
}

function given(p: Parsed, flag: string): boolean {
  switch (flag) {
    case '--role':
      return p.role !== undefined;
    case '--weight':
      return p.weight !== undefined;
    case '--share':
      return p.share.length > 0;
    case '--allow-onnx':
      return p.allowOnnx;
    case '--quota':
      return p.quota.length > 0;
    default:
      return p.json;
  }
}

async function add(p: Parsed, io: TenantsCliIo): Promise<number> {
  // A fresh creation identity: a tenant added again under a removed tenant's id gets none of its uploads.
  const entry: TenantEntryInput = { id: p.id!, role: parseRole(p.role), tokens: [], uid: randomBytes(16).toString('hex') };
  if (p.weight !== undefined) entry.weight = parseWeight(p.weight);
  if (p.share.length > 0) entry.shared_models = p.share;
  if (p.allowOnnx) entry.allow_onnx = true;
  if (p.quota.length > 0) entry.quotas = parseQuotas(p.quota);
  const token = generateToken();
  entry.tokens = [hashToken(token)];
  await edit(p.tenants!, (doc) => doc.add(entry));
  io.stdout.write(`${token}\n`);
  io.stderr.write(`added tenant '${entry.id}' (role ${entry.role}) to ${p.tenants}; its token (above) is shown only this once\n`);
  return 0;
}

async function rotate(p: Parsed, io: TenantsCliIo): Promise<number> {
  const token = generateToken();
  await edit(p.tenants!, (doc) => doc.setTokens(p.id!, [hashToken(token)]), false);
  io.stdout.write(`${token}\n`);
  io.stderr.write(`rotated tenant '${p.id}' in ${p.tenants}: its previous tokens no longer work; the new token (above) is shown only this once\n`);
  return 0;
}

async function remove(p: Parsed, io: TenantsCliIo): Promise<number> {
  await edit(p.tenants!, (doc) => doc.remove(p.id!), false);
  io.stderr.write(`removed tenant '${p.id}' from ${p.tenants}\n`);
  return 0;
}

async function list(p: Parsed, io: TenantsCliIo): Promise<number> {
  const format = formatOfPath(p.tenants!);
  const text = await readFile(p.tenants!, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new TenancyConfigError(`tenants file ${p.tenants}: cannot read (${err.code ?? 'error'})`);
  });
  const tenants = TenantsDocument.parse(text, format, p.tenants!).tenants();
  if (p.json) {
    const rows = tenants.map((t) => ({
      id: t.id,
      role: t.role,
      weight: t.weight,
      tokens: t.tokens.length,
      shared_models: t.shared_models,
      allow_onnx: t.allow_onnx,
      quotas: t.quotas,
    }));
    io.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return 0;
  }
  const header = ['ID', 'ROLE', 'WEIGHT', 'TOKENS', 'ONNX', 'SHARED_MODELS', 'QUOTAS'];
  const rows = tenants.map((t) => [
    t.id,
    t.role,
    String(t.weight),
    String(t.tokens.length),
    t.allow_onnx ? 'yes' : 'no',
    t.shared_models.join(',') || '-',
    nonDefaultQuotas(t) || 'defaults',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [header, ...rows]) io.stdout.write(`${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`);
  return 0;
}

/** Read-modify-write of the tenants file under its lock. `create`: a missing file starts empty. */
async function edit(path: string, change: (doc: TenantsDocument) => void, create = true): Promise<void> {
  const format = formatOfPath(path);
  await withFileLock(path, async () => {
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' || !create) throw new TenancyConfigError(`tenants file ${path}: cannot read (${code ?? 'error'})`);
    }
    const doc = TenantsDocument.parse(text, format, path);
    change(doc);
    await writeFileAtomic(path, doc.toString());
  });
}

function parseRole(v: string | undefined): 'admin' | 'tenant' {
  if (v === undefined || v === 'tenant') return 'tenant';
  if (v === 'admin') return 'admin';
  throw new UsageError(`--role must be admin or tenant`);
}

function parseWeight(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0 || n > MAX_WEIGHT) throw new UsageError(`--weight must be a number > 0 and <= ${MAX_WEIGHT}`);
  return n;
}

const BINARY_SUFFIX: Record<string, number> = { '': 1, ki: 1024, mi: 1024 ** 2, gi: 1024 ** 3, ti: 1024 ** 4 };

/** `key=value` pairs into quotas; `*_bytes` values may carry KiB/MiB/GiB/TiB. */
export function parseQuotas(pairs: readonly string[]): Partial<TenantQuotas> {
  const out: Partial<TenantQuotas> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = (eq < 0 ? pair : pair.slice(0, eq)) as keyof TenantQuotas;
    if (eq < 0 || !(QUOTA_KEYS as readonly string[]).includes(key)) {
      throw new UsageError(`--quota expects key=value with key one of: ${QUOTA_KEYS.join(', ')}`);
    }
    const raw = pair
      .slice(eq + 1)
      .trim()
      .replace(/_/g, '');
    const m = /^([0-9]+(?:\.[0-9]+)?)\s*(?:(ki|mi|gi|ti)b?)?$/i.exec(raw);
    const suffix = m?.[2]?.toLowerCase() ?? '';
    if (!m || (suffix !== '' && !key.endsWith('_bytes'))) throw new UsageError(`--quota ${key}: not a number`);
    const value = Number(m[1]) * BINARY_SUFFIX[suffix]!;
    const problem = quotaValueProblem(key, value);
    if (problem) throw new UsageError(`--quota ${key}: ${problem}`);
    out[key] = value;
  }
  return out;
}

function nonDefaultQuotas(t: TenantConfig): string {
  return QUOTA_KEYS.filter((k) => t.quotas[k] !== DEFAULT_TENANT_QUOTAS[k])
    .map((k) => `${k}=${t.quotas[k]}`)
    .join(',');
}
