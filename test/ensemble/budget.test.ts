/**
 * Ensembles are charged to their caller (DESIGN "Multi-tenancy"; ensemble/budget.ts): a tenant's
 * ensemble that fans out to many inferences is refused at the tenant's `max_ensemble_inferences`,
 * nested ensembles at `max_ensemble_depth`, and every step counts against the caller's
 * `max_inflight` — one request no longer turns into an unbounded number of inferences.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { fetchAs, tempRepo, type TempRepo } from '../helpers/repo.js';
import { startTenantServer, type TenantServer } from '../helpers/servers.js';
import { opsConfig, OpsResolver } from './ops-backend.js';

const TOKENS = {
  fan: 'fan-token-0123456789abcdefghijklmn',
  deep: 'deep-token-0123456789abcdefghijklm',
  tight: 'tight-token-0123456789abcdefghijkl',
  ok: 'ok-token-0123456789abcdefghijklmno',
  rate: 'rate-token-0123456789abcdefghijklm',
};
type Who = keyof typeof TOKENS;

let repo: TempRepo;
let tenancy: TenantServer;
let server: RunningServer;

beforeAll(async () => {
  repo = tempRepo();
  repo.addModel('inc', `name: "inc"\n${opsConfig('inc')}`);
  const entry = (id: Who, quotas: object) => ({ id, token: TOKENS[id], shared_models: ['inc'], quotas });
  const tenants = [
    entry('fan', { max_ensemble_inferences: 8 }),
    entry('deep', { max_ensemble_depth: 1 }),
    entry('tight', { max_inflight: 1 }),
    entry('ok', {}),
    entry('rate', { requests_per_second: 0.01, burst: 12 }),
  ];
  ({ server } = tenancy = await startTenantServer(repo, tenants, { loadModels: ['*'], separateUploads: true, backendResolvers: [new OpsResolver()] }));
});
afterAll(async () => {
  await tenancy?.stop();
  repo?.cleanup();
});

const call = (who: Who, path: string, body: unknown) => fetchAs(TOKENS[who], 'POST', `${server.httpUrl}${path}`, body);

/** An ensemble whose `n` steps all read X and each write its own output: n inferences per request. */
function fanOut(n: number, model = 'inc'): string {
  return JSON.stringify({
    platform: 'ensemble',
    max_batch_size: 0,
    input: [{ name: 'X', data_type: 'TYPE_INT32', dims: [-1] }],
    output: Array.from({ length: n }, (_, i) => ({ name: `Y${i}`, data_type: 'TYPE_INT32', dims: [-1] })),
    ensemble_scheduling: {
      step: Array.from({ length: n }, (_, i) => ({ model_name: model, model_version: -1, input_map: { IN: 'X' }, output_map: { OUT: `Y${i}` } })),
    },
  });
}
/** X -> model -> Y, one step (`model` may be an ensemble with input X and output Y0). */
function chain(model: string, input: string, output: string): string {
  return JSON.stringify({
    platform: 'ensemble',
    max_batch_size: 0,
    input: [{ name: 'X', data_type: 'TYPE_INT32', dims: [-1] }],
    output: [{ name: 'Y0', data_type: 'TYPE_INT32', dims: [-1] }],
    ensemble_scheduling: { step: [{ model_name: model, model_version: -1, input_map: { [input]: 'X' }, output_map: { [output]: 'Y0' } }] },
  });
}
const upload = (who: Who, name: string, config: string) =>
  call(who, `/v2/repository/models/${name}/load`, { parameters: { config, 'file:1/README': Buffer.from('ensemble').toString('base64') } });
const infer = (who: Who, model: string) => call(who, `/v2/models/${model}/infer`, { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], data: [1] }] });

describe('ensemble requests are budgeted per caller', () => {
  it("a tenant's ensemble that fans out past max_ensemble_inferences is refused with 403 naming the cap; within it, it runs", async () => {
    expect((await upload('fan', 'wide', fanOut(12))).status).toBe(200);
    expect((await upload('fan', 'narrow', fanOut(8))).status).toBe(200);
    const refused = await infer('fan', 'wide');
    expect(refused.status).toBe(403);
    // Refused before any step runs: its least cost (12 composing inferences) is known at load.
    expect(refused.json.error).toMatch(/at least 12 composing inferences per request, over the cap of 8 \(max_ensemble_inferences\)/);
    const ok = await infer('fan', 'narrow');
    expect(ok.status).toBe(200);
    expect(ok.json.outputs).toHaveLength(8);
    // The same ensemble for a tenant with the default quota runs
    expect((await upload('ok', 'wide', fanOut(12))).status).toBe(200);
    expect((await infer('ok', 'wide')).status).toBe(200);
  });

  it('nested ensembles count against max_ensemble_depth (and share the request budget)', async () => {
    expect((await upload('deep', 'inner', chain('inc', 'IN', 'OUT'))).status).toBe(200);
    expect((await upload('deep', 'outer', chain('inner', 'X', 'Y0'))).status).toBe(200);
    expect((await infer('deep', 'inner')).status).toBe(200);
    const refused = await infer('deep', 'outer');
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatch(/nested 2 deep, over the cap of 1 \(max_ensemble_depth\)/);
    // depth 2 is fine for a tenant with the default quota
    expect((await upload('ok', 'inner', chain('inc', 'IN', 'OUT'))).status).toBe(200);
    expect((await upload('ok', 'outer', chain('inner', 'X', 'Y0'))).status).toBe(200);
    const nested = await infer('ok', 'outer');
    expect(nested.status).toBe(200);
    expect(nested.json.outputs[0].data).toEqual([2]);
  });

  it("an ensemble request is charged its composing inferences on the caller's request rate", async () => {
    // burst 12, refilled once in 100 min: the upload (1) and one request (1 + 8) fit, the next does not
    expect((await upload('rate', 'eight', fanOut(8))).status).toBe(200);
    expect((await infer('rate', 'eight')).status).toBe(200);
    const limited = await infer('rate', 'eight');
    expect(limited.status).toBe(429);
    expect(limited.json.error).toMatch(/tenant 'rate' exceeded its request rate/);
  });

  it("each step is charged to the caller's in-flight quota", async () => {
    expect((await upload('tight', 'one', chain('inc', 'IN', 'OUT'))).status).toBe(200);
    // max_inflight 1: the ensemble request holds it, so its step is over the caller's quota
    const r = await infer('tight', 'one');
    expect(r.status).toBe(429);
    expect(r.json.error).toMatch(/tenant 'tight' has 1 inference requests in flight, its quota \(max_inflight\)/);
    // the plain model is fine
    const plain = await call('tight', '/v2/models/inc/infer', { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }] });
    expect(plain.status).toBe(200);
  });
});
