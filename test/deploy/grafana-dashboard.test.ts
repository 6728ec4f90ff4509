/**
 * The Grafana dashboard (deploy/grafana/warden.json) names only metrics a running Warden exports:
 * every metric name of its PromQL expressions (panels and template variables) is in the scrape of
 * a server with the features on that export them — multi-tenant with the tenant label, the
 * response cache, sandboxed (wasm) models of the operator and of a tenant — after traffic that
 * succeeds, fails and hits the cache; every label it groups or filters by is on those series.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchAs, PROJECT_ROOT, tempRepo, type TempRepo } from '../helpers/repo.js';
import { startTenantServer, testTokens, type TenantServer } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';

const DASHBOARD = join(PROJECT_ROOT, 'deploy', 'grafana', 'warden.json');
const TOKENS = testTokens('acme', 'ops');

/** Every PromQL expression of a dashboard: panel targets (rows' panels too) and query variables. */
export function dashboardExpressions(dashboard: any): string[] {
  const out: string[] = [];
  const panels = (list: any[] | undefined): void => {
    for (const p of list ?? []) {
      for (const t of p.targets ?? []) if (typeof t.expr === 'string') out.push(t.expr);
      panels(p.panels);
    }
  };
  panels(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    if (typeof q === 'string') out.push(q);
  }
  return out;
}

/** PromQL's words that are not metric names where a name could stand (keywords; aggregations, whose `(` may follow `by (…)`). */
const NOT_METRICS = new Set([
  ...['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset'],
  ...['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio'],
]);

/**
 * The metric names of a PromQL expression (or a `label_values(metric, label)` variable query):
 * identifiers followed by a selector (`{`, `[`) or standing alone, not functions (followed by `(`),
 * not label names (inside `{…}` and `by (…)`), not keywords, durations or Grafana's `$variables`.
 */
export function metricNames(expr: string): string[] {
  const text = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '{}') // label matchers
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '$1()') // grouping labels
    .replace(/\[[^\]]*\]/g, '[]') // ranges
    .replace(/\$\{?\w+\}?/g, ''); // dashboard variables
  const names = new Set<string>();
  const labelValues = /^\s*label_values\(\s*([a-zA-Z_:][\w:]*)/.exec(expr);
  if (labelValues) return [labelValues[1]!];
  for (const m of text.matchAll(/(?<![\w:.])([a-zA-Z_:][\w:]*)(?!\w)(\s*\()?/g)) {
    if (m[2] !== undefined || NOT_METRICS.has(m[1]!)) continue; // a function call or a keyword
    names.add(m[1]!);
  }
  return [...names];
}

/** Label names an expression groups by (`by (…)`) or matches on (`{label=…}`). */
function labelNames(expr: string): string[] {
  const out = new Set<string>();
  for (const m of expr.matchAll(/\bby\s*\(([^)]*)\)/g)) for (const l of m[1]!.split(',')) if (l.trim()) out.add(l.trim());
  for (const m of expr.matchAll(/\{([^}]*)\}/g)) for (const l of m[1]!.matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)) out.add(l[1]!);
  const labelValues = /^\s*label_values\([^,]*,\s*(\w+)\s*\)/.exec(expr);
  if (labelValues) out.add(labelValues[1]!);
  return [...out];
}

