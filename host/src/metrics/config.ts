/**
 * Triton's `--metrics-config=<setting>=<value>` settings (server `src/command_line_parser.cc`,
 * core `src/metric_model_reporter.cc` `MetricReporterConfig`) as Warden reads them: the per-model
 * latency metrics as counters (`counter_latencies`, default true) and as summaries
 * (`summary_latencies`, default false) with their quantiles (`summary_quantiles`).
 */
import * as errors from './metrics.errors.js';

/** One summary quantile and its allowed rank error, as Triton's `summary_quantiles` gives them. */
export interface SummaryQuantile {
  quantile: number;
  error: number;
}

/** What `--metrics-config` settles for the per-model latency metrics. */
export interface MetricsConfig {
  /** `counter_latencies` (default true): the `nv_inference_*_duration_us` and `nv_cache_*_per_model` counters. */
  counterLatencies: boolean;
  /** `summary_latencies` (default false): the `nv_inference_*_summary_us` summaries. */
  summaryLatencies: boolean;
  /** `summary_quantiles`: the summaries' quantiles (default {@link DEFAULT_SUMMARY_QUANTILES}). */
  summaryQuantiles: readonly SummaryQuantile[];
}

/** Triton's default quantiles (core `metric_model_reporter.h`, `MetricReporterConfig::quantiles_`). */
export const DEFAULT_SUMMARY_QUANTILES: readonly SummaryQuantile[] = [
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.95, error: 0.001 },
  { quantile: 0.99, error: 0.001 },
  { quantile: 0.999, error: 0.001 },
];

/**
 * The sliding window of every summary: observations of the last 60 s, in 5 buckets rotated every
 * 12 s — prometheus-cpp's `Summary` defaults, which Triton does not change (no setting).
 */
export const SUMMARY_MAX_AGE_SECONDS = 60;
export const SUMMARY_AGE_BUCKETS = 5;

/** The defaults: latency counters, no summaries. */
export const DEFAULT_METRICS_CONFIG: MetricsConfig = { counterLatencies: true, summaryLatencies: false, summaryQuantiles: DEFAULT_SUMMARY_QUANTILES };

/** Triton's settings Warden does not have (Triton's first-response histogram): accepted and reported as ignored. */
const IGNORED_SETTINGS = new Set(['histogram_latencies']);

function bool(setting: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw errors.metricsConfigNotBool(setting, value);
}

/** `summary_quantiles="<q>:<e>,<q>:<e>,..."` (Triton's format; spaces around a pair are allowed). */
function quantiles(value: string): SummaryQuantile[] {
  const out: SummaryQuantile[] = [];
  for (const raw of value.split(',')) {
    const pair = raw.trim();
    const m = /^([^:]+):([^:]+)$/.exec(pair);
    const quantile = m ? Number(m[1]) : NaN;
    const error = m ? Number(m[2]) : NaN;
    if (!(quantile > 0 && quantile <= 1 && error >= 0 && error < 1)) throw errors.summaryQuantilesMalformed(value, pair);
    out.push({ quantile, error });
  }
  return out;
}

/**
 * Reads the `--metrics-config` arguments, in order (a later one wins).
 * @returns the settings, and the arguments Warden accepts without acting on them (unknown
 *   settings, which Triton also passes over, and Triton's `histogram_latencies`)
 * @throws TritonError INVALID_ARG for an argument that is not `<setting>=<value>` (Triton's
 *   check), a boolean setting that is neither true nor false, or malformed `summary_quantiles`
 */
export function parseMetricsConfig(args: readonly string[]): { config: MetricsConfig; ignored: string[] } {
  const config = { ...DEFAULT_METRICS_CONFIG };
  const ignored: string[] = [];
  for (const arg of args) {
    const eq = arg.indexOf('=');
    const setting = eq < 0 ? '' : arg.slice(0, eq);
    const value = eq < 0 ? '' : arg.slice(eq + 1);
    if (setting === '' || value === '' || setting.includes(',')) throw errors.metricsConfigMalformed(arg);
    switch (setting) {
      case 'counter_latencies':
        config.counterLatencies = bool(setting, value);
        break;
      case 'summary_latencies':
        config.summaryLatencies = bool(setting, value);
        break;
      case 'summary_quantiles':
        config.summaryQuantiles = quantiles(value);
        break;
      default:
        if (IGNORED_SETTINGS.has(setting) && value === 'false') break;
        ignored.push(`--metrics-config=${arg}`);
    }
  }
  return { config, ignored };
}
