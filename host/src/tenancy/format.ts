/**
 * Tenants file text ⇄ plain data, by extension: `.yaml` / `.yml` (the `yaml` package, YAML 1.2
 * core schema) or `.json`. Syntax errors are reported by position only: the parsers' own messages
 * quote the offending source line, which could hold a token hash.
 */
import { extname } from 'node:path';
import { parseDocument } from 'yaml';

export type TenantsFileFormat = 'yaml' | 'json';

/**
 * Thrown for a bad tenants file, JWKS file or JWT setting; the message names the file, tenant and
 * field, never a token or hash.
 */
export class TenancyConfigError extends Error {
  override name = 'TenancyConfigError';
}

/**
 * The format of a tenants file from its extension.
 * @throws TenancyConfigError for another extension.
 */
export function formatOfPath(path: string): TenantsFileFormat {
  const ext = extname(path).toLowerCase();
  if (ext === '.yaml' || ext === '.yml') return 'yaml';
  if (ext === '.json') return 'json';
  throw new TenancyConfigError(`tenants file ${path}: unknown extension '${ext}' (use .yaml, .yml or .json)`);
}

/**
 * Parses `text` into plain data (objects, arrays, strings, numbers, booleans, null). Duplicate
 * keys are errors in both formats.
 * @param source names the file in error messages.
 * @throws TenancyConfigError on a syntax error (line and column, no source excerpt).
 */
export function parseText(text: string, format: TenantsFileFormat, source: string): unknown {
  if (format === 'json') {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      const pos = /at position (\d+)/.exec(String((err as Error).message));
      const where = pos ? ` at ${lineCol(text, Number(pos[1]))}` : '';
      throw new TenancyConfigError(`tenants file ${source}: invalid JSON${where}`);
    }
    // JSON.parse keeps the last of duplicate keys silently; JSON is YAML, so let yaml find them.
    const doc = parseDocument(text, { schema: 'json', uniqueKeys: true, prettyErrors: false });
    const dup = doc.errors.find((e) => e.code === 'DUPLICATE_KEY');
    if (dup) throw new TenancyConfigError(`tenants file ${source}: duplicate key at ${lineCol(text, dup.pos[0])}`);
    return value;
  }
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false, schema: 'core' });
  const err = doc.errors[0];
  if (err) {
    const what = err.code === 'DUPLICATE_KEY' ? 'duplicate key' : `YAML syntax error (${err.code})`;
    throw new TenancyConfigError(`tenants file ${source}: ${what} at ${lineCol(text, err.pos[0])}`);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch {
    throw new TenancyConfigError(`tenants file ${source}: YAML aliases could not be resolved (too many, or cyclic)`);
  }
}

/** `line L, column C` (1-based) of a character offset. */
function lineCol(text: string, offset: number): string {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `line ${line}, column ${column}`;
}
