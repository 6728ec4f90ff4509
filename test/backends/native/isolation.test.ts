// Crash isolation for native backends: a model with warden.isolation=process
// runs in a backend-host process (same addon, same libtritonserver.so). A segfault or abort() there
// fails only its in-flight requests (the error names the signal), the process restarts and the model
// is READY again, while the server and every other model go on; a stuck Execute past
// warden.execute_timeout_ms kills and restarts the process.
import { describe, expect, it } from 'vitest';
import { postJson } from '../../helpers/repo.js';
import { copyRepoModel, faultsModel, nativeServerPerFile } from './helpers.js';

const native = nativeServerPerFile(
  (repo) => {
    faultsModel(repo, 'isolated', { 'warden.isolation': 'process', hang_ms: '10000', 'warden.execute_timeout_ms': '1500' }, 2);
    faultsModel(repo, 'bad_isolation', { 'warden.isolation': 'container' });
    copyRepoModel(repo, 'identity_native');
  },
  { server: { exitTimeoutSecs: 2 } },
);

const infer = (model: string, v: number[]) =>
  postJson(`${native.url}/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [v.length], data: v }] });
const ready = async (model: string) => (await fetch(`${native.url}/v2/models/${model}/ready`)).status === 200;
async function state(model: string): Promise<{ state?: string; reason?: string }> {
  const idx = (await postJson(`${native.url}/v2/repository/index`, {})).json as { name: string; state?: string; reason?: string }[];
  return idx.find((m) => m.name === model) ?? {};
}

describe('warden.isolation=process', () => {
  it('rejects an unknown isolation value at load', async () => {
    expect(await state('bad_isolation')).toMatchObject({
      state: 'UNAVAILABLE',
      reason: "model 'bad_isolation': warden.isolation must be 'process' or 'none', got 'container'",
    });
  });

  it('serves through the backend-host process', async () => {
    const r = await infer('isolated', [1, 2, 3]);
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual([1, 2, 3]);
  });

  for (const [value, signal] of [
    [-11, 'SIGSEGV'],
    [-6, 'SIGABRT'],
  ] as const) {
    it(`${signal} in the backend: the request fails naming the signal, the server and other models go on, the model is READY again`, async () => {
      const r = await infer('isolated', [value]);
      expect(r.status).toBe(500);
      expect(r.json.error).toMatch(new RegExp(`backend host process of model 'isolated' \\(pid \\d+\\) was killed by signal ${signal}`));
      expect((await fetch(`${native.url}/v2/health/live`)).status).toBe(200);
      const other = await postJson(`${native.url}/v2/models/identity_native/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [5] }] });
      expect(other.status).toBe(200);
      await expect.poll(() => ready('isolated'), { timeout: 10_000, interval: 50 }).toBe(true);
      const again = await infer('isolated', [4]);
      expect(again.status, again.text).toBe(200);
      expect(again.json.outputs[0].data).toEqual([4]);
    });
  }

  it('while restarting the model is UNAVAILABLE with the crash as the reason', async () => {
    const r = await infer('isolated', [-11]);
    expect(r.status).toBe(500);
    // The new process takes far longer to boot than this look-up (Node, the addon, the backend).
    expect(await state('isolated')).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringMatching(/was killed by signal SIGSEGV; restarting/) });
    expect(await ready('isolated')).toBe(false);
    expect((await infer('isolated', [1])).status).toBe(503);
    await expect.poll(() => ready('isolated'), { timeout: 10_000, interval: 50 }).toBe(true);
    expect((await state('isolated')).state).toBe('READY');
  });

  it('an Execute stuck past warden.execute_timeout_ms: the request fails, the process is killed and restarted', async () => {
    const r = await infer('isolated', [-99]);
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/did not return within 1500 ms .*its backend host process was killed and is restarted/);
    await expect.poll(() => ready('isolated'), { timeout: 10_000, interval: 50 }).toBe(true);
    expect((await infer('isolated', [9])).json.outputs[0].data).toEqual([9]);
  });

  it('unloads (the process ends) and loads again', async () => {
    expect((await postJson(`${native.url}/v2/repository/models/isolated/unload`, {})).status).toBe(200);
    await expect.poll(async () => (await state('isolated')).state).toBe('UNAVAILABLE');
    expect((await postJson(`${native.url}/v2/repository/models/isolated/load`, {})).status).toBe(200);
    expect((await infer('isolated', [8])).json.outputs[0].data).toEqual([8]);
  });
});
