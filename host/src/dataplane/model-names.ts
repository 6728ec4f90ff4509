/**
 * Name resolution of the data plane: the one place a (principal, model name) pair becomes a model
 * key (DESIGN "Multi-tenancy": a tenant names only its own models and the operator models shared
 * with it; another tenant's model is indistinguishable from an unknown one), and a principal's
 * tenants-file entry.
 */
import { TENANT_ID_PATTERN, modelNameProblem } from '../contract/names.js';
import type { ModelKey, Principal } from '../contract/types.js';
import type { ModelVersion } from '../lifecycle/model-version.js';
import type { ModelRepositoryManager } from '../lifecycle/repository-manager.js';
import type { TenantConfig } from '../tenancy/types.js';
import { modelNameInvalid } from './inference.errors.js';

/** The tenants as the data plane reads them (the registry of host/src/tenancy, reloaded live). */
export interface TenantDirectory {
  get(id: string): TenantConfig | undefined;
}

/** `<tenant>/<model>`: how an admin addresses a tenant's model. */
const ADMIN_QUALIFIED = new RegExp(`^(${TENANT_ID_PATTERN})/(.+)$`);

/**
 * A model name inside an error message: quoted as Triton does ('name'), with control characters
 * and quotes escaped so a hostile name cannot forge log lines or message text.
 */
function quoteName(name: string): string {
  return `'${JSON.stringify(name).slice(1, -1).replace(/'/g, "\\'")}'`;
}

export class ModelNames {
  constructor(
    private readonly manager: ModelRepositoryManager,
    private readonly tenants: TenantDirectory | undefined,
  ) {}

  /** Whether the server runs in multi-tenant mode. */
  get multiTenant(): boolean {
    return this.tenants !== undefined;
  }

  /** The tenants-file entry of a tenant's principal (undefined for the operator and in single-user mode). */
  tenantOf(principal: Principal): TenantConfig | undefined {
    return principal.role === 'tenant' ? this.tenants?.get(principal.namespace) : undefined;
  }

  /** The tenant entry of an in-process call's caller ({@link Principal.caller}); undefined for the operator and admins. */
  callerTenant(id: string): TenantConfig | undefined {
    const t = id === '' ? undefined : this.tenants?.get(id);
    return t?.role === 'tenant' ? t : undefined;
  }

  /**
   * The model key a principal means by `name`: its own namespace. Nothing else maps names to
   * keys. Lookups need no name check (a name that cannot be a model name is simply not found;
   * nothing touches the filesystem); load and unload check it ({@link controlKeyOf}).
   */
  keyOf(principal: Principal, name: string): ModelKey {
    if (principal.role === 'admin') return this.adminKeyOf(principal, name);
    const own = { namespace: principal.namespace, name };
    // A tenant's own model first (while it holds its name: loaded, loading or failed, not after
    // an unload); else an operator model shared with it; else its own (not found, with exactly the
    // text any unknown model gets — another tenant's model is indistinguishable).
    if (this.manager.holdsName(own)) return own;
    if (this.tenantOf(principal)?.shared_models.includes(name)) return { namespace: '', name };
    return own;
  }

  /** {@link keyOf} for load / unload. @throws TritonError INVALID_ARG for an invalid name */
  controlKeyOf(principal: Principal, name: string): ModelKey {
    const key = principal.role === 'admin' ? this.adminKeyOf(principal, name) : { namespace: principal.namespace, name };
    const problem = modelNameProblem(key.name);
    if (problem !== undefined) throw modelNameInvalid(quoteName(name), problem);
    return key;
  }

  /** The version serving `name` for `principal` (-1 = the highest ready). @throws TritonError NOT_FOUND / UNAVAILABLE */
  version(principal: Principal, name: string, version: number): ModelVersion {
    return this.manager.getVersion(this.keyOf(principal, name), version);
  }

  /** An admin's key: `<tenant>/<model>` names a tenant's model (multi-tenant mode), else its own namespace. */
  private adminKeyOf(principal: Principal, name: string): ModelKey {
    const q = this.tenants && principal.namespace === '' ? ADMIN_QUALIFIED.exec(name) : null;
    return q ? { namespace: q[1]!, name: q[2]! } : { namespace: principal.namespace, name };
  }
}
