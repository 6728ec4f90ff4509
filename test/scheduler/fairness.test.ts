/**
 * Tenant fairness of the scheduler through ModelVersion with fake in-process instances (DESIGN
 * "Sandbox rules": one tenant's flood must not reduce another's service beyond its share): the
 * queue serves the tenants of a priority level by deficit round robin, a lone tenant exactly FIFO,
 * and an optional per-tenant cap rejects only the tenant over it. Assertions count dispatch order,
 * never time.
 */
import { describe, expect, it } from 'vitest';
import type { InferenceRequestInit } from '../../host/src/contract/types.js';
import { BatchPolicy } from '../../host/src/scheduler/batch-policy.js';
import type { ExecutionArbiter, ExecutionClaim, ExecutionGrant } from '../../host/src/scheduler/index.js';
import { PendingQueue, type PendingRequest } from '../../host/src/scheduler/queue.js';
import { request } from '../helpers/backend-request.js';
import { ManualClock } from '../helpers/clock.js';
import { FakeInstance, collector, config, ECHO, echoInit, modelVersion, tick, type Outcome } from '../helpers/model-version.js';

/** An echo request `id` from `tenant` with `batch` rows. */
function init(id: string, tenant: string, batch = 1, extra: Partial<InferenceRequestInit> = {}): InferenceRequestInit {
  return echoInit(id, {
    tenant,
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [batch, 4], data: new Uint8Array(16 * batch) }],
    ...extra,
  });
}

type MV = ReturnType<typeof modelVersion>['mv'];

/** Submit and collect the outcome. */
function submit(mv: MV, i: InferenceRequestInit): Promise<Outcome> {
  const c = collector();
  mv.submit(i, c.sender);
  return c.done;
}

/** The tenant of a request id (`<tenant>-<n>`). */
const tenantOf = (id: string): string => id.slice(0, id.indexOf('-'));

