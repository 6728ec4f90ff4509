/**
 * Per-tenant request rate, the one rule of both frontends (HTTP: frontend/http/auth.ts and the
 * `/infer` fast path; gRPC: frontend/grpc/auth.ts) — at most `burst` requests per window of
 * `burst / requests_per_second` seconds, counted per tenant; administrators are not limited. Quotas are read per request, so a tenants-file reload applies at once.
 */
import { AccessError } from '../core/errors.js';
import type { TenantConfig } from './types.js';

/**
 * How long an over-quota answer (429 / RESOURCE_EXHAUSTED: rate or in-flight quota) is held
 * before it is sent, ms: a client that keeps sending past its limit then costs one cheap answer
 * per connection (HTTP) or call (gRPC) per delay, instead of one per request it can fire.
 */
export const OVER_QUOTA_DELAY_MS = 250;

export class TenantRequestRate {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Count `count` requests of `tenant` (default one; an ensemble request is charged its composing
   * inferences too).
   * @throws AccessError 429 (with the seconds until the window ends) when the tenant is over its
   *   rate; 403 when `count` is more than its burst (it could never be admitted)
   */
  admit(tenant: TenantConfig, count = 1): void {
    if (tenant.role === 'admin') return;
    const q = tenant.quotas;
    const max = Math.max(1, Math.floor(q.burst));
    if (count > max) {
      throw new AccessError(403, `a request costing ${count} inferences is more than tenant '${tenant.id}' may send at once (burst ${q.burst})`);
    }
    const windowMs = q.requests_per_second > 0 ? Math.ceil((1000 * q.burst) / q.requests_per_second) : 1000;
    const t = this.now();
    let w = this.windows.get(tenant.id);
    if (!w || t - w.start >= windowMs) {
      w = { start: t, count: 0 };
      this.windows.set(tenant.id, w);
    }
    if (w.count + count > max) {
      throw new AccessError(
        429,
        `tenant '${tenant.id}' exceeded its request rate (requests_per_second ${q.requests_per_second}, burst ${q.burst})`,
        Math.ceil((w.start + windowMs - t) / 1000),
      );
    }
    w.count += count;
  }
}
