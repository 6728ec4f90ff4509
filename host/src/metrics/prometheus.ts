/**
 * Prometheus metrics with Triton's names and labels (spec §4), on prom-client. Per-model series
 * carry `model` and `version` labels; failures also carry `reason`. In multi-tenant mode with
 * `--metrics-tenant-labels=true` every per-model series also carries `tenant` (the model's
 * namespace, '' for the operator's models), so two tenants' models of the same name are separate
 * series; without it (the default) they add into one series and no tenant id is shown
 * (DESIGN "Multi-tenancy"). `--metrics-config` (metrics/config.ts) turns the latency counters off
 * or Triton's latency summaries on: prom-client `Summary` series over a 60 s sliding window, fed
 * per request — statistics the native data path hands over as sums (`ModelStatistics.absorb`)
 * reach the counters but cannot reach a summary.
 */
import { cpus, freemem, totalmem } from 'node:os';
import { Counter, Gauge, Registry, Summary, collectDefaultMetrics } from 'prom-client';
import { TRITON_PROTOCOL_VERSION, WARDEN_VERSION } from '../project.js';
import { DEFAULT_METRICS_CONFIG, type MetricsConfig, SUMMARY_AGE_BUCKETS, SUMMARY_MAX_AGE_SECONDS } from './config.js';

/** Busy and total CPU time of the machine, summed over its CPUs (ms). */
function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    const all = t.user + t.nice + t.sys + t.idle + t.irq;
    total += all;
    busy += all - t.idle;
  }
  return { busy, total };
}

/** One counter series (one label set) as the hot path increments it. */
export interface CountSeries {
  /**
   * Add `value` (default 1).
   * @throws RangeError for a negative, NaN or infinite value (prom-client's own check).
   */
  inc(value?: number): void;
}

/**
 * A counter series that adds into a plain number and hands the sum to prom-client when the
 * registry is read (the counter's `collect`, run by every scrape and `get()`). prom-client's own
 * `labels(...).inc()` hashes and validates the whole label set on every call: ~1.6 KiB of garbage
 * and a few µs per `simple` request for its eight increments (measured with a sampling heap profile).
 */
class BufferedSeries implements CountSeries {
  private pending = 0;
  private touched = false;
  constructor(readonly labels: Record<string, string>) {}

  inc(value = 1): void {
    if (!(value >= 0) || value === Infinity) throw new RangeError(`counter increment must be a finite number >= 0, got ${value}`);
    this.pending += value;
    this.touched = true;
  }

  /** Hands what was added since the last read to `counter` (a series incremented by 0 appears, as in prom-client). */
  flushInto(counter: Counter): void {
    if (!this.touched) return;
    counter.inc(this.labels, this.pending);
    this.pending = 0;
    this.touched = false;
  }
}

/** A prom-client Counter whose per-label-set series are {@link BufferedSeries}, one per label set. */
class BufferedCounter {
  readonly counter: Counter;
  private readonly series = new Map<string, BufferedSeries>();

  constructor(cfg: { name: string; help: string; labelNames: string[]; registers: Registry[] }) {
    const series = this.series;
    this.counter = new Counter({
      ...cfg,
      collect() {
        for (const s of series.values()) s.flushInto(this);
      },
    });
  }

  /** The series of `labels` (the same object for the same label set, so reloads add no entries). */
  child(labels: Record<string, string>): CountSeries {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = new BufferedSeries(labels)));
    return s;
  }
}

/** A series that counts nothing (a latency counter `--metrics-config=counter_latencies=false` turned off). */
const NO_COUNT: CountSeries = { inc: () => undefined };

/** One summary series (one label set): each observation lands in its sliding window, count and sum. */
export interface ObserveSeries {
  /**
   * Observe one value (µs).
   * @throws TypeError for a value that is not finite (prom-client's own check)
   */
  observe(value: number): void;
}

/** Triton's per-model latency summaries (`--metrics-config=summary_latencies=true`), in µs. */
export interface LatencySummaries {
  request: ObserveSeries;
  queue: ObserveSeries;
  computeInput: ObserveSeries;
  computeInfer: ObserveSeries;
  computeOutput: ObserveSeries;
}

