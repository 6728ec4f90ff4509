/** PendingQueue: priority levels, queue size limit, lazy expiry from the nearest deadline (spec §5.6, §3.9). */
import { describe, expect, it } from 'vitest';
import type { ModelDynamicBatching, ModelQueuePolicy } from '../../host/src/config/types.js';
import type { ResponseSender } from '../../host/src/core/types.js';
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
