/**
 * Budgets of sandbox linear memory (DESIGN "Multi-tenancy": resource exhaustion by one tenant must
 * not reduce another's service beyond its share). Each sandbox reserves, when it starts (an
 * instance's start, and each cold start after an idle release), the most linear memory it can
 * ever have — its model's memory limit times the number of linear memories the component defines
 * — and releases it when the sandbox is gone (its thread or worker exited: idle release, instance
 * finalized). Guarantee: the linear memory of the sandboxes alive never exceeds any budget's
 * limit. A sandbox that does not fit first has idle sandboxes released, least recently used
 * first, among those that hold memory in the budget that blocks ({@link MemoryBudget.reserve});
 * if there is still no room, it does not start.
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

/**
 * Memory held by one sandbox; {@link release} gives it back (idempotent). While marked
 * {@link idle}, the budget may ask its owner to release the sandbox to make room for another.
 */
export interface Reservation {
  readonly bytes: number;
  /** The budget it was taken from (and from every budget above it). */
  readonly budget: MemoryBudget;
  release(): void;
  /**
   * The sandbox runs nothing and may be released to make room: `reclaim` asks its owner to
   * release it, and returns true once the release is under way ({@link release} follows when
   * the sandbox is gone), false if the sandbox is busy again. Marking again moves it to the
   * most recently used end.
   */
  idle(reclaim: () => boolean): void;
  /** The sandbox is in use: no longer a candidate for {@link MemoryBudget.reserve}'s releases. */
  busy(): void;
  /** True once released. */
  readonly released: boolean;
}

interface Held extends Reservation {
  reclaim?: () => boolean;
  /** Resolves when released. */
  readonly gone: Promise<void>;
}

/**
 * How one model's sandboxes take their memory (the `wasm` backend makes one per model version and
 * hands it to the engine's `instantiate`): each sandbox start reserves, each sandbox gone releases.
 */
export interface SandboxMemory {
  /**
   * Reserves one sandbox's linear memory ({@link MemoryBudget.reserve}: idle sandboxes in the way
   * are released first).
   * @param instance the instance's name, for the error
   * @throws TritonError UNAVAILABLE naming the budget that has no room
   */
  reserve(instance: string): Promise<Reservation>;
}

/** A bounded amount of sandbox memory, possibly inside a larger budget. */
export class MemoryBudget {
  private used = 0;
  /** Root budget only: idle reservations of the whole tree, least recently used first. */
  private readonly idleHeld = new Set<Held>();

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

  /** The outermost budget (the server's). */
  private get root(): MemoryBudget {
    let b: MemoryBudget = this;
    while (b.parent) b = b.parent;
    return b;
  }

  /** Reservations marked idle that hold memory in this budget, least recently used first. */
  idleReservations(): Reservation[] {
    return [...this.root.idleHeld].filter((r) => r.budget.within(this));
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
    const idleHeld = this.root.idleHeld;
    for (const b of chain) b.used += bytes;
    let released = false;
    let done!: () => void;
    const gone = new Promise<void>((r) => (done = r));
    const held: Held = {
      bytes,
      budget: this,
      gone,
      get released() {
        return released;
      },
      release: () => {
        if (released) return;
        released = true;
        idleHeld.delete(held);
        for (const b of chain) b.used -= bytes;
        done();
      },
      idle: (reclaim) => {
        if (released) return;
        held.reclaim = reclaim;
        idleHeld.delete(held);
        idleHeld.add(held);
      },
      busy: () => {
        idleHeld.delete(held);
      },
    };
    return held;
  }

  /**
   * Reserves `bytes` as {@link tryReserve}; when some budget of the chain is too full, first has
   * idle sandboxes that hold memory in that budget released, least recently used first, waiting
   * for each to be gone, until the reservation fits or no idle sandbox is left there.
   * @returns the reservation, or undefined if it does not fit even so ({@link blocker} says where)
   * @throws RangeError for a negative or non-integer amount
   */
  async reserve(bytes: number): Promise<Reservation | undefined> {
    const tried = new Set<Held>();
    for (;;) {
      const r = this.tryReserve(bytes);
      if (r) return r;
      const blocker = this.blocker(bytes)!;
      const victim = [...this.root.idleHeld].find((h) => !tried.has(h) && h.budget.within(blocker));
      if (!victim) return undefined;
      tried.add(victim);
      this.root.idleHeld.delete(victim);
      if (victim.reclaim?.()) await victim.gone;
    }
  }
}