/** Counter series bound to one model version. */
export interface ModelMetricSeries {
  success: CountSeries;
  failure(reason: 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER'): CountSeries;
  inferenceCount: CountSeries;
  execCount: CountSeries;
  requestDurationUs: CountSeries;
  queueDurationUs: CountSeries;
  computeInputDurationUs: CountSeries;
  computeInferDurationUs: CountSeries;
  computeOutputDurationUs: CountSeries;
  /** The response cache's series (created on first use: only models with a cache show them). */
  cache(): CacheMetricSeries;
  /** The latency summaries, present when `--metrics-config=summary_latencies=true`. */
  summaries?: LatencySummaries;
}

/** Triton's per-model response cache counters. */
export interface CacheMetricSeries {
  hits: CountSeries;
  misses: CountSeries;
  hitDurationUs: CountSeries;
  missDurationUs: CountSeries;
}

/** One source of pending-request counts, polled at scrape time. */
export type PendingSource = () => { model: string; version: string; tenant: string; count: number }[];

/** The serving versions' instance restarts and reserved sandbox memory (summed over their instances), polled at scrape time. */
export type InstanceSource = () => { model: string; version: string; tenant: string; restarts: number; sandboxMemoryBytes: number }[];

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly success;
  private readonly failure;
  private readonly inferenceCount;
  private readonly execCount;
  private readonly requestDuration: BufferedCounter | undefined;
  private readonly queueDuration: BufferedCounter | undefined;
  private readonly computeInput: BufferedCounter | undefined;
  private readonly computeInfer: BufferedCounter | undefined;
  private readonly computeOutput: BufferedCounter | undefined;
  private readonly loadDuration;
  private readonly cacheHits: BufferedCounter | undefined;
  private readonly cacheMisses: BufferedCounter | undefined;
  private readonly cacheHitDuration: BufferedCounter | undefined;
  private readonly cacheMissDuration: BufferedCounter | undefined;
  /** The latency summaries (request, queue, compute input / infer / output), when turned on. */
  private readonly summaries: Record<keyof LatencySummaries, Summary> | undefined;
  private pendingSource: PendingSource = () => [];
  private instanceSource: InstanceSource = () => [];
  private readonly textSources: (() => string)[] = [];

  private readonly tenantLabel: boolean;

