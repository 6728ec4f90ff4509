/**
 * CPU across models (scheduler/tenant-arbiter.ts; DESIGN "Sandbox rules": one tenant's resource
 * exhaustion must not reduce another's service beyond its share): a tenant spinning its sandboxes
 * within quota runs at most its `max_concurrent_executions` at once while another tenant's request
 * is served at once; freed slots go to the tenant with the least recent execute time; claims of
 * models outside the sandbox pass through. Assertions count executions, never time.
 */
import { describe, expect, it } from 'vitest';
import type { InferenceRequestInit } from '../../host/src/contract/types.js';
import type { ExecutionClaim } from '../../host/src/scheduler/index.js';
import { TenantExecutionArbiter } from '../../host/src/scheduler/tenant-arbiter.js';
import { FakeInstance, collector, config, ECHO, echoInit, modelVersion, tick, type Outcome } from '../helpers/model-version.js';

const WASM = ECHO.replace('backend: "fake"', 'backend: "wasm"');
const claim = (tenants: string[], sandboxed = true): ExecutionClaim => ({ model: 'm', version: 1, tenants, sandboxed });
const init = (id: string, tenant: string): InferenceRequestInit => echoInit(id, { tenant });

describe('TenantExecutionArbiter through real schedulers', () => {
  it("a spinning tenant runs at most its cap of sandbox executions; another tenant's request runs at once", async () => {
    const caps: Record<string, number> = { A: 2, B: 2 };
    const arbiter = new TenantExecutionArbiter({ slots: 8, maxConcurrentOf: (t) => caps[t] ?? 4 });
    // A: two models of 4 instances each, all spinning (manual: they never finish until released)
    const aInstances = Array.from({ length: 8 }, () => new FakeInstance({ manual: true }));
    const a1 = modelVersion(config(WASM, 'a1'), aInstances.slice(0, 4), { arbiter }).mv;
    const a2 = modelVersion(config(WASM, 'a2'), aInstances.slice(4), { arbiter }).mv;
    const bInstance = new FakeInstance({ manual: true });
    const b = modelVersion(config(WASM, 'b'), [bInstance], { arbiter }).mv;
    const done: Promise<Outcome>[] = [];
    const submit = (mv: typeof a1, i: InferenceRequestInit) => {
      const c = collector();
      mv.submit(i, c.sender);
      done.push(c.done);
    };
    for (let i = 0; i < 12; i++) submit(i % 2 ? a2 : a1, init(`A-${i}`, 'A'));
    await tick();
    const spinning = () => aInstances.reduce((n, x) => n + x.waiting, 0);
    expect(spinning()).toBe(2);
    expect(arbiter.runningCount('A')).toBe(2);
    submit(b, init('B-0', 'B'));
    await tick();
    expect(bInstance.waiting).toBe(1); // B runs while A holds its cap
    expect(spinning()).toBe(2);
    bInstance.release();
    expect((await done[12])!.error).toBeUndefined();
    // A's executions end one by one; A never runs more than 2 at once
    let finished = 0;
    while (finished < 12) {
      const busy = aInstances.find((x) => x.waiting > 0)!;
      busy.release();
      finished++;
      await tick();
      expect(spinning()).toBeLessThanOrEqual(2);
    }
    await Promise.all(done);
    expect(aInstances.reduce((n, x) => n + x.executions.length, 0)).toBe(12);
    for (const mv of [a1, a2, b]) await mv.retire();
  });

  it('models outside the sandbox are not held back (they may make nested calls)', async () => {
    const arbiter = new TenantExecutionArbiter({ slots: 2, maxConcurrentOf: () => 1 });
    const instances = Array.from({ length: 4 }, () => new FakeInstance({ manual: true }));
    const { mv } = modelVersion(config(ECHO), instances, { arbiter });
    const outcomes = [0, 1, 2, 3].map((i) => {
      const c = collector();
      mv.submit(init(`A-${i}`, 'A'), c.sender);
      return c.done;
    });
    await tick();
    expect(instances.reduce((n, x) => n + x.waiting, 0)).toBe(4);
    for (const x of instances) x.release();
    await Promise.all(outcomes);
    await mv.retire();
  });
});

describe('TenantExecutionArbiter rule', () => {
  it('caps each tenant at its quota and at half the slots; the operator is not capped', () => {
    const arbiter = new TenantExecutionArbiter({ slots: 4, maxConcurrentOf: (t) => (t === 'A' ? 10 : 1) });
    expect(arbiter.capOf('A')).toBe(2);
    expect(arbiter.capOf('B')).toBe(1);
    expect(arbiter.capOf('')).toBe(Infinity);
    const wakes: string[] = [];
    expect(arbiter.tryAdmit(claim(['A']), () => wakes.push('A1'))).toBeDefined();
    expect(arbiter.tryAdmit(claim(['A']), () => wakes.push('A2'))).toBeDefined();
    expect(arbiter.tryAdmit(claim(['A']), () => wakes.push('A3'))).toBeUndefined();
    // a mixed batch runs while one of its tenants has room
    expect(arbiter.tryAdmit(claim(['A', 'B']), () => wakes.push('AB'))).toBeDefined();
    expect(arbiter.tryAdmit(claim(['']), () => wakes.push('op'))).toBeDefined();
    expect(arbiter.runningCount()).toBe(4);
    // a non-sandboxed claim passes through even with every slot taken
    expect(arbiter.tryAdmit(claim(['A'], false), () => undefined)).toBeDefined();
    expect(arbiter.tryAdmit(claim(['C']), () => wakes.push('C'))).toBeUndefined();
    expect(wakes).toEqual([]);
  });

  it('a freed slot goes to the waiting tenant with the least recent execute time, whatever the arrival order', () => {
    let now = 0;
    const arbiter = new TenantExecutionArbiter({ slots: 4, maxConcurrentOf: () => 2, halfLifeMs: 1000, now: () => now });
    // A ran 5 s of sandbox time just now; B ran 0.1 s
    const a = arbiter.tryAdmit(claim(['A']), () => undefined)!;
    now = 4900;
    const b = arbiter.tryAdmit(claim(['B']), () => undefined)!;
    now = 5000;
    a.release();
    b.release();
    expect(arbiter.recentUsageMs('A')).toBeGreaterThan(10 * arbiter.recentUsageMs('B'));
    // the operator's executions take every slot
    const op = [0, 1, 2, 3].map(() => arbiter.tryAdmit(claim(['']), () => undefined)!);
    // every slot busy; A asks first, then B
    const woken: string[] = [];
    const tries: Record<string, () => void> = {};
    tries.A = () => {
      woken.push('A');
      arbiter.tryAdmit(claim(['A']), tries.A!);
    };
    tries.B = () => {
      woken.push('B');
      arbiter.tryAdmit(claim(['B']), tries.B!);
    };
    expect(arbiter.tryAdmit(claim(['A']), tries.A)).toBeUndefined();
    expect(arbiter.tryAdmit(claim(['B']), tries.B)).toBeUndefined();
    now = 5100;
    op[0]!.release();
    expect(woken).toEqual(['B']); // B, the lighter tenant, although A waited longer
    op[1]!.release();
    expect(woken).toEqual(['B', 'A']);
    expect(arbiter.runningCount()).toBe(4);
  });
});
