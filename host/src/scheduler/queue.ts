/**
 * The scheduler's pending-request queue, with priority levels and queue policy (spec §5.6,
 * §3.9), fair across tenants (DESIGN "Sandbox rules": one tenant's flood must not starve another).
 *
 * - Priority levels come first: a request of a higher level is always dispatched before any of a
 *   lower one. `max_queue_size` is per level (Triton), rejected with UNAVAILABLE "Exceeds maximum
 *   queue size"; an optional per-tenant cap across the levels rejects with the tenant's quota.
 * - Within a level each tenant ({@link InferenceRequest.tenant}) has its own FIFO, and the next
 *   request is picked by deficit round robin (DRR, Shreedhar & Varghese) over the tenants that
 *   have requests queued: each turn a tenant gets `quantum × weight` credit, spends it on its
 *   requests in arrival order (cost = the request's batch size, at least 1), and its turn ends when
 *   its next request costs more than it has left. A tenant whose FIFO empties leaves the round and
 *   loses its credit; one that arrives joins at the end of the round. A tenant alone in a level is
 *   served FIFO without any accounting (the single-user fast path: one FIFO, as before); when a
 *   second tenant joins, the lone one's turn starts afresh, so the newcomer waits at most one turn:
 *   `quantum × weight` batch elements of the lone tenant.
 * - Expiry is lazy: the queue keeps the earliest deadline it may hold, so a check while no deadline
 *   is due costs O(1); only a due deadline costs a sweep. {@link PendingQueue.takeExpired} takes
 *   the expired requests out (the scheduler rejects them with "Request timeout expired").
 *
 * Cancelled requests cost nothing in the DRR order, so that {@link PendingQueue.ordered} stays the
 * order of successive {@link PendingQueue.shift}s after the cancelled requests it showed were
 * {@link PendingQueue.remove}d (what the batcher relies on). Removing or expiring a request never
 * charges its tenant.
 */
import type { ModelDynamicBatching, ModelQueuePolicy } from '../contract/model-config.js';
import type { InferenceRequest, ResponseSender } from '../contract/types.js';
import type { TenantFairness } from './types.js';
import * as schedulerErrors from './scheduler.errors.js';

/**
 * One request waiting for an instance. Times are monotonic ns on the scheduler's `Clock`
 * (`clock.ts`): the queue never reads a clock itself, its callers pass the time in.
 */
export interface PendingRequest {
  request: InferenceRequest;
  sender: ResponseSender;
  queueStartNs: bigint;
  /** 0n = no timeout. */
  deadlineNs: bigint;
  /** Index of its priority level (0 = level 1, the highest). */
  level: number;
}

/** Options of a {@link PendingQueue}: tenant fairness, plus the model's name for error messages. */
export interface PendingQueueOptions extends TenantFairness {
  /** The model's name, for the per-tenant quota error. */
  model?: string;
}

const NO_POLICY: ModelQueuePolicy = {
  timeout_action: 'REJECT',
  default_timeout_microseconds: 0,
  allow_timeout_override: false,
  max_queue_size: 0,
};

const NONE_EXPIRED: readonly PendingRequest[] = Object.freeze([]);

/** Emptied tenant FIFOs are kept for reuse (no allocation per busy period) while a level has at most this many. */
const KEPT_FLOWS = 64;

/** DRR cost of a request: its batch elements (at least 1); a cancelled request costs nothing. */
const costOf = (p: PendingRequest): number => (p.request.cancelled ? 0 : Math.max(1, p.request.batchSize));

/** A weight that is not a positive finite number counts as 1. */
const sane = (w: number | undefined, fallback: number): number => (w !== undefined && w > 0 && Number.isFinite(w) ? w : fallback);

/**
 * A member of a level's round: a tenant FIFO with its DRR deficit, linked in a circular list in
 * round order. The queue's own nodes always read their FIFO from index 0 (`pos` = 0); the copies
 * {@link PendingQueue.ordered} simulates on share the FIFO and advance `pos` instead.
 */
interface RingNode {
  readonly items: PendingRequest[];
  pos: number;
  /** Credit per turn: quantum × weight. */
  credit: number;
  deficit: number;
  next: RingNode;
  prev: RingNode;
}

/** The DRR round of one level: `current` is the tenant whose turn it is. */
class Ring {
  current: RingNode | undefined = undefined;
  /** Members of the round (tenants with requests queued). */
  active = 0;
  /** `current` already got its credit for this turn. */
  started = false;
}

/** One tenant's FIFO in one level. Linked into the level's round exactly while it holds requests. */
class Flow implements RingNode {
  readonly items: PendingRequest[] = [];
  pos = 0;
  credit = 1;
  deficit = 0;
  next: RingNode = this;
  prev: RingNode = this;
  constructor(readonly tenant: string) {}
}