describe('tenant fairness', () => {
  it('a flood of 200 from A does not starve B: B is dispatched after one turn of A (quantum = max_batch_size = 8)', async () => {
    const inst = new FakeInstance();
    const { mv } = modelVersion(config(ECHO), [inst]);
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 200; i++) done.push(submit(mv, init(`A-${i}`, 'A')));
    for (let i = 0; i < 3; i++) done.push(submit(mv, init(`B-${i}`, 'B')));
    expect(mv.pendingCount).toBe(202);
    await Promise.all(done);
    const order = inst.executions.map((e) => e.join());
    // A-0 was executing when B arrived; A's turn then serves quantum × weight = 8 of its queued
    // requests (one per execution without dynamic batching), then B's turn serves all of B.
    expect(order.slice(0, 13)).toEqual([...Array.from({ length: 9 }, (_, i) => `A-${i}`), 'B-0', 'B-1', 'B-2', 'A-9']);
    expect(order.length).toBe(203);
    await mv.retire();
  });

  it('the bound follows the quantum: with quantum 1, A and B alternate request by request', async () => {
    const inst = new FakeInstance();
    const { mv } = modelVersion(config(ECHO), [inst], { fairness: { quantum: 1 } });
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 200; i++) done.push(submit(mv, init(`A-${i}`, 'A')));
    for (let i = 0; i < 3; i++) done.push(submit(mv, init(`B-${i}`, 'B')));
    await Promise.all(done);
    expect(inst.executions.slice(0, 8).map((e) => e.join())).toEqual(['A-0', 'A-1', 'B-0', 'A-2', 'B-1', 'A-3', 'B-2', 'A-4']);
    await mv.retire();
  });

  it('the dynamic batcher forms batches in DRR order: B rides in the second batch after its arrival, mixed with A', async () => {
    const inst = new FakeInstance({ manual: true });
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { }`), [inst]);
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 200; i++) done.push(submit(mv, init(`A-${i}`, 'A')));
    for (let i = 0; i < 3; i++) done.push(submit(mv, init(`B-${i}`, 'B')));
    for (let n = 0; n < 3; n++) {
      inst.release();
      await tick();
    }
    expect(inst.executions.slice(0, 3)).toEqual([
      ['A-0'],
      ['A-1', 'A-2', 'A-3', 'A-4', 'A-5', 'A-6', 'A-7', 'A-8'],
      ['B-0', 'B-1', 'B-2', 'A-9', 'A-10', 'A-11', 'A-12', 'A-13'],
    ]);
    while (mv.pendingCount > 0 || inst.waiting > 0) {
      inst.release();
      await tick();
    }
    expect((await Promise.all(done)).every((o) => o.response)).toBe(true);
    expect(inst.executions.flat().length).toBe(203);
    await mv.retire();
  });

  it('weights 3:1 give a 3:1 dispatch ratio while both tenants are backlogged', async () => {
    const inst = new FakeInstance();
    const weights: Record<string, number> = { A: 3, B: 1 };
    const { mv } = modelVersion(config(ECHO), [inst], { fairness: { weightOf: (t) => weights[t] ?? 1 } });
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 300; i++) {
      done.push(submit(mv, init(`A-${i}`, 'A')));
      done.push(submit(mv, init(`B-${i}`, 'B')));
    }
    await Promise.all(done);
    const first = inst.executions.slice(0, 320).map((e) => tenantOf(e[0]!));
    const a = first.filter((t) => t === 'A').length;
    const b = first.length - a;
    expect(a / b).toBeGreaterThan(2.8);
    expect(a / b).toBeLessThan(3.2);
    // A drains first, then B has the instance to itself: every request ran exactly once.
    expect(inst.executions.length).toBe(600);
    await mv.retire();
  });

  it('fairness is in batch elements: a tenant of 4-row requests gets as many rows as one of 1-row requests', async () => {
    const inst = new FakeInstance();
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { }`), [inst]);
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 100; i++) {
      done.push(submit(mv, init(`S-${i}`, 'S', 1)));
      done.push(submit(mv, init(`L-${i}`, 'L', 4)));
    }
    await Promise.all(done);
    const rows = { S: 0, L: 0 };
    for (const e of inst.executions.slice(0, 20)) for (const id of e) rows[tenantOf(id) as 'S' | 'L'] += tenantOf(id) === 'L' ? 4 : 1;
    expect(Math.abs(rows.S - rows.L)).toBeLessThanOrEqual(8);
    await mv.retire();
  });

  it('a single tenant is served exactly FIFO, batched or not, whatever its weight', async () => {
    for (const [pbtxt, tenant] of [
      [ECHO, ''],
      [`${ECHO} dynamic_batching { preferred_batch_size: [ 4 ] }`, ''],
      [`${ECHO} dynamic_batching { }`, 'solo'],
    ] as const) {
      const inst = new FakeInstance();
      const { mv } = modelVersion(config(pbtxt), [inst], { fairness: { weightOf: () => 0.1, quantum: 1 } });
      const ids = Array.from({ length: 60 }, (_, i) => `r${i}`);
      await Promise.all(ids.map((id, i) => submit(mv, init(id, tenant, 1 + (i % 3)))));
      expect(inst.executions.flat()).toEqual(ids);
      await mv.retire();
    }
  });

  it('priority levels dominate tenants: every level-1 request runs before any level-2 one', async () => {
    const inst = new FakeInstance();
    const { mv } = modelVersion(
      config(`${ECHO} dynamic_batching { priority_levels: 2 default_priority_level: 2 }`.replace('max_batch_size: 8', 'max_batch_size: 0')),
      [inst],
    );
    const unbatched = (id: string, tenant: string, priority: number) => echoInit(id, { tenant, priority }, false);
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 30; i++) done.push(submit(mv, unbatched(`A-low${i}`, 'A', 2)));
    for (let i = 0; i < 3; i++) done.push(submit(mv, unbatched(`B-high${i}`, 'B', 1)));
    for (let i = 0; i < 3; i++) done.push(submit(mv, unbatched(`A-high${i}`, 'A', 1)));
    for (let i = 0; i < 3; i++) done.push(submit(mv, unbatched(`B-low${i}`, 'B', 2)));
    await Promise.all(done);
    const order = inst.executions.map((e) => e.join());
    // Quantum max(1, max_batch_size) = 1 here: tenants alternate within a level.
    expect(order.slice(0, 9)).toEqual(['A-low0', 'B-high0', 'A-high0', 'B-high1', 'A-high1', 'B-high2', 'A-high2', 'A-low1', 'B-low0']);
    await mv.retire();
  });

  it('queue timeouts still reject expired requests of every tenant, and the others still run', async () => {
    const inst = new FakeInstance({ manual: true });
    const clock = new ManualClock();
    const { mv, stats } = modelVersion(config(`${ECHO} dynamic_batching { default_queue_policy { allow_timeout_override: true } }`), [inst], { clock });
    const first = submit(mv, init('A-0', 'A'));
    const a1 = submit(mv, init('A-1', 'A', 1, { timeoutUs: 1 }));
    const a2 = submit(mv, init('A-2', 'A'));
    const b1 = submit(mv, init('B-1', 'B', 1, { timeoutUs: 1 }));
    const b2 = submit(mv, init('B-2', 'B', 1, { timeoutUs: 60_000_000 }));
    const c1 = submit(mv, init('C-1', 'C', 1, { timeoutUs: 1 }));
    clock.advance(1); // past the 1 µs timeouts, far from B-2's 60 s
    inst.release();
    for (const o of await Promise.all([a1, b1, c1])) {
      expect(o.error?.code).toBe('UNAVAILABLE');
      expect(o.error?.message).toBe('Request timeout expired');
    }
    await tick();
    inst.release();
    for (const o of await Promise.all([first, a2, b2])) expect(o.response).toBeDefined();
    expect(inst.executions).toEqual([['A-0'], ['A-2', 'B-2']]);
    expect(stats.fail.count).toBe(3);
    expect(mv.pendingByTenant().size).toBe(0);
    await mv.retire();
  });

  it('cancelled requests of several tenants are dropped and the batch is exactly the planned DRR order', async () => {
    const inst = new FakeInstance({ manual: true });
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { }`), [inst], { fairness: { quantum: 1 } });
    const outcomes: Record<string, Promise<Outcome>> = {};
    const requests: Record<string, { cancelled: boolean }> = {};
    for (const id of ['A-0', 'A-1', 'A-2', 'A-3', 'B-1', 'B-2', 'B-3', 'C-1']) {
      const c = collector();
      outcomes[id] = c.done;
      requests[id] = mv.submit(init(id, tenantOf(id)), c.sender);
    }
    for (const id of ['A-2', 'B-1', 'C-1']) requests[id]!.cancelled = true;
    expect(mv.pendingByTenant()).toEqual(
      new Map([
        ['A', 3],
        ['B', 3],
        ['C', 1],
      ]),
    );
    inst.release();
    await tick();
    // Round A, B, C with quantum 1; cancelled requests cost nothing and never run.
    expect(inst.executions).toEqual([['A-0'], ['A-1', 'B-2', 'A-3', 'B-3']]);
    inst.release();
    for (const id of ['A-2', 'B-1', 'C-1']) expect((await outcomes[id]!).error?.code).toBe('CANCELLED');
    for (const id of ['A-0', 'A-1', 'A-3', 'B-2', 'B-3']) expect((await outcomes[id]!).response).toBeDefined();
    expect(mv.pendingCount).toBe(0);
    await mv.retire();
  });

  it('a per-tenant cap rejects only the tenant over it, with its quota in the message', async () => {
    const inst = new FakeInstance({ manual: true });
    const { mv, stats } = modelVersion(config(ECHO, 'shared'), [inst], { fairness: { maxQueuedPerTenant: 3 } });
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 4; i++) done.push(submit(mv, init(`A-${i}`, 'A', 1, { model: 'shared' })));
    let caught: unknown;
    try {
      mv.submit(init('A-4', 'A', 1, { model: 'shared' }), collector().sender);
    } catch (e) {
      caught = e;
    }
    expect((caught as { code?: string }).code).toBe('UNAVAILABLE');
    expect((caught as Error).message).toBe("tenant 'A' exceeds its queue quota of 3 requests for model 'shared'");
    for (let i = 0; i < 3; i++) done.push(submit(mv, init(`B-${i}`, 'B', 1, { model: 'shared' })));
    expect(mv.pendingByTenant()).toEqual(
      new Map([
        ['A', 3],
        ['B', 3],
      ]),
    );
    expect(stats.fail.count).toBe(1);

    // Once one of A's requests leaves the queue, A may queue one more.
    inst.release();
    await tick();
    expect(mv.pendingByTenant()).toEqual(
      new Map([
        ['A', 2],
        ['B', 3],
      ]),
    );
    done.push(submit(mv, init('A-5', 'A', 1, { model: 'shared' })));
    expect(mv.pendingByTenant().get('A')).toBe(3);
    while (inst.waiting > 0 || mv.pendingCount > 0) {
      inst.release();
      await tick();
    }
    expect((await Promise.all(done)).every((o) => o.response)).toBe(true);
    expect(mv.pendingByTenant()).toEqual(new Map());
    await mv.retire();
  });

  it('the arbiter sees the tenants of each batch it is asked to admit', async () => {
    const claims: string[][] = [];
    let held: (() => void) | undefined;
    let admittedOnce = false;
    const arbiter: ExecutionArbiter = {
      tryAdmit(claim: ExecutionClaim, wake: () => void): ExecutionGrant | undefined {
        if (admittedOnce && !held) {
          held = wake;
          return undefined;
        }
        admittedOnce = true;
        claims.push([...claim.tenants]);
        return { release: () => undefined };
      },
    };
    const inst = new FakeInstance({ manual: true });
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { preferred_batch_size: [ 4 ] }`), [inst], { arbiter, fairness: { quantum: 1 } });
    const done = ['A-0', 'A-1', 'A-2', 'B-1', 'A-3', 'B-2', 'C-1', 'C-2'].map((id) => submit(mv, init(id, tenantOf(id))));
    inst.release();
    await tick();
    expect(held).toBeDefined();
    held!();
    while (mv.pendingCount > 0 || inst.waiting > 0) {
      inst.release();
      await tick();
    }
    await Promise.all(done);
    expect(inst.executions).toEqual([['A-0'], ['A-1', 'B-1', 'C-1', 'A-2'], ['B-2', 'C-2', 'A-3']]);
    expect(claims).toEqual([['A'], ['A', 'B', 'C'], ['B', 'C', 'A']]);
    await mv.retire();
  });
});

