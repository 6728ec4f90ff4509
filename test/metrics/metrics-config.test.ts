/** `--metrics-config` (host/src/metrics/config.ts) and its place in the CLI (host/src/cli-options.ts). */
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../../host/src/cli-options.js';
import { DEFAULT_SUMMARY_QUANTILES, parseMetricsConfig } from '../../host/src/metrics/config.js';

describe('parseMetricsConfig', () => {
  it("has Triton's defaults: latency counters on, summaries off, quantiles 0.5 0.9 0.95 0.99 0.999", () => {
    const { config, ignored } = parseMetricsConfig([]);
    expect(config).toEqual({ counterLatencies: true, summaryLatencies: false, summaryQuantiles: DEFAULT_SUMMARY_QUANTILES });
    expect(config.summaryQuantiles.map((q) => q.quantile)).toEqual([0.5, 0.9, 0.95, 0.99, 0.999]);
    expect(ignored).toEqual([]);
  });

  it("reads Triton's settings, a later one winning, and names those it does not act on", () => {
    const { config, ignored } = parseMetricsConfig([
      'summary_latencies=false',
      'summary_latencies=true',
      'counter_latencies=false',
      'summary_quantiles=0.5:0.05, 0.9:0.01,0.99:0.001',
      'histogram_latencies=true',
      'histogram_latencies=false',
      'some_future_setting=1',
    ]);
    expect(config.summaryLatencies).toBe(true);
    expect(config.counterLatencies).toBe(false);
    expect(config.summaryQuantiles).toEqual([
      { quantile: 0.5, error: 0.05 },
      { quantile: 0.9, error: 0.01 },
      { quantile: 0.99, error: 0.001 },
    ]);
    expect(ignored).toEqual(['--metrics-config=histogram_latencies=true', '--metrics-config=some_future_setting=1']);
  });

  it("refuses what is not <setting>=<value> with Triton's text, and malformed values", () => {
    for (const bad of ['summary_latencies', '=true', 'summary_latencies=', 'group,summary_latencies=true']) {
      expect(() => parseMetricsConfig([bad]), bad).toThrow(`--metrics-config option format is <setting>=<value>. Got ${bad}`);
    }
    expect(() => parseMetricsConfig(['summary_latencies=yes'])).toThrow("'summary_latencies' expects true or false");
    for (const q of ['0.5', '0.5:0.05,', '1.5:0.01', '0:0.01', '0.9:-1', 'x:y', '0.5:0.1:0.2']) {
      expect(() => parseMetricsConfig([`summary_quantiles=${q}`]), q).toThrow('is not <quantile>:<error>');
    }
  });
});

describe('--metrics-config on the command line', () => {
  it('is honoured, no longer ignored: summaries on; unknown settings in the warning', () => {
    const o = parseCli(['--model-repository=/m', '--metrics-config=summary_latencies=true', '--metrics-config', 'summary_quantiles=0.5:0.05,0.99:0.001']);
    expect(o.metricsConfig).toMatchObject({ counterLatencies: true, summaryLatencies: true });
    expect(o.metricsConfig?.summaryQuantiles.map((q) => q.quantile)).toEqual([0.5, 0.99]);
    expect(o.notes.ignoredFlags).toEqual([]);
    const h = parseCli(['--model-repository=/m', '--metrics-config=histogram_latencies=true']);
    expect(h.notes.ignoredFlags).toEqual(['--metrics-config=histogram_latencies=true']);
    expect(parseCli(['--model-repository=/m']).metricsConfig).toBeUndefined();
  });

  it('refuses a malformed setting as a usage error', () => {
    expect(() => parseCli(['--model-repository=/m', '--metrics-config=summary_latencies'])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/m', '--metrics-config=summary_quantiles=2:0.1'])).toThrow(UsageError);
  });
});
