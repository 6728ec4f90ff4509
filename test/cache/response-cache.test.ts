/**
 * The response cache (`--cache-config local,size=N`, `response_cache { enable: true }`): Triton's
 * key fields (model, version, inputs by name with their bytes) plus datatype, shape, requested
 * outputs and namespace; an LRU bounded by bytes; over HTTP, hits answered without executing,
 * visible in the statistics extension (`cache_hit` / `cache_miss`) and in Triton's metrics
 * (`nv_cache_num_hits_per_model`, ...), models without `response_cache` untouched.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseCache } from '../../host/src/cache/response-cache.js';
import { parseCli } from '../../host/src/cli-options.js';
import type { InferenceRequest } from '../../host/src/contract/types.js';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { request } from '../helpers/backend-request.js';
import { getJson, postJson, simpleRequest, tempRepo, type TempRepo } from '../helpers/repo.js';
import { opsConfig, OpsResolver } from '../ensemble/ops-backend.js';

const req = (over: Partial<InferenceRequest> = {}): InferenceRequest =>
  request(
    'm',
    [
      { name: 'X', datatype: 'INT32', shape: [2], data: new Uint8Array([1, 0, 0, 0, 2, 0, 0, 0]) },
      { name: 'A', datatype: 'INT32', shape: [1], data: new Uint8Array([7, 0, 0, 0]) },
    ],
    ['O'],
    { id: 'a', ...over },
  );

/** A response of one UINT8 output of `n` bytes (cached size: n + 256 bytes of overhead). */
const out = (n: number) => ({ outputs: [{ name: 'O', datatype: 'UINT8' as const, shape: [n], data: new Uint8Array(n).fill(n % 256) }] });

describe('keys and bounds', () => {
  it("equal for requests Triton hashes alike (id and input order don't matter), different otherwise", () => {
    const base = ResponseCache.key(req());
    expect(ResponseCache.key(req({ id: 'other', inputs: [...req().inputs].reverse() }))).toBe(base);
    const differs = [
      req({ model: 'n' }),
      req({ version: 2 }),
      req({ tenant: 'acme' }),
      req({ requestedOutputs: ['O', 'P'] }),
      req({ inputs: [{ ...req().inputs[0]!, shape: [1, 2] }, req().inputs[1]!] }),
      req({ inputs: [{ ...req().inputs[0]!, datatype: 'UINT32' }, req().inputs[1]!] }),
      req({ inputs: [{ ...req().inputs[0]!, data: new Uint8Array([1, 0, 0, 0, 3, 0, 0, 0]) }, req().inputs[1]!] }),
      req({ inputs: [{ ...req().inputs[0]!, name: 'Y' }, req().inputs[1]!] }),
    ];
    for (const r of differs) expect(ResponseCache.key(r)).not.toBe(base);
    // a reloaded version (same number, maybe new files) has its own scope
    expect(ResponseCache.key(req(), '7')).not.toBe(ResponseCache.key(req(), '8'));
  });

  it('an LRU bounded by bytes; entries are copies; too-large responses are not kept', () => {
    const c = new ResponseCache(1000);
    const r1 = out(100);
    c.set('', 'a', r1);
    r1.outputs[0]!.data.fill(0); // the caller reuses its buffer: the cache kept a copy
    expect(c.get('', 'a')!.outputs[0]!.data[0]).toBe(100);
    c.set('', 'b', out(100));
    c.get('', 'a'); // a is now most recent
    c.set('', 'c', out(100)); // 3 × (100 + 256 overhead) > 1000 bytes: the least recent, b, goes
    expect(c.get('', 'b')).toBeUndefined();
    expect(c.get('', 'a')).toBeDefined();
    expect(c.get('', 'c')).toBeDefined();
    c.set('', 'huge', out(5000));
    expect(c.get('', 'huge')).toBeUndefined();
    expect(c.size().bytes).toBeLessThanOrEqual(1000);
  });

  it('--cache-config local,size=N and --response-cache-byte-size set the size', () => {
    expect(parseCli(['--model-repository=/m', '--cache-config=local,size=1048576']).responseCacheBytes).toBe(1048576);
    expect(parseCli(['--model-repository=/m', '--response-cache-byte-size=4096']).responseCacheBytes).toBe(4096);
    expect(() => parseCli(['--model-repository=/m', '--cache-config=local,size=lots'])).toThrow(/integer/);
    expect(() => parseCli(['--model-repository=/m', '--cache-config=local'])).toThrow(/--cache-config/);
  });

  it('refuses at start-up what tritonserver refuses (server command_line_parser.cc, core server.cc); a cache Warden lacks is an error, not a warning', () => {
    const parse =
      (...flags: string[]) =>
      () =>
        parseCli(['--model-repository=/m', ...flags]);
    expect(parse('--response-cache-byte-size=4096', '--cache-config=local,size=4096')).toThrow(
      'Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. Please provide one or the other.',
    );
    expect(parse('--cache-config=local,size=4096', '--cache-config=redis,host=localhost')).toThrow(
      'found multiple cache configurations, but only a single cache is currently supported',
    );
    expect(parse('--cache-config=memcached,host=localhost')).toThrow(
      '--cache-config=memcached,host=localhost: the memcached cache is not available in Warden (only the local and redis caches are built)',
    );
    // the redis cache's settings: test/cache/redis-cache.test.ts
    // Settings of one cache accumulate, as in tritonserver.
    expect(parseCli(['--model-repository=/m', '--cache-config=local,size=1', '--cache-config=local,size=2048']).responseCacheBytes).toBe(2048);
  });
});

