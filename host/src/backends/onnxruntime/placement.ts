import { nativeAddon } from '../../platform/addon.js';

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
 * An inline run of a model with one intra-op thread (the default) is judged by the event-loop
 * thread's CPU clock ({@link threadCpuClock}): all of its compute is on that thread, and a run
 * preempted on a busy machine costs the loop no more than its CPU time says. That clock is a system
 * call (two reads cost ~4 % of the event loop's time at c=16 on `simple`), so it is read
 * only to check: a run whose wall time is under the bound is fast by either clock, and a run whose
 * wall time is not ({@link record} with `exact` false) counts for nothing itself but has the next
 * {@link CPU_CHECK_RUNS} inline runs timed on the CPU clock ({@link wantsCpuClock}). Wall-clock timing sent
 * 1.6-3.5 % of `simple`'s c=1 runs to the worker on a busy 2-vCPU host, each paying a thread hop,
 * which is p99 territory (docs/benchmarks.md, "ONNX Runtime inline or on a worker"). Other runs
 * (worker runs, several intra-op threads, no addon) are timed on the wall clock, where one preempted run of a 14 µs model can
 * measure in milliseconds. Sending a size back to the worker on every such blip made ~12 % of
 * `simple`'s runs (c=1, load average 10) pay a thread hop each.
 * So a slow run at or below the learnt size adds one to a slowness score and every fast one takes
 * {@link FAST_RUN_CREDIT} off it; the size goes back to the worker when the score reaches
 * {@link SLOW_SCORE_LIMIT}, or at once for a run of {@link DEMOTE_AT_ONCE_FACTOR} × `inlineMaxUs` or
 * more. A model that really became slow at that size thus costs the loop at most four runs below
 * that bound (or two above it, the first only prompting the CPU check) before its runs move to
 * the worker; a model slow on every other run moves after a few.
 *
 * A size sent back is probed: the {@link FIRST_PROBE_AFTER}th run at or below the old bound runs
 * inline again, and if it is fast the size is inline again. A slow probe doubles the gap to the
 * next one (up to {@link MAX_PROBE_GAP} runs), so a model that really became slow costs the loop one
 * run in {@link MAX_PROBE_GAP} once the gap has grown. Waiting for a fast run on the worker instead
 * kept 5-19 % of `simple`'s runs there on a busy 2-vCPU host: a worker thread woken
 * for one run measures its run at ~130 µs (cold caches, the check phase), above the 100 µs bound,
 * while the same run inline takes ~40 µs. GC inside a run (the wrapper's output objects) still
 * makes some inline runs slow; a probe makes each such blip cost about one thread hop.
 */
export class RunPlacement {
  /** Largest total input size (bytes) seen computing in under `inlineMaxUs`; -1 = none yet. */
  private fastBytes = -1;
  /** Slow runs at or below `fastBytes`, less {@link FAST_RUN_CREDIT} per fast one (≥ 0). */
  private slowScore = 0;
  /** Sizes up to this were inline before a slowness sent them back; probed inline now and then. */
  private probeBytes = -1;
  /** Runs at or below `probeBytes` between probes: {@link FIRST_PROBE_AFTER}, doubled by each slow probe. */
  private probeGap = FIRST_PROBE_AFTER;
  /** Such runs left before the next probe. */
  private probeIn = FIRST_PROBE_AFTER;
  /** The run just placed inline is a probe (an instance runs one batch at a time). */
  private probing = false;
  /** Inline runs left to time on the CPU clock since a run was slow by the wall clock. */
  private cpuChecks = 0;

  /** @param inlineMaxUs Longest run (µs) allowed on the event loop; 0 = every run on the worker. */
  constructor(readonly inlineMaxUs: number) {}

  /**
   * True if a run whose inputs total `inputBytes` bytes should run inline. Call once per run, then
   * {@link record} it: a run placed inline may be a probe.
   */
  inline(inputBytes: number): boolean {
    this.probing = false;
    if (this.inlineMaxUs <= 0) return false;
    if (inputBytes <= this.fastBytes) return true;
    if (inputBytes > this.probeBytes || --this.probeIn > 0) return false;
    this.probeIn = this.probeGap;
    this.probing = true;
    return true;
  }

  /**
   * True if the run just placed inline should be timed on the thread CPU clock, where one applies:
   * a check after a wall-slow run, or a probe (judged exactly, as it decides for many runs).
   */
  get wantsCpuClock(): boolean {
    return this.cpuChecks > 0 || this.probing;
  }

  /**
   * Records a finished run, in either place: its total input bytes and compute time (µs).
   * @param exact false for an inline run timed on the wall clock where the CPU clock applies: a slow
   *   one is not counted, but has the next runs checked on the CPU clock (class comment)
   */
  record(inputBytes: number, computeUs: number, exact = true): void {
    if (this.inlineMaxUs <= 0) return;
    if (!exact && computeUs >= this.inlineMaxUs) {
      this.cpuChecks = CPU_CHECK_RUNS;
      return;
    }
    if (exact && this.cpuChecks > 0) this.cpuChecks--;
    if (this.probing) {
      this.probing = false;
      if (computeUs < this.inlineMaxUs) {
        this.probeGap = this.probeIn = FIRST_PROBE_AFTER;
      } else {
        this.probeGap = this.probeIn = Math.min(this.probeGap * 2, MAX_PROBE_GAP);
        return;
      }
    }
    if (computeUs < this.inlineMaxUs) {
      if (inputBytes > this.fastBytes) {
        this.fastBytes = inputBytes;
        this.probeGap = FIRST_PROBE_AFTER; // fast again (on the worker too): the next slowness is probed soon
      }
      this.slowScore = Math.max(0, this.slowScore - FAST_RUN_CREDIT);
    } else if (inputBytes <= this.fastBytes) {
      this.slowScore += 1;
      if (this.slowScore >= SLOW_SCORE_LIMIT || computeUs >= DEMOTE_AT_ONCE_FACTOR * this.inlineMaxUs) {
        this.probeBytes = Math.max(this.probeBytes, this.fastBytes);
        this.probeIn = this.probeGap;
        this.fastBytes = inputBytes - 1;
        this.slowScore = 0;
      }
    }
  }
}

/**
 * Slowness score at which a size goes back to the worker. On a busy 2-vCPU host 10-15 % of
 * `simple`'s inline runs passed 100 µs; if such blips are independent, a limit of 2
 * sends the size back every 37-82 runs and 4 every 210-1,100 (simulated with FAST_RUN_CREDIT 0.25).
 * The price: two more slow runs on the loop for a model that really became slow, none longer than
 * {@link DEMOTE_AT_ONCE_FACTOR} × `inlineMaxUs`.
 */
export const SLOW_SCORE_LIMIT = 4;
/** What one fast run takes off the slowness score: an isolated blip every 5+ runs never adds up. */
export const FAST_RUN_CREDIT = 0.25;
/** After a size goes back to the worker, the run at or below the old bound that probes inline again. */
export const FIRST_PROBE_AFTER = 2;
/** Most runs between two probes (a model that became slow costs the loop at most one run in this many). */
export const MAX_PROBE_GAP = 1024;
/**
 * Runs timed on the CPU clock after one was slow by the wall clock: enough for a model that really
 * became slow to reach {@link SLOW_SCORE_LIMIT} on them.
 */
export const CPU_CHECK_RUNS = 8;
/** A run this many times `inlineMaxUs` or longer sends its size back to the worker at once. */
export const DEMOTE_AT_ONCE_FACTOR = 50;

/** A thread CPU clock: the calling thread's CPU time, ns. */
export type ThreadCpuClock = () => number;

let cpuClock: ThreadCpuClock | null | undefined;

/**
 * The calling thread's CPU clock (CLOCK_THREAD_CPUTIME_ID through the native addon, ~0.3 µs a read),
 * or undefined where the addon is not built or the clock fails (runs are then timed on the wall
 * clock). Looked up once.
 */
export function threadCpuClock(): ThreadCpuClock | undefined {
  if (cpuClock === undefined) {
    cpuClock = null;
    try {
      const addon = nativeAddon();
      if (typeof addon.threadCpuNs === 'function' && addon.threadCpuNs() !== undefined) cpuClock = () => addon.threadCpuNs() ?? 0;
    } catch {
      // no addon: wall clock
    }
  }
  return cpuClock ?? undefined;
}
