/**
 * Attack: a tenant's own model in its ensemble answers response parameters `sequence_id` /
 * `sequence_start` / `sequence_end`, which set the correlation ID of the steps downstream (Triton's
 * ensemble scheduler; ensemble/sequence-override.ts). Tenant A makes its model emit the very ID
 * under which tenant B's sequence reaches a shared operator sequence model's backend (a
 * server-assigned integer, or `@b/<id>`), to continue, reset or end B's sequence from inside its
 * ensemble. The overriding ID must go through the same tenant scoping as a client's ID (DESIGN
 * "Multi-tenancy": tenant identity in every shared key; scheduler/sequence-ids.ts): to A it names
 * A's own sequence, which the backend sees under an ID of A's own; B's state never changes. The
 * operator (an admin) running the same override gets the reserved-ID refusal an operator's own
 * request of that ID gets.
 *
 * A's model is a sandboxed backend (test/fixtures/wasm/sequence_params.c) that answers request
 * parameter `response_<name>` as response parameter `<name>`: what it emits is whatever A asks.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { JsBackendResolver, correlationIdsSeen } from '../helpers/js-backend.js';
import { fetchAs, PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';

const TOKENS = testTokens('a', 'b', 'ops');
type Who = keyof typeof TOKENS;

/**
 * The operator's sequence models, shared with A and B: a running sum of INPUT0 per correlation ID
 * the backend is given; SEQ is read by nobody (it carries A's model's output into the step).
 * `sum32` has a UINT32 CORRID control, so tenants' sequences reach its backend under integers from
 * 2^31 to 2^32 − 1 — IDs a sandboxed model can emit (it carries INT parameters up to 2^53); `sum`
 * (no CORRID control) under 64-bit integers and `@<tenant>/<id>` strings.
 */
const SUM = (name: string, corrid = '') => `
name: "${name}"
backend: "jstest"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "SEQ" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
sequence_batching {
  direct { }
  max_sequence_idle_microseconds: 60000000
  ${corrid ? `control_input [ { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: ${corrid} } ] } ]` : ''}
}
instance_group [ { kind: KIND_CPU, count: 8 } ]
parameters { key: "mode" value: { string_value: "corrid_sum" } }
`;

/** A's sandboxed model emitting response parameters (FP32 identity). */
const EMIT = JSON.stringify({
  backend: 'wasm',
  input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
});
/** X (INT32) -> <sum>.INPUT0; F (FP32) -> emit -> S -> <sum>.SEQ; <sum> -> Y: the sum step is downstream of A's model. */
const PIPE = (sum: string) =>
  JSON.stringify({
    platform: 'ensemble',
    max_batch_size: 0,
    input: [
      { name: 'X', data_type: 'TYPE_INT32', dims: [-1] },
      { name: 'F', data_type: 'TYPE_FP32', dims: [-1] },
    ],
    output: [{ name: 'Y', data_type: 'TYPE_INT32', dims: [-1] }],
    ensemble_scheduling: {
      step: [
        { model_name: 'emit', model_version: -1, input_map: { INPUT0: 'F' }, output_map: { OUTPUT0: 'S' } },
        { model_name: sum, model_version: -1, input_map: { INPUT0: 'X', SEQ: 'S' }, output_map: { OUTPUT0: 'Y' } },
      ],
    },
  });

const suite = tenantServerPerSuite(async () => {
  await ensureBuilt();
  const repo = tempRepo([]);
  for (const [name, corrid] of [
    ['sum', ''],
    ['sum32', 'TYPE_UINT32'],
  ]) {
    repo.addModel(name, SUM(name!, corrid));
  }
  const tenants = [
    { id: 'a', token: TOKENS.a, shared_models: ['sum', 'sum32'] },
    { id: 'b', token: TOKENS.b, shared_models: ['sum', 'sum32'] },
    { id: 'ops', role: 'admin' as const, token: TOKENS.ops },
  ];
  return { repo, tenants, opts: { loadModels: ['*'], separateUploads: true, backendResolvers: [new JsBackendResolver()] } };
}, 120_000);
// A's models: the emitter and the two ensembles over the shared sums.
beforeAll(async () => {
  const wasm = readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'sequence_params.wasm')).toString('base64');
  for (const [name, body] of [
    ['emit', { parameters: { config: EMIT, 'file:1/model.wasm': wasm } }],
    ['pipe', { parameters: { config: PIPE('sum'), 'file:1/README': Buffer.from('ensemble').toString('base64') } }],
    ['pipe32', { parameters: { config: PIPE('sum32'), 'file:1/README': Buffer.from('ensemble').toString('base64') } }],
  ] as const) {
    const r = await post('a', `/v2/repository/models/${name}/load`, JSON.stringify(body));
    expect(r.status, r.text).toBe(200);
  }
});

const post = (who: Who, path: string, body: string) => fetchAs(TOKENS[who], 'POST', `${suite.server.httpUrl}${path}`, body);

/** `{...}` as JSON, with a bigint written as a bare integer. */
const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `@@${x}@@` : x)).replace(/"@@(-?\d+)@@"/g, '$1');

