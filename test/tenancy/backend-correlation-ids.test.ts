/**
 * The correlation id a backend sees is scoped by tenant (DESIGN "Multi-tenancy": tenant identity
 * in every shared key), end to end over HTTP and gRPC. An operator sequence model shared with
 * tenants A and B whose backend keeps its own state by the correlation id it is given (the
 * request's id, or its CORRID control input of type STRING, UINT64 or INT32): A's sequence 4242
 * and B's 4242 must not mix, for integer and string ids. A tenant's sequence reaches the backend
 * under an id of its own (a server-assigned integer with the top bit of the CORRID width set, or
 * `@<tenant>/<id>`), stable for the sequence; the operator's requests keep their raw id, and an
 * operator id of the reserved forms is refused.
 */
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { JsBackendResolver, correlationIdsSeen, sequenceConfig } from '../helpers/js-backend.js';
import { tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';
import { sequenceStep, type SequenceStep, type SequenceStepArgs } from '../helpers/sequence-step.js';

const TOKENS = testTokens('a', 'b', 'ops');
type Who = keyof typeof TOKENS;

/** An operator sequence model whose backend sums INPUT0 per correlation id (`key_by`: request | control). */
const corridConfig = (name: string, keyBy: 'request' | 'control', corridType?: string) =>
  sequenceConfig(
    name,
    `
  direct { }
  max_sequence_idle_microseconds: 60000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }
    ${corridType ? `, { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: ${corridType} } ] }` : ''}
  ]`,
    { mode: 'corrid_sum', key_by: keyBy },
  );

/** model → [how its backend keys state, the client ids it takes]. */
const MODELS: Record<string, { keyBy: 'request' | 'control'; corrid?: string; ids: (number | string)[] }> = {
  by_request: { keyBy: 'request', ids: [4242, 'order-4242'] },
  by_corrid_string: { keyBy: 'control', corrid: 'TYPE_STRING', ids: [4242, 'order-4242'] },
  by_corrid_u64: { keyBy: 'control', corrid: 'TYPE_UINT64', ids: [4242, '4242'] },
  by_corrid_i32: { keyBy: 'control', corrid: 'TYPE_INT32', ids: [4242] },
};

const suite = tenantServerPerSuite(async () => {
  await ensureBuilt();
  const repo = tempRepo([]);
  for (const [name, m] of Object.entries(MODELS)) {
    repo.addModel(name, corridConfig(name, m.keyBy, m.corrid));
  }
  const shared = Object.keys(MODELS);
  const tenants = [
    { id: 'a', token: TOKENS.a, shared_models: shared },
    { id: 'b', token: TOKENS.b, shared_models: shared },
    { id: 'ops', role: 'admin' as const, token: TOKENS.ops },
  ];
  return { repo, tenants, opts: { loadModels: ['*'], grpcPort: 0, backendResolvers: [new JsBackendResolver()] } };
});

/** One sequence step over `proto` as `who`: the running sum, or the error text (with the HTTP status / gRPC code). */
const step = (proto: 'http' | 'grpc', who: Who, ...args: SequenceStepArgs): Promise<SequenceStep> =>
  sequenceStep({ httpUrl: suite.server.httpUrl, client: suite.client }, proto, TOKENS[who], ...args);

/** The ids the backend of `model` was given for `tenant`'s requests since `from` (index into correlationIdsSeen), in the backend's key form. */
function seen(model: string, tenant: string, from: number, keyBy: 'request' | 'control'): string[] {
  return (
    correlationIdsSeen
      .slice(from)
      // Fillers padding a direct batch's empty slots carry no id.
      .filter((s) => s.model === model && s.tenant === tenant && s.correlationId !== 0 && s.correlationId !== '')
      .map((s) => (keyBy === 'control' ? String(s.corrid) : `${typeof s.correlationId === 'string' ? 's' : 'n'}:${String(s.correlationId)}`))
  );
}

