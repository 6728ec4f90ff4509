/**
 * The one supervisor of out-of-thread children (host/src/backends/supervisor.ts) and its back-off
 * policy, on fake timers: at once, then 100 ms doubling to 5 s while children die young or
 * restarts fail; a stable run resets it; a replacement after a contained fault is at once and
 * counts nothing; close cancels and refuses; stale deaths are ignored.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RESTART_BACKOFF, Supervisor, restartDelayMs, type SupervisorOptions } from '../../host/src/backends/supervisor.js';

interface Child {
  id: number;
}

/** A supervisor whose starts are settled by the test: `starts` holds each start's controls, in order. */
function harness(overrides: Partial<SupervisorOptions<Child>> = {}) {
  const starts: { resolve: () => void; reject: (e: Error) => void; child: Child }[] = [];
  const events: string[] = [];
  let next = 1;
  const sup = new Supervisor<Child>({
    start: () =>
      new Promise<Child>((resolve, reject) => {
        const child = { id: next++ };
        starts.push({ resolve: () => resolve(child), reject, child });
      }),
    stop: (c) => void events.push(`stop ${c.id}`),
    failInFlight: (c, reason) => void events.push(`fail ${c.id}: ${reason}`),
    onRestarted: (c) => void events.push(`restarted ${c.id}`),
    onRestartFailed: (e, retryMs) => void events.push(`restart failed (${(e as Error).message}), retry in ${retryMs}`),
    ...overrides,
  });
  return { sup, starts, events };
}

/** Start the first child and bring it up. */
async function upFirst(h: ReturnType<typeof harness>): Promise<Child> {
  const first = h.sup.start();
  h.starts[0]!.resolve();
  return first;
}

/** {@link upFirst}, then one death ('crash', the first in a row: restarted at once) and the successor up. */
async function upAfterOneCrash(h: ReturnType<typeof harness>): Promise<Child> {
  h.sup.died(await upFirst(h), 'crash');
  h.starts[1]!.resolve();
  return h.sup.whenUp();
}

/** Let promise reactions run (fake timers do not drive them). */
const flush = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('restartDelayMs', () => {
  it('is 0 for the first restart, then 100 ms doubling, at most 5 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 100].map((n) => restartDelayMs(RESTART_BACKOFF, n))).toEqual([0, 100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    expect(RESTART_BACKOFF).toEqual({ initialMs: 100, maxMs: 5000, stableMs: 10_000 });
  });
});

