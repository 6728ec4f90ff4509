/**
 * Where one ONNX Runtime run goes: the instance's worker thread, or inline on the event loop.
 *
 * A thread hop costs two wake-ups and two structured clones per run (measured on `simple`: a run
 * of ~14 µs inline became ~40-140 µs of round trip through a worker on a busy 2-core machine, and
 * HTTP throughput fell), so runs that are cheaper than the hop are better done inline; anything
 * longer must leave the event loop. The placement learns, per instance, the largest input size at
 * which the model has computed in under `inlineMaxUs`, and sends a run inline only at or below that
 * size.
 *
 * Run times are wall-clock, so one preempted run of a 14 µs model can measure in milliseconds on a
 * busy machine. Sending a size back to the worker on every such blip made ~12 % of `simple`'s runs
 * (c=1, load average 10) pay a thread hop each (docs/benchmarks.md, 2026-11-23 s3). So a slow run
 * at or below the learnt size adds one to a slowness score and every fast one takes
 * {@link FAST_RUN_CREDIT} off it; the size goes back to the worker when the score reaches
 * {@link SLOW_SCORE_LIMIT}, or at once for a run of {@link DEMOTE_AT_ONCE_FACTOR} × `inlineMaxUs` or
 * more. A model that really became slow at that size thus costs the loop at most two runs below
 * that bound (or one above it) before its runs move to the worker; a model slow on every other
 * run moves after a few.
 */
export class RunPlacement {
  /** Largest total input size (bytes) seen computing in under `inlineMaxUs`; -1 = none yet. */
  private fastBytes = -1;
  /** Slow runs at or below `fastBytes`, less {@link FAST_RUN_CREDIT} per fast one (≥ 0). */
  private slowScore = 0;

  /** @param inlineMaxUs Longest run (µs) allowed on the event loop; 0 = every run on the worker. */
  constructor(readonly inlineMaxUs: number) {}

  /** True if a run whose inputs total `inputBytes` bytes should run inline. */
  inline(inputBytes: number): boolean {
    return this.inlineMaxUs > 0 && inputBytes <= this.fastBytes;
  }

  /** Records a finished run: its total input bytes and compute time (µs, wall clock), in either place. */
  record(inputBytes: number, computeUs: number): void {
    if (this.inlineMaxUs <= 0) return;
    if (computeUs < this.inlineMaxUs) {
      if (inputBytes > this.fastBytes) this.fastBytes = inputBytes;
      this.slowScore = Math.max(0, this.slowScore - FAST_RUN_CREDIT);
    } else if (inputBytes <= this.fastBytes) {
      this.slowScore += 1;
      if (this.slowScore >= SLOW_SCORE_LIMIT || computeUs >= DEMOTE_AT_ONCE_FACTOR * this.inlineMaxUs) {
        this.fastBytes = inputBytes - 1;
        this.slowScore = 0;
      }
    }
  }
}

/** Slowness score at which a size goes back to the worker. */
export const SLOW_SCORE_LIMIT = 2;
/** What one fast run takes off the slowness score: an isolated blip every 5+ runs never adds up. */
export const FAST_RUN_CREDIT = 0.25;
/** A run this many times `inlineMaxUs` or longer sends its size back to the worker at once. */
export const DEMOTE_AT_ONCE_FACTOR = 50;
