// Hang containment for native backends: an execute that never returns fails
// its requests after `warden.execute_timeout_ms` and leaves the model UNAVAILABLE with the reason
// (a native thread cannot be killed safely); statistics show the stuck requests; unload and
// shutdown finish within the exit timeout even with a thread stuck in a backend; responses,
// factories and requests a backend leaks are counted on /metrics and logged at unload.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { postJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { executeTimeoutMs } from '../../../host/src/backends/native/index.js';
import { faultsModel, pbtxtConfig, requireNativeBuild, startNativeServer } from './helpers.js';

let repo: TempRepo;
let server: RunningServer;
let url: string;
let stopped = false;

beforeAll(async () => {
  requireNativeBuild();
  repo = tempRepo();
  faultsModel(repo, 'stuck', { mode: 'hang', hang_ms: '4000', 'warden.execute_timeout_ms': '1000' });
  faultsModel(repo, 'stuck_no_limit', { mode: 'hang', hang_ms: '4000' });
  faultsModel(repo, 'stuck_at_exit', { mode: 'hang', hang_ms: '4000' });
  faultsModel(repo, 'leaky', { mode: 'leak' });
  faultsModel(repo, 'leaky_isolated', { mode: 'leak', 'warden.isolation': 'process' });
  faultsModel(repo, 'echo', { mode: 'echo' });
  faultsModel(repo, 'bad_timeout', { 'warden.execute_timeout_ms': 'soon' });
  server = await startNativeServer(repo.path, { exitTimeoutSecs: 1 });
  url = server.httpUrl;
}, 60_000);

afterAll(async () => {
  if (!stopped) await server?.stop();
  repo?.cleanup();
});

const body = (v: number[]) => ({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [v.length], data: v }] });
const infer = (model: string, v = [1]) => postJson(`${url}/v2/models/${model}/infer`, body(v));
const stats = async (model: string) => (await (await fetch(`${url}/v2/models/${model}/stats`)).json()).model_stats[0];
async function state(model: string): Promise<{ state?: string; reason?: string }> {
  const idx = (await postJson(`${url}/v2/repository/index`, {})).json as { name: string; state?: string; reason?: string }[];
  return idx.find((m) => m.name === model) ?? {};
}

describe('execute timeout (warden.execute_timeout_ms)', () => {
  it('the model parameter wins over the server default (--native-execute-timeout-ms)', () => {
    const cfg = (p: string) =>
      pbtxtConfig(
        'm',
        `backend: "x" max_batch_size: 0 input { name: "I" data_type: TYPE_INT32 dims: [ 1 ] } output { name: "O" data_type: TYPE_INT32 dims: [ 1 ] } ${p}`,
      );
    expect(executeTimeoutMs(cfg(''), 700)).toBe(700);
    expect(executeTimeoutMs(cfg(''), 0)).toBe(0);
    expect(executeTimeoutMs(cfg('parameters { key: "warden.execute_timeout_ms" value { string_value: "250" } }'), 700)).toBe(250);
  });

  it('rejects a timeout that is not a positive integer at load', async () => {
    expect(await state('bad_timeout')).toMatchObject({
      state: 'UNAVAILABLE',
      reason: "model 'bad_timeout': parameter warden.execute_timeout_ms must be a positive integer, got 'soon'",
    });
  });

  it('fails the stuck request with UNAVAILABLE and the reason, shows it pending meanwhile, and marks the model UNAVAILABLE', async () => {
    const started = Date.now();
    const pending = infer('stuck');
    await expect.poll(async () => (await stats('stuck')).pending_count, { timeout: 900, interval: 20 }).toBe(1);
    const r = await pending;
    const took = Date.now() - started;
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/TRITONBACKEND_ModelInstanceExecute of instance 'stuck_0_0' did not return within 1000 ms/);
    expect(took).toBeGreaterThanOrEqual(990);
    expect(took).toBeLessThan(3500);
    expect((await stats('stuck')).pending_count).toBe(0);
    const s = await state('stuck');
    expect(s.state).toBe('UNAVAILABLE');
    expect(s.reason).toMatch(/did not return within 1000 ms/);
    expect((await fetch(`${url}/v2/models/stuck/ready`)).status).not.toBe(200);
    const again = await infer('stuck');
    expect(again.status).toBe(503);
    expect(again.json.error).toMatch(/is unavailable: .*did not return within 1000 ms/);
    // Everything else keeps serving.
    const ok = await infer('echo', [7]);
    expect(ok.status).toBe(200);
    expect(ok.json.outputs[0].data).toEqual([7]);
    expect((await fetch(`${url}/v2/health/live`)).status).toBe(200);
  });

  it('unloading the model whose thread is still stuck completes at once, and it loads again', async () => {
    const t0 = Date.now();
    expect((await postJson(`${url}/v2/repository/models/stuck/unload`, {})).status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2500); // not the 4 s the thread stays stuck
    expect((await state('stuck')).state).toBe('UNAVAILABLE');
    // A later load does not hang behind the stuck thread either, and serves.
    expect((await postJson(`${url}/v2/repository/models/stuck/load`, {})).status).toBe(200);
    expect((await state('stuck')).state).toBe('READY');
    expect((await stats('stuck')).pending_count).toBe(0);
  });
});

