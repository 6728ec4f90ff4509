/**
 * Spare V8 sandbox workers (host/src/backends/wasm/v8/spares.ts): an instance start takes the
 * spare that was waiting (no one else gets it), a new spare boots after it, spares are not counted
 * as sandboxes nor in the memory budget, and finalizing the backend leaves no worker running.
 */
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpareWorkers } from '../../../host/src/backends/wasm/v8/spares.js';
import type { V8Engine } from '../../../host/src/backends/wasm/v8/engine.js';
import { until } from '../../helpers/wait.js';
import * as h from './helpers.js';

describe('v8 engine: spare sandbox workers', () => {
  beforeAll(() => h.ensureBuilt(), 600_000);
  const resolver = h.newResolver('v8');
  afterAll(() => resolver.finalizeAll());
  const config = h.wasmConfig('identity_wasm', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]);
  const identity = join(h.REPO, 'identity_wasm');

  it('an instance start takes the waiting spare, a new one boots after it, and finalizing terminates every worker', async () => {
    const m = await h.loadModel(resolver, config, identity);
    const engine = m.engine as V8Engine;
    const spares = engine.spares;
    expect(spares.size).toBe(1);
    // the compile started one (the instances come after the load)
    await until(() => spares.waiting().length === 1, { within: 10_000, every: 10 });
    const spare = spares.waiting()[0]!;
    expect(spare.threadId).toBeGreaterThan(0);
    const taken = spares.counts.taken;
    const sandboxes = engine.liveSandboxes();
    const budget = resolver.memoryBudget.usedBytes;

    const inst = await m.createInstance(h.instanceSpec('identity_wasm', 0));
    const rec = await h.infer(inst, h.request('identity_wasm', [h.tensor('INPUT0', 'FP32', [2], new Float32Array([3, 4]))], ['OUTPUT0']));
    expect(rec.errors).toEqual([]);
    expect(spares.counts.taken).toBe(taken + 1);
    expect(spares.waiting()).not.toContain(spare); // handed out once, to this instance
    expect(spare.threadId).toBeGreaterThan(0); // still running: it is the instance's sandbox
    expect(engine.liveSandboxes()).toBe(sandboxes + 1);
    expect(resolver.memoryBudget.usedBytes).toBeGreaterThan(budget);
    // a new spare boots once the start settled: another thread
    await until(() => spares.waiting().length === 1, { within: 10_000, every: 10 });
    const next: Worker = spares.waiting()[0]!;
    expect(next).not.toBe(spare);
    expect(next.threadId).not.toBe(spare.threadId);

    await inst.finalize();
    expect(spare.threadId).toBe(-1); // the instance's sandbox is gone with it
    expect(spares.waiting()).toEqual([next]); // the spare is no sandbox of any instance

    await resolver.finalizeAll();
    expect(engine.liveSandboxes()).toBe(0);
    expect(resolver.memoryBudget.usedBytes).toBe(0);
    expect(next.threadId).toBe(-1); // shut down: no worker outlives the backend
    expect(spares.waiting()).toEqual([]);
    spares.refill();
    expect(spares.waiting()).toEqual([]); // and none starts after
  });

  it('size 0 keeps no spare; the size is a non-negative integer', () => {
    const none = new SpareWorkers(0);
    none.refill();
    expect(none.waiting()).toEqual([]);
    expect(() => new SpareWorkers(-1)).toThrow(RangeError);
    expect(() => new SpareWorkers(1.5)).toThrow(RangeError);
  });
});
