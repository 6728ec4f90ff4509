/**
 * The scheduler seam through ModelVersion with fake in-process instances: cancelled requests are
 * dropped before execution, expired ones rejected, the dynamic batcher's queue delay honoured, a
 * server-wide arbiter serialises executions of several model versions without losing wake-ups,
 * and the factory builds every kind, ensembles over their compiled plan. Time is a manual clock
 * (helpers/clock.ts).
 */
import { describe, expect, it } from 'vitest';
import { TritonError } from '../../host/src/contract/errors.js';
import { createScheduler, schedulerKind, type ExecutionArbiter, type ExecutionClaim, type ExecutionGrant } from '../../host/src/scheduler/index.js';
import { ManualClock } from '../helpers/clock.js';
import { NO_SERVER, ownerPrincipal } from '../../host/src/contract/load-context.js';
import { compileEnsemblePlan } from '../../host/src/ensemble/plan.js';
import { EnsembleScheduler } from '../../host/src/ensemble/scheduler.js';
import { DynamicBatchScheduler } from '../../host/src/scheduler/dynamic-batch-scheduler.js';
import { SequenceBatchScheduler } from '../../host/src/scheduler/sequence-batch-scheduler.js';
import { ServerMetrics } from '../../host/src/metrics/prometheus.js';
import { ModelStatistics } from '../../host/src/metrics/stats.js';
import { Concurrency, FakeInstance, collector, config, ECHO, echoInit, modelVersion, tick, type Outcome } from '../helpers/model-version.js';

/** At most `limit` executions at once server-wide; freed capacity goes to deferred callers in FIFO order. */
class LimitArbiter implements ExecutionArbiter {
  active = 0;
  maxActive = 0;
  admitted: ExecutionClaim[] = [];
  private waiters: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  tryAdmit(claim: ExecutionClaim, wake: () => void): ExecutionGrant | undefined {
    if (this.active >= this.limit) {
      if (!this.waiters.includes(wake)) this.waiters.push(wake);
      return undefined;
    }
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    this.admitted.push(claim);
    let released = false;
    return {
      release: () => {
        expect(released).toBe(false);
        released = true;
        this.active--;
        // Hand capacity to one waiter at a time; a woken scheduler with nothing to run does not
        // claim, and the next one is tried (the ExecutionArbiter contract).
        while (this.active < this.limit && this.waiters.length > 0) this.waiters.shift()!();
      },
    };
  }

  get deferred(): number {
    return this.waiters.length;
  }
}

async function failureCount(metrics: { registry: { getSingleMetric(n: string): any } }, reason: string): Promise<number> {
  const m = await metrics.registry.getSingleMetric('nv_inference_request_failure').get();
  return m.values.find((v: any) => v.labels.reason === reason)?.value ?? 0;
}