describe('batch formation across tenants', () => {
  it('max_queue_delay counts from the oldest queued request, not from the head of the DRR order', () => {
    const cfg = config(`${ECHO} dynamic_batching { max_queue_delay_microseconds: 10 preferred_batch_size: [ 4 ] }`);
    const policy = new BatchPolicy(cfg);
    const q = new PendingQueue(cfg.dynamic_batching, { quantum: 1 });
    const us = (n: number) => BigInt(Math.round(n * 1000));
    const push = (id: string, tenant: string, atUs: number) =>
      q.push({ request: request('model', [], [], { id, tenant }), sender: collector().sender, queueStartNs: us(atUs) });
    push('a1', 'A', 0);
    push('a2', 'A', 1);
    push('b1', 'B', 2);
    expect(q.shift()!.request.id).toBe('a1');
    // A spent its turn: B's b1 (queued at 2 µs) heads the order, A's a2 (1 µs) is the oldest.
    expect(q.peek()!.request.id).toBe('b1');
    const cancelled: PendingRequest[] = [];
    const tenants: string[] = [];
    expect(policy.plan(q, us(10.5), false, cancelled, tenants)).toBe(0);
    expect(policy.plan(q, us(11.5), false, cancelled, tenants)).toBe(2);
    expect(tenants).toEqual(['B', 'A']);
    expect(cancelled).toEqual([]);
  });
});
