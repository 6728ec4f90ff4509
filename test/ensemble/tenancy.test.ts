/**
 * Tenants' ensembles (multi-tenant mode over HTTP): an ensemble uploaded by a tenant lives in its
 * namespace and its steps run with the tenant's principal — they reach the tenant's own models
 * and the operator models shared with it, never another tenant's model nor an operator model
 * that is not shared (those are "not available", as for a model that does not exist). A sequence
 * step sees the caller's correlation ID as the caller's: two tenants' sequence 5 through their
 * ensembles over one shared sequence model are two sequences (DESIGN "Multi-tenancy").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fetchAs, PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { opsConfig, OpsResolver } from './ops-backend.js';

const TOKENS = testTokens('acme', 'bob');
const FIXTURE = (name: string) => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', `${name}.wasm`)).toString('base64');

const suite = tenantServerPerSuite(async () => {
  await ensureBuilt();
  const repo = tempRepo();
  for (const [name, op] of [
    ['inc', 'inc'],
    ['double', 'double'],
  ]) {
    repo.addModel(name, `name: "${name}"\n${opsConfig(op!)}`);
  }
  // A sequence model (ops `acc`: a running sum per correlation ID, restarted by START), shared with
  // both tenants; two slots (two instances), so both tenants' sequences hold one at once.
  repo.addModel(
    'acc',
    `name: "acc"\nbackend: "ops"\nmax_batch_size: 0\nsequence_batching { max_sequence_idle_microseconds: 60000000 direct { } control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] } ]\ninstance_group [ { kind: KIND_CPU, count: 2 } ]\nparameters { key: "op" value: { string_value: "acc" } }\n`,
  );
  const tenants = [
    // max_inflight 2: the ensemble request and its one step each count (steps are charged to the caller).
    { id: 'acme', token: TOKENS.acme, shared_models: ['inc', 'acc'], quotas: { max_inflight: 2 } },
    { id: 'bob', token: TOKENS.bob, shared_models: ['acc'] },
  ];
  return { repo, tenants, opts: { loadModels: ['*'], separateUploads: true, backendResolvers: [new OpsResolver()] } };
});

const call = (who: keyof typeof TOKENS, path: string, body: unknown) => fetchAs(TOKENS[who], 'POST', `${suite.server.httpUrl}${path}`, body);

const identity = JSON.stringify({
  backend: 'wasm',
  input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
});
const uploadIdentity = (who: keyof typeof TOKENS, name: string) =>
  call(who, `/v2/repository/models/${name}/load`, { parameters: { config: identity, 'file:1/model.wasm': FIXTURE('identity') } });

/** An ensemble of one step: X -> model -> Y. */
function ensemble(model: string, datatype: string, input = 'IN', output = 'OUT'): string {
  return JSON.stringify({
    platform: 'ensemble',
    max_batch_size: 0,
    input: [{ name: 'X', data_type: datatype, dims: [-1] }],
    output: [{ name: 'Y', data_type: datatype, dims: [-1] }],
    ensemble_scheduling: { step: [{ model_name: model, model_version: -1, input_map: { [input]: 'X' }, output_map: { [output]: 'Y' } }] },
  });
}
const uploadEnsemble = (who: keyof typeof TOKENS, name: string, config: string) =>
  call(who, `/v2/repository/models/${name}/load`, { parameters: { config, 'file:1/README': Buffer.from('ensemble').toString('base64') } });

describe("a tenant's ensembles", () => {
  it('use the tenant’s own models and the operator models shared with it', async () => {
    expect((await uploadIdentity('acme', 'mine')).status).toBe(200);
    const own = await uploadEnsemble('acme', 'own_pipe', ensemble('mine', 'TYPE_FP32', 'INPUT0', 'OUTPUT0'));
    expect(own.status).toBe(200);
    const r1 = await call('acme', '/v2/models/own_pipe/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [2], data: [1.5, 2.5] }] });
    expect(r1.status).toBe(200);
    expect(r1.json.outputs[0].data).toEqual([1.5, 2.5]);

    const shared = await uploadEnsemble('acme', 'shared_pipe', ensemble('inc', 'TYPE_INT32'));
    expect(shared.status).toBe(200);
    const r2 = await call('acme', '/v2/models/shared_pipe/infer', { inputs: [{ name: 'X', datatype: 'INT32', shape: [2], data: [1, 2] }] });
    expect(r2.status).toBe(200);
    expect(r2.json.outputs[0].data).toEqual([2, 3]);
  });

  it("cannot reach another tenant's model, nor an operator model not shared with it", async () => {
    expect((await uploadIdentity('bob', 'secret')).status).toBe(200);
    const sneaky = await uploadEnsemble('acme', 'sneaky', ensemble('secret', 'TYPE_FP32', 'INPUT0', 'OUTPUT0'));
    expect(sneaky.status).toBe(400);
    expect(sneaky.json.error).toBe('ensemble sneaky contains models that are not available or ambiguous: secret');
    const unshared = await uploadEnsemble('acme', 'unshared', ensemble('double', 'TYPE_INT32'));
    expect(unshared.status).toBe(400);
    expect(unshared.json.error).toBe('ensemble unshared contains models that are not available or ambiguous: double');
    // Nothing of bob's is visible to acme, and bob's model is untouched.
    const r = await call('bob', '/v2/models/secret/infer', { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: [7] }] });
    expect(r.json.outputs[0].data).toEqual([7]);
  });

  it('the same sequence id from two tenants through their ensembles over a shared sequence model: two sequences', async () => {
    for (const who of ['acme', 'bob'] as const) expect((await uploadEnsemble(who, 'seq_pipe', ensemble('acc', 'TYPE_INT32'))).status).toBe(200);
    const step = async (who: keyof typeof TOKENS, x: number, start: boolean) => {
      const r = await call(who, '/v2/models/seq_pipe/infer', {
        inputs: [{ name: 'X', datatype: 'INT32', shape: [1], data: [x] }],
        parameters: { sequence_id: 5, sequence_start: start },
      });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return r.json.outputs[0].data[0] as number;
    };
    expect(await step('acme', 1, true)).toBe(1);
    expect(await step('bob', 100, true)).toBe(100);
    expect(await step('acme', 1, false)).toBe(2);
    expect(await step('bob', 100, false)).toBe(200);
    // bob cannot continue acme's sequence: without START, only his own sequence 5 exists for him.
    expect(await step('bob', 0, false)).toBe(200);
    expect(await step('acme', 0, false)).toBe(2);
  });

  it("another tenant cannot infer on a tenant's ensemble", async () => {
    const r = await call('bob', '/v2/models/shared_pipe/infer', { inputs: [{ name: 'X', datatype: 'INT32', shape: [1], data: [1] }] });
    expect(r.status).toBe(404);
  });
});