describe('without an execute timeout', () => {
  it('unload still completes within the exit timeout: the stuck request gets UNAVAILABLE, the instance is given up', async () => {
    const pending = infer('stuck_no_limit');
    await expect.poll(async () => (await stats('stuck_no_limit')).pending_count).toBe(1);
    const t0 = Date.now();
    expect((await postJson(`${url}/v2/repository/models/stuck_no_limit/unload`, {})).status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(3000); // exit timeout 1 s, not the 4 s the thread stays stuck
    const r = await pending;
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/did not finish within the exit timeout/);
  });
});

describe('leaks', () => {
  it('response factories a backend never deletes are counted on /metrics at unload', async () => {
    for (let i = 0; i < 3; i++) expect((await infer('leaky')).status).toBe(200);
    expect((await postJson(`${url}/v2/repository/models/leaky/unload`, {})).status).toBe(200);
    const scrape = async () => (await fetch(`${server.metricsUrl}/metrics`)).text();
    // The unload answers when the version stopped serving; finalize (and the count) follows.
    await expect.poll(scrape).toMatch(/^warden_native_leaked_total\{model="leaky"/m);
    const text = await scrape();
    expect(text).toMatch(/^# TYPE warden_native_leaked_total counter$/m);
    expect(text).toMatch(/^warden_native_leaked_total\{model="leaky",version="1",kind="response_factory"\} 3$/m);
    expect(text).not.toMatch(/warden_native_leaked_total\{model="echo"/);
  });

  it('in a backend-host process too (warden.isolation=process): the process reports them at unload', async () => {
    for (let i = 0; i < 2; i++) expect((await infer('leaky_isolated')).status).toBe(200);
    expect((await postJson(`${url}/v2/repository/models/leaky_isolated/unload`, {})).status).toBe(200);
    const scrape = async () => (await fetch(`${server.metricsUrl}/metrics`)).text();
    await expect.poll(scrape, { timeout: 10_000 }).toMatch(/^warden_native_leaked_total\{model="leaky_isolated",version="1",kind="response_factory"\} 2$/m);
  });
});

describe('shutdown', () => {
  it('stop() finishes within the exit timeout while a backend thread is stuck in Execute', async () => {
    const pending = infer('stuck_at_exit');
    await expect.poll(async () => (await stats('stuck_at_exit')).pending_count).toBe(1);
    const t0 = Date.now();
    await server.stop();
    stopped = true;
    expect(Date.now() - t0).toBeLessThan(3500); // exit timeout 1 s, not the 4 s the thread stays stuck
    expect((await pending).status).toBe(503);
  });
});
