/**
 * The tenant registry: the tenants file in memory, hot-reloaded, and `authenticate()` which turns
 * an `Authorization` header into a {@link Principal} (DESIGN "Multi-tenancy").
 *
 * Token lookup and timing. The presented token is hashed (SHA-256) and the hash looked up in a
 * `Map` keyed by the stored hashes, then confirmed with `crypto.timingSafeEqual`. The lookup does
 * not scan tenants one by one, so its time does not depend on which tenant (or how many) match.
 * What a `Map` lookup's timing could reveal is how the *hash of the attacker's own guess* relates to
 * stored hashes — e.g. a shared prefix — which is worthless: finding a token whose SHA-256 has a
 * given value means inverting SHA-256 over 256-bit random inputs. The final `timingSafeEqual` over
 * the two digests is what the comparison of secret-derived bytes goes through.
 *
 * A registry opened with `--tenants` is in multi-tenant mode even when the file lists no tenants
 * (every request is then refused): only a server started without `--tenants` is single-user.
 */
import { readFile } from 'node:fs/promises';
import { pino, type Logger } from 'pino';
import type { Principal } from '../contract/types.js';
import { formatOfPath, TenancyConfigError } from './format.js';
import { JwtVerifier, looksLikeJwt, type JwtOptions } from './jwt.js';
import { parseTenantsText } from './parse.js';
import { digestOfStoredHash, hashesEqual, parseBearer, tokenDigest } from './token.js';
import type { TenantConfig } from './types.js';
import { watchFileContent, type FileWatch } from './watch.js';

/** Why a request was not authenticated: no header; a header that is not `Bearer <token>` (or a broken JWT); a token nobody holds. */
export type AuthFailureReason = 'missing' | 'malformed' | 'unknown';

/** Outcome of {@link TenantRegistry.authenticate}. `detail` is a fixed phrase for logs (never token content). */
export type AuthResult =
  { ok: true; tenant: TenantConfig; principal: Principal; via: 'token' | 'jwt' } | { ok: false; reason: AuthFailureReason; detail?: string };

export interface TenantRegistryOptions {
  /** Reload and error messages go here (never tokens or hashes). Default: silent. */
  logger?: Logger;
  /** Accept JWTs as well as the file's tokens. */
  jwt?: JwtOptions;
  /** Watch the tenants file (and a JWKS file) for changes; default true. */
  watch?: boolean;
  /** Quiet period after a change event before re-reading, ms (default 100). */
  debounceMs?: number;
  /** Stat poll interval (fallback for file systems without change events), ms (default 2000). */
  pollIntervalMs?: number;
}

/** The principal a tenant acts as: admins use the operator's namespace `''`; tenants their id. */
export function principalOf(tenant: TenantConfig): Principal {
  return Object.freeze(tenant.role === 'admin' ? { namespace: '', role: 'admin' } : { namespace: tenant.id, role: 'tenant' });
}

interface TokenEntry {
  tenant: TenantConfig;
  principal: Principal;
  digest: Buffer;
}

/** One immutable generation of the registry; a reload swaps the whole snapshot. */
class Snapshot {
  readonly byId = new Map<string, { tenant: TenantConfig; principal: Principal }>();
  readonly byHash = new Map<string, TokenEntry>();
  constructor(readonly tenants: readonly TenantConfig[]) {
    for (const tenant of tenants) {
      const principal = principalOf(tenant);
      this.byId.set(tenant.id, { tenant, principal });
      for (const h of tenant.tokens) {
        const digest = digestOfStoredHash(h);
        this.byHash.set(digest.toString('hex'), { tenant, principal, digest });
      }
    }
  }
}

/** Tenants and their credentials; see the module comment. */
export class TenantRegistry {
  private snapshot: Snapshot;
  private readonly listeners = new Set<(tenants: readonly TenantConfig[]) => void>();
  private watch?: FileWatch;

  private constructor(
    tenants: readonly TenantConfig[],
    /** The tenants file, or undefined for a registry built in memory. */
    readonly path: string | undefined,
    private readonly logger: Logger,
    private readonly jwt?: JwtVerifier,
  ) {
    this.snapshot = new Snapshot(tenants);
  }

