/**
 * Request admission, the one path every frontend entry takes (DESIGN "Multi-tenancy"): Fastify's
 * hook (http/auth.ts), the `/infer` fast path and the front-end threads' ring (http/fast-path.ts,
 * http/app.ts), gRPC unary calls and every request on a gRPC stream (grpc/service.ts,
 * grpc/stream.ts).
 *
 * - Authentication: `Authorization: Bearer <token>` (a header over HTTP, metadata over gRPC) is
 *   turned into the caller's principal by the tenant registry; a server without tenants is
 *   single-user and every caller is the {@link OPERATOR}.
 * - Failed authentications are counted per client address (tenancy/unauthenticated.ts): past the
 *   address's failure rate the refusal is held back (the tarpit), and audit lines are aggregated.
 * - Each request is counted against its tenant's rate in the data plane's one
 *   {@link TenantRequestRate} (`ServerApi.requestRate`), so a tenant that uses HTTP and gRPC
 *   together gets its `requests_per_second` once. Administrators are not rate limited.
 * - Over-quota refusals (AccessError `exhausted`) are held back by {@link OVER_QUOTA_DELAY_MS}
 *   before they are answered ({@link overQuotaDelay}).
 *
 * Refusals are AccessErrors, independent of the transport: each frontend maps them to its own
 * statuses (HTTP 401 / 403 / 429, gRPC UNAUTHENTICATED / PERMISSION_DENIED / RESOURCE_EXHAUSTED).
 * Tokens are never logged.
 */
import type { Logger } from 'pino';
import { AccessError } from '../contract/errors.js';
import { SINGLE_USER, type Principal } from '../contract/types.js';
import { authFailure } from '../tenancy/http-auth.js';
import type { AuthFailureReason, TenantRegistry } from '../tenancy/registry.js';
import { OVER_QUOTA_DELAY_MS, type TenantRequestRate } from '../tenancy/request-rate.js';
import type { TenantConfig } from '../tenancy/types.js';
import { FailedAuthentications } from '../tenancy/unauthenticated.js';

export { OVER_QUOTA_DELAY_MS };

/** Who sends a request: its principal and, in multi-tenant mode, its tenant's entry. */
export interface Caller {
  readonly principal: Principal;
  /** Undefined for the operator of a single-user server. */
  readonly tenant: TenantConfig | undefined;
}

/** The caller of every request of a single-user server. */
export const OPERATOR: Caller = Object.freeze({ principal: SINGLE_USER, tenant: undefined });

/**
 * Credentials that did not authenticate: AccessError `unauthenticated` with the registry's reason
 * (the HTTP frontend words its `WWW-Authenticate` challenge by it) and the reason's text.
 */
export class AuthenticationError extends AccessError {
  constructor(readonly failure: AuthFailureReason) {
    super('unauthenticated', authFailure(failure).message);
  }
}

export interface AdmissionOptions {
  /** The tenants (hot-reloaded; quotas are read per request). Absent = single-user mode. */
  tenants?: TenantRegistry;
  /** The data plane's count of each tenant's requests (`ServerApi.requestRate`), one for every frontend. */
  rate: TenantRequestRate;
  /** Where the audit lines of failed authentications go. */
  logger: Logger;
  /** The frontend, written into those audit lines. */
  protocol: 'http' | 'grpc';
}

/** The admission of one frontend: authentication, its failures per address, the shared request rate. */
export class Admission {
  private readonly tenants: TenantRegistry | undefined;
  private readonly rate: TenantRequestRate;
  /** Failed authentications per client address: the tarpit and the aggregated audit lines. */
  private readonly failures: FailedAuthentications;

  constructor(opts: AdmissionOptions) {
    this.tenants = opts.tenants;
    this.rate = opts.rate;
    this.failures = new FailedAuthentications(opts.logger, opts.protocol);
  }

  /** Whether requests must authenticate (a tenants file is in use). */
  get multiTenant(): boolean {
    return this.tenants !== undefined;
  }

  /**
   * Who `authorization` names, counting nothing: for the fast paths, which hand a request whose
   * credentials do not authenticate to the full path ({@link authenticate} there counts the failure).
   * @returns the caller ({@link OPERATOR} in single-user mode), or undefined when the credentials
   *   do not authenticate (or the registry failed)
   */
  async identify(authorization: string | undefined): Promise<Caller | undefined> {
    if (!this.tenants) return OPERATOR;
    try {
      const r = await this.tenants.authenticate(authorization);
      return r.ok ? { principal: r.principal, tenant: r.tenant } : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Authenticate a request's credentials; a failure is counted against `address` and, past that
   * address's failure rate, held back before it is thrown.
   * @param authorization the `Authorization` value (`'multiple'` when a request carried several)
   * @param address the client address (undefined: unknown)
   * @returns the caller ({@link OPERATOR} in single-user mode)
   * @throws AuthenticationError for missing, malformed or unknown credentials
   */
  async authenticate(authorization: string | undefined, address: string | undefined): Promise<Caller> {
    if (!this.tenants) return OPERATOR;
    const r = await this.tenants.authenticate(authorization);
    if (r.ok) return { principal: r.principal, tenant: r.tenant };
    const delayMs = this.failures.failed(address, r.reason);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    throw new AuthenticationError(r.reason);
  }

  /**
   * Count one request of `caller` against its tenant's request rate (nothing for the operator and
   * administrators).
   * @throws AccessError `exhausted` over the rate (with the seconds to wait), `forbidden` when the
   *   tenant's burst is below one request
   */
  count(caller: Caller): void {
    if (caller.tenant) this.rate.admit(caller.tenant);
  }

  /**
   * {@link authenticate}, then {@link count}: the whole admission of one request.
   * @throws AuthenticationError, AccessError as those
   */
  async admit(authorization: string | undefined, address: string | undefined): Promise<Caller> {
    const caller = await this.authenticate(authorization, address);
    this.count(caller);
    return caller;
  }

  /** Write the pending aggregated audit lines (server shutdown). */
  close(): void {
    this.failures.close();
  }
}

/**
 * The tarpit of over-quota answers: an AccessError `exhausted` (request rate, upload rate,
 * in-flight quota) is held back by {@link OVER_QUOTA_DELAY_MS} before it is answered, so a client
 * that keeps sending past its limit costs one cheap answer per connection (HTTP) or call (gRPC)
 * per delay, instead of one per request it can fire (measured: a c=32 flood made 17k rejections/s;
 * other tenants' p99 tripled).
 * @returns a promise to await before answering `err`, or undefined when `err` is answered at once
 */
export function overQuotaDelay(err: unknown): Promise<void> | undefined {
  if (!(err instanceof AccessError) || err.kind !== 'exhausted') return undefined;
  return new Promise((r) => setTimeout(r, OVER_QUOTA_DELAY_MS));
}
