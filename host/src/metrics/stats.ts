import { type LatencyPercentiles, LatencyWindow } from './latency-window.js';
import type { ModelMetricSeries } from './prometheus.js';

/**
 * Per-model-version inference statistics (spec §3.2, the `statistics` extension). Durations are
 * accumulated in ns; `inference_count` counts batch elements, `execution_count` backend executions
 * (batch statistics), `last_inference` the time of the latest batch statistic. Warden adds the
 * percentiles of the latest successful requests' durations and queue times
 * (`latency_percentiles_us`, metrics/latency-window.ts).
 */

/** `{count, ns}` as the statistics extension prints it. */
export interface DurationStat {
  count: number;
  ns: number;
}

const us = (ns: bigint): number => Number(ns) / 1000;

const zero = (): DurationStat => ({ count: 0, ns: 0 });

function add(s: DurationStat, ns: bigint): void {
  s.count++;
  s.ns += Number(ns);
}

/** `count` durations summing to `ns` at once (statistics another path counted). */
function addMany(s: DurationStat, count: number, ns: number): void {
  s.count += count;
  s.ns += ns;
}

/** Tokens of OpenAI-compatible requests (docs/openai.md "Tenancy, limits and accounting"). */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface BatchStat {
  batch_size: number;
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
}

/** Counts and ns sums another path hands over ({@link ModelStatistics.absorb}). */
export interface AbsorbedStats {
  successCount: number;
  successNs: number;
  failCount: number;
  failNs: number;
  /** Requests with queue / compute times (the four sums below cover these). */
  timedCount: number;
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
  inferenceCount: number;
  executionCount: number;
  /** Executions by batch size with their compute sums. */
  batches: readonly { batchSize: number; count: number; inputNs: number; inferNs: number; outputNs: number }[];
  /** Epoch ms of the latest inference. */
  lastInferenceMs: number;
  /** The latest successful requests' end-to-end durations and queue times (µs, oldest first; at most a window's worth). */
  recentRequestUs?: ArrayLike<number>;
  recentQueueUs?: ArrayLike<number>;
}

/** Mutable statistics of one model version; also feeds its Prometheus series when given. */
export class ModelStatistics {
  constructor(private readonly metrics?: ModelMetricSeries) {}

  lastInferenceMs = 0;
  inferenceCount = 0;
  executionCount = 0;
  readonly success = zero();
  readonly fail = zero();
  readonly queue = zero();
  readonly computeInput = zero();
  readonly computeInfer = zero();
  readonly computeOutput = zero();
  /** Response cache lookups that hit (ns: the lookup) and missed (ns: lookup + insertion). */
  readonly cacheHit = zero();
  readonly cacheMiss = zero();
  private readonly batches = new Map<number, BatchStat>();
  /** The latest successful requests' end-to-end durations and the latest queue times (µs), for `latency_percentiles_us`. */
  private readonly requestWindow = new LatencyWindow();
  private readonly queueWindow = new LatencyWindow();
  /** Token usage of the OpenAI-compatible requests this version served, by the caller's tenant ('' the operator). */
  private readonly tokens = new Map<string, TokenUsage>();

  /** An OpenAI-compatible request of `tenant` ('' the operator) used these tokens (Warden's addition). */
  recordTokenUsage(tenant: string, promptTokens: number, completionTokens: number): void {
    let t = this.tokens.get(tenant);
    if (!t) {
      t = { prompt_tokens: 0, completion_tokens: 0 };
      this.tokens.set(tenant, t);
    }
    t.prompt_tokens += promptTokens;
    t.completion_tokens += completionTokens;
  }

  /** The token usage counted so far, in all and by tenant, or undefined before the first OpenAI-compatible request. */
  tokenUsage(): { total: TokenUsage; byTenant: Record<string, TokenUsage> } | undefined {
    if (this.tokens.size === 0) return undefined;
    const total = { prompt_tokens: 0, completion_tokens: 0 };
    const byTenant: Record<string, TokenUsage> = {};
    for (const [tenant, t] of [...this.tokens].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      total.prompt_tokens += t.prompt_tokens;
      total.completion_tokens += t.completion_tokens;
      byTenant[tenant] = { ...t };
    }
    return { total, byTenant };
  }

