/** PendingQueue: priority levels, queue size limit, lazy expiry from the nearest deadline (spec §5.6, §3.9). */
import { describe, expect, it } from 'vitest';
import type { ModelDynamicBatching, ModelQueuePolicy } from '../../host/src/contract/model-config.js';
import type { ResponseSender } from '../../host/src/contract/types.js';
import { PendingQueue } from '../../host/src/scheduler/queue.js';
import { request } from '../helpers/backend-request.js';

const sender: ResponseSender = { send: () => undefined, sendError: () => undefined };
const policy = (p: Partial<ModelQueuePolicy> = {}): ModelQueuePolicy => ({
  timeout_action: 'REJECT',
  default_timeout_microseconds: 0,
  allow_timeout_override: true,
  max_queue_size: 0,
  ...p,
});
const batching = (p: Partial<ModelDynamicBatching> = {}): ModelDynamicBatching => ({
  preferred_batch_size: [],
  max_queue_delay_microseconds: 0,
  preserve_ordering: false,
  priority_levels: 0,
  default_priority_level: 0,
  default_queue_policy: policy(),
  priority_queue_policy: {},
  ...p,
});
/** Queue a request `id` at time `atUs` µs with a request timeout of `timeoutUs` (0 = none). */
const push = (q: PendingQueue, id: string, atUs: number, timeoutUs = 0, priority = 0) =>
  q.push({ request: request('m', [], [], { id, timeoutUs, priority }), sender, queueStartNs: BigInt(atUs) * 1000n });
const ids = (ps: readonly { request: { id: string } }[]) => ps.map((p) => p.request.id);
const ns = (us: number) => BigInt(us) * 1000n;

describe('PendingQueue', () => {
  it('expires only requests whose deadline passed, oldest first, and keeps the others in order', () => {
    const q = new PendingQueue(batching());
    push(q, 'a', 0, 100);
    push(q, 'b', 0);
    push(q, 'c', 10, 50);
    push(q, 'd', 10, 500);
    expect(q.takeExpired(ns(59))).toEqual([]);
    expect(ids(q.takeExpired(ns(60)))).toEqual(['c']);
    expect(ids(q.takeExpired(ns(100)))).toEqual(['a']);
    expect(q.size).toBe(2);
    expect(ids([...q.ordered()])).toEqual(['b', 'd']);
    expect(ids(q.takeExpired(ns(10_000)))).toEqual(['d']);
    expect(ids([...q.ordered()])).toEqual(['b']);
  });

  it('a nearest deadline whose request already left does not hide later ones', () => {
    const q = new PendingQueue(batching());
    push(q, 'a', 0, 10);
    push(q, 'b', 0, 20);
    expect(q.shift()!.request.id).toBe('a');
    expect(q.takeExpired(ns(15))).toEqual([]);
    expect(ids(q.takeExpired(ns(20)))).toEqual(['b']);
    expect(q.size).toBe(0);
  });

  it('a request may only shorten the policy timeout; DELAY levels never expire here', () => {
    const q = new PendingQueue(
      batching({
        priority_levels: 2,
        default_priority_level: 1,
        default_queue_policy: policy({ default_timeout_microseconds: 100 }),
        priority_queue_policy: { '2': policy({ timeout_action: 'DELAY', default_timeout_microseconds: 1 }) },
      }),
    );
    push(q, 'long', 0, 1000);
    push(q, 'short', 0, 5);
    push(q, 'delayed', 0, 0, 2);
    expect(ids(q.takeExpired(ns(5)))).toEqual(['short']);
    expect(ids(q.takeExpired(ns(100)))).toEqual(['long']);
    expect(ids(q.takeExpired(ns(1_000_000)))).toEqual([]);
    expect(ids([...q.ordered()])).toEqual(['delayed']);
  });

  it('rejects past max_queue_size per level, and remove / clear keep the count', () => {
    const q = new PendingQueue(batching({ default_queue_policy: policy({ max_queue_size: 2 }) }));
    push(q, 'a', 0);
    push(q, 'b', 0);
    expect(() => push(q, 'c', 0)).toThrow('Exceeds maximum queue size');
    const [a] = [...q.ordered()];
    expect(q.remove(a!)).toBe(true);
    expect(q.remove(a!)).toBe(false);
    expect(q.size).toBe(1);
    push(q, 'c', 0, 1);
    expect(ids(q.clear())).toEqual(['b', 'c']);
    expect(q.size).toBe(0);
    expect(q.takeExpired(ns(1_000))).toEqual([]);
  });
});

