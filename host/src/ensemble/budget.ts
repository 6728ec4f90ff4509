/**
 * What one ensemble request may cost (DESIGN "Multi-tenancy": every shared resource is budgeted by
 * tenant; an ensemble is a request that turns into many): one {@link EnsembleBudget} per top-level
 * ensemble request, shared by the runs of the ensembles nested in it (a step whose composing model
 * is itself an ensemble), counting
 * - inferences: composing requests sent in total, every response of a decoupled step that runs
 *   the steps downstream included (`max_ensemble_inferences` / `--ensemble-max-inferences`);
 * - depth: ensembles nested in the request, the top-level one being 1 (`max_ensemble_depth` /
 *   `--ensemble-max-depth`);
 * - fan-out: composing requests in flight at once (`max_ensemble_fanout` / `--ensemble-max-fanout`).
 * The caps are the server-wide ones, lowered by the quotas of the tenant that sent the request.
 * Past a cap the step is not sent and the ensemble request fails with 403 (PERMISSION_DENIED over
 * gRPC) naming the cap; the steps already in flight finish first.
 */
import * as err from './ensemble.errors.js';
import type { EnsembleRequestBudget } from '../contract/types.js';
import type { TenantQuotas } from '../tenancy/types.js';

/** Server-wide caps of one ensemble request. */
export interface EnsembleLimits {
  /** Composing inferences in total. */
  maxInferences: number;
  /** Nesting depth (top-level ensemble = 1). */
  maxDepth: number;
  /** Composing inferences in flight at once. */
  maxFanout: number;
}

/** 256 inferences, depth 8, 64 in flight (also the tenants' default quotas). */
export const DEFAULT_ENSEMBLE_LIMITS: Readonly<EnsembleLimits> = Object.freeze({ maxInferences: 256, maxDepth: 8, maxFanout: 64 });

/** The caps for a request of a tenant with `quotas` (undefined: the operator): the smaller of each. */
export function ensembleLimitsFor(server: EnsembleLimits, quotas: Readonly<TenantQuotas> | undefined): EnsembleLimits {
  if (!quotas) return server;
  return {
    maxInferences: Math.min(server.maxInferences, quotas.max_ensemble_inferences),
    maxDepth: Math.min(server.maxDepth, quotas.max_ensemble_depth),
    maxFanout: Math.min(server.maxFanout, quotas.max_ensemble_fanout),
  };
}

/** The running count of one top-level ensemble request (see the module comment). */
export class EnsembleBudget implements EnsembleRequestBudget {
  /** Composing requests sent so far. */
  sent = 0;
  /** Composing requests in flight. */
  inflight = 0;

  /** @param who the ensemble and caller, for the error text (`ensemble 'e' of tenant 't'`) */
  constructor(
    readonly limits: EnsembleLimits,
    private readonly who: string,
  ) {}

  /**
   * Before any step runs: refuse a request whose least cost (ensemble/plan.ts#EnsembleCost) is
   * already over the caps, so no composing inference of a request that cannot finish is sent.
   * @throws AccessError `forbidden` naming the cap
   */
  afford(cost: { readonly inferences: number; readonly depth: number }): void {
    this.enter(cost.depth);
    if (cost.inferences > this.limits.maxInferences) {
      throw err.planOverInferenceCap(this.who, cost.inferences, this.limits.maxInferences);
    }
  }

  /**
   * A run at nesting `depth` starts (1 = the top-level ensemble).
   * @throws AccessError `forbidden` past the depth cap
   */
  enter(depth: number): void {
    if (depth > this.limits.maxDepth) {
      throw err.nestedTooDeep(this.who, depth, this.limits.maxDepth);
    }
  }

  /**
   * Count one composing request about to be sent; give it back with {@link done} at its final response.
   * @throws AccessError `forbidden` past the inference or fan-out cap (nothing counted)
   */
  take(): void {
    if (this.sent >= this.limits.maxInferences) {
      throw err.requestOverInferenceCap(this.who, this.limits.maxInferences);
    }
    if (this.inflight >= this.limits.maxFanout) {
      throw err.requestOverFanout(this.who, this.limits.maxFanout);
    }
    this.sent++;
    this.inflight++;
  }

  /** A composing request taken with {@link take} ended. */
  done(): void {
    this.inflight--;
  }
}