describe('Supervisor', () => {
  it("the first start: its error is the caller's, nothing is retried", async () => {
    const h = harness();
    const first = h.sup.start();
    h.starts[0]!.reject(new Error('initialize failed'));
    await expect(first).rejects.toThrow('initialize failed');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.starts).toHaveLength(1);
    expect(h.sup.state).toBe('idle');
  });

  it('a death fails the in-flight requests first, then restarts at once; the successor serves', async () => {
    const h = harness();
    const first = await upFirst(h);
    expect([h.sup.state, h.sup.child, h.sup.reason]).toEqual(['up', first, undefined]);
    h.sup.died(first, 'killed by signal SIGSEGV');
    expect(h.events).toEqual(['fail 1: killed by signal SIGSEGV']);
    expect(h.starts).toHaveLength(2); // started within died(): no delay
    expect([h.sup.state, h.sup.child, h.sup.reason]).toEqual(['restarting', undefined, 'killed by signal SIGSEGV']);
    const waiting = h.sup.whenUp();
    h.starts[1]!.resolve();
    await expect(waiting).resolves.toBe(h.starts[1]!.child);
    expect([h.sup.state, h.sup.child, h.sup.reason, h.sup.restarts]).toEqual(['up', h.starts[1]!.child, undefined, 1]);
    expect(h.events).toEqual(['fail 1: killed by signal SIGSEGV', 'restarted 2']);
  });

  it('children that keep dying young wait 0, 100, 200, 400 ms; a stable run resets the back-off', async () => {
    const h = harness();
    let child = await upFirst(h);
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const before = h.starts.length;
      h.sup.died(child, `crash ${i}`);
      let waited = 0;
      while (h.starts.length === before) {
        await vi.advanceTimersByTimeAsync(50);
        waited += 50;
      }
      waits.push(waited);
      h.starts.at(-1)!.resolve();
      child = await h.sup.whenUp();
      await vi.advanceTimersByTimeAsync(1000); // serves 1 s: not stable
    }
    expect(waits).toEqual([0, 100, 200, 400]);
    await vi.advanceTimersByTimeAsync(RESTART_BACKOFF.stableMs);
    const before = h.starts.length;
    h.sup.died(child, 'crash after a stable run');
    expect(h.starts).toHaveLength(before + 1); // at once again
  });

  it('failed restarts are retried with the doubling delay; attempt() sees one attempt, whenUp() waits through them', async () => {
    const h = harness();
    const first = await upFirst(h);
    h.sup.died(first, 'gone');
    const attempt = h.sup.attempt();
    const up = h.sup.whenUp();
    h.starts[1]!.reject(new Error('no memory'));
    await expect(attempt).rejects.toThrow('no memory');
    expect(h.events.at(-1)).toBe('restart failed (no memory), retry in 100');
    // during the back-off: failing, and a caller gets the failed attempt's error at once
    expect([h.sup.state, h.sup.failing]).toEqual(['restarting', true]);
    await expect(h.sup.attempt()).rejects.toThrow('no memory');
    await vi.advanceTimersByTimeAsync(99);
    expect(h.starts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.starts).toHaveLength(3);
    // an attempt under way is waited for
    const third = h.sup.attempt();
    h.starts[2]!.reject(new Error('still no memory'));
    await expect(third).rejects.toThrow('still no memory');
    expect(h.events.at(-1)).toBe('restart failed (still no memory), retry in 200');
    await vi.advanceTimersByTimeAsync(200);
    h.starts[3]!.resolve();
    await expect(up).resolves.toBe(h.starts[3]!.child);
    expect([h.sup.state, h.sup.failing]).toEqual(['up', false]);
  });

  it('a death before any failed start is waited out: attempt() resolves with the successor after the delay', async () => {
    const h = harness();
    const child = await upAfterOneCrash(h);
    h.sup.died(child, 'crash again'); // the second in a row: 100 ms
    const attempt = h.sup.attempt();
    expect(h.sup.failing).toBe(false);
    await vi.advanceTimersByTimeAsync(100);
    h.starts[2]!.resolve();
    await expect(attempt).resolves.toBe(h.starts[2]!.child);
  });

  it('adopt() supervises a first child the owner started', async () => {
    const h = harness();
    const own = { id: 99 };
    h.sup.adopt(own);
    expect([h.sup.state, h.sup.child]).toEqual(['up', own]);
    h.sup.died(own, 'gone');
    expect(h.starts).toHaveLength(1);
    expect(() => h.sup.adopt(own)).toThrow(/adopt while restarting/);
  });

  it('a replacement after a contained fault is at once, every time, and leaves the back-off count as it was', async () => {
    const h = harness();
    let child = await upFirst(h);
    // two young deaths: the next death would wait 200 ms
    for (const wait of [0, 100]) {
      h.sup.died(child, 'crash');
      await vi.advanceTimersByTimeAsync(wait);
      h.starts.at(-1)!.resolve();
      child = await h.sup.whenUp();
    }
    for (let i = 0; i < 3; i++) {
      const before = h.starts.length;
      h.sup.replace(child, 'trapped');
      expect(h.starts).toHaveLength(before + 1);
      h.starts.at(-1)!.resolve();
      child = await h.sup.whenUp();
    }
    const before = h.starts.length;
    h.sup.died(child, 'crash');
    await vi.advanceTimersByTimeAsync(199);
    expect(h.starts).toHaveLength(before);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.starts).toHaveLength(before + 1);
  });

  it('a death reported for a child already replaced is ignored', async () => {
    const h = harness();
    const first = await upFirst(h);
    h.sup.died(first, 'gone');
    h.starts[1]!.resolve();
    await h.sup.whenUp();
    h.sup.died(first, 'gone again');
    expect(h.starts).toHaveLength(2);
    expect(h.events.filter((e) => e.startsWith('fail'))).toEqual(['fail 1: gone']);
  });

  it('unhealthy(reason) is the health until a successor serves; a death is worded by describe()', async () => {
    const h = harness({ describe: (r) => `${r}; restarting` });
    const first = await upFirst(h);
    h.sup.unhealthy('execute did not return in time; the process is killed');
    expect([h.sup.state, h.sup.reason]).toEqual(['up', 'execute did not return in time; the process is killed']);
    h.sup.died(first, 'killed by signal SIGKILL');
    expect(h.sup.reason).toBe('killed by signal SIGKILL; restarting');
    expect(h.events).toEqual(['fail 1: killed by signal SIGKILL']);
    h.starts[1]!.resolve();
    await h.sup.whenUp();
    expect(h.sup.reason).toBeUndefined();
  });

  it('close cancels a pending restart and refuses waiters; a later death still fails its requests', async () => {
    const h = harness();
    const child = await upAfterOneCrash(h);
    h.sup.died(child, 'crash again'); // waits 100 ms
    const up = h.sup.whenUp();
    h.sup.close();
    await expect(up).rejects.toThrow(/closed/);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(h.starts).toHaveLength(2);
    expect(h.sup.state).toBe('closed');

    const h2 = harness();
    const served = await upFirst(h2);
    h2.sup.close();
    h2.sup.died(served, 'ended at unload');
    expect(h2.events).toEqual(['fail 1: ended at unload']);
    expect(h2.starts).toHaveLength(1);
  });

  it('a child that comes up after close is stopped and never serves; a failure after close is not reported', async () => {
    const h = harness();
    const first = await upFirst(h);
    h.sup.died(first, 'crash');
    const attempt = h.sup.attempt();
    h.sup.close();
    h.starts[1]!.resolve();
    await expect(attempt).rejects.toThrow(/closed/);
    expect(h.events).toEqual(['fail 1: crash', 'stop 2']);
    expect(h.sup.child).toBeUndefined();
    // after close the serving child stays the owner's, to end
    const h3 = harness();
    const last = await upFirst(h3);
    h3.sup.close();
    expect(h3.sup.child).toBe(last);

    const h2 = harness();
    const c = await upFirst(h2);
    h2.sup.died(c, 'crash');
    h2.sup.close();
    h2.starts[1]!.reject(new Error('unloaded meanwhile'));
    await flush();
    expect(h2.events).toEqual(['fail 1: crash']);
  });
});
