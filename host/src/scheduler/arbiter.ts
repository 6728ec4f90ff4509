/**
 * The server-wide execution arbiter: the one place every model version's scheduler asks before it
 * dispatches a batch to an instance, so that limits spanning models (tenant fairness, rate
 * limits — Triton's rate limiter, spec §5.5 `rate_limiter`) can sit in one object.
 */

/** Who asks: one constant object per model version (built once, no allocation per batch). */
export interface ExecutionClaim {
  readonly model: string;
  readonly version: number;
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
