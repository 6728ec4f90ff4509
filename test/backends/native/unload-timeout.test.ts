// An in-process unload ends within --exit-timeout-secs even when the backend never releases its
// requests (Triton's model lifecycle bounds an unload by the exit timeout as a whole): the
// requests get UNAVAILABLE when the drain bound passes, and the instance is finalized then,
// without a second, fixed wait for the releases that never come.
import { describe, expect, it } from 'vitest';
import { postJson } from '../../helpers/repo.js';
import { faultsModel, nativeServerPerFile } from './helpers.js';

const native = nativeServerPerFile(
  (repo) => {
    faultsModel(repo, 'holds', { mode: 'hold' });
  },
  { server: { exitTimeoutSecs: 2 } },
);

async function state(model: string): Promise<string | undefined> {
  const idx = (await postJson(`${native.url}/v2/repository/index`, {})).json as { name: string; state?: string }[];
  return idx.find((m) => m.name === model)?.state;
}

describe('unload of a model whose backend keeps its requests', () => {
  it('ends within the exit timeout (2 s here, not 2 s plus a fixed 30 s), the held request gets UNAVAILABLE', async () => {
    const pending = postJson(`${native.url}/v2/models/holds/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [5] }] });
    await expect.poll(async () => (await (await fetch(`${native.url}/v2/models/holds/stats`)).json()).model_stats[0].pending_count).toBe(1);
    expect((await postJson(`${native.url}/v2/repository/models/holds/unload`, {})).status).toBe(200);
    expect(await state('holds')).toBe('UNLOADING');
    const r = await pending;
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/did not finish within the exit timeout/);
    // Generous: the unload is over well before the old fixed 30 s wait for releases would end.
    await expect.poll(() => state('holds'), { timeout: 12_000, interval: 100 }).toBe('UNAVAILABLE');
  }, 30_000);
});
