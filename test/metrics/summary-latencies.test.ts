/**
 * `GET /metrics` with and without `--metrics-config=summary_latencies=true`: Triton's per-model
 * latency summaries appear after inferences only when asked for (host/src/metrics/prometheus.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_METRICS_CONFIG } from '../../host/src/metrics/config.js';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { postJson, simpleRequest, tempRepo, type TempRepo } from '../helpers/repo.js';

const ones = Array.from({ length: 16 }, () => 1);
const SUMMARIES = ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output'].map((n) => `nv_inference_${n}_summary_us`);

describe('latency summaries on /metrics', () => {
  let repo: TempRepo;
  let withSummaries: RunningServer;
  let plain: RunningServer;
  beforeAll(async () => {
    repo = tempRepo(['simple']);
    const opts = { modelControlMode: 'none', metricsPort: 0 } as const;
    withSummaries = await startTestServer(repo, { ...opts, metricsConfig: { ...DEFAULT_METRICS_CONFIG, summaryLatencies: true } });
    plain = await startTestServer(repo, opts);
    for (const s of [withSummaries, plain]) {
      for (let i = 0; i < 3; i++) expect((await postJson(`${s.httpUrl}/v2/models/simple/infer`, simpleRequest('INT32', ones, ones))).status).toBe(200);
    }
  }, 60_000);
  afterAll(async () => {
    await withSummaries?.stop();
    await plain?.stop();
    repo?.cleanup();
  });

  const scrape = async (s: RunningServer) => (await fetch(`${s.metricsUrl}/metrics`)).text();

  it('with summary_latencies=true: each summary counts the three requests, with the default quantiles', async () => {
    const text = await scrape(withSummaries);
    for (const name of SUMMARIES) {
      expect(text, name).toContain(`# TYPE ${name} summary`);
      expect(text, name).toContain(`${name}_count{model="simple",version="1"} 3\n`);
      for (const q of ['0.5', '0.9', '0.95', '0.99', '0.999'])
        expect(text, `${name} ${q}`).toMatch(new RegExp(`^${name}\\{quantile="${q}",model="simple",version="1"\\} [0-9.e+-]+$`, 'm'));
    }
    // The counters stay (counter_latencies defaults to true).
    expect(text).toMatch(/^nv_inference_request_duration_us\{model="simple",version="1"\} /m);
  });

  it('without it: no summary lines, the counters as before', async () => {
    const text = await scrape(plain);
    expect(text).not.toContain('_summary_us');
    expect(text).toMatch(/^nv_inference_request_success\{model="simple",version="1"\} 3$/m);
  });
});
