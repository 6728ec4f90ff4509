/**
 * The `warden:backend/inference` capability of a model being loaded (contract/bls.ts,
 * ./host/inference.ts): its grants read from the config, each checked against what the model's
 * owner can call now — the lifecycle has loaded the granted models first (lifecycle/dependencies.ts),
 * so a name that does not resolve is unknown, not shared with the owner, or failed to load.
 */
import { blsGrants, DEFAULT_BLS_INFLIGHT, MAX_BLS_INFLIGHT, PARAM_BLS_INFLIGHT } from '../../contract/bls.js';
import { grantUnresolved } from '../../contract/bls.errors.js';
import { asTritonError } from '../../contract/errors.js';
import { ownerPrincipal } from '../../contract/load-context.js';
import type { ModelLoadContext } from '../../contract/types.js';
import { positiveIntParam } from '../../config/parameters.js';
import type { InferenceCalls } from './host/inference.js';

/**
 * The calls the instances of `ctx`'s model may make, or undefined when its config grants none.
 * @param memoryBytes the instance's memory limit: what responses held for the guest may take
 * @throws TritonError INVALID_ARG for malformed grants or `bls_max_inflight`, and for a granted
 *   model the owner cannot call (the same text whether it is unknown, not shared or not ready)
 */
export function inferenceCalls(ctx: ModelLoadContext, memoryBytes: number): InferenceCalls | undefined {
  const grants = blsGrants(ctx.config);
  if (grants.size === 0) return undefined;
  const principal = ownerPrincipal(ctx.key);
  for (const name of grants.keys()) {
    try {
      // a server without lookups (a backend loaded on its own): calls fail at call time
      ctx.server.inferenceTarget?.(principal, name, -1);
    } catch (e) {
      throw grantUnresolved(ctx.name, name, asTritonError(e).code === 'UNAVAILABLE' ? 'it is not ready' : 'no such model is available to this model');
    }
  }
  const inflight = positiveIntParam(ctx.config, PARAM_BLS_INFLIGHT) ?? DEFAULT_BLS_INFLIGHT;
  return { server: ctx.server, key: ctx.key, grants, maxInflight: Math.min(inflight, MAX_BLS_INFLIGHT), memoryBytes };
}
