import type { ModelMetricSeries } from './prometheus.js';

/**
 * Per-model-version inference statistics (spec §3.2, the `statistics` extension). Durations are
 * accumulated in ns; `inference_count` counts batch elements, `execution_count` backend executions
 * (batch statistics), `last_inference` the time of the latest batch statistic.
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

export interface BatchStat {
  batch_size: number;
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
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

  /** A request finished successfully after `durationNs` end to end. */
  recordSuccess(durationNs: bigint, batchSize: number): void {
    add(this.success, durationNs);
    this.inferenceCount += batchSize;
    if (this.metrics) {
      this.metrics.success.inc();
      this.metrics.inferenceCount.inc(batchSize);
      this.metrics.requestDurationUs.inc(us(durationNs));
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
    if (this.metrics) {
      this.metrics.success.inc();
      this.metrics.requestDurationUs.inc(us(durationNs));
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
    if (this.metrics) {
      this.metrics.queueDurationUs.inc(us(queueNs));
      this.metrics.computeInputDurationUs.inc(us(inputNs));
      this.metrics.computeInferDurationUs.inc(us(inferNs));
      this.metrics.computeOutputDurationUs.inc(us(outputNs));
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
    let b = this.batches.get(batchSize);
    if (!b) {
      b = { batch_size: batchSize, compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batches.set(batchSize, b);
    }
    add(b.compute_input, inputNs);
    add(b.compute_infer, inferNs);
    add(b.compute_output, outputNs);
  }

  /** The JSON of one `model_stats` entry (spec §3.2). */
  toJson(name: string, version: number): Record<string, unknown> {
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
    };
  }
}