describe('a backend that keys state by correlation id, on an operator model shared with A and B', () => {
  const cases: ['http' | 'grpc', string, number | string][] = [];
  for (const proto of ['http', 'grpc'] as const) for (const [model, m] of Object.entries(MODELS)) for (const id of m.ids) cases.push([proto, model, id]);

  it.each(cases)("%s %s id %s: A's and B's sequence never mix in the backend; the operator's id reaches it raw", async (proto, model, id) => {
    const { keyBy, corrid } = MODELS[model]!;
    const from = correlationIdsSeen.length;
    // A and B both start "4242"; each continues its own sum.
    expect(await step(proto, 'a', model, id, 10, { start: true })).toEqual({ value: 10 });
    expect(await step(proto, 'b', model, id, 100, { start: true })).toEqual({ value: 100 });
    expect(await step(proto, 'a', model, id, 5)).toEqual({ value: 15 });
    expect(await step(proto, 'b', model, id, 1)).toEqual({ value: 101 });
    // The operator's own sequence of the same id is a third one.
    expect(await step(proto, 'ops', model, id, 1000, { start: true })).toEqual({ value: 1000 });
    expect(await step(proto, 'a', model, id, 1, { end: true })).toEqual({ value: 16 });
    expect(await step(proto, 'b', model, id, 2, { end: true })).toEqual({ value: 103 });
    expect(await step(proto, 'ops', model, id, 1, { end: true })).toEqual({ value: 1001 });

    const a = seen(model, 'a', from, keyBy);
    const b = seen(model, 'b', from, keyBy);
    const ops = seen(model, '', from, keyBy);
    expect(a).toHaveLength(3);
    expect(b).toHaveLength(3);
    // One id per sequence, for its whole life, and different per tenant.
    expect(new Set(a).size).toBe(1);
    expect(new Set(b).size).toBe(1);
    expect(a[0]).not.toBe(b[0]);
    // The operator's requests carry the client's id unchanged (Triton's behaviour).
    const raw = keyBy === 'control' ? String(id) : `${typeof id === 'string' ? 's' : 'n'}:${id}`;
    expect(ops).toEqual([raw, raw]);
    expect(a[0]).not.toBe(raw);
    // The form of a tenant's id: integers (and decimal strings for an integer CORRID) from the
    // reserved half of the CORRID width; other strings `@<tenant>/<id>`.
    const integerCorrid = corrid === 'TYPE_UINT64' || corrid === 'TYPE_INT32';
    if (typeof id === 'string' && !integerCorrid) {
      expect(a[0]).toBe(keyBy === 'control' ? `@a/${id}` : `s:@a/${id}`);
      expect(b[0]).toBe(keyBy === 'control' ? `@b/${id}` : `s:@b/${id}`);
    } else if (corrid === 'TYPE_INT32') {
      // Bit 31 set: negative as an INT32.
      expect(Number(a[0])).toBeLessThan(0);
      expect(Number(b[0])).toBeLessThan(0);
    } else {
      const v = BigInt(a[0]!.replace(/^[ns]:/, ''));
      expect(v >= 2n ** 63n && v < 2n ** 64n).toBe(true);
    }
  });
});

describe("the operator's ids of the reserved forms are refused on an operator model", () => {
  it.each(['http', 'grpc'] as const)('%s: an integer with the top bit set, and a string starting with @', async (proto) => {
    const code = proto === 'http' ? 400 : status.INVALID_ARGUMENT;
    const big = 2n ** 63n + 7n;
    const r1 = await step(proto, 'ops', 'by_request', big, 1, { start: true });
    expect(r1).toEqual({ code, error: expect.stringMatching(/^sequence ID 9223372036854775815 for model 'by_request' is reserved/) });
    const r2 = await step(proto, 'ops', 'by_corrid_i32', 2 ** 31 + 7, 1, { start: true });
    expect(r2).toEqual({ code, error: expect.stringMatching(/^sequence ID 2147483655 for model 'by_corrid_i32' is reserved/) });
    const r3 = await step(proto, 'ops', 'by_corrid_string', '@a/4242', 1, { start: true });
    expect(r3).toEqual({ code, error: expect.stringMatching(/^sequence ID '@a\/4242' for model 'by_corrid_string' is reserved/) });
    // Below the reserved half, the operator's ids pass.
    expect(await step(proto, 'ops', 'by_corrid_i32', 2 ** 31 - 1, 1, { start: true, end: true })).toEqual({ value: 1 });
    // A tenant picks any id: its sequence gets an id of its own.
    expect(await step(proto, 'a', 'by_request', big, 3, { start: true, end: true })).toEqual({ value: 3 });
    expect(await step(proto, 'a', 'by_corrid_string', '@b/4242', 4, { start: true, end: true })).toEqual({ value: 4 });
  });
});