/** One priority level: its policy, its tenants' FIFOs and their round. */
class Level extends Ring {
  readonly flows = new Map<string, Flow>();
  /** The flow of the last push (skips the map lookup while one tenant sends). */
  last: Flow | undefined = undefined;
  size = 0;
  /** @param index 0 = priority level 1. */
  constructor(
    readonly index: number,
    readonly policy: ModelQueuePolicy,
  ) {
    super();
  }
}

/** Add `f` at the end of the round, with no credit. A lone member's turn starts afresh. */
function link(ring: Ring, f: RingNode): void {
  f.deficit = 0;
  const cur = ring.current;
  if (cur === undefined) {
    f.next = f.prev = f;
    ring.current = f;
    ring.started = false;
  } else {
    f.next = cur;
    f.prev = cur.prev;
    cur.prev.next = f;
    cur.prev = f;
    if (ring.active === 1) {
      cur.deficit = 0;
      ring.started = false;
    }
  }
  ring.active++;
}

/** Take `f` out of the round; it loses its credit, and the next member's turn begins if it was `f`'s. */
function unlink(ring: Ring, f: RingNode): void {
  f.deficit = 0;
  if (--ring.active === 0) {
    ring.current = undefined;
    ring.started = false;
    return;
  }
  f.prev.next = f.next;
  f.next.prev = f.prev;
  if (ring.current === f) {
    ring.current = f.next;
    ring.started = false;
  }
}

/**
 * Advance the round of a non-empty ring to the member whose head request is served next, giving
 * credit to members as their turns begin, and return it. A lone member is returned at once (no
 * accounting). After a whole round in which nobody could pay for its head, the rounds still needed
 * are credited at once (so a tiny weight never loops).
 */
function settle(ring: Ring): RingNode {
  let f = ring.current!;
  if (ring.active === 1) return f;
  let visited = 0;
  for (;;) {
    if (!ring.started) {
      f.deficit += f.credit;
      ring.started = true;
    }
    if (costOf(f.items[f.pos]!) <= f.deficit) return f;
    ring.current = f = f.next;
    ring.started = false;
    if (++visited === ring.active) {
      skipIdleRounds(ring);
      visited = 0;
    }
  }
}

/** Credit every member with the whole rounds, but one, that pass before anyone can pay for its head. */
function skipIdleRounds(ring: Ring): void {
  let rounds = Infinity;
  let f = ring.current!;
  for (let i = 0; i < ring.active; i++, f = f.next) {
    rounds = Math.min(rounds, Math.ceil((costOf(f.items[f.pos]!) - f.deficit) / f.credit));
  }
  if (!(rounds > 1)) return;
  for (let i = 0; i < ring.active; i++, f = f.next) f.deficit += (rounds - 1) * f.credit;
}

/** The requests of a level with several tenants in DRR order, simulated on copies of its round. */
function* simulate(level: Ring): Generator<PendingRequest> {
  const sim = new Ring();
  const first = level.current!;
  let src = first;
  do {
    const copy: RingNode = { items: src.items, pos: 0, credit: src.credit, deficit: src.deficit, next: undefined!, prev: undefined! };
    if (sim.current === undefined) {
      copy.next = copy.prev = copy;
      sim.current = copy;
    } else {
      copy.next = sim.current;
      copy.prev = sim.current.prev;
      sim.current.prev.next = copy;
      sim.current.prev = copy;
    }
    sim.active++;
    src = src.next;
  } while (src !== first);
  sim.started = level.started;
  while (sim.active > 0) {
    const f = settle(sim);
    const p = f.items[f.pos++]!;
    if (sim.active > 1) f.deficit -= costOf(p);
    if (f.pos === f.items.length) unlink(sim, f);
    yield p;
  }
}

const NOTHING_QUEUED: readonly PendingRequest[] = Object.freeze([]);

/**
 * Priority levels (level 1 is the highest; a model without priority levels has one), each fair
 * across tenants. A level is created when a request first uses it, so the queue's size and the
 * cost of every operation follow the levels in use, never the configured `priority_levels`.
 */
export class PendingQueue {
  /** The levels created so far, highest first. */
  private readonly levels: Level[] = [];
  /** `max(1, priority_levels)`. */
  private readonly levelCount: number;
  private readonly batching: ModelDynamicBatching | undefined;
  private readonly defaultLevel: number;
  private readonly quantum: number;
  private readonly weightOf: ((tenant: string) => number) | undefined;
  private readonly maxQueued: number | ((tenant: string) => number) | undefined;
  private readonly model: string;
  private count = 0;
  /**
   * A lower bound of the deadlines of the queued requests on REJECT levels (0n = none). It may be
   * stale (its request already left the queue); a sweep then finds nothing and recomputes it.
   */
  private nextDeadlineNs = 0n;