  /**
   * @param opts.tenantLabel add the `tenant` label to per-model series (multi-tenant mode)
   * @param opts.config `--metrics-config`: latency counters (default on) and summaries (default off)
   */
  constructor(opts: { tenantLabel?: boolean; config?: MetricsConfig } = {}) {
    this.tenantLabel = opts.tenantLabel ?? false;
    const config = opts.config ?? DEFAULT_METRICS_CONFIG;
    const registers = [this.registry];
    // Warden's own identity (clients see Triton's in server metadata, spec §1.4).
    new Gauge({
      name: 'warden_build_info',
      help: "Warden's version (label) and the Triton protocol version it serves; always 1",
      labelNames: ['version', 'triton_protocol'],
      registers: [this.registry],
    })
      .labels(WARDEN_VERSION, TRITON_PROTOCOL_VERSION)
      .set(1);
    const labelNames: string[] = this.tenantLabel ? ['model', 'version', 'tenant'] : ['model', 'version'];
    const counter = (name: string, help: string) => new BufferedCounter({ name, help, labelNames, registers });
    // Triton's latency counters, unless `counter_latencies=false` (core MetricModelReporter::InitializeCounters).
    const latency = (name: string, help: string) => (config.counterLatencies ? counter(name, help) : undefined);
    this.success = counter('nv_inference_request_success', 'Number of successful inference requests, all batch sizes');
    this.failure = new BufferedCounter({
      name: 'nv_inference_request_failure',
      help: 'Number of failed inference requests, all batch sizes',
      labelNames: [...labelNames, 'reason'],
      registers,
    });
    this.inferenceCount = counter('nv_inference_count', 'Number of inferences performed (does not include cached requests)');
    this.execCount = counter('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)');
    this.requestDuration = latency('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)');
    this.queueDuration = latency('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)');
    this.computeInput = latency(
      'nv_inference_compute_input_duration_us',
      'Cumulative compute input duration in microseconds (does not include cached requests)',
    );
    this.computeInfer = latency(
      'nv_inference_compute_infer_duration_us',
      'Cumulative compute inference duration in microseconds (does not include cached requests)',
    );
    this.computeOutput = latency(
      'nv_inference_compute_output_duration_us',
      'Cumulative inference compute output duration in microseconds (does not include cached requests)',
    );
    this.cacheHits = latency('nv_cache_num_hits_per_model', 'Number of cache hits per model');
    this.cacheMisses = latency('nv_cache_num_misses_per_model', 'Number of cache misses per model');
    this.cacheHitDuration = latency('nv_cache_hit_duration_per_model', 'Total cache hit duration per model, in microseconds');
    this.cacheMissDuration = latency('nv_cache_miss_duration_per_model', 'Total cache miss (insert+lookup) duration per model, in microseconds');
    // Triton's latency summaries (core Metrics: the `nv_inference_*_summary_us` families, their help texts).
    if (config.summaryLatencies) {
      const summary = (name: string, help: string) =>
        new Summary({
          name,
          help,
          labelNames,
          registers,
          percentiles: config.summaryQuantiles.map((q) => q.quantile),
          maxAgeSeconds: SUMMARY_MAX_AGE_SECONDS,
          ageBuckets: SUMMARY_AGE_BUCKETS,
        });
      this.summaries = {
        request: summary('nv_inference_request_summary_us', 'Summary of inference request duration in microseconds (includes cached requests)'),
        queue: summary('nv_inference_queue_summary_us', 'Summary of inference queuing duration in microseconds (includes cached requests)'),
        computeInput: summary('nv_inference_compute_input_summary_us', 'Cumulative compute input duration in microseconds (does not include cached requests)'),
        computeInfer: summary(
          'nv_inference_compute_infer_summary_us',
          'Cumulative compute inference duration in microseconds (does not include cached requests)',
        ),
        computeOutput: summary(
          'nv_inference_compute_output_summary_us',
          'Cumulative inference compute output duration in microseconds (does not include cached requests)',
        ),
      };
    }
    const self = this;
    new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Instantaneous number of pending requests awaiting execution per-model.',
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const p of self.pendingSource()) this.set(self.labels(p.model, p.version, p.tenant), p.count);
      },
    });
    // Warden's own: what a version's instances went through and hold (DESIGN "Sandbox rules").
    new Counter({
      name: 'warden_instance_restarts_total',
      help: "Restarts of a model version's instances after a sandbox, worker or process died (trap, deadline, crash), since the version loaded",
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const s of self.instanceSource()) this.inc(self.labels(s.model, s.version, s.tenant), s.restarts);
      },
    });
    new Gauge({
      name: 'warden_sandbox_memory_bytes',
      help: "Linear memory reserved by a model version's sandboxes now (each the most it may grow to; idle-released sandboxes hold none)",
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const s of self.instanceSource()) if (s.sandboxMemoryBytes > 0) this.set(self.labels(s.model, s.version, s.tenant), s.sandboxMemoryBytes);
      },
    });
    this.loadDuration = new Gauge({
      name: 'nv_model_load_duration_secs',
      help: 'Model load time in seconds',
      labelNames,
      registers,
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'warden_process_' });
  }

  /**
   * Counter series for one model version (one object per label set, reused across reloads), and
   * its summary series when summaries are on (a reload observes into the same series).
   */
  forModel(model: string, version: number, tenant = ''): ModelMetricSeries {
    const labels = this.labels(model, String(version), tenant);
    const child = (c: BufferedCounter | undefined) => c?.child(labels) ?? NO_COUNT;
    const s = this.summaries;
    return {
      success: this.success.child(labels),
      failure: (reason) => this.failure.child({ ...labels, reason }),
      inferenceCount: this.inferenceCount.child(labels),
      execCount: this.execCount.child(labels),
      requestDurationUs: child(this.requestDuration),
      queueDurationUs: child(this.queueDuration),
      computeInputDurationUs: child(this.computeInput),
      computeInferDurationUs: child(this.computeInfer),
      computeOutputDurationUs: child(this.computeOutput),
      cache: () => ({
        hits: child(this.cacheHits),
        misses: child(this.cacheMisses),
        hitDurationUs: child(this.cacheHitDuration),
        missDurationUs: child(this.cacheMissDuration),
      }),
      ...(s
        ? {
            summaries: {
              request: s.request.labels(labels),
              queue: s.queue.labels(labels),
              computeInput: s.computeInput.labels(labels),
              computeInfer: s.computeInfer.labels(labels),
              computeOutput: s.computeOutput.labels(labels),
            },
          }
        : {}),
    };
  }

  private responseCacheErrors: Counter | undefined;

  /**
   * A shared response cache (Redis) command failed (`operation`: lookup, insert, drop): counted in
   * `warden_response_cache_errors_total`, created on the first failure. The request saw a miss.
   */
  recordResponseCacheError(operation: string): void {
    this.responseCacheErrors ??= new Counter({
      name: 'warden_response_cache_errors_total',
      help: 'Failed response cache (Redis) commands; each failed lookup was answered as a miss, each failed insertion dropped',
      labelNames: ['operation'],
      registers: [this.registry],
    });
    this.responseCacheErrors.inc({ operation });
  }

  private tokens: Counter | undefined;

  /**
   * The tokens of one OpenAI-compatible request (frontend/openai/), as the model reported them:
   * `warden_openai_tokens_total{model, kind="prompt"|"completion"}` (with `tenant` when per-model
   * series carry it), created on the first request. `tenant`: the caller's namespace, '' for the operator.
   */
  recordTokenUsage(tenant: string, model: string, promptTokens: number, completionTokens: number): void {
    this.tokens ??= new Counter({
      name: 'warden_openai_tokens_total',
      help: 'Tokens of OpenAI-compatible requests (/v1/completions, /v1/chat/completions) as the model reported them, by kind (prompt, completion)',
      labelNames: this.tenantLabel ? ['model', 'tenant', 'kind'] : ['model', 'kind'],
      registers: [this.registry],
    });
    const labels: Record<string, string> = this.tenantLabel ? { model, tenant } : { model };
    if (promptTokens > 0) this.tokens.inc({ ...labels, kind: 'prompt' }, promptTokens);
    if (completionTokens > 0) this.tokens.inc({ ...labels, kind: 'completion' }, completionTokens);
  }

  /** Record how long a model version took to load. */
  setLoadDuration(model: string, version: number, seconds: number, tenant = ''): void {
    this.loadDuration.set(this.labels(model, String(version), tenant), seconds);
  }

  private labels(model: string, version: string, tenant: string): Record<string, string> {
    return this.tenantLabel ? { model, version, tenant } : { model, version };
  }

  /** Where `nv_inference_pending_request_count` reads from. */
  setPendingSource(source: PendingSource): void {
    this.pendingSource = source;
  }

  /** Where `warden_instance_restarts_total` and `warden_sandbox_memory_bytes` read from. */
  setInstanceSource(source: InstanceSource): void {
    this.instanceSource = source;
  }

  /**
   * Add Prometheus text rendered elsewhere (custom metric families native backends register
   * through `TRITONSERVER_MetricFamilyNew`), appended to every scrape.
   */
  addTextSource(source: () => string): void {
    this.textSources.push(source);
  }

  /**
   * Triton's CPU metrics (spec §4; `--allow-cpu-metrics`): `nv_cpu_utilization` (0–1, the
   * machine's busy share since the previous sample), `nv_cpu_memory_total_bytes` and
   * `nv_cpu_memory_used_bytes` (total − available), refreshed every `intervalMs`
   * (`--metrics-interval-ms`) as Triton's interval metrics are.
   * @returns stop (clears the timer)
   */
  startCpuMetrics(intervalMs: number): () => void {
    const registers = [this.registry];
    const util = new Gauge({ name: 'nv_cpu_utilization', help: 'CPU utilization rate [0.0 - 1.0]', registers });
    const total = new Gauge({ name: 'nv_cpu_memory_total_bytes', help: 'CPU total memory (RAM), in bytes', registers });
    const used = new Gauge({ name: 'nv_cpu_memory_used_bytes', help: 'CPU used memory (RAM), in bytes', registers });
    let last = cpuTimes();
    const sample = () => {
      const now = cpuTimes();
      const dt = now.total - last.total;
      if (dt > 0) util.set(Math.min(1, Math.max(0, (now.busy - last.busy) / dt)));
      last = now;
      const t = totalmem();
      total.set(t);
      used.set(t - freemem());
    };
    util.set(0);
    sample();
    const timer = setInterval(sample, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Called before each render (the native data path hands over its statistics). */
  private readonly beforeRender: (() => void)[] = [];

  /** Registers `hook` to run before each render. */
  onRender(hook: () => void): void {
    this.beforeRender.push(hook);
  }

  /** Prometheus text exposition. */
  async render(): Promise<string> {
    for (const h of this.beforeRender) h();
    const own = await this.registry.metrics();
    const extra = this.textSources.map((f) => f()).filter((t) => t.length > 0);
    return extra.length === 0 ? own : [own.trimEnd(), ...extra.map((t) => t.trimEnd())].join('\n') + '\n';
  }
}