  /**
   * Loads the tenants file at `path` (format by extension) and, unless `watch: false`, reloads it
   * whenever it changes: a change that fails to parse is logged and the previous tenants stay.
   * @throws TenancyConfigError when the file cannot be read or is invalid at startup, or the JWT settings are bad.
   */
  static async open(path: string, options: TenantRegistryOptions = {}): Promise<TenantRegistry> {
    const logger = options.logger ?? pino({ level: 'silent' });
    const format = formatOfPath(path);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new TenancyConfigError(`tenants file ${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const tenants = parseTenantsText(text, format, path);
    const watchOpts = { debounceMs: options.debounceMs, pollIntervalMs: options.pollIntervalMs };
    const jwt = options.jwt ? await JwtVerifier.create(options.jwt, { logger, watch: options.watch === false ? false : watchOpts }) : undefined;
    const registry = new TenantRegistry(tenants, path, logger, jwt);
    if (options.watch !== false) {
      registry.watch = watchFileContent(path, text, (next) => registry.apply(next), {
        ...watchOpts,
        onError: (err) => logger.error({ tenantsFile: path, code: err.code }, 'tenants file cannot be read; keeping the previous tenants'),
      });
    }
    logger.info({ tenantsFile: path, tenants: tenants.length, jwt: jwt !== undefined }, 'tenants loaded');
    return registry;
  }

  /** A registry over fixed tenants (no file, no reload): for tests and embedding. */
  static fromTenants(tenants: readonly TenantConfig[], options: { logger?: Logger; jwt?: JwtVerifier } = {}): TenantRegistry {
    return new TenantRegistry(tenants, undefined, options.logger ?? pino({ level: 'silent' }), options.jwt);
  }

  /**
   * Authenticates an `Authorization` header value: `Bearer <token>` (scheme case-insensitive)
   * where the token is one of the file's (by hash) or, with JWT enabled, a valid JWT whose tenant
   * claim names a tenant of the file. Never throws; never logs.
   */
  async authenticate(authorization: string | undefined): Promise<AuthResult> {
    const parsed = parseBearer(authorization);
    if (parsed.kind !== 'token') return { ok: false, reason: parsed.kind };
    const digest = tokenDigest(parsed.token);
    const entry = this.snapshot.byHash.get(digest.toString('hex'));
    if (entry !== undefined && hashesEqual(digest, entry.digest)) {
      return { ok: true, tenant: entry.tenant, principal: entry.principal, via: 'token' };
    }
    if (this.jwt === undefined || !looksLikeJwt(parsed.token)) return { ok: false, reason: 'unknown' };
    const r = await this.jwt.verify(parsed.token);
    if (!r.ok) return { ok: false, reason: r.reason, detail: r.detail };
    const found = this.snapshot.byId.get(r.tenantId); // the snapshot current after the await
    if (found === undefined) return { ok: false, reason: 'unknown', detail: 'jwt names a tenant the tenants file does not list' };
    return { ok: true, tenant: found.tenant, principal: found.principal, via: 'jwt' };
  }

  /** The tenant with this id, from the current generation. */
  get(id: string): TenantConfig | undefined {
    return this.snapshot.byId.get(id)?.tenant;
  }

  /** All tenants of the current generation, in file order. */
  list(): readonly TenantConfig[] {
    return this.snapshot.tenants;
  }

  /**
   * Calls `listener` with the new tenants after each successful reload (e.g. to apply new weights
   * and quotas). Returns a function that unsubscribes.
   */
  onReload(listener: (tenants: readonly TenantConfig[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Re-reads the file now if it changed (what the watcher does after a change event). */
  async reload(): Promise<void> {
    await this.watch?.check();
  }

  /** Stops watching the files. Authentication keeps working on the last good tenants. */
  close(): void {
    this.watch?.close();
    this.watch = undefined;
    this.jwt?.close();
  }

  private apply(text: string): void {
    const path = this.path!;
    let tenants: TenantConfig[];
    try {
      tenants = parseTenantsText(text, formatOfPath(path), path);
    } catch (err) {
      this.logger.error({ tenantsFile: path, error: (err as Error).message }, 'tenants file not reloaded; keeping the previous tenants');
      return;
    }
    this.snapshot = new Snapshot(tenants);
    this.logger.info({ tenantsFile: path, tenants: tenants.length }, 'tenants file reloaded');
    for (const l of this.listeners) {
      try {
        l(tenants);
      } catch (err) {
        this.logger.error({ err }, 'tenants reload listener failed');
      }
    }
  }
}
