/**
 * The server-wide arbiter of multi-tenant mode (DESIGN "Sandbox rules": resource exhaustion by
 * one tenant must not reduce another tenant's service beyond its share; "Multi-tenancy": CPU time
 * is budgeted by tenant). It governs sandbox (wasm) executions — the CPU a tenant brings — and
 * admits every other execution at once (native, Python and ensemble executions may wait inside
 * for nested inferences, BLS and ensemble steps, which a slot held while waiting could deadlock).
 *
 * The rule, for a claim of a sandboxed model with tenants T (the distinct tenants of its batch):
 * 1. Per-tenant cap: the claim runs only if some tenant of T runs fewer sandbox executions than
 *    its cap (`max_concurrent_executions`, and never more than half the server's slots, at least
 *    1), so a tenant spinning its sandboxes within quota holds at most its cap of cores and always
 *    leaves slots to the others. (A batch is never held back for a tenant that still has room.)
 * 2. Server-wide slots: at most `slots` sandbox executions run at once (default: the machine's
 *    cores). A claim that cannot run waits; when an execution ends, the waiting claims that may
 *    run are woken in order of their lightest tenant's recent execute time divided by its weight
 *    (first come first served among equals), so a tenant that used less CPU lately goes first.
 * 3. Charging: every sandbox execution's wall time (admission to release; a spinning sandbox's
 *    wall time is its CPU time) is charged to the tenants of its batch in equal parts, into a
 *    per-tenant usage that decays exponentially with half-life `halfLifeMs`; executions still
 *    running count with the time they have run so far.
 * The operator (`''`) has no cap and is charged like any tenant.
 */
import type { ExecutionArbiter, ExecutionClaim, ExecutionGrant } from './arbiter.js';

/** Options of a {@link TenantExecutionArbiter}. */
export interface TenantArbiterOptions {
  /** Sandbox executions running at once, all tenants together; ≥ 1. */
  slots: number;
  /** A tenant's cap on concurrent sandbox executions (its `max_concurrent_executions`); read per claim. `''` (the operator) is never capped. */
  maxConcurrentOf(tenant: string): number;
  /** A tenant's fair-share weight (> 0; anything else counts as 1). Default 1. */
  weightOf?(tenant: string): number;
  /** Half-life of the recent-usage decay, ms. Default 2000. */
  halfLifeMs?: number;
  /** Monotonic clock, ms (tests). Default `performance.now`. */
  now?: () => number;
}

interface Usage {
  /** Decayed execute time, ms, as of `at`. */
  value: number;
  at: number;
  /** Sandbox executions running. */
  running: number;
  /** Sum of the start times of the running executions (their time so far = running × now − this). */
  startSum: number;
}

interface Waiter {
  tenants: string[];
  wake: () => void;
  seq: number;
}

const NO_OP_GRANT: ExecutionGrant = Object.freeze({ release(): void {} });