  /** A request finished successfully after `durationNs` end to end. */
  recordSuccess(durationNs: bigint, batchSize: number): void {
    add(this.success, durationNs);
    this.inferenceCount += batchSize;
    const u = us(durationNs);
    this.requestWindow.record(u);
    if (this.metrics) {
      this.metrics.success.inc();
      this.metrics.inferenceCount.inc(batchSize);
      this.metrics.requestDurationUs.inc(u);
      this.metrics.summaries?.request.observe(u);
    }
  }

  /** A request failed after `durationNs`. */
  recordFailure(durationNs: bigint, reason: 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER'): void {
    add(this.fail, durationNs);
    if (this.metrics) {
      this.metrics.failure(reason).inc();
      this.metrics.requestDurationUs.inc(us(durationNs));
    }
  }

  /**
   * A request answered from the response cache after `durationNs` end to end, `lookupNs` of it
   * the cache lookup: a success (and a queue entry) that is neither an inference nor an execution.
   */
  recordCacheHit(durationNs: bigint, lookupNs: bigint): void {
    add(this.success, durationNs);
    add(this.queue, 0n);
    add(this.cacheHit, lookupNs);
    const u = us(durationNs);
    this.requestWindow.record(u);
    this.queueWindow.record(0);
    if (this.metrics) {
      this.metrics.success.inc();
      this.metrics.requestDurationUs.inc(u);
      this.metrics.summaries?.request.observe(u);
      this.metrics.summaries?.queue.observe(0);
      const c = this.metrics.cache();
      c.hits.inc();
      c.hitDurationUs.inc(us(lookupNs));
    }
  }

  /** A cache miss: the lookup and (when the response was kept) its insertion took `ns`. */
  recordCacheMiss(ns: bigint): void {
    add(this.cacheMiss, ns);
    if (this.metrics) {
      const c = this.metrics.cache();
      c.misses.inc();
      c.missDurationUs.inc(us(ns));
    }
  }

  /** Per-request queue and compute durations of an execution the request was part of. */
  recordRequestTimes(queueNs: bigint, inputNs: bigint, inferNs: bigint, outputNs: bigint): void {
    add(this.queue, queueNs);
    add(this.computeInput, inputNs);
    add(this.computeInfer, inferNs);
    add(this.computeOutput, outputNs);
    const queueUs = us(queueNs);
    this.queueWindow.record(queueUs);
    const m = this.metrics;
    if (m) {
      m.queueDurationUs.inc(queueUs);
      m.computeInputDurationUs.inc(us(inputNs));
      m.computeInferDurationUs.inc(us(inferNs));
      m.computeOutputDurationUs.inc(us(outputNs));
      const sm = m.summaries;
      if (sm) {
        sm.queue.observe(queueUs);
        sm.computeInput.observe(us(inputNs));
        sm.computeInfer.observe(us(inferNs));
        sm.computeOutput.observe(us(outputNs));
      }
    }
  }

  /**
   * One batch statistic: a backend execution of a batch of `batchSize` elements (what a backend
   * reports, for native backends). The only place `execution_count`, `batch_stats` and
   * `last_inference` change, as Triton's `InferenceStatsAggregator::UpdateInferBatchStats`
   * (core `infer_stats.cc`).
   */
  recordExecution(batchSize: number, inputNs: bigint, inferNs: bigint, outputNs: bigint): void {
    this.executionCount++;
    this.lastInferenceMs = Math.max(this.lastInferenceMs, Date.now());
    this.metrics?.execCount.inc();
    const b = this.batch(batchSize);
    add(b.compute_input, inputNs);
    add(b.compute_infer, inferNs);
    add(b.compute_output, outputNs);
  }

  /**
   * Called before the figures are read: another path that served this version's requests (the
   * native data path) adds what it counted since ({@link absorb}).
   */
  pull: (() => void) | undefined = undefined;