describe('cancelled requests', () => {
  it('a cancelled queued request is never executed and gets CANCELLED; the others run', async () => {
    const inst = new FakeInstance({ manual: true });
    const { mv, stats, metrics } = modelVersion(config(ECHO), [inst]);
    const outcomes: Record<string, Promise<Outcome>> = {};
    const requests = Object.fromEntries(
      ['a', 'b', 'c', 'd'].map((id) => {
        const c = collector();
        outcomes[id] = c.done;
        return [id, mv.submit(echoInit(id), c.sender)];
      }),
    );
    expect(inst.executions).toEqual([['a']]);
    expect(mv.pendingCount).toBe(3);
    requests.b!.cancelled = true;
    requests.d!.cancelled = true;

    inst.release();
    await tick();
    expect(inst.executions).toEqual([['a'], ['c']]);
    inst.release();
    await tick();

    expect(inst.executions).toEqual([['a'], ['c']]);
    for (const id of ['b', 'd']) {
      const o = await outcomes[id]!;
      expect(o.error).toBeInstanceOf(TritonError);
      expect(o.error!.code).toBe('CANCELLED');
      expect(o.error!.message).toBe('Request was cancelled');
    }
    for (const id of ['a', 'c']) expect((await outcomes[id]!).response?.outputs[0]!.name).toBe('OUTPUT0');
    expect(mv.pendingCount).toBe(0);
    expect(stats.success.count).toBe(2);
    expect(stats.fail.count).toBe(2);
    expect(await failureCount(metrics, 'CANCELED')).toBe(2);
    await mv.retire();
  });

  it('the dynamic batcher leaves a cancelled request out of the batch it forms', async () => {
    const inst = new FakeInstance({ manual: true });
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { }`), [inst]);
    const outcomes = ['a', 'b', 'c', 'd'].map((id) => {
      const c = collector();
      const r = mv.submit(echoInit(id), c.sender);
      if (id === 'c') r.cancelled = true;
      return c.done;
    });
    expect(inst.executions).toEqual([['a']]);
    inst.release();
    await tick();
    expect(inst.executions).toEqual([['a'], ['b', 'd']]);
    inst.release();
    const [, , c] = await Promise.all(outcomes);
    expect(c!.error?.code).toBe('CANCELLED');
    await mv.retire();
  });

  it('a request cancelled after it started executing is left to the backend', async () => {
    const inst = new FakeInstance({ manual: true });
    const { mv } = modelVersion(config(ECHO), [inst]);
    const c = collector();
    mv.submit(echoInit('a'), c.sender).cancelled = true;
    expect(inst.executions).toEqual([['a']]);
    inst.release();
    expect((await c.done).response).toBeDefined();
    await mv.retire();
  });
});

describe('dynamic batcher: a request that cannot join sends the pending batch at once', () => {
  // A queue delay of 60 s: without the rule, the first request would wait it out.
  const VAR = `
backend: "fake"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
dynamic_batching { max_queue_delay_microseconds: 60000000 }
`;
  const shaped = (id: string, shape: number[]) =>
    echoInit(id, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape, data: new Uint8Array(shape[0]! * shape[1]! * 4) }] });

  it('an incompatible shape dispatches the batch waiting before it; the new request waits for its own batch', async () => {
    const inst = new FakeInstance();
    const { mv } = modelVersion(config(VAR), [inst]);
    const outcomes: Promise<Outcome>[] = [];
    const submit = (id: string, shape: number[]) => {
      const c = collector();
      mv.submit(shaped(id, shape), c.sender);
      outcomes.push(c.done);
    };
    submit('a', [1, 4]);
    submit('b', [1, 4]);
    await tick();
    expect(inst.executions).toEqual([]); // compatible: they wait for more (preferred = 8)
    submit('c', [1, 3]);
    await tick();
    expect(inst.executions).toEqual([['a', 'b']]);
    // c waits; d (7 elements, same shape) completes a full batch of 8.
    submit('d', [7, 3]);
    await tick();
    expect(inst.executions).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    for (const o of await Promise.all(outcomes)) expect(o.response).toBeDefined();
    await mv.retire();
  });

  it('a request that would overflow max_batch_size dispatches the batch waiting before it', async () => {
    const inst = new FakeInstance();
    const { mv } = modelVersion(config(VAR), [inst]);
    const a = collector();
    const b = collector();
    const c = collector();
    mv.submit(shaped('a', [5, 4]), a.sender);
    await tick();
    expect(inst.executions).toEqual([]);
    mv.submit(shaped('b', [5, 4]), b.sender);
    await tick();
    expect(inst.executions).toEqual([['a']]);
    mv.submit(shaped('c', [3, 4]), c.sender); // 5 + 3 = 8: the preferred (max) size
    await tick();
    expect(inst.executions).toEqual([['a'], ['b', 'c']]);
    for (const o of await Promise.all([a.done, b.done, c.done])) expect(o.response).toBeDefined();
    await mv.retire();
  });
});

describe('dynamic batcher: max_queue_delay_microseconds', () => {
  it('a batch below the preferred size waits the delay, counted from its oldest request, then runs as it is', async () => {
    const inst = new FakeInstance();
    const clock = new ManualClock();
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { max_queue_delay_microseconds: 100000 preferred_batch_size: [ 4 ] }`), [inst], { clock });
    const a = collector();
    const b = collector();
    mv.submit(echoInit('a'), a.sender);
    clock.advance(40);
    mv.submit(echoInit('b'), b.sender);
    await tick();
    clock.advance(59.999); // 99.999 ms after 'a', 59.999 ms after 'b'
    await tick();
    expect(inst.executions).toEqual([]);
    clock.advance(0.001);
    await tick();
    expect(inst.executions).toEqual([['a', 'b']]);
    for (const o of await Promise.all([a.done, b.done])) expect(o.response).toBeDefined();
    expect(clock.pending).toBe(0);
    await mv.retire();
  });

  it('the preferred size dispatches at once, and unload cancels the delay timer of what is still queued', async () => {
    const inst = new FakeInstance();
    const clock = new ManualClock();
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { max_queue_delay_microseconds: 100000 preferred_batch_size: [ 2 ] }`), [inst], { clock });
    const done = ['a', 'b', 'c'].map((id) => {
      const c = collector();
      mv.submit(echoInit(id), c.sender);
      return c.done;
    });
    await tick();
    expect(inst.executions).toEqual([['a', 'b']]); // no time passed: the preferred size went at once
    expect(clock.pending).toBe(1); // 'c' waits for the delay
    await mv.finalize();
    expect(clock.pending).toBe(0);
    expect((await done[2]!).error?.message).toBe("model 'model' version 1 is unloading");
  });
});

describe('queue policy', () => {
  it('a request whose timeout expired in the queue is rejected, never executed', async () => {
    const inst = new FakeInstance({ manual: true });
    const clock = new ManualClock();
    const { mv, stats } = modelVersion(config(`${ECHO} dynamic_batching { default_queue_policy { allow_timeout_override: true } }`), [inst], { clock });
    const a = collector();
    const late = collector();
    const b = collector();
    mv.submit(echoInit('a'), a.sender);
    mv.submit(echoInit('late', { timeoutUs: 1 }), late.sender);
    mv.submit(echoInit('b', { timeoutUs: 60_000_000 }), b.sender);
    clock.advance(1); // past 'late''s 1 µs, far from 'b''s 60 s
    inst.release();
    const o = await late.done;
    expect(o.error?.code).toBe('UNAVAILABLE');
    expect(o.error?.message).toBe('Request timeout expired');
    await tick();
    inst.release();
    expect((await b.done).response).toBeDefined();
    expect(inst.executions).toEqual([['a'], ['b']]);
    expect(stats.fail.count).toBe(1);
    await mv.retire();
  });
});

describe('execution arbiter', () => {
  it('one execution at a time server-wide: two model versions are serialised and every request completes', async () => {
    const arbiter = new LimitArbiter(1);
    const concurrency = new Concurrency();
    const twoInstances = ECHO.replace('count: 1', 'count: 2');
    const versions = ['m1', 'm2'].map((name) =>
      modelVersion(config(twoInstances, name), [new FakeInstance({ concurrency }), new FakeInstance({ concurrency })], { arbiter }),
    );
    const done: Promise<Outcome>[] = [];
    for (let i = 0; i < 20; i++) {
      for (const { mv } of versions) {
        const c = collector();
        mv.submit(echoInit(`${mv.name}-${i}`, { model: mv.name }), c.sender);
        done.push(c.done);
      }
    }
    const outcomes = await Promise.all(done);
    expect(outcomes.every((o) => o.response && !o.error)).toBe(true);
    expect(concurrency.max).toBe(1);
    expect(arbiter.maxActive).toBe(1);
    expect(arbiter.admitted.length).toBe(40);
    expect(new Set(arbiter.admitted.map((c) => `${c.model}:${c.version}`))).toEqual(new Set(['m1:1', 'm2:1']));
    expect(arbiter.active).toBe(0);
    expect(arbiter.deferred).toBe(0);
    for (const { mv, stats } of versions) {
      expect(stats.success.count).toBe(20);
      await mv.retire();
    }
  });

  it('without an arbiter the same instances run in parallel (the test above is not vacuous)', async () => {
    const concurrency = new Concurrency();
    const { mv } = modelVersion(config(ECHO.replace('count: 1', 'count: 2')), [new FakeInstance({ concurrency }), new FakeInstance({ concurrency })]);
    const done = Array.from({ length: 4 }, (_, i) => {
      const c = collector();
      mv.submit(echoInit(`r${i}`), c.sender);
      return c.done;
    });
    await Promise.all(done);
    expect(concurrency.max).toBe(2);
    await mv.retire();
  });

  it('requests deferred by the arbiter stay queued, then all run once it wakes the scheduler; retire waits for them', async () => {
    const arbiter = new LimitArbiter(1);
    const held = arbiter.tryAdmit({ model: 'other', version: 1, tenants: [] }, () => undefined)!;
    const inst = new FakeInstance();
    const { mv } = modelVersion(config(`${ECHO} dynamic_batching { preferred_batch_size: [ 2 ] }`), [inst], { arbiter });
    const done = Array.from({ length: 5 }, (_, i) => {
      const c = collector();
      mv.submit(echoInit(`r${i}`), c.sender);
      return c.done;
    });
    await tick();
    expect(inst.executions).toEqual([]);
    expect(mv.pendingCount).toBe(5);
    expect(arbiter.deferred).toBe(1);
    let retired = false;
    const retiring = mv.retire().then(() => (retired = true));
    await tick();
    expect(retired).toBe(false);

    held.release();
    const outcomes = await Promise.all(done);
    await retiring;
    expect(outcomes.every((o) => o.response)).toBe(true);
    expect(inst.executions).toEqual([['r0', 'r1'], ['r2', 'r3'], ['r4']]);
    expect(arbiter.active).toBe(0);
  });
});

describe('scheduler factory', () => {
  const hooks = { onExecuted: () => undefined };

  it('picks the kind from the config', () => {
    expect(schedulerKind(config(ECHO))).toBe('default');
    expect(schedulerKind(config(`${ECHO} dynamic_batching { }`))).toBe('dynamic_batching');
    expect(schedulerKind(config(`${ECHO} sequence_batching { }`))).toBe('sequence_batching');
    expect(schedulerKind(config('platform: "ensemble" max_batch_size: 0 ensemble_scheduling { }', 'ens'))).toBe('ensemble');
  });

  it('builds every kind: the ensemble scheduler over its compiled plan, INTERNAL without one', () => {
    const ensemble = config(
      `platform: "ensemble" max_batch_size: 0
       input [ { name: "IN" data_type: TYPE_INT32 dims: [ 4 ] } ]
       output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 4 ] } ]
       ensemble_scheduling { step [ { model_name: "echo" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }`,
      'ens',
    );
    const echo = config(ECHO.replace('max_batch_size: 8', 'max_batch_size: 0'), 'echo');
    const plan = compileEnsemblePlan(ensemble, [{ config: echo, decoupled: false }]);
    const stats = new ModelStatistics(new ServerMetrics().forModel('ens', 1));
    const parts = { plan, server: NO_SERVER, principal: ownerPrincipal({ namespace: '', name: 'ens' }), stats };
    expect(createScheduler(ensemble, [], hooks, { version: 1, ensemble: parts })).toBeInstanceOf(EnsembleScheduler);
    let caught: unknown;
    try {
      createScheduler(ensemble, [], hooks, { version: 1 });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(TritonError);
    expect((caught as TritonError).code).toBe('INTERNAL');
    expect((caught as TritonError).message).toBe("model 'ens' is an ensemble: its scheduler needs the compiled plan");
    // The plan is ignored by every other kind.
    expect(createScheduler(config(ECHO), [new FakeInstance()], hooks, { version: 1, ensemble: parts })).toBeInstanceOf(DynamicBatchScheduler);
    expect(createScheduler(config(`${ECHO} sequence_batching { }`), [new FakeInstance()], hooks, { version: 1 })).toBeInstanceOf(SequenceBatchScheduler);
    expect(() => modelVersion(config(`${ECHO} sequence_batching { }`), [new FakeInstance()])).not.toThrow();
  });
});
