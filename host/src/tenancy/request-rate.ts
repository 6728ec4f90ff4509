/**
 * Per-tenant rates, the one rule of both frontends (every entry admits through
 * frontend/admission.ts with the data plane's one TenantRequestRate): requests — at most `burst` per window of
 * `burst / requests_per_second` seconds — and load-request bytes per minute. Counted per tenant;
 * administrators are not limited. Quotas are read per request, so a tenants-file reload applies
 * at once.
 */
import type { TenantConfig } from './types.js';
import * as tenancyErrors from './tenancy.errors.js';

/**
 * How long an over-quota answer (429 / RESOURCE_EXHAUSTED: rate or in-flight quota) is held
 * before it is sent, ms: a client that keeps sending past its limit then costs one cheap answer
 * per connection (HTTP) or call (gRPC) per delay, instead of one per request it can fire.
 */
export const OVER_QUOTA_DELAY_MS = 250;

/** Fixed windows of a count per key (a tenant id). */
class Windows {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly now: () => number) {}

  /**
   * Add `n` to `key`'s count in its window of `windowMs`, unless that brings it over `max`.
   * @returns undefined when taken; else the seconds until the window ends (nothing taken)
   */
  take(key: string, windowMs: number, max: number, n: number): number | undefined {
    const t = this.now();
    let w = this.windows.get(key);
    if (!w || t - w.start >= windowMs) {
      w = { start: t, count: 0 };
      this.windows.set(key, w);
    }
    if (w.count + n > max) return Math.max(1, Math.ceil((w.start + windowMs - t) / 1000));
    w.count += n;
    return undefined;
  }
}

export class TenantRequestRate {
  private readonly windows: Windows;

  constructor(now: () => number = Date.now) {
    this.windows = new Windows(now);
  }

  /**
   * Count `count` requests of `tenant` (default one; an ensemble request is charged its composing
   * inferences too).
   * @throws AccessError `exhausted` (with the seconds until the window ends) when the tenant is over
   *   its rate; `forbidden` when `count` is more than its burst (it could never be admitted)
   */
  admit(tenant: TenantConfig, count = 1): void {
    if (tenant.role === 'admin') return;
    const q = tenant.quotas;
    const max = Math.max(1, Math.floor(q.burst));
    if (count > max) {
      throw tenancyErrors.requestOverBurst(tenant.id, count, q.burst);
    }
    const windowMs = q.requests_per_second > 0 ? Math.ceil((1000 * q.burst) / q.requests_per_second) : 1000;
    const retryS = this.windows.take(tenant.id, windowMs, max, count);
    if (retryS !== undefined) {
      throw tenancyErrors.requestRateExceeded(tenant.id, q.requests_per_second, q.burst, retryS);
    }
  }
}

/**
 * Each tenant's load-request bytes per minute (`upload_bytes_per_minute`): the HTTP frontend charges
 * a load request's `Content-Length` before its body is read, gRPC the file overrides it received.
 * Administrators are not limited.
 */
export class TenantUploadRate {
  private readonly windows: Windows;

  constructor(now: () => number = Date.now) {
    this.windows = new Windows(now);
  }

  /**
   * Count `bytes` of `tenant`'s load requests.
   * @throws AccessError `exhausted` (with the seconds until the minute ends) past
   *   `upload_bytes_per_minute`; `forbidden` for one request larger than the whole quota
   */
  admit(tenant: TenantConfig, bytes: number): void {
    if (tenant.role === 'admin' || !(bytes > 0)) return;
    const max = tenant.quotas.upload_bytes_per_minute;
    if (bytes > max) {
      throw tenancyErrors.uploadOverRate(tenant.id, bytes, max);
    }
    const retryS = this.windows.take(tenant.id, 60_000, max, bytes);
    if (retryS !== undefined) {
      throw tenancyErrors.uploadRateExceeded(tenant.id, max, retryS);
    }
  }
}