/** The sample names of a Prometheus text exposition (a histogram's or summary's suffixed series included) and the label names on them. */
function exported(text: string): { names: Set<string>; labels: Set<string> } {
  const names = new Set<string>();
  const labels = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)/.exec(line);
    if (type) {
      names.add(type[1]!);
      if (type[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(type[1]! + s);
      if (type[2] === 'summary') for (const s of ['_sum', '_count']) names.add(type[1]! + s);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s/.exec(line);
    if (!sample) continue;
    names.add(sample[1]!);
    for (const l of (sample[2] ?? '').matchAll(/(\w+)="/g)) labels.add(l[1]!);
  }
  return { names, labels };
}

describe('PromQL metric names', () => {
  it('finds the metrics of selectors, ranges, aggregations and label_values, and nothing else', () => {
    expect(
      metricNames(
        'sum by (model, tenant) (rate(nv_inference_request_duration_us{tenant=~"$tenant"}[5m])) / sum by (model) (rate(nv_inference_count[$__rate_interval]))',
      ),
    ).toEqual(['nv_inference_request_duration_us', 'nv_inference_count']);
    expect(metricNames('increase(warden_instance_restarts_total[1h]) > 0 and on (model) warden_build_info')).toEqual([
      'warden_instance_restarts_total',
      'warden_build_info',
    ]);
    expect(metricNames('label_values(nv_inference_request_success, tenant)')).toEqual(['nv_inference_request_success']);
    expect(metricNames('histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))')).toEqual(['x_bucket']);
  });
});

describe('deploy/grafana/warden.json', () => {
  let repo: TempRepo;
  let tenancy: TenantServer;
  let scrape: { names: Set<string>; labels: Set<string> };
  let text = '';
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8'));

  beforeAll(async () => {
    await ensureBuilt();
    repo = tempRepo(['simple']);
    cpSync(join(PROJECT_ROOT, 'model_repository', 'identity_wasm'), join(repo.path, 'identity_wasm'), { recursive: true });
    repo.write(
      'identity_wasm/config.pbtxt',
      `${readFileSync(join(PROJECT_ROOT, 'model_repository', 'identity_wasm', 'config.pbtxt'), 'utf8')}\nresponse_cache { enable: true }\n`,
    );
    tenancy = await startTenantServer(
      repo,
      [
        { id: 'acme', token: TOKENS.acme, shared_models: ['simple', 'identity_wasm'] },
        { id: 'ops', token: TOKENS.ops, role: 'admin' },
      ],
      { loadModels: ['*'], metricsPort: 0, metricsAuth: false, metricsTenantLabels: true, responseCacheBytes: 1 << 20 },
    );
    const url = tenancy.server.httpUrl;
    const wasm = readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm')).toString('base64');
    const uploaded = await fetchAs(TOKENS.acme, 'POST', `${url}/v2/repository/models/own/load`, {
      // the tenant's on the wasmtime engine, the operator's on the default (V8)
      parameters: {
        config: JSON.stringify({
          backend: 'wasm',
          input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
          output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
          parameters: { engine: { string_value: 'wasmtime' } },
        }),
        'file:1/model.wasm': wasm,
      },
    });
    expect(uploaded.status, uploaded.text).toBe(200);
    const infer = (model: string, body: unknown) => fetchAs(TOKENS.acme, 'POST', `${url}/v2/models/${model}/infer`, body);
    const fp32 = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }] };
    for (const model of ['identity_wasm', 'identity_wasm', 'own']) expect((await infer(model, fp32)).status).toBe(200); // a miss, then a cache hit
    expect((await infer('simple', fp32)).status).toBe(400); // a failure
    text = await (await fetch(`${tenancy.server.metricsUrl}/metrics`)).text();
    scrape = exported(text);
  }, 120_000);
  afterAll(async () => {
    await tenancy?.stop();
    repo?.cleanup();
  });

  it('every metric name of its PromQL expressions is one the server exports', () => {
    const exprs = dashboardExpressions(dashboard);
    expect(exprs.length).toBeGreaterThan(10);
    const used = new Set(exprs.flatMap(metricNames));
    expect([...used].filter((n) => !scrape.names.has(n))).toEqual([]);
    // per-model and per-tenant request rate, latency, queue time, failures, cache hits, sandbox memory, instance restarts
    for (const name of [
      'nv_inference_request_success',
      'nv_inference_request_duration_us',
      'nv_inference_queue_duration_us',
      'nv_inference_request_failure',
      'nv_cache_num_hits_per_model',
      'warden_sandbox_memory_bytes',
      'warden_instance_restarts_total',
    ])
      expect(used, name).toContain(name);
  });

  it("the sandbox panels' series carry samples: each wasm version's reserved memory and its restarts", () => {
    const sample = (name: string, labels: string) => text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
    for (const labels of ['model="identity_wasm",version="1",tenant=""', 'model="own",version="1",tenant="acme"']) {
      expect(Number(sample('warden_sandbox_memory_bytes', labels)?.split(' ')[1]), labels).toBeGreaterThan(0);
      expect(sample('warden_instance_restarts_total', labels), labels).toMatch(/ 0$/);
    }
  });

  it('every label it groups or filters by is on the exported series', () => {
    const labels = new Set(dashboardExpressions(dashboard).flatMap(labelNames));
    expect([...labels].filter((l) => !scrape.labels.has(l) && l !== '__name__')).toEqual([]);
    expect(labels).toContain('tenant');
    expect(labels).toContain('model');
  });

  it('is a Grafana dashboard over a Prometheus data source chosen at import', () => {
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    expect(dashboard.uid).toBe('warden');
    const titles = JSON.stringify(dashboard.panels.map((p: any) => p.title));
    for (const t of ['Request rate', 'Latency', 'Queue time', 'Failures', 'Cache hit', 'Sandbox memory', 'Instance restarts']) expect(titles).toContain(t);
  });
});
