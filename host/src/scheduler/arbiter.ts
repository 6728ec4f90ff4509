/**
 * The server-wide execution arbiter: the one place every model version's scheduler asks before it
 * dispatches a batch to an instance, so that limits spanning models (tenant fairness, rate
 * limits — Triton's rate limiter, spec §5.5 `rate_limiter`) can sit in one object.
 */

/**
 * Who asks: one object per model version (built once, no allocation per batch).
 *
 * A tenant-aware arbiter (fairness across models: one tenant flooding model X must not crowd out
 * another tenant's model Y on the same machine) would keep, per tenant, the executions it runs and
 * a FIFO of deferred `wake`s, and decide from {@link tenants}: admit while every tenant of the
 * claim is under its share of the server's execution slots (slots × weight / sum of the weights of
 * the tenants with work waiting), otherwise defer and remember the wake under those tenants; on
 * `release` of a grant (which it built knowing the claim's tenants), hand the freed slot to the
 * deferred claims of the tenant furthest below its share first (one at a time, per the wake
 * contract below). Within one model version the scheduler already orders tenants fairly (deficit
 * round robin in its queue), so the arbiter only has to arbitrate between model versions.
 */
export interface ExecutionClaim {
  readonly model: string;
  readonly version: number;
  /**
   * The distinct tenants of the batch the scheduler asks to run ({@link InferenceRequest.tenant};
   * `''` = the operator), in dispatch order. Valid during the `tryAdmit` call only: the scheduler
   * rewrites this array before each call (copy it to keep it). Left empty with
   * {@link PASS_THROUGH_ARBITER}, which never reads it.
   */
  readonly tenants: readonly string[];
  /**
   * The model runs in the sandbox (`backend: "wasm"`): its executions make no nested inference
   * calls, so an arbiter may hold them back without risking a deadlock (scheduler/tenant-arbiter.ts
   * governs only these).
   */
  readonly sandboxed?: boolean;
}

/** Permission to run one execution; released exactly once, when the execution finished. */
export interface ExecutionGrant {
  release(): void;
}

/**
 * Admits or defers executions.
 *
 * Contract (no lost wake-ups): when {@link tryAdmit} returns undefined, the arbiter must call
 * `wake` later, once, when the caller should ask again (typically when a grant is released). A
 * woken scheduler that still has a batch to dispatch calls `tryAdmit` again synchronously from
 * inside `wake`; one that has nothing left to run does not. An arbiter that hands freed capacity
 * to waiters one at a time can therefore move on to the next waiter when a woken one did not
 * claim. A scheduler does not ask again while it is deferred, so `wake` is registered at most once
 * per scheduler at a time.
 */
export interface ExecutionArbiter {
  /**
   * Ask to start one execution for `claim`.
   * @returns a grant to release when the execution ends, or undefined = deferred (see the
   *   interface contract for `wake`).
   */
  tryAdmit(claim: ExecutionClaim, wake: () => void): ExecutionGrant | undefined;
}

const NO_OP_GRANT: ExecutionGrant = Object.freeze({ release(): void {} });

/** The default arbiter: admits everything, returns one shared grant (no allocation, no state). */
export const PASS_THROUGH_ARBITER: ExecutionArbiter = Object.freeze({
  tryAdmit: (): ExecutionGrant => NO_OP_GRANT,
});

/**
 * One scheduler's side of the {@link ExecutionArbiter}: the claim it makes (its model version, and
 * the tenants of the batch it asks for, rewritten per claim), and whether the arbiter deferred it
 * and still owes a wake. Every scheduler kind asks the arbiter through one of these.
 */
export class ArbiterGate {
  /**
   * The list to fill with the batch's distinct tenants before {@link admit}; undefined with
   * {@link PASS_THROUGH_ARBITER}, which never reads them (so nobody spends time filling it).
   */
  readonly tenants: string[] | undefined;
  /** The arbiter deferred this scheduler and owes a wake: don't ask again until it comes. */
  deferred = false;
  private readonly claim: ExecutionClaim;
  private readonly wake: () => void;

  /**
   * @param onWake called when a deferring arbiter wakes this scheduler (after `deferred` is cleared)
   * @param sandboxed the model's executions run in the sandbox ({@link ExecutionClaim.sandboxed})
   */
  constructor(
    private readonly arbiter: ExecutionArbiter,
    model: string,
    version: number,
    onWake: () => void,
    sandboxed = false,
  ) {
    const tenants: string[] = [];
    this.tenants = arbiter === PASS_THROUGH_ARBITER ? undefined : tenants;
    this.claim = Object.freeze({ model, version, tenants, sandboxed });
    this.wake = () => {
      this.deferred = false;
      onWake();
    };
  }

  /** Ask to run one execution; undefined = deferred (`deferred` is then set until the wake). */
  admit(): ExecutionGrant | undefined {
    const grant = this.arbiter.tryAdmit(this.claim, this.wake);
    if (!grant) this.deferred = true;
    return grant;
  }
}