/** A request straight to `model`: the running sum, or the error. */
async function direct(who: Who, model: string, id: number | string, x: number, start = false): Promise<number | string> {
  const r = await post(
    who,
    `/v2/models/${model}/infer`,
    json({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1], data: [x] },
        { name: 'SEQ', datatype: 'FP32', shape: [1], data: [0] },
      ],
      parameters: { sequence_id: id, sequence_start: start },
    }),
  );
  return r.status === 200 ? r.json.outputs[0].data[0] : `${r.status} ${r.json?.error}`;
}

/** `who` calls A's ensemble `pipe`; A's model answers the given response parameters. */
async function viaPipe(who: Who, pipe: string, x: number, emitted: Record<string, unknown>): Promise<number | string> {
  const parameters = Object.fromEntries(Object.entries(emitted).map(([k, v]) => [`response_${k}`, v]));
  const path = who === 'a' ? `/v2/models/${pipe}/infer` : `/v2/models/a%2F${pipe}/infer`;
  const r = await post(
    who,
    path,
    json({
      inputs: [
        { name: 'X', datatype: 'INT32', shape: [1], data: [x] },
        { name: 'F', datatype: 'FP32', shape: [1], data: [0] },
      ],
      parameters,
    }),
  );
  return r.status === 200 ? r.json.outputs[0].data[0] : `${r.status} ${r.json?.error}`;
}

/** The IDs `model`'s backend was given for `tenant`'s requests since `from`. */
const backendIds = (model: string, tenant: string, from: number) =>
  correlationIdsSeen
    .slice(from)
    .filter((s) => s.model === model && s.tenant === tenant)
    .map((s) => s.correlationId);

describe("a tenant's model overriding the sequence of a shared model's step", () => {
  it("emitting B's backend ID (an integer) cannot continue, reset or end B's sequence", async () => {
    let from = correlationIdsSeen.length;
    expect(await direct('b', 'sum32', 4242, 100, true)).toBe(100);
    const [bId] = backendIds('sum32', 'b', from);
    expect(typeof bId).toBe('number');
    expect(bId).toBeGreaterThanOrEqual(2 ** 31);

    // Continue B's sequence: to A there is no such sequence.
    expect(await viaPipe('a', 'pipe32', 1, { sequence_id: bId })).toBe(
      `400 in ensemble 'pipe32', inference request for sequence ${bId} to model 'sum32' must specify the START flag on the first request of the sequence`,
    );
    // END it: the same.
    expect(await viaPipe('a', 'pipe32', 1, { sequence_id: bId, sequence_end: true })).toMatch(
      /^400 in ensemble 'pipe32', inference request for sequence \d+ to model 'sum32' must specify the START flag/,
    );
    // START it: A gets a sequence of its own (the backend sees another ID), B's sum is untouched.
    from = correlationIdsSeen.length;
    expect(await viaPipe('a', 'pipe32', 1, { sequence_id: bId, sequence_start: true })).toBe(1);
    expect(await viaPipe('a', 'pipe32', 2, { sequence_id: bId })).toBe(3);
    const aIds = backendIds('sum32', 'a', from);
    expect(aIds).toHaveLength(2);
    expect(aIds[0]).toBe(aIds[1]);
    expect(aIds[0]).not.toBe(bId);
    expect(await direct('b', 'sum32', 4242, 1)).toBe(101);
  });

  it("emitting B's client ID or B's string form (`@b/<id>`) names A's own sequences", async () => {
    let from = correlationIdsSeen.length;
    expect(await direct('b', 'sum', 'order-7', 50, true)).toBe(50);
    expect(await direct('b', 'sum', 77, 70, true)).toBe(70);
    const [bString] = backendIds('sum', 'b', from);
    expect(bString).toBe('@b/order-7');
    for (const id of ['@b/order-7', 'order-7', 77]) {
      expect(await viaPipe('a', 'pipe', 1, { sequence_id: id })).toMatch(
        /^400 in ensemble 'pipe', inference request for sequence .* must specify the START flag/,
      );
      from = correlationIdsSeen.length;
      expect(await viaPipe('a', 'pipe', 5, { sequence_id: id, sequence_start: true, sequence_end: true })).toBe(5);
      const [seen] = backendIds('sum', 'a', from);
      expect(seen === '@b/order-7' || (typeof seen !== 'string' && typeof id === 'number' && BigInt(seen!) === BigInt(id))).toBe(false);
      if (typeof id === 'string') expect(seen).toBe(`@a/${id}`);
    }
    expect(await direct('b', 'sum', 'order-7', 1)).toBe(51);
    expect(await direct('b', 'sum', 77, 1)).toBe(71);
  });

  it("the operator running A's ensemble with a reserved ID gets the operator's reserved-ID refusal", async () => {
    const from = correlationIdsSeen.length;
    expect(await direct('b', 'sum32', 5151, 10, true)).toBe(10);
    const [bId] = backendIds('sum32', 'b', from);
    const r = await viaPipe('ops', 'pipe32', 1, { sequence_id: bId, sequence_start: true });
    expect(r).toMatch(new RegExp(`^400 in ensemble 'pipe32', sequence ID ${bId} for model 'sum32' is reserved: in multi-tenant mode`));
    expect(await direct('b', 'sum32', 5151, 1)).toBe(11);
  });
});
