/** Per-model counter series (host/src/metrics/prometheus.ts): buffered increments, exact at every scrape. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_METRICS_CONFIG } from '../../host/src/metrics/config.js';
import { ServerMetrics } from '../../host/src/metrics/prometheus.js';
import { ModelStatistics } from '../../host/src/metrics/stats.js';

const line = (text: string, name: string, labels: string) => text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));

describe('ServerMetrics per-model series', () => {
  it('every increment reaches the scrape, including those between two scrapes; a series incremented by 0 appears', async () => {
    const m = new ServerMetrics();
    const s = m.forModel('simple', 1);
    for (let i = 0; i < 1000; i++) {
      s.success.inc();
      s.requestDurationUs.inc(0.5);
    }
    s.queueDurationUs.inc(0);
    let text = await m.registry.metrics();
    expect(line(text, 'nv_inference_request_success', 'model="simple",version="1"')).toBe('nv_inference_request_success{model="simple",version="1"} 1000');
    expect(line(text, 'nv_inference_request_duration_us', 'model="simple",version="1"')).toBe(
      'nv_inference_request_duration_us{model="simple",version="1"} 500',
    );
    expect(line(text, 'nv_inference_queue_duration_us', 'model="simple",version="1"')).toBe('nv_inference_queue_duration_us{model="simple",version="1"} 0');
    expect(line(text, 'nv_inference_exec_count', 'model="simple",version="1"')).toBeUndefined(); // never incremented
    s.success.inc(2);
    s.failure('BACKEND').inc();
    text = await m.registry.metrics();
    expect(line(text, 'nv_inference_request_success', 'model="simple",version="1"')).toBe('nv_inference_request_success{model="simple",version="1"} 1002');
    expect(line(text, 'nv_inference_request_failure', 'model="simple",version="1",reason="BACKEND"')).toBe(
      'nv_inference_request_failure{model="simple",version="1",reason="BACKEND"} 1',
    );
    text = await m.registry.metrics(); // a scrape with nothing new changes nothing
    expect(line(text, 'nv_inference_request_success', 'model="simple",version="1"')).toBe('nv_inference_request_success{model="simple",version="1"} 1002');
  });

  it('a reloaded model version adds to the same series; tenants stay apart', async () => {
    const m = new ServerMetrics({ tenantLabel: true });
    m.forModel('a', 1, 't1').success.inc();
    m.forModel('a', 1, 't1').success.inc(); // a reload gets the same series
    m.forModel('a', 1, 't2').success.inc(5);
    const text = await m.registry.metrics();
    expect(line(text, 'nv_inference_request_success', 'model="a",version="1",tenant="t1"')).toMatch(/ 2$/);
    expect(line(text, 'nv_inference_request_success', 'model="a",version="1",tenant="t2"')).toMatch(/ 5$/);
  });

  it('instance restarts and reserved sandbox memory are read from the serving versions at each scrape', async () => {
    const m = new ServerMetrics({ tenantLabel: true });
    let serving = [
      { model: 'w', version: '1', tenant: 'acme', restarts: 2, sandboxMemoryBytes: 1 << 20 },
      { model: 'py', version: '3', tenant: '', restarts: 0, sandboxMemoryBytes: 0 },
    ];
    m.setInstanceSource(() => serving);
    let text = await m.registry.metrics();
    expect(line(text, 'warden_instance_restarts_total', 'model="w",version="1",tenant="acme"')).toMatch(/ 2$/);
    expect(line(text, 'warden_instance_restarts_total', 'model="py",version="3",tenant=""')).toMatch(/ 0$/);
    expect(line(text, 'warden_sandbox_memory_bytes', 'model="w",version="1",tenant="acme"')).toMatch(/ 1048576$/);
    expect(line(text, 'warden_sandbox_memory_bytes', 'model="py",version="3",tenant=""')).toBeUndefined(); // no sandbox
    serving = [{ model: 'w', version: '1', tenant: 'acme', restarts: 3, sandboxMemoryBytes: 0 }]; // idle-released; py unloaded
    text = await m.registry.metrics();
    expect(line(text, 'warden_instance_restarts_total', 'model="w",version="1",tenant="acme"')).toMatch(/ 3$/);
    expect(line(text, 'warden_instance_restarts_total', 'model="py",version="3",tenant=""')).toBeUndefined();
    expect(line(text, 'warden_sandbox_memory_bytes', 'model="w",version="1",tenant="acme"')).toBeUndefined();
  });

  it('refuses negative, NaN and infinite increments as prom-client does', () => {
    const s = new ServerMetrics().forModel('m', 1);
    expect(() => s.success.inc(-1)).toThrow(RangeError);
    expect(() => s.requestDurationUs.inc(Number.NaN)).toThrow(RangeError);
    expect(() => s.requestDurationUs.inc(Infinity)).toThrow(RangeError);
  });

  it("summary_latencies=true: Triton's five summaries per model version, with their quantiles, count and sum", async () => {
    const m = new ServerMetrics({ tenantLabel: true, config: { ...DEFAULT_METRICS_CONFIG, summaryLatencies: true } });
    const stats = new ModelStatistics(m.forModel('simple', 1, 'acme'));
    for (let i = 1; i <= 100; i++) {
      stats.recordSuccess(BigInt(i) * 1_000_000n, 1); // request: i ms = i·1000 µs
      stats.recordRequestTimes(BigInt(i) * 1000n, 0n, 5000n, 0n); // queue: i µs; compute infer: 5 µs
    }
    // Sums only (the native data path): counted by the counters, not observed by the summaries.
    stats.absorb({
      successCount: 50,
      successNs: 50e9,
      failCount: 0,
      failNs: 0,
      timedCount: 50,
      queueNs: 50e9,
      computeInputNs: 0,
      computeInferNs: 0,
      computeOutputNs: 0,
      inferenceCount: 50,
      executionCount: 50,
      batches: [],
      lastInferenceMs: 0,
    });
    const text = await m.registry.metrics();
    const l = 'model="simple",version="1",tenant="acme"';
    expect(text).toContain('# TYPE nv_inference_request_summary_us summary');
    for (const name of ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output']) {
      expect(line(text, `nv_inference_${name}_summary_us_count`, l), name).toBe(`nv_inference_${name}_summary_us_count{${l}} 100`);
    }
    expect(line(text, 'nv_inference_request_summary_us_sum', l)).toBe(`nv_inference_request_summary_us_sum{${l}} 5050000`);
    expect(line(text, 'nv_inference_request_success', l)).toMatch(/ 150$/);
    const quantile = (name: string, q: string) => Number(line(text, `nv_inference_${name}_summary_us`, `quantile="${q}",${l}`)?.split(' ')[1]);
    // t-digest estimates: within 2 % of the exact quantile.
    const near = (v: number, exact: number) => expect(Math.abs(v - exact), `${v} vs ${exact}`).toBeLessThanOrEqual(exact * 0.02);
    near(quantile('request', '0.5'), 50_000);
    near(quantile('request', '0.99'), 99_000);
    near(quantile('queue', '0.9'), 90);
    expect(quantile('compute_infer', '0.999')).toBe(5);
  });

  it('without summary_latencies no summary; counter_latencies=false leaves the latency counters out, not the request counts', async () => {
    const plain = new ServerMetrics();
    new ModelStatistics(plain.forModel('simple', 1)).recordSuccess(1000n, 1);
    const text = await plain.registry.metrics();
    expect(text).not.toContain('_summary_us');
    expect(line(text, 'nv_inference_request_duration_us', 'model="simple",version="1"')).toMatch(/ 1$/);
    const off = new ServerMetrics({ config: { ...DEFAULT_METRICS_CONFIG, counterLatencies: false } });
    const stats = new ModelStatistics(off.forModel('simple', 1));
    stats.recordSuccess(1000n, 1);
    stats.recordRequestTimes(1000n, 1000n, 1000n, 1000n);
    stats.recordCacheMiss(1000n);
    const offText = await off.registry.metrics();
    expect(line(offText, 'nv_inference_request_success', 'model="simple",version="1"')).toMatch(/ 1$/);
    for (const name of [
      'nv_inference_request_duration_us',
      'nv_inference_queue_duration_us',
      'nv_inference_compute_infer_duration_us',
      'nv_cache_num_misses_per_model',
    ]) {
      expect(offText, name).not.toContain(name);
    }
  });
});
