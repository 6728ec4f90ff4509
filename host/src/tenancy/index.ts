/**
 * Tenancy: tenants file, authentication, the `warden tenants` CLI and audit records
 * (DESIGN "Multi-tenancy"). The frontends' admission (frontend/admission.ts) uses
 * {@link TenantRegistry.authenticate} and {@link authFailure}; the server opens the registry from
 * `--tenants` (and the `--jwt-*` flags).
 */
export { auditEvent, scrub, type AuditFile, type AuditRecord } from './audit.js';
export { runTenantsCli, TENANTS_USAGE, type TenantsCliIo } from './cli.js';
export { formatOfPath, TenancyConfigError, type TenantsFileFormat } from './format.js';
export { authFailure, AUTH_REALM, type AuthFailureResponse } from './http-auth.js';
export { JwtVerifier, type JwtOptions, type JwtResult } from './jwt.js';
export { parseTenantsText, TENANT_ID_RE, validateTenantsDocument } from './parse.js';
export { principalOf, TenantRegistry, type AuthFailureReason, type AuthResult, type TenantRegistryOptions } from './registry.js';
export { generateToken, hashesEqual, hashToken, parseBearer } from './token.js';
export {
  CONFIG_BOUND_KEYS,
  DEFAULT_CONFIG_BOUNDS,
  DEFAULT_TENANT_QUOTAS,
  DEFAULT_WEIGHT,
  QUOTA_KEYS,
  type TenantConfig,
  type TenantConfigBounds,
  type TenantQuotas,
  type TenantRole,
} from './types.js';
