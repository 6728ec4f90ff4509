/**
 * Multi-tenant mode on the gRPC frontend (DESIGN "Multi-tenancy"): every RPC except ServerLive /
 * ServerReady carries `authorization: Bearer <token>` metadata (tritonclient.grpc sends its
 * `headers=` as metadata). Admission is the frontend's (../admission.ts, the path HTTP takes too):
 * authentication by the tenant registry, failures counted per client address (tarpit, aggregated
 * audit lines), each request counted against its tenant's rate in the data plane's one count. Here
 * a call becomes the admission's credentials and address; its refusals map to UNAUTHENTICATED /
 * PERMISSION_DENIED / RESOURCE_EXHAUSTED in status.ts. Tokens are never logged.
 */
import type { Metadata } from '@grpc/grpc-js';
import type { Principal } from '../../contract/types.js';
import type { Admission } from '../admission.js';

/**
 * The `authorization` of a call's metadata: its one value, `'multiple'` for several (refused as
 * malformed, as a second header is over HTTP), undefined for none.
 */
export function authorizationOf(md: Metadata): string | undefined {
  const values = md.get('authorization');
  if (values.length > 1) return 'multiple';
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
}

/**
 * The principal of one call (or one request on a stream), admitted by `admission`.
 * @throws AuthenticationError (missing / malformed / unknown credentials), AccessError `exhausted`
 *   (tenant over its rate) or `forbidden` (a burst below one request)
 */
export async function callPrincipal(admission: Admission, call: { metadata: Metadata; getPeer(): string }): Promise<Principal> {
  return (await admission.admit(authorizationOf(call.metadata), peerAddress(call.getPeer()))).principal;
}

/**
 * The client address of a grpc-js peer string (`ipv4:1.2.3.4:5678`, `ipv6:[::1]:5678`,
 * `unix:/path`), without the port: what failures are counted under.
 */
export function peerAddress(peer: string): string {
  const m = /^ipv[46]:\[?([^\]]*?)\]?:\d+$/.exec(peer);
  return m ? m[1]! : peer;
}