  constructor(batching: ModelDynamicBatching | undefined, options: PendingQueueOptions = {}) {
    this.levelCount = Math.max(1, batching?.priority_levels ?? 0);
    this.defaultLevel = batching && batching.priority_levels > 0 ? batching.default_priority_level : 1;
    this.batching = batching;
    this.quantum = sane(options.quantum, 1);
    this.weightOf = options.weightOf?.bind(options);
    this.maxQueued = options.maxQueuedPerTenant;
    this.model = options.model ?? '';
  }

  get size(): number {
    return this.count;
  }

  /**
   * Queue a request at its priority level, at the end of its tenant's FIFO.
   * @throws TritonError UNAVAILABLE when the tenant's queue quota is reached ("tenant '<t>' exceeds
   *   its queue quota of N requests for model '<m>'") or the level's `max_queue_size` is
   *   ("Exceeds maximum queue size"); nothing was queued then.
   */
  push(p: Omit<PendingRequest, 'deadlineNs' | 'level'>): void {
    const tenant = p.request.tenant;
    if (this.maxQueued !== undefined) this.checkQuota(tenant);
    const levelIdx = this.levelOf(p.request.priority);
    const level = this.levelAt(levelIdx);
    const policy = level.policy;
    if (policy.max_queue_size > 0 && level.size >= policy.max_queue_size) {
      throw schedulerErrors.queueFull();
    }
    let timeoutUs = policy.default_timeout_microseconds;
    const asked = p.request.timeoutUs;
    // A request may only shorten the timeout, and only when the policy allows it (spec §3.9).
    if (asked > 0 && policy.allow_timeout_override && (timeoutUs === 0 || asked < timeoutUs)) timeoutUs = asked;
    const deadlineNs = timeoutUs > 0 ? p.queueStartNs + BigInt(timeoutUs) * 1000n : 0n;

    let flow = level.last;
    if (flow === undefined || flow.tenant !== tenant) {
      flow = level.flows.get(tenant);
      if (flow === undefined) {
        flow = new Flow(tenant);
        level.flows.set(tenant, flow);
      }
      level.last = flow;
    }
    if (flow.items.length === 0) {
      // Weights are read when a tenant joins the round, so a changed weight applies from its next busy period.
      flow.credit = this.quantum * sane(this.weightOf?.(tenant), 1);
      link(level, flow);
    }
    flow.items.push({ request: p.request, sender: p.sender, queueStartNs: p.queueStartNs, deadlineNs, level: levelIdx });
    level.size++;
    this.count++;
    if (deadlineNs !== 0n && policy.timeout_action === 'REJECT' && (this.nextDeadlineNs === 0n || deadlineNs < this.nextDeadlineNs)) {
      this.nextDeadlineNs = deadlineNs;
    }
  }

  /**
   * The next request to dispatch, without removing it: from the highest non-empty level, the
   * head of the FIFO of the tenant whose DRR turn it is (this may advance the round, which does
   * not change the dispatch order).
   */
  peek(): PendingRequest | undefined {
    for (const l of this.levels) if (l.size > 0) return settle(l).items[0];
    return undefined;
  }

  /**
   * Every queued request in dispatch order (highest level first, DRR order across tenants within
   * a level, each tenant's requests oldest first), not removed: the order successive
   * {@link shift}s return them in. Don't change the queue while iterating.
   *
   * While one tenant's requests on one level are all that is queued (every single-user server),
   * this is that tenant's FIFO itself: no generator and no iterator result per request, which the
   * batcher's plan would otherwise allocate on every dispatch.
   */
  ordered(): Iterable<PendingRequest> {
    let only: Level | undefined;
    for (const l of this.levels) {
      if (l.size === 0) continue;
      if (only !== undefined || l.active !== 1) return this.orderedAcrossFlows();
      only = l;
    }
    return only === undefined ? NOTHING_QUEUED : only.current!.items;
  }

  /** {@link ordered} in general: levels in turn, DRR across the tenants of each. */
  private *orderedAcrossFlows(): Generator<PendingRequest> {
    for (const l of this.levels) {
      if (l.active === 1) yield* l.current!.items;
      else if (l.active > 1) yield* simulate(l);
    }
  }

  /** Remove and return the next request (see {@link peek}), charging its cost to its tenant. */
  shift(): PendingRequest | undefined {
    for (const l of this.levels) {
      if (l.size === 0) continue;
      const f = settle(l) as Flow;
      const p = f.items.shift()!;
      if (l.active > 1) f.deficit -= costOf(p);
      l.size--;
      this.count--;
      if (f.items.length === 0) this.leave(l, f);
      return p;
    }
    return undefined;
  }

