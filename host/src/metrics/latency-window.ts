/**
 * A bounded window of one model version's latest durations and their percentiles: Warden's
 * `latency_percentiles_us` of the statistics extension (docs/architecture.md "Statistics and
 * metrics"). Fixed memory per version whatever its traffic: {@link LATENCY_WINDOW_SIZE} samples,
 * allocated on the first one (a version never called holds none), so thousands of tenant models
 * cost at most a few KiB each.
 */

/** How many of the latest durations a window keeps (the percentiles are over these). */
export const LATENCY_WINDOW_SIZE = 512;

/** The percentiles the statistics JSON shows, in µs, over `count` samples. */
export interface LatencyPercentiles {
  /** Samples the percentiles are over (at most the window's size). */
  count: number;
  p50: number;
  p90: number;
  p99: number;
}

/**
 * The latest `capacity` durations (µs), overwriting the oldest: a ring of float64s.
 * Recording is O(1); {@link percentiles} sorts a copy (O(n log n), on a statistics read only).
 */
export class LatencyWindow {
  private samples: Float64Array | undefined;
  private next = 0;
  private filled = 0;

  /** @param capacity samples kept (≥ 1); @throws RangeError for a capacity below 1 or not an integer */
  constructor(readonly capacity = LATENCY_WINDOW_SIZE) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`latency window capacity must be an integer >= 1, got ${capacity}`);
  }

  /** Samples held now (≤ capacity). */
  get size(): number {
    return this.filled;
  }

  /** Add one duration in µs (finite and ≥ 0; anything else is not recorded). */
  record(us: number): void {
    if (!(us >= 0) || us === Infinity) return;
    const s = (this.samples ??= new Float64Array(this.capacity));
    s[this.next] = us;
    this.next = (this.next + 1) % this.capacity;
    if (this.filled < this.capacity) this.filled++;
  }

  /**
   * The nearest-rank `q`-quantiles (0 < q ≤ 1) of the samples held: for n samples sorted
   * ascending, the ⌈q·n⌉-th. Empty array for an empty window.
   */
  quantiles(qs: readonly number[]): number[] {
    if (this.filled === 0 || !this.samples) return [];
    const sorted = this.samples.slice(0, this.filled).sort();
    const n = sorted.length;
    return qs.map((q) => sorted[Math.min(n, Math.max(1, Math.ceil(q * n))) - 1]!);
  }

  /** p50, p90 and p99 with the sample count, or undefined while the window is empty. */
  percentiles(): LatencyPercentiles | undefined {
    const [p50, p90, p99] = this.quantiles([0.5, 0.9, 0.99]);
    if (p50 === undefined) return undefined;
    return { count: this.filled, p50, p90: p90!, p99: p99! };
  }
}
