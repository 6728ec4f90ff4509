/**
 * Failed authentications, per client address (DESIGN "Multi-tenancy": an unauthenticated flood
 * must not slow the tenants nor flood the log). One rule for both frontends, applied by their
 * admission (frontend/admission.ts; over HTTP Fastify's hook also answers the failures the `/infer`
 * fast path and the front-end threads hand to it):
 *
 * - Rate: an address may fail `burst` times per `windowMs` and is answered at once; every further
 *   failure in that window is answered after {@link OVER_QUOTA_DELAY_MS} (the 429 tarpit of
 *   tenancy/request-rate.ts), so a client that keeps sending bad credentials costs one cheap
 *   answer per connection (HTTP) or call (gRPC) per delay. With the per-address connection cap
 *   (frontend/http/connection-budget.ts) that bounds what one address can make the server answer.
 * - Audit: the first `burst` failures of an address in an audit interval (`auditIntervalMs`) each
 *   write their line at once (`count: 1`); the failures after them within the interval are
 *   counted and written as one line when the interval ends (`count: n`, `reason`: the reasons
 *   with their counts, e.g. `unknown x812`), then the next interval starts. So the audit log grows
 *   by at most `burst + 1` lines per address per interval, whatever the flood.
 * - Memory: at most `maxAddresses` addresses are tracked; failures of further addresses are
 *   counted under one entry whose lines say `remote: "(other addresses)"` and are rate-limited
 *   together.
 */
import type { Logger } from 'pino';
import { auditEvent } from './audit.js';
import type { AuthFailureReason } from './registry.js';
import { OVER_QUOTA_DELAY_MS } from './request-rate.js';

/** Tunables of {@link FailedAuthentications}; every field is optional (defaults below). */
export interface UnauthenticatedLimits {
  /** Failures one address is answered at once per window, count. Default 10. */
  burst?: number;
  /** The rate window, ms. Default 1000. */
  windowMs?: number;
  /** How long failures of one address are aggregated into one audit line, ms. Default 10 000. */
  auditIntervalMs?: number;
  /** Addresses tracked at once. Default 65 536. */
  maxAddresses?: number;
  /** How long a failure over the rate is held back, ms. Default {@link OVER_QUOTA_DELAY_MS}. */
  delayMs?: number;
}

export const DEFAULT_UNAUTHENTICATED_LIMITS: Readonly<Required<UnauthenticatedLimits>> = Object.freeze({
  burst: 10,
  windowMs: 1000,
  auditIntervalMs: 10_000,
  maxAddresses: 65_536,
  delayMs: OVER_QUOTA_DELAY_MS,
});

/** Where failures of addresses beyond `maxAddresses` are counted. */
const OTHER = '(other addresses)';

interface Entry {
  windowStart: number;
  inWindow: number;
  /** When the current audit interval began. */
  auditStart: number;
  /** Lines written at once in the current audit interval. */
  audited: number;
  /** Failures since then, not yet written, by reason. */
  pending: Map<string, number>;
  pendingCount: number;
}

/** Counts failed authentications per client address: how long to hold each answer, and the audit lines. */
export class FailedAuthentications {
  private readonly limits: Required<UnauthenticatedLimits>;
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | undefined;

  /**
   * @param logger where audit lines go (pino, `audit: true`)
   * @param protocol written into each line (`http` / `grpc`)
   */
  constructor(
    private readonly logger: Logger,
    private readonly protocol: 'http' | 'grpc',
    limits: UnauthenticatedLimits = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_UNAUTHENTICATED_LIMITS, ...limits };
  }

  /**
   * Record one failed authentication of the client at `address` (undefined: unknown) for `reason`.
   * @returns ms to hold the 401 / UNAUTHENTICATED answer before sending it (0 = at once)
   */
  failed(address: string | undefined, reason: AuthFailureReason): number {
    const t = this.now();
    let key = address ?? '(unknown)';
    let e = this.entries.get(key);
    if (e === undefined) {
      if (this.entries.size >= this.limits.maxAddresses) {
        key = OTHER;
        e = this.entries.get(OTHER);
      }
      if (e === undefined) {
        e = { windowStart: t, inWindow: 0, auditStart: t, audited: 0, pending: new Map(), pendingCount: 0 };
        this.entries.set(key, e);
        this.arm();
      }
    }
    if (t - e.windowStart >= this.limits.windowMs) {
      e.windowStart = t;
      e.inWindow = 0;
    }
    e.inWindow++;
    if (e.audited < this.limits.burst) {
      e.audited++;
      this.audit(key, reason, 1);
    } else {
      e.pending.set(reason, (e.pending.get(reason) ?? 0) + 1);
      e.pendingCount++;
    }
    return e.inWindow > this.limits.burst ? this.limits.delayMs : 0;
  }

  /** Addresses tracked now (for tests and metrics). */
  get tracked(): number {
    return this.entries.size;
  }

  /** Write every pending aggregate line now and stop the timer (server shutdown). */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const [key, e] of this.entries) this.flush(key, e);
    this.entries.clear();
  }

  /**
   * End the audit intervals that are over: one line per address with failures pending; an address
   * with none is forgotten.
   */
  sweep(): void {
    const t = this.now();
    for (const [key, e] of this.entries) {
      if (t - e.auditStart < this.limits.auditIntervalMs) continue;
      if (e.pendingCount === 0 && t - e.windowStart >= this.limits.windowMs) {
        this.entries.delete(key);
        continue;
      }
      this.flush(key, e);
      e.auditStart = t;
      e.audited = 0;
    }
    if (this.entries.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private flush(key: string, e: Entry): void {
    if (e.pendingCount === 0) return;
    const reasons = [...e.pending].map(([r, n]) => `${r} x${n}`).join(', ');
    this.audit(key, reasons, e.pendingCount);
    e.pending.clear();
    e.pendingCount = 0;
  }

  private audit(remote: string, reason: string, count: number): void {
    auditEvent(this.logger, { event: 'auth_failure', tenant: null, outcome: 'error', reason, remote, count, protocol: this.protocol });
  }

  private arm(): void {
    if (this.timer) return;
    const every = Math.max(10, Math.min(this.limits.auditIntervalMs, this.limits.windowMs));
    this.timer = setInterval(() => this.sweep(), every);
    this.timer.unref();
  }
}