describe('capacity budgeted per tenant', () => {
  /** Entry size of out(100): 356 bytes. */
  const ENTRY = 356;

  it("a tenant filling the cache evicts only its own entries, never another tenant's or the operator's", () => {
    const c = new ResponseCache(100 * ENTRY, { shareOf: () => 4 * ENTRY });
    c.set('victim', 'v', out(100));
    c.set('', 'op', out(100));
    for (let i = 0; i < 1000; i++) c.set('attacker', `k${i}`, out(100));
    expect(c.get('victim', 'v')).toBeDefined();
    expect(c.get('', 'op')).toBeDefined();
    // the attacker holds its share and no more: its most recent entries
    expect(c.size('attacker')).toEqual({ entries: 4, bytes: 4 * ENTRY });
    expect(c.get('attacker', 'k999')).toBeDefined();
    expect(c.get('attacker', 'k995')).toBeUndefined();
    // entries are per tenant: the same key is another tenant's miss
    expect(c.get('victim', 'k999')).toBeUndefined();
    expect(c.get('attacker', 'v')).toBeUndefined();
  });

  it('each share is its quota, capped at the cache size; the operator namespace holds the cache size; 0 caches nothing', () => {
    const shares: Record<string, number> = { small: 2 * ENTRY, big: 1e12, none: 0, bad: Number.NaN };
    const c = new ResponseCache(10 * ENTRY, { shareOf: (t) => shares[t] ?? 0 });
    expect(c.shareOf('small')).toBe(2 * ENTRY);
    expect(c.shareOf('big')).toBe(10 * ENTRY);
    expect(c.shareOf('none')).toBe(0);
    expect(c.shareOf('bad')).toBe(0);
    expect(c.shareOf('')).toBe(10 * ENTRY);
    for (let i = 0; i < 50; i++) for (const t of ['small', 'big', 'none', 'bad', '']) c.set(t, `k${i}`, out(100));
    expect(c.size('small').bytes).toBe(2 * ENTRY);
    expect(c.size('big').bytes).toBe(10 * ENTRY);
    expect(c.size('').bytes).toBe(10 * ENTRY);
    expect(c.size('none').entries).toBe(0);
    expect(c.size('bad').entries).toBe(0);
    // without shareOf (single-user mode) every namespace may use the whole cache
    expect(new ResponseCache(1000).shareOf('acme')).toBe(1000);
  });

  it('a changed share (tenants-file reload) applies at the next insertion; a removed tenant is dropped', () => {
    let share = 4 * ENTRY;
    const c = new ResponseCache(100 * ENTRY, { shareOf: () => share });
    for (let i = 0; i < 4; i++) c.set('t', `k${i}`, out(100));
    expect(c.size('t').entries).toBe(4);
    share = 2 * ENTRY;
    c.set('t', 'k4', out(100));
    expect(c.size('t')).toEqual({ entries: 1, bytes: ENTRY });
    c.set('t', 'k5', out(100));
    c.set('t', 'k6', out(100));
    expect(c.size('t').bytes).toBe(2 * ENTRY);
    c.set('u', 'x', out(100));
    c.dropTenant('t');
    expect(c.size('t').entries).toBe(0);
    expect(c.get('u', 'x')).toBeDefined();
  });
});

