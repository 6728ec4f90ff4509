/**
 * Multi-tenant mode on the gRPC frontend (DESIGN "Multi-tenancy"): every RPC except ServerLive /
 * ServerReady carries `authorization: Bearer <token>` metadata (tritonclient.grpc sends its
 * `headers=` as metadata), authenticated by the same tenant registry as HTTP. Failures are
 * UNAUTHENTICATED with the HTTP frontend's text, counted per client address as HTTP counts them
 * (tenancy/unauthenticated.ts: tarpit past the failure rate, aggregated audit lines); tokens are
 * never logged. Each
 * tenant's request rate is limited by tenancy/request-rate.ts with its quotas (RESOURCE_EXHAUSTED).
 */
import type { Metadata } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AccessError } from '../../contract/errors.js';
import { SINGLE_USER, type Principal } from '../../contract/types.js';
import { authFailure } from '../../tenancy/http-auth.js';
import type { TenantRegistry } from '../../tenancy/registry.js';
import type { TenantRequestRate } from '../../tenancy/request-rate.js';
import { FailedAuthentications } from '../../tenancy/unauthenticated.js';

export class GrpcAuth {
  /** Failed authentications per client address: the tarpit and the aggregated audit lines. */
  private readonly failures: FailedAuthentications;

  /** @param tenants absent = single-user mode (every call is the operator's) */
  /** @param rate the data plane's count of each tenant's requests (ServerApi.requestRate), shared with HTTP */
  constructor(
    private readonly tenants: TenantRegistry | undefined,
    logger: Logger,
    private readonly rate: TenantRequestRate,
  ) {
    this.failures = new FailedAuthentications(logger, 'grpc');
  }

  /** Write the pending aggregated audit lines (server shutdown). */
  close(): void {
    this.failures.close();
  }

  /** The principal of a call that needs no credentials (health). */
  anonymous(): Principal {
    return SINGLE_USER;
  }

  /**
   * The principal of a call from its metadata.
   * @throws AccessError 401 (missing / malformed / unknown credentials), 429 (tenant over its rate)
   */
  async principal(md: Metadata, peer: string): Promise<Principal> {
    if (!this.tenants) return SINGLE_USER;
    const values = md.get('authorization');
    const header = values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
    const r = await this.tenants.authenticate(values.length > 1 ? 'multiple' : header);
    if (!r.ok) {
      const delayMs = this.failures.failed(peerAddress(peer), r.reason);
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      throw new AccessError(401, authFailure(r.reason).message);
    }
    this.rate.admit(r.tenant);
    return r.principal;
  }
}

/**
 * The client address of a grpc-js peer string (`ipv4:1.2.3.4:5678`, `ipv6:[::1]:5678`,
 * `unix:/path`), without the port: what failures are counted under.
 */
export function peerAddress(peer: string): string {
  const m = /^ipv[46]:\[?([^\]]*?)\]?:\d+$/.exec(peer);
  return m ? m[1]! : peer;
}
