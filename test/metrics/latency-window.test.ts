/** The bounded window of latest durations and its percentiles (host/src/metrics/latency-window.ts), and `latency_percentiles_us` of a version's statistics. */
import { describe, expect, it } from 'vitest';
import { LATENCY_WINDOW_SIZE, LatencyWindow } from '../../host/src/metrics/latency-window.js';
import { ModelStatistics, type AbsorbedStats } from '../../host/src/metrics/stats.js';

/** `values` in a shuffled order (a fixed permutation: i * 37 mod n, n coprime with 37). */
const shuffled = (values: number[]): number[] => values.map((_, i) => values[(i * 37) % values.length]!);

describe('LatencyWindow', () => {
  it('gives the nearest-rank percentiles of a known sequence, whatever its order', () => {
    const w = new LatencyWindow(100);
    expect(w.percentiles()).toBeUndefined();
    for (const v of shuffled(Array.from({ length: 100 }, (_, i) => i + 1))) w.record(v);
    expect(w.percentiles()).toEqual({ count: 100, p50: 50, p90: 90, p99: 99 });
    expect(w.quantiles([0.01, 0.95, 1])).toEqual([1, 95, 100]);
    const small = new LatencyWindow(8);
    for (const v of [40, 10, 30, 20]) small.record(v);
    // n = 4: ranks ⌈0.5·4⌉ = 2, ⌈0.9·4⌉ = 4, ⌈0.99·4⌉ = 4.
    expect(small.percentiles()).toEqual({ count: 4, p50: 20, p90: 40, p99: 40 });
  });

  it('keeps only the latest `capacity` samples: the oldest drop out of the percentiles', () => {
    const w = new LatencyWindow();
    expect(w.capacity).toBe(LATENCY_WINDOW_SIZE);
    for (let v = 1; v <= 3 * LATENCY_WINDOW_SIZE; v++) w.record(v);
    expect(w.size).toBe(LATENCY_WINDOW_SIZE);
    // The window holds 1025..1536: its smallest is the 1025th sample, its median the 256th of those.
    expect(w.quantiles([1 / LATENCY_WINDOW_SIZE, 0.5, 1])).toEqual([1025, 1280, 1536]);
    // A burst of slow requests then fast ones: once LATENCY_WINDOW_SIZE fast ones came, no slow one is left.
    for (let i = 0; i < LATENCY_WINDOW_SIZE; i++) w.record(7);
    expect(w.percentiles()).toEqual({ count: LATENCY_WINDOW_SIZE, p50: 7, p90: 7, p99: 7 });
  });

  it('ignores values that are not finite non-negative durations, and refuses a capacity below 1', () => {
    const w = new LatencyWindow(4);
    for (const v of [Number.NaN, -1, Infinity]) w.record(v);
    expect(w.size).toBe(0);
    w.record(0);
    expect(w.percentiles()).toEqual({ count: 1, p50: 0, p90: 0, p99: 0 });
    expect(() => new LatencyWindow(0)).toThrow(RangeError);
    expect(() => new LatencyWindow(1.5)).toThrow(RangeError);
  });
});

describe('ModelStatistics latency_percentiles_us', () => {
  const absorbed = (count: number): AbsorbedStats => ({
    successCount: count,
    successNs: count * 1_000_000,
    failCount: 0,
    failNs: 0,
    timedCount: count,
    queueNs: count * 1000,
    computeInputNs: 0,
    computeInferNs: 0,
    computeOutputNs: 0,
    inferenceCount: count,
    executionCount: count,
    batches: [{ batchSize: 1, count, inputNs: 0, inferNs: 0, outputNs: 0 }],
    lastInferenceMs: Date.now(),
  });

  it('is absent before a timed request and for requests only counted as sums (the native data path)', () => {
    const s = new ModelStatistics();
    expect(s.toJson('m', 1)).not.toHaveProperty('latency_percentiles_us');
    s.absorb(absorbed(10));
    expect(s.toJson('m', 1).inference_count).toBe(10);
    expect(s.toJson('m', 1)).not.toHaveProperty('latency_percentiles_us');
  });

  it('shows the percentiles of the successes and queue times recorded, in µs; failures are not in them', () => {
    const s = new ModelStatistics();
    for (let i = 1; i <= 100; i++) {
      s.recordSuccess(BigInt(i) * 1000n, 1);
      s.recordRequestTimes(BigInt(i) * 10n, 0n, 0n, 0n);
    }
    s.recordFailure(10n ** 12n, 'BACKEND');
    expect(s.toJson('m', 1).latency_percentiles_us).toEqual({
      request: { count: 100, p50: 50, p90: 90, p99: 99 },
      queue: { count: 100, p50: 0.5, p90: 0.9, p99: 0.99 },
    });
    // A cache hit is a success with no queue time.
    s.recordCacheHit(5_000_000n, 1000n);
    const json = s.toJson('m', 1).latency_percentiles_us as { request: { count: number; p99: number }; queue: { count: number } };
    expect(json.request).toMatchObject({ count: 101, p99: 100 });
    expect(json.queue.count).toBe(101);
  });
});