  /** Remove one queued request (O(its position in its tenant's FIFO)), uncharged; false if it is not queued. */
  remove(p: PendingRequest): boolean {
    const level = this.findLevel(p.level);
    const flow = level?.flows.get(p.request.tenant);
    if (!level || !flow) return false;
    const i = flow.items.indexOf(p);
    if (i < 0) return false;
    flow.items.splice(i, 1);
    level.size--;
    this.count--;
    if (flow.items.length === 0) this.leave(level, flow);
    return true;
  }

  /**
   * Remove and return every request whose deadline is at or before `nowNs` on a level whose
   * `timeout_action` is REJECT (DELAY levels keep theirs). O(1) while no deadline is due.
   */
  takeExpired(nowNs: bigint): readonly PendingRequest[] {
    if (this.nextDeadlineNs === 0n || nowNs < this.nextDeadlineNs) return NONE_EXPIRED;
    const expired: PendingRequest[] = [];
    let next = 0n;
    for (const level of this.levels) {
      if (level.policy.timeout_action !== 'REJECT') continue;
      for (const flow of level.flows.values()) {
        const items = flow.items;
        if (items.length === 0) continue;
        let kept = 0;
        for (const p of items) {
          if (p.deadlineNs !== 0n && p.deadlineNs <= nowNs) {
            expired.push(p);
            continue;
          }
          if (p.deadlineNs !== 0n && (next === 0n || p.deadlineNs < next)) next = p.deadlineNs;
          items[kept++] = p;
        }
        level.size -= items.length - kept;
        items.length = kept;
        if (kept === 0) this.leave(level, flow);
      }
    }
    this.count -= expired.length;
    this.nextDeadlineNs = next;
    return expired;
  }

  /** Remove everything (shutdown / unload); returned in dispatch order. */
  clear(): PendingRequest[] {
    const all = [...this.ordered()];
    for (const level of this.levels) {
      for (const flow of level.flows.values()) {
        flow.items.length = 0;
        flow.deficit = 0;
      }
      level.current = undefined;
      level.active = 0;
      level.started = false;
      level.size = 0;
    }
    this.count = 0;
    this.nextDeadlineNs = 0n;
    return all;
  }

  /**
   * When the oldest request of a level was queued (default: the highest non-empty level); the
   * batcher's queue delay counts from it. Undefined if that level is empty.
   */
  oldestStartNs(levelIdx?: number): bigint | undefined {
    const level = levelIdx === undefined ? this.levels.find((l) => l.size > 0) : this.findLevel(levelIdx);
    if (!level || level.active === 0) return undefined;
    let f = level.current!;
    let oldest = f.items[0]!.queueStartNs;
    for (let i = 1; i < level.active; i++) {
      f = f.next;
      const t = f.items[0]!.queueStartNs;
      if (t < oldest) oldest = t;
    }
    return oldest;
  }

  /** Queued requests per tenant, across levels (tenants with none are left out). */
  pendingByTenant(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const level of this.levels) {
      for (const [tenant, flow] of level.flows) {
        if (flow.items.length > 0) counts.set(tenant, (counts.get(tenant) ?? 0) + flow.items.length);
      }
    }
    return counts;
  }

  /** Queued requests of one tenant, across levels. */
  pendingOf(tenant: string): number {
    let n = 0;
    for (const level of this.levels) n += level.flows.get(tenant)?.items.length ?? 0;
    return n;
  }

  private checkQuota(tenant: string): void {
    const cap = typeof this.maxQueued === 'function' ? this.maxQueued(tenant) : this.maxQueued!;
    if (cap > 0 && this.pendingOf(tenant) >= cap) {
      throw schedulerErrors.tenantQueueQuota(tenant, cap, this.model);
    }
  }

  /** `flow` emptied: out of the round; forgotten unless the level keeps it for reuse. */
  private leave(level: Level, flow: Flow): void {
    unlink(level, flow);
    if (level.flows.size > KEPT_FLOWS) {
      level.flows.delete(flow.tenant);
      if (level.last === flow) level.last = undefined;
    }
  }

  /** The created level of index `i`, if any. */
  private findLevel(i: number): Level | undefined {
    for (const l of this.levels) if (l.index >= i) return l.index === i ? l : undefined;
    return undefined;
  }

  /** The level of index `i`, created (with its queue policy) and put in order on first use. */
  private levelAt(i: number): Level {
    const levels = this.levels;
    let at = 0;
    while (at < levels.length && levels[at]!.index < i) at++;
    if (at < levels.length && levels[at]!.index === i) return levels[at]!;
    const b = this.batching;
    const level = new Level(i, b?.priority_queue_policy?.[String(i + 1)] ?? b?.default_queue_policy ?? NO_POLICY);
    levels.splice(at, 0, level);
    return level;
  }

  private levelOf(priority: number): number {
    const n = this.levelCount;
    const lvl = priority > 0 && priority <= n ? priority : this.defaultLevel;
    return Math.min(Math.max(lvl, 1), n) - 1;
  }
}
