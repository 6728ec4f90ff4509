/** Where ONNX Runtime runs go (host/src/backends/onnxruntime/placement.ts). */
import { describe, expect, it } from 'vitest';
import {
  CPU_CHECK_RUNS,
  DEMOTE_AT_ONCE_FACTOR,
  FIRST_PROBE_AFTER,
  MAX_PROBE_GAP,
  RunPlacement,
  SLOW_SCORE_LIMIT,
  threadCpuClock,
} from '../../../host/src/backends/onnxruntime/placement.js';

describe('RunPlacement', () => {
  it('starts on the worker, goes inline up to the largest size seen fast, never above it', () => {
    const p = new RunPlacement(100);
    expect(p.inline(64)).toBe(false);
    p.record(128, 20);
    expect(p.inline(64)).toBe(true);
    expect(p.inline(128)).toBe(true);
    expect(p.inline(129)).toBe(false);
  });

  it('a very slow run at or below the learnt size sends that size back to the worker at once', () => {
    const p = new RunPlacement(100);
    p.record(4096, 50);
    p.record(1024, DEMOTE_AT_ONCE_FACTOR * 100); // e.g. a data-dependent model
    expect(p.inline(1024)).toBe(false);
    expect(p.inline(1023)).toBe(true);
    p.record(8192, 50_000); // slow above the learnt size changes nothing
    expect(p.inline(1023)).toBe(true);
  });

  it('isolated slow runs (preemption on a busy machine) keep the size inline', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    for (let i = 0; i < 1000; i++) {
      p.record(128, i % 5 === 0 ? 900 : 14); // one run in five preempted for ~1 ms
      expect(p.inline(128)).toBe(true);
    }
  });

  it('SLOW_SCORE_LIMIT slow runs in a row, or a model slow on every other run, move the size to the worker', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    for (let i = 1; i < SLOW_SCORE_LIMIT; i++) {
      p.record(128, 400);
      expect(p.inline(128)).toBe(true);
    }
    p.record(128, 400);
    expect(p.inline(128)).toBe(false);

    const q = new RunPlacement(100);
    q.record(128, 14);
    let moved = -1;
    for (let i = 0; i < 20 && moved < 0; i++) {
      q.record(128, i % 2 === 0 ? 2_000 : 14);
      if (!q.inline(128)) moved = i;
    }
    expect(moved).toBeGreaterThanOrEqual(0);
    expect(moved).toBeLessThanOrEqual(2 * SLOW_SCORE_LIMIT);
  });

  it('a size sent back to the worker comes back inline after a fast run there', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    p.record(128, 10_000);
    expect(p.inline(128)).toBe(false);
    p.record(128, 14); // measured on the worker
    expect(p.inline(128)).toBe(true);
  });

  it('inlineMaxUs 0 keeps every run on the worker', () => {
    const p = new RunPlacement(0);
    p.record(16, 1);
    expect(p.inline(0)).toBe(false);
    expect(p.inline(16)).toBe(false);
  });

  it('a size sent back to the worker is probed inline again soon, and a fast probe keeps it inline', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    p.record(128, DEMOTE_AT_ONCE_FACTOR * 100); // a blip (GC in the run, a busy host)
    const placed: boolean[] = [];
    for (let i = 0; i < FIRST_PROBE_AFTER; i++) placed.push(p.inline(128));
    // the worker's own measurement is slow (a thread woken for one run): it does not hold the size
    expect(placed).toEqual([...Array(FIRST_PROBE_AFTER - 1).fill(false), true]);
    p.record(128, 20); // the probe, inline: fast
    for (let i = 0; i < 50; i++) {
      expect(p.inline(128)).toBe(true);
      p.record(128, 20);
    }
    expect(p.inline(129)).toBe(false); // probes never go above the old bound
  });

  it('a model that really became slow: probes back off to one run in MAX_PROBE_GAP', () => {
    const p = new RunPlacement(100);
    p.record(128, 14);
    p.record(128, DEMOTE_AT_ONCE_FACTOR * 100);
    let inline = 0;
    const runs = 20 * MAX_PROBE_GAP;
    for (let i = 0; i < runs; i++) {
      if (p.inline(128)) inline++;
      p.record(128, 3_000); // slow inline and on the worker alike
    }
    // gaps 2, 4, ..., 1024 and then one in 1024: ~10 + 18 probes in 20,480 runs
    expect(inline).toBeGreaterThanOrEqual(10);
    expect(inline).toBeLessThanOrEqual(32);
    // once fast again, the next probe brings the size back and the gap starts small again
    let back = -1;
    for (let i = 0; i < 2 * MAX_PROBE_GAP && back < 0; i++) {
      if (p.inline(128)) back = i;
      p.record(128, 20);
    }
    expect(back).toBeGreaterThanOrEqual(0);
    expect(p.inline(128)).toBe(true);
    p.record(128, DEMOTE_AT_ONCE_FACTOR * 100);
    expect(p.inline(128)).toBe(false); // the first run after it goes to the worker (FIRST_PROBE_AFTER 2)
  });

  it('a run slow by the wall clock where the CPU clock applies counts for nothing itself, but has the next runs checked on the CPU clock', () => {
    const p = new RunPlacement(100);
    p.record(64, 20);
    expect(p.inline(64)).toBe(true);
    expect(p.wantsCpuClock).toBe(false); // fast runs are never timed on the (costly) CPU clock
    // preempted runs, however many and however long by the wall clock: still inline
    for (let i = 0; i < 3 * SLOW_SCORE_LIMIT; i++) {
      expect(p.inline(64)).toBe(true);
      p.record(64, DEMOTE_AT_ONCE_FACTOR * 100, false);
      expect(p.wantsCpuClock).toBe(true);
    }
    // the checks: fast by the CPU clock, so the size stays inline, and the checks run out
    for (let i = 0; i < CPU_CHECK_RUNS; i++) {
      expect(p.inline(64)).toBe(true);
      expect(p.wantsCpuClock).toBe(true);
      p.record(64, 30);
    }
    expect(p.inline(64)).toBe(true);
    expect(p.wantsCpuClock).toBe(false);
    p.record(64, 30);
    // a model that really became slow: a wall-slow run, then checks that are slow by the CPU clock too
    p.record(64, 500, false);
    let inline = 0;
    while (p.inline(64)) {
      inline++;
      expect(p.wantsCpuClock).toBe(true);
      p.record(64, 500);
    }
    expect(inline).toBe(SLOW_SCORE_LIMIT);
    // a probe is judged on the CPU clock
    let probe = false;
    for (let i = 0; i < 2 * FIRST_PROBE_AFTER && !probe; i++) {
      probe = p.inline(64);
      if (probe) expect(p.wantsCpuClock).toBe(true);
      p.record(64, probe ? 30 : 500);
    }
    expect(probe).toBe(true);
  });

  it("threadCpuClock counts this thread's CPU time, not time asleep", () => {
    const clock = threadCpuClock();
    expect(clock, 'the native addon is built by npm install').toBeDefined();
    const t0 = clock!();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50); // 50 ms asleep
    const slept = (clock!() - t0) / 1e6;
    expect(slept).toBeLessThan(10);
    // Spinning advances it: 5 ms of it pass however long preemption makes the spin (bounded by a
    // guard far beyond, which only a clock that does not count this thread's CPU time reaches).
    const t1 = clock!();
    const guard = performance.now() + 10_000;
    let x = 0;
    while (clock!() - t1 < 5_000_000 && performance.now() < guard) x++;
    expect(x).toBeGreaterThan(0);
    expect((clock!() - t1) / 1e6).toBeGreaterThanOrEqual(5);
  });
});
