/** Per-model counter series (host/src/metrics/prometheus.ts): buffered increments, exact at every scrape. */
import { describe, expect, it } from 'vitest';
import { ServerMetrics } from '../../host/src/metrics/prometheus.js';

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
});
