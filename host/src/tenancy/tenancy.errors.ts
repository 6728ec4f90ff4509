/**
 * The error catalogue of tenancy (tenancy/: tenants' request and upload rates, their model and
 * instance quotas, the config allowlist and bounds; DESIGN "Multi-tenancy"), one function per
 * message. All Warden's text (Triton has no tenants): quotas no retry can meet are `forbidden`
 * (403 / PERMISSION_DENIED), rates `exhausted` with the seconds to wait (429 / RESOURCE_EXHAUSTED),
 * a config outside the allowlist INVALID_ARG.
 */
import { type AccessError, type TritonError, exhausted, forbidden, invalidArg } from '../contract/errors.js';

/** `forbidden`: one request costing more inferences than the tenant's burst. */
export function requestOverBurst(tenant: string, count: number, burst: number): AccessError {
  return forbidden(`a request costing ${count} inferences is more than tenant '${tenant}' may send at once (burst ${burst})`);
}

/** `exhausted`: the tenant is over its request rate; retry after `retryS` seconds. */
export function requestRateExceeded(tenant: string, perSecond: number, burst: number, retryS: number): AccessError {
  return exhausted(`tenant '${tenant}' exceeded its request rate (requests_per_second ${perSecond}, burst ${burst})`, retryS);
}

/** `forbidden`: one load request larger than the tenant's upload bytes per minute. */
export function uploadOverRate(tenant: string, bytes: number, perMinute: number): AccessError {
  return forbidden(`a load request of ${bytes} bytes is more than tenant '${tenant}' may upload per minute (upload_bytes_per_minute ${perMinute})`);
}

/** `exhausted`: the tenant is over its upload rate; retry after `retryS` seconds. */
export function uploadRateExceeded(tenant: string, perMinute: number, retryS: number): AccessError {
  return exhausted(`tenant '${tenant}' exceeded its upload rate (upload_bytes_per_minute ${perMinute})`, retryS);
}

/** `forbidden`: a namespace no tenant is configured for. */
export function tenantUnknown(namespace: string): AccessError {
  return forbidden(`tenant '${namespace}' is not configured`);
}

/** `forbidden`: a model that would bring the tenant over a quota; `what` what is counted, `quota` its name. */
export function overQuota(model: string, tenant: string, asked: number, what: string, limit: number, quota: string): AccessError {
  return forbidden(`model '${model}' would bring tenant '${tenant}' to ${asked} ${what}, over its quota of ${limit} (${quota})`);
}

/** `forbidden`: a tenant whose quotas leave no room for a sandbox. */
export function sandboxQuotaTooSmall(tenant: string): AccessError {
  return forbidden(`tenant '${tenant}' may not run sandboxed models (memory or log quota below the minimum)`);
}

/** INVALID_ARG: a field of a tenant's model config (`path`) that only the operator may set; `why` the reason. */
export function configFieldRefused(model: string, path: string, why: string): TritonError {
  return invalidArg(`model '${model}': ${path} may not be set in a tenant's model config (${why})`);
}

/**
 * INVALID_ARG: a tenant's config field over its bound: `amount` a value (`<path> <n> exceeds`) or a
 * phrase (`<path> has 3 entries, which exceeds`); `limit` the bound, `source` where it comes from,
 * `tenants` whether it is the tenant's own bound or a fixed one.
 */
export function configOverBound(model: string, path: string, amount: number | string, limit: number, source: string, tenants: boolean): TritonError {
  const what = typeof amount === 'number' ? `${path} ${amount}` : `${path} ${amount}, which`;
  return invalidArg(`model '${model}': ${what} exceeds ${tenants ? "this tenant's bound" : 'the bound'} ${limit} (${source})`);
}

/** INVALID_ARG: a number in a tenant's config below the field's minimum; `value` as given. */
export function configBelowMinimum(model: string, path: string, value: number | string, min: number): TritonError {
  return invalidArg(`model '${model}': ${path} ${value} is below the minimum ${min}`);
}

/** INVALID_ARG: a number in a tenant's config that is not finite, or (`finite`) of a field without a bound. */
export function configNumberUnbounded(model: string, path: string, finite: boolean): TritonError {
  return invalidArg(`model '${model}': ${path} ${finite ? 'has no bound (not on the allowlist)' : 'is not a finite number'}`);
}
