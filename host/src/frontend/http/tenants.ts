/**
 * `GET /v2/tenants` (Warden's addition, multi-tenant mode only; DESIGN "Multi-tenancy"): the
 * tenants the caller may see, with their quotas and usage, for the web console's operator view
 * (docs/console.md) and for scripts. An administrator sees every tenant of the tenants file; a
 * tenant sees only its own entry (its quotas are what the console's upload form checks against).
 * Each entry lists the tenant's models (its repository index), so an operator sees every model.
 * Tokens, their hashes and config bounds never leave. Usage is read through the data plane under
 * each tenant's own principal, so it counts exactly what that tenant would see.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../../contract/types.js';
import { principalOf } from '../../tenancy/registry.js';
import type { TenantConfig } from '../../tenancy/types.js';
import type { FrontendContext } from './context.js';

/** One tenant's usage: its models (any state), those ready, and its serving models' request counts. */
export interface TenantUsage {
  models: number;
  ready_models: number;
  inference_count: number;
  failed_count: number;
  pending_count: number;
}

/** One statistics entry, as `ServerApi.modelStatistics` gives it in multi-tenant mode (spec §3.2 plus Warden's fields). */
type StatEntry = { tenant?: string; inference_count?: number; pending_count?: number; inference_stats?: { fail?: { count?: number } } };

/** The answer of `GET /v2/tenants` for `caller` (`tenant`: its entry; undefined for an operator principal without one). */
export async function tenantsAnswer(ctx: FrontendContext, caller: Principal, tenant: TenantConfig | null): Promise<string> {
  const registry = ctx.tenants!;
  const visible = caller.role === 'admin' ? registry.list() : registry.list().filter((t) => t.id === caller.namespace);
  // Statistics once, as the caller sees them (an administrator: every namespace), grouped by namespace.
  const stats = ctx.api.modelStatistics(caller).model_stats as StatEntry[];
  const byNamespace = new Map<string, StatEntry[]>();
  for (const s of stats) {
    const ns = s.tenant ?? '';
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), s]);
  }
  const tenants = await Promise.all(
    visible.map(async (t) => {
      const principal = principalOf(t);
      // The index a tenant's own principal gets, less the operator models shared with it.
      const shared = new Set(t.role === 'tenant' ? t.shared_models : []);
      const index = (await ctx.api.repositoryIndex(principal, false)).filter((e) => !shared.has(e.name));
      const own = byNamespace.get(principal.namespace) ?? [];
      const usage: TenantUsage = {
        models: new Set(index.map((e) => e.name)).size,
        ready_models: new Set(index.filter((e) => e.state === 'READY').map((e) => e.name)).size,
        inference_count: own.reduce((n, s) => n + (s.inference_count ?? 0), 0),
        failed_count: own.reduce((n, s) => n + (s.inference_stats?.fail?.count ?? 0), 0),
        pending_count: own.reduce((n, s) => n + (s.pending_count ?? 0), 0),
      };
      return {
        id: t.id,
        role: t.role,
        weight: t.weight,
        shared_models: [...t.shared_models],
        allow_onnx: t.allow_onnx,
        quotas: { ...t.quotas },
        usage,
        models: index,
      };
    }),
  );
  return JSON.stringify({ caller: { id: tenant?.id ?? '', role: caller.role }, tenants });
}

/** The handler of `GET /v2/tenants` (registered in multi-tenant mode only: app.ts). */
export async function handleTenants(ctx: FrontendContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  return reply
    .code(200)
    .type('application/json')
    .send(await tenantsAnswer(ctx, ctx.principalOf(req), req.tenant));
}
