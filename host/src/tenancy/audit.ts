/**
 * Audit records (DESIGN "Multi-tenancy"): one pino line at level info with `audit: true` per model
 * load / unload / delete and per failed authentication. Only the listed fields are copied, so a
 * caller cannot spread a request (and its `Authorization` header) into the record by accident, and
 * `reason` is scrubbed of anything that looks like a bearer credential.
 */
import type { Logger } from 'pino';

/** A file written by an upload. */
export interface AuditFile {
  /** Path relative to the model's directory (e.g. `1/model.wasm`). */
  path: string;
  /** SHA-256 of the content, lowercase hex. */
  sha256: string;
  /** Size, bytes (0 for a file named by a digest that was refused). */
  bytes: number;
  /** Named by its SHA-256 instead of sent (the load API's `file_sha256:`, docs/tenancy.md "Uploads by digest"). */
  byDigest?: boolean;
}

export interface AuditRecord {
  event: 'load' | 'unload' | 'delete' | 'auth_failure';
  /** Tenant id; `null` when unknown (an authentication failure with no matching tenant). */
  tenant: string | null;
  model?: string;
  version?: number;
  files?: AuditFile[];
  outcome: 'ok' | 'error';
  /** Error text or auth failure reason (`missing` / `malformed` / `unknown`, plus detail). At most 512 characters kept. */
  reason?: string;
  /** Client address (`req.ip`). */
  remote?: string;
  /**
   * Failures this line stands for (aggregated authentication failures of one address over an
   * interval, tenancy/unauthenticated.ts); absent = one.
   */
  count?: number;
  /** The frontend of an authentication failure (`http` / `grpc`). */
  protocol?: 'http' | 'grpc';
}

const MAX_REASON = 512;

/** Writes `record` as one info line `{audit: true, ...}` with message `audit <event>`. */
export function auditEvent(logger: Logger, record: AuditRecord): void {
  const line: Record<string, unknown> = { audit: true, event: record.event, tenant: record.tenant, outcome: record.outcome };
  if (record.model !== undefined) line.model = record.model;
  if (record.version !== undefined) line.version = record.version;
  if (record.files !== undefined)
    line.files = record.files.map((f) => ({ path: f.path, sha256: f.sha256, bytes: f.bytes, ...(f.byDigest ? { by_digest: true } : {}) }));
  if (record.reason !== undefined) line.reason = scrub(record.reason);
  if (record.remote !== undefined) line.remote = record.remote;
  if (record.count !== undefined) line.count = record.count;
  if (record.protocol !== undefined) line.protocol = record.protocol;
  logger.info(line, `audit ${record.event}`);
}

/** Removes credentials (`Bearer x`, `sha256:<hex>`, JWT-shaped strings) from free text and bounds its length. */
export function scrub(text: string): string {
  return text
    .replace(/\b(bearer)\s+\S+/gi, '$1 [redacted]')
    .replace(/sha256:[0-9a-f]{16,}/gi, 'sha256:[redacted]')
    .replace(/\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, '[redacted jwt]')
    .slice(0, MAX_REASON);
}