/** See the module comment for the rule. */
export class TenantExecutionArbiter implements ExecutionArbiter {
  private readonly usage = new Map<string, Usage>();
  private readonly waiters: Waiter[] = [];
  private running = 0;
  private seq = 0;
  /** Set while a woken waiter asks again: it may run even though others wait. */
  private waking = false;
  private readonly slots: number;
  private readonly halfLifeMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: TenantArbiterOptions) {
    this.slots = Math.max(1, Math.floor(opts.slots));
    this.halfLifeMs = opts.halfLifeMs !== undefined && opts.halfLifeMs > 0 ? opts.halfLifeMs : 2000;
    this.now = opts.now ?? (() => performance.now());
  }

  tryAdmit(claim: ExecutionClaim, wake: () => void): ExecutionGrant | undefined {
    if (!claim.sandboxed) return NO_OP_GRANT;
    const tenants = claim.tenants.length > 0 ? [...new Set(claim.tenants)] : [''];
    if (this.mayRun(tenants) && (this.waking || !this.waiters.some((w) => this.mayRun(w.tenants)))) {
      this.waking = false; // one execution per wake; further ones queue behind the other waiters
      return this.grant(tenants);
    }
    this.waiters.push({ tenants, wake, seq: this.seq++ });
    return undefined;
  }

  /** Sandbox executions running now (all tenants, and of one tenant). */
  runningCount(tenant?: string): number {
    return tenant === undefined ? this.running : (this.usage.get(tenant)?.running ?? 0);
  }

  /** A tenant's recent execute time (decayed, running executions included), ms. */
  recentUsageMs(tenant: string): number {
    const u = this.usage.get(tenant);
    if (!u) return 0;
    const t = this.now();
    return this.decayed(u, t) + (u.running * t - u.startSum);
  }

  /** The effective cap of `tenant`: its quota, at most half the slots, at least 1; none for the operator. */
  capOf(tenant: string): number {
    if (tenant === '') return Infinity;
    const q = this.opts.maxConcurrentOf(tenant);
    return Math.max(1, Math.min(Number.isFinite(q) ? Math.floor(q) : Infinity, Math.floor(this.slots / 2)));
  }

  private mayRun(tenants: readonly string[]): boolean {
    if (this.running >= this.slots) return false;
    return tenants.some((t) => (this.usage.get(t)?.running ?? 0) < this.capOf(t));
  }

  private grant(tenants: string[]): ExecutionGrant {
    const start = this.now();
    this.running++;
    for (const t of tenants) {
      const u = this.entry(t, start);
      u.running++;
      u.startSum += start;
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const end = this.now();
        const share = Math.max(0, end - start) / tenants.length;
        this.running--;
        for (const t of tenants) {
          const u = this.entry(t, end);
          u.running--;
          u.startSum -= start;
          u.value += share;
        }
        this.wakeNext();
      },
    };
  }

  /** Wake the waiting claims that may run now, lightest recent usage first, while slots are free. */
  private wakeNext(): void {
    while (this.running < this.slots && this.waiters.length > 0) {
      let best = -1;
      let bestScore = Infinity;
      const t = this.now();
      for (let i = 0; i < this.waiters.length; i++) {
        const w = this.waiters[i]!;
        if (!this.mayRun(w.tenants)) continue;
        const score = Math.min(...w.tenants.map((x) => this.scoreOf(x, t)));
        if (score < bestScore || (score === bestScore && best >= 0 && w.seq < this.waiters[best]!.seq)) {
          best = i;
          bestScore = score;
        }
      }
      if (best < 0) break;
      const [w] = this.waiters.splice(best, 1);
      this.waking = true;
      try {
        w!.wake();
      } finally {
        this.waking = false;
      }
    }
    this.forgetIdle();
  }

  private scoreOf(tenant: string, t: number): number {
    const u = this.usage.get(tenant);
    const used = u ? this.decayed(u, t) + (u.running * t - u.startSum) : 0;
    const w = this.opts.weightOf?.(tenant) ?? 1;
    return used / (w > 0 && Number.isFinite(w) ? w : 1);
  }

  private decayed(u: Usage, t: number): number {
    return t > u.at ? u.value * Math.pow(0.5, (t - u.at) / this.halfLifeMs) : u.value;
  }

  private entry(tenant: string, t: number): Usage {
    let u = this.usage.get(tenant);
    if (!u) {
      u = { value: 0, at: t, running: 0, startSum: 0 };
      this.usage.set(tenant, u);
    } else {
      u.value = this.decayed(u, t);
      u.at = t;
    }
    return u;
  }

  /** Usage that decayed to nothing is forgotten (bounded memory however many tenants came and went). */
  private forgetIdle(): void {
    if (this.usage.size < 1024) return;
    const t = this.now();
    for (const [k, u] of this.usage) if (u.running === 0 && this.decayed(u, t) < 0.01) this.usage.delete(k);
  }
}
