/**
 * Budgets of sandbox linear memory (DESIGN "Multi-tenancy": resource exhaustion by one tenant must
 * not reduce another's service beyond its share). Each sandboxed instance reserves, when it
 * starts, the most linear memory it can ever have — its model's memory limit times the number of
 * linear memories the component defines — and releases it when it is finalized; an instance that
 * does not fit does not start.
 *
 * Budgets nest: the server's budget (`WasmLimits.maxTotalMemoryBytes`) is the root; a server may
 * give each tenant a child budget (its quota) through the resolver's `memoryBudgetFor`. A
 * reservation is taken from a budget and every budget above it, all or nothing.
 */

import type { ModelConfig } from '../../contract/model-config.js';
import type { ModelKey, ModelOrigin } from '../../contract/types.js';
import { TOTAL_MEMORY_FLAG } from './limits.js';

/** Name of the server-wide budget in error messages. */
export const SERVER_BUDGET_NAME = `the server's sandbox memory budget (WasmLimits.maxTotalMemoryBytes, ${TOTAL_MEMORY_FLAG})`;

/** The model a budget is chosen for. */
export interface BudgetedModel {
  key: ModelKey;
  origin: ModelOrigin;
  config: ModelConfig;
}

/**
 * Chooses the budget a model's instances reserve from, e.g. its tenant's quota (a
 * {@link MemoryBudget.child} of the server's budget); undefined = the server's budget. Called once
 * per model version load; the budget returned must be the server's budget or inside it.
 */
export type MemoryBudgetFor = (model: BudgetedModel) => MemoryBudget | undefined;

/** Memory held by one instance; {@link release} gives it back (idempotent). */
export interface Reservation {
  readonly bytes: number;
  /** The budget it was taken from (and from every budget above it). */
  readonly budget: MemoryBudget;
  release(): void;
}

/** A bounded amount of sandbox memory, possibly inside a larger budget. */
export class MemoryBudget {
  private used = 0;

  /**
   * @param name says what the budget is in error messages, e.g. `the server's sandbox memory
   *   budget (--wasm-max-total-memory-bytes)` or `tenant 'acme''s sandbox memory quota`
   * @param limitBytes most bytes reserved at once
   * @param parent the budget this one is part of: every reservation is taken from both
   * @throws RangeError for a limit that is not a non-negative safe integer
   */
  constructor(
    readonly name: string,
    readonly limitBytes: number,
    readonly parent?: MemoryBudget,
  ) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes < 0)
      throw new RangeError(`memory budget '${name}': limit must be a non-negative integer, got ${limitBytes}`);
  }

  /** A budget inside this one (e.g. a tenant's quota inside the server's budget). */
  child(name: string, limitBytes: number): MemoryBudget {
    return new MemoryBudget(name, limitBytes, this);
  }

  /** Bytes reserved now (from this budget or any budget inside it). */
  get usedBytes(): number {
    return this.used;
  }

  get freeBytes(): number {
    return this.limitBytes - this.used;
  }

  /** This budget and the budgets above it, innermost first. */
  chain(): MemoryBudget[] {
    const out: MemoryBudget[] = [];
    for (let b: MemoryBudget | undefined = this; b; b = b.parent) out.push(b);
    return out;
  }

  /** True if `other` is this budget or one above it. */
  within(other: MemoryBudget): boolean {
    return this.chain().includes(other);
  }

  /** The innermost budget of the chain that cannot take `bytes` now; undefined if all can. */
  blocker(bytes: number): MemoryBudget | undefined {
    return this.chain().find((b) => b.used + bytes > b.limitBytes);
  }

  /** The innermost budget of the chain that could never take `bytes` (its limit is smaller). */
  tooSmallFor(bytes: number): MemoryBudget | undefined {
    return this.chain().find((b) => bytes > b.limitBytes);
  }

  /**
   * Reserves `bytes` in this budget and every budget above it, or nothing.
   * @returns the reservation, or undefined if some budget of the chain is too full
   * @throws RangeError for a negative or non-integer amount
   */
  tryReserve(bytes: number): Reservation | undefined {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`cannot reserve ${bytes} bytes`);
    if (this.blocker(bytes)) return undefined;
    const chain = this.chain();
    for (const b of chain) b.used += bytes;
    let released = false;
    return {
      bytes,
      budget: this,
      release: () => {
        if (released) return;
        released = true;
        for (const b of chain) b.used -= bytes;
      },
    };
  }
}