describe('over HTTP', () => {
  let repo: TempRepo;
  let server: RunningServer;
  beforeAll(async () => {
    repo = tempRepo(['simple']);
    const dir = repo.addExample('simple', 'simple_cached');
    const cfg = readFileSync(join(dir, 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "simple_cached"');
    writeFileSync(join(dir, 'config.pbtxt'), `${cfg}\nresponse_cache { enable: true }\n`);
    // Ensembles with response_cache: over `simple_plain` (no cache of its own), and over a decoupled step.
    repo.addExample('simple', 'simple_plain');
    writeFileSync(join(repo.path, 'simple_plain/config.pbtxt'), cfg.replace('name: "simple_cached"', 'name: "simple_plain"'));
    const ensemble = (name: string, step: string, io: string, inMap: string, outMap: string) => {
      repo.write(`${name}/1/.keep`, '');
      repo.write(
        `${name}/config.pbtxt`,
        `name: "${name}"\nplatform: "ensemble"\n${io}\nensemble_scheduling { step [ { model_name: "${step}" model_version: -1 ${inMap} ${outMap} } ] }\nresponse_cache { enable: true }\n`,
      );
    };
    ensemble(
      'ensemble_cached',
      'simple_plain',
      'max_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]',
      'input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }',
      'output_map { key: "OUTPUT0" value: "OUTPUT0" }',
    );
    repo.write('split/1/.keep', '');
    repo.write('split/config.pbtxt', `name: "split"\n${opsConfig('split')}`);
    ensemble(
      'decoupled_cached',
      'split',
      'max_batch_size: 0\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ -1 ] } ]',
      'input_map { key: "IN" value: "X" }',
      'output_map { key: "OUT" value: "Y" }',
    );
    server = await startTestServer(repo, {
      modelControlMode: 'none',
      metricsPort: 0,
      responseCacheBytes: 1 << 20,
      backendResolvers: [new OpsResolver()],
    });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  const A = Array.from({ length: 16 }, (_, i) => i);
  const infer = (model: string, a = A) => postJson(`${server.httpUrl}/v2/models/${model}/infer`, simpleRequest('INT32', a, Array(16).fill(1)));

  it('a repeated request is a hit: answered without executing, counted in statistics and metrics', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await infer('simple_cached');
      expect(r.status).toBe(200);
      expect(r.json.outputs[0].data).toEqual(A.map((x) => x + 1));
    }
    const other = await infer(
      'simple_cached',
      A.map((x) => x * 2),
    );
    expect(other.json.outputs[0].data).toEqual(A.map((x) => x * 2 + 1));
    const s = (await getJson(`${server.httpUrl}/v2/models/simple_cached/stats`)).json.model_stats[0];
    expect(s.inference_stats.cache_hit.count).toBe(2);
    expect(s.inference_stats.cache_miss.count).toBe(2);
    expect(s.inference_stats.success.count).toBe(4);
    expect(s.inference_count).toBe(2); // hits are not inferences
    expect(s.execution_count).toBe(2);
    expect(s.inference_stats.compute_infer.count).toBe(2);
    const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/nv_cache_num_hits_per_model\{model="simple_cached",version="1"\} 2/);
    expect(metrics).toMatch(/nv_cache_num_misses_per_model\{model="simple_cached",version="1"\} 2/);
    expect(metrics).toMatch(/nv_cache_hit_duration_per_model\{model="simple_cached",version="1"\} \d/);
    expect(metrics).toMatch(/nv_inference_request_success\{model="simple_cached",version="1"\} 4/);
  });

  it('an ensemble with response_cache caches its top-level response (Triton core ensemble_scheduler.cc): a hit runs no step', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await infer('ensemble_cached');
      expect(r.status, r.text).toBe(200);
      expect(r.json.outputs).toEqual([{ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: A.map((x) => x + 1) }]);
    }
    const e = (await getJson(`${server.httpUrl}/v2/models/ensemble_cached/stats`)).json.model_stats[0];
    expect(e.inference_stats.cache_hit.count).toBe(2);
    expect(e.inference_stats.cache_miss.count).toBe(1);
    expect(e.inference_stats.success.count).toBe(3);
    const step = (await getJson(`${server.httpUrl}/v2/models/simple_plain/stats`)).json.model_stats[0];
    expect(step.inference_stats.success.count).toBe(1);
    expect(step.execution_count).toBe(1);
    expect(step.inference_stats.cache_hit.count).toBe(0);
  });

  it("an ensemble with response_cache over a decoupled step does not load, with Triton's reason (core model_config_utils.cc)", async () => {
    const index = (await postJson(`${server.httpUrl}/v2/repository/index`, {})).json as { name: string; state: string; reason?: string }[];
    const entry = index.find((m) => m.name === 'decoupled_cached');
    expect(entry?.state).toBe('UNAVAILABLE');
    expect(entry?.reason).toBe(
      "Response Cache does not currently support model decoupled_cached with 'decoupled' transaction policy. Please disable the response cache.",
    );
    expect(index.find((m) => m.name === 'split')?.state).toBe('READY');
  });

  it('a model without response_cache never uses it', async () => {
    await infer('simple');
    await infer('simple');
    const s = (await getJson(`${server.httpUrl}/v2/models/simple/stats`)).json.model_stats[0];
    expect(s.inference_stats.cache_hit.count).toBe(0);
    expect(s.inference_stats.cache_miss.count).toBe(0);
    expect(s.execution_count).toBe(2);
    const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    expect(metrics).not.toMatch(/nv_cache_num_hits_per_model\{model="simple"/);
  });
});