/** A request of `tenant` with `batchSize` elements queued at `atUs` µs. */
const pushT = (q: PendingQueue, id: string, tenant: string, o: { batchSize?: number; atUs?: number; timeoutUs?: number; priority?: number } = {}) =>
  q.push({
    request: request('m', [], [], { id, tenant, batchSize: o.batchSize ?? 1, timeoutUs: o.timeoutUs ?? 0, priority: o.priority ?? 0 }),
    sender,
    queueStartNs: ns(o.atUs ?? 0),
  });
const drain = (q: PendingQueue): string[] => {
  const out: string[] = [];
  for (let p = q.shift(); p; p = q.shift()) out.push(p.request.id);
  return out;
};

/** A small deterministic PRNG (mulberry32) for the property tests. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('PendingQueue tenant fairness (deficit round robin)', () => {
  it('one tenant is served exactly FIFO whatever the batch sizes, weights and quantum', () => {
    const q = new PendingQueue(batching(), { quantum: 1, weightOf: () => 0.25 });
    const sent: string[] = [];
    for (let i = 0; i < 50; i++) {
      pushT(q, `r${i}`, 'only', { batchSize: 1 + (i % 7) });
      sent.push(`r${i}`);
    }
    expect(ids([...q.ordered()])).toEqual(sent);
    expect(q.peek()!.request.id).toBe('r0');
    expect(drain(q)).toEqual(sent);
  });

  it('a newcomer waits at most one turn (quantum × weight elements) of a flooding tenant', () => {
    const q = new PendingQueue(batching(), { quantum: 4 });
    for (let i = 0; i < 100; i++) pushT(q, `a${i}`, 'A');
    pushT(q, 'b0', 'B');
    pushT(q, 'b1', 'B');
    const order = ids([...q.ordered()]);
    expect(order.slice(0, 8)).toEqual(['a0', 'a1', 'a2', 'a3', 'b0', 'b1', 'a4', 'a5']);
    expect(drain(q)).toEqual(order);
  });

  it('weights share the dispatches in proportion; cost is the batch size', () => {
    const q = new PendingQueue(batching(), { quantum: 2, weightOf: (t) => (t === 'heavy' ? 3 : 1) });
    for (let i = 0; i < 300; i++) {
      pushT(q, `h${i}`, 'heavy');
      pushT(q, `l${i}`, 'light');
    }
    const first = ids([...q.ordered()]).slice(0, 200);
    expect(first.filter((id) => id.startsWith('h')).length).toBe(150);

    // Equal weights, unequal request sizes: equal batch elements, not equal requests.
    const sized = new PendingQueue(batching(), { quantum: 8 });
    for (let i = 0; i < 100; i++) {
      pushT(sized, `s${i}`, 'small', { batchSize: 1 });
      pushT(sized, `b${i}`, 'big', { batchSize: 4 });
    }
    let small = 0;
    let big = 0;
    for (let i = 0; i < 50; i++) {
      const p = sized.shift()!;
      if (p.request.tenant === 'small') small += p.request.batchSize;
      else big += p.request.batchSize;
    }
    expect(Math.abs(small - big)).toBeLessThanOrEqual(8);
  });

  it('a tiny weight still gets served, without spinning round by round', () => {
    const q = new PendingQueue(batching(), { quantum: 1, weightOf: (t) => (t === 'tiny' ? 1e-6 : 1) });
    pushT(q, 't0', 'tiny', { batchSize: 8 });
    for (let i = 0; i < 20; i++) pushT(q, `n${i}`, 'normal', { batchSize: 1 });
    expect(drain(q).sort()).toEqual(['t0', ...Array.from({ length: 20 }, (_, i) => `n${i}`)].sort());
    expect(q.size).toBe(0);
  });

  it('ordered() is the shift order in each shape: empty, one tenant on one level (its FIFO itself), one tenant on two levels, two tenants', () => {
    const q = new PendingQueue(batching({ priority_levels: 2, default_priority_level: 2 }), { quantum: 1 });
    expect([...q.ordered()]).toEqual([]);
    for (let i = 0; i < 4; i++) pushT(q, `a-low${i}`, 'A');
    expect(ids([...q.ordered()])).toEqual(['a-low0', 'a-low1', 'a-low2', 'a-low3']);
    // The single-flow shape iterates the FIFO in place: a plan that stops early sees a prefix.
    const it = q.ordered()[Symbol.iterator]();
    expect(it.next().value!.request.id).toBe('a-low0');
    pushT(q, 'a-high0', 'A', { priority: 1 });
    expect(ids([...q.ordered()])).toEqual(['a-high0', 'a-low0', 'a-low1', 'a-low2', 'a-low3']);
    pushT(q, 'b-low0', 'B');
    const expected = ['a-high0', 'a-low0', 'b-low0', 'a-low1', 'a-low2', 'a-low3'];
    expect(ids([...q.ordered()])).toEqual(expected);
    expect(drain(q)).toEqual(expected);
    expect([...q.ordered()]).toEqual([]);
  });

  it('priority levels come before tenants', () => {
    const q = new PendingQueue(batching({ priority_levels: 2, default_priority_level: 2 }), { quantum: 1 });
    for (let i = 0; i < 5; i++) pushT(q, `a-low${i}`, 'A');
    pushT(q, 'b-low0', 'B');
    pushT(q, 'b-high0', 'B', { priority: 1 });
    pushT(q, 'a-high0', 'A', { priority: 1 });
    pushT(q, 'b-high1', 'B', { priority: 1 });
    const order = drain(q);
    expect(order.slice(0, 3)).toEqual(['b-high0', 'a-high0', 'b-high1']);
    expect(order.slice(3, 6)).toEqual(['a-low0', 'b-low0', 'a-low1']);
  });

  it('cancelled requests cost nothing, so ordered() minus the removed cancelled ones is the shift order', () => {
    const q = new PendingQueue(batching(), { quantum: 1 });
    for (const id of ['a1', 'a2', 'a3']) pushT(q, id, 'A');
    for (const id of ['b1', 'b2', 'b3']) pushT(q, id, 'B');
    const all = [...q.ordered()];
    for (const p of all) if (p.request.id === 'a2' || p.request.id === 'b1') p.request.cancelled = true;
    const seen = [...q.ordered()];
    expect(ids(seen)).toEqual(['a1', 'a2', 'b1', 'b2', 'a3', 'b3']);
    for (const p of seen) if (p.request.cancelled) expect(q.remove(p)).toBe(true);
    expect(drain(q)).toEqual(['a1', 'b2', 'a3', 'b3']);
  });

  it('ordered(), peek() and shift() agree under random pushes, cancellations, removals and expiries', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const rand = rng(seed);
      const tenants = ['', 'A', 'B', 'C', 'D'].slice(0, 1 + Math.floor(rand() * 5));
      const weights = new Map(tenants.map((t) => [t, [0.5, 1, 2, 3][Math.floor(rand() * 4)]!]));
      const q = new PendingQueue(batching({ priority_levels: 2, default_priority_level: 2, default_queue_policy: policy() }), {
        quantum: [1, 2, 8][Math.floor(rand() * 3)]!,
        weightOf: (t) => weights.get(t)!,
      });
      let next = 0;
      let nowUs = 0;
      for (let step = 0; step < 300; step++) {
        const r = rand();
        if (r < 0.45) {
          nowUs += 1;
          const timeoutUs = rand() < 0.1 ? 1 + Math.floor(rand() * 50) : 0;
          pushT(q, `r${next++}`, tenants[Math.floor(rand() * tenants.length)]!, {
            batchSize: 1 + Math.floor(rand() * 8),
            atUs: nowUs,
            timeoutUs,
            priority: rand() < 0.2 ? 1 : 2,
          });
        } else if (r < 0.55) {
          const queued = [...q.ordered()];
          if (queued.length > 0) queued[Math.floor(rand() * queued.length)]!.request.cancelled = true;
        } else if (r < 0.6) {
          nowUs += 5;
          const before = q.size;
          const expired = q.takeExpired(ns(nowUs));
          expect(q.size).toBe(before - expired.length);
        } else {
          // What the batcher does: plan on ordered(), drop the cancelled ones it met, shift the rest.
          const seen = [...q.ordered()];
          expect(seen.length).toBe(q.size);
          expect(q.peek()).toBe(seen[0]);
          const take = Math.min(seen.length, 1 + Math.floor(rand() * 6));
          const planned = seen.slice(0, take);
          for (const p of planned) if (p.request.cancelled) expect(q.remove(p)).toBe(true);
          const expected = planned.filter((p) => !p.request.cancelled);
          const got = expected.map(() => q.shift());
          expect(ids(got as typeof expected)).toEqual(ids(expected));
          const counts = q.pendingByTenant();
          expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(q.size);
        }
      }
      const rest = [...q.ordered()];
      expect(ids(q.clear())).toEqual(ids(rest));
      expect(q.size).toBe(0);
      expect(q.pendingByTenant().size).toBe(0);
    }
  });

  it('expiry and removal across tenants keep each FIFO and the round intact', () => {
    const q = new PendingQueue(batching(), { quantum: 1 });
    pushT(q, 'a1', 'A', { timeoutUs: 10 });
    pushT(q, 'a2', 'A');
    pushT(q, 'b1', 'B', { timeoutUs: 10 });
    pushT(q, 'c1', 'C', { timeoutUs: 10 });
    pushT(q, 'c2', 'C');
    pushT(q, 'b2', 'B');
    expect(ids(q.takeExpired(ns(9)))).toEqual([]);
    expect(ids(q.takeExpired(ns(10))).sort()).toEqual(['a1', 'b1', 'c1']);
    expect(q.size).toBe(3);
    expect(ids([...q.ordered()])).toEqual(['a2', 'b2', 'c2']);
    const [, b2] = [...q.ordered()];
    expect(q.remove(b2!)).toBe(true);
    expect(q.pendingByTenant()).toEqual(
      new Map([
        ['A', 1],
        ['C', 1],
      ]),
    );
    expect(drain(q)).toEqual(['a2', 'c2']);
  });

  it('the per-tenant cap counts a tenant across levels and rejects only that tenant', () => {
    const q = new PendingQueue(batching({ priority_levels: 2, default_priority_level: 2 }), { model: 'shared', maxQueuedPerTenant: 2 });
    pushT(q, 'a1', 'A');
    pushT(q, 'a2', 'A', { priority: 1 });
    expect(() => pushT(q, 'a3', 'A')).toThrow("tenant 'A' exceeds its queue quota of 2 requests for model 'shared'");
    pushT(q, 'b1', 'B');
    pushT(q, 'b2', 'B');
    expect(q.pendingByTenant()).toEqual(
      new Map([
        ['A', 2],
        ['B', 2],
      ]),
    );
    q.shift();
    pushT(q, 'a3', 'A');
    expect(q.size).toBe(4);

    const perTenant = new PendingQueue(batching(), { model: 'm', maxQueuedPerTenant: (t) => (t === 'small' ? 1 : 0) });
    pushT(perTenant, 's1', 'small');
    expect(() => pushT(perTenant, 's2', 'small')).toThrow(/tenant 'small' exceeds its queue quota of 1 requests/);
    for (let i = 0; i < 10; i++) pushT(perTenant, `x${i}`, 'unlimited');
    expect(perTenant.size).toBe(11);
  });

  it('max_queue_size stays per level, whatever the tenant', () => {
    const q = new PendingQueue(batching({ default_queue_policy: policy({ max_queue_size: 3 }) }));
    pushT(q, 'a1', 'A');
    pushT(q, 'a2', 'A');
    pushT(q, 'b1', 'B');
    expect(() => pushT(q, 'c1', 'C')).toThrow('Exceeds maximum queue size');
  });

  it('oldestStartNs is the oldest request of the level served, whichever tenant has the turn', () => {
    const q = new PendingQueue(batching(), { quantum: 1 });
    pushT(q, 'a1', 'A', { atUs: 5 });
    pushT(q, 'b1', 'B', { atUs: 1 });
    pushT(q, 'a2', 'A', { atUs: 7 });
    expect(q.oldestStartNs()).toBe(ns(1));
    q.shift();
    q.shift();
    expect(q.oldestStartNs()).toBe(ns(7));
    q.shift();
    expect(q.oldestStartNs()).toBeUndefined();
  });
});