  /**
   * Adds what another path counted for this version since its last take (the native data path's
   * route statistics, native/rust/data-path/src/stats.rs): the same fields the record* methods
   * move, in bulk, with their Prometheus counters, and the latest single durations for
   * `latency_percentiles_us`. These requests do not reach the latency summaries (with
   * `summary_latencies` on, the data path hands every request to the TypeScript path).
   */
  absorb(s: AbsorbedStats): void {
    for (let i = 0; i < (s.recentRequestUs?.length ?? 0); i++) this.requestWindow.record(s.recentRequestUs![i]!);
    for (let i = 0; i < (s.recentQueueUs?.length ?? 0); i++) this.queueWindow.record(s.recentQueueUs![i]!);
    if (s.successCount > 0) {
      addMany(this.success, s.successCount, s.successNs);
      this.inferenceCount += s.inferenceCount;
    }
    if (s.failCount > 0) addMany(this.fail, s.failCount, s.failNs);
    if (s.timedCount > 0) {
      addMany(this.queue, s.timedCount, s.queueNs);
      addMany(this.computeInput, s.timedCount, s.computeInputNs);
      addMany(this.computeInfer, s.timedCount, s.computeInferNs);
      addMany(this.computeOutput, s.timedCount, s.computeOutputNs);
    }
    if (s.executionCount > 0) {
      this.executionCount += s.executionCount;
      this.lastInferenceMs = Math.max(this.lastInferenceMs, s.lastInferenceMs);
    }
    for (const r of s.batches) {
      if (r.count === 0) continue;
      const b = this.batch(r.batchSize);
      addMany(b.compute_input, r.count, r.inputNs);
      addMany(b.compute_infer, r.count, r.inferNs);
      addMany(b.compute_output, r.count, r.outputNs);
    }
    const m = this.metrics;
    if (!m) return;
    if (s.successCount > 0) {
      m.success.inc(s.successCount);
      m.inferenceCount.inc(s.inferenceCount);
    }
    if (s.failCount > 0) m.failure('BACKEND').inc(s.failCount);
    if (s.successCount + s.failCount > 0) m.requestDurationUs.inc((s.successNs + s.failNs) / 1000);
    if (s.timedCount > 0) {
      m.queueDurationUs.inc(s.queueNs / 1000);
      m.computeInputDurationUs.inc(s.computeInputNs / 1000);
      m.computeInferDurationUs.inc(s.computeInferNs / 1000);
      m.computeOutputDurationUs.inc(s.computeOutputNs / 1000);
    }
    if (s.executionCount > 0) m.execCount.inc(s.executionCount);
  }

  /** The batch statistic of `batchSize`, made empty on first use. */
  private batch(batchSize: number): BatchStat {
    let b = this.batches.get(batchSize);
    if (!b) {
      b = { batch_size: batchSize, compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batches.set(batchSize, b);
    }
    return b;
  }

  /**
   * Percentiles (µs) of the latest successful requests' end-to-end durations and of the latest
   * queue times ({@link LatencyWindow}: at most 512 of each), or undefined before the first.
   */
  latencyPercentiles(): { request?: LatencyPercentiles; queue?: LatencyPercentiles } | undefined {
    const request = this.requestWindow.percentiles();
    const queue = this.queueWindow.percentiles();
    if (!request && !queue) return undefined;
    return { ...(request ? { request } : {}), ...(queue ? { queue } : {}) };
  }

  /**
   * The JSON of one `model_stats` entry (spec §3.2); with Warden's `token_usage` (prompt and
   * completion tokens of the OpenAI-compatible requests served) once there was one, and Warden's
   * `latency_percentiles_us` ({@link latencyPercentiles}) once a request was timed.
   */
  toJson(name: string, version: number): Record<string, unknown> {
    this.pull?.();
    const tokens = this.tokenUsage();
    const percentiles = this.latencyPercentiles();
    return {
      name,
      version: String(version),
      last_inference: this.lastInferenceMs,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: this.success,
        fail: this.fail,
        queue: this.queue,
        compute_input: this.computeInput,
        compute_infer: this.computeInfer,
        compute_output: this.computeOutput,
        cache_hit: this.cacheHit,
        cache_miss: this.cacheMiss,
      },
      response_stats: {},
      batch_stats: [...this.batches.values()].sort((a, b) => a.batch_size - b.batch_size),
      memory_usage: [],
      ...(tokens ? { token_usage: tokens.total } : {}),
      ...(percentiles ? { latency_percentiles_us: percentiles } : {}),
    };
  }
}
