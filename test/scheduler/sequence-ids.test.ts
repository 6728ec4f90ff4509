/**
 * The correlation id a sequence model's backend sees (DESIGN "Multi-tenancy": tenant identity in
 * every shared key; `scheduler/sequence-ids.ts`): on an operator model in multi-tenant mode a
 * tenant's sequence reaches the backend under an id of its own (server-assigned integer with the
 * top bit of the CORRID width set, or `@<tenant>/<id>`), the operator's id stays raw and its
 * reserved forms are refused; without the option (single-user mode, a tenant's own model) every
 * id reaches the backend as the client sent it.
 */
import { describe, expect, it } from 'vitest';
import { TritonError } from '../../host/src/contract/errors.js';
import type { BackendModelInstance, InferenceRequest, InferenceRequestInit, ResponseSender, Tensor } from '../../host/src/contract/types.js';
import { REQUEST_FLAG_SEQUENCE_END as END, REQUEST_FLAG_SEQUENCE_START as START } from '../../host/src/contract/types.js';
import { TenantSequenceIds } from '../../host/src/scheduler/sequence-ids.js';
import { collector, config, modelVersion, type Outcome } from '../helpers/model-version.js';
import { emptyRequestInit } from '../../host/src/dataplane/request-parameters.js';
import { sequenceConfig } from '../helpers/js-backend.js';

const int32 = (name: string, v: number): Tensor => ({ name, datatype: 'INT32', shape: [1, 1], data: new Uint8Array(Int32Array.of(v).buffer) });

/** Records the correlation id and the CORRID control (decoded) of every request it runs; echoes INPUT0. */
class IdInstance implements BackendModelInstance {
  readonly seen: { tenant: string; corr: number | bigint | string; corrid: bigint | number | string | undefined }[] = [];
  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<void> {
    for (const r of requests) {
      const t = r.inputs.find((x) => x.name === 'CORRID');
      let corrid: bigint | number | string | undefined;
      if (t) {
        const dv = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
        corrid =
          t.datatype === 'UINT64' ? dv.getBigUint64(0, true) : t.datatype === 'INT32' ? dv.getInt32(0, true) : new TextDecoder().decode(t.data.subarray(4));
      }
      if (r.correlationId !== 0) this.seen.push({ tenant: r.tenant, corr: r.correlationId, corrid });
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
    requests.forEach((r, i) => senders[i]!.send({ outputs: [{ ...r.inputs.find((t) => t.name === 'INPUT0')!, name: 'OUTPUT0' }] }, true));
  }
  async finalize(): Promise<void> {}
}

const seqModel = (corrid?: string, extra = '') =>
  config(
    sequenceConfig(
      'model',
      `${extra}\n${corrid ? `control_input [ { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: ${corrid} } ] } ]` : ''}`,
      {},
      'fake',
    ),
  );

function req(tenant: string, corr: number | bigint | string, flags = 0): InferenceRequestInit {
  return { ...emptyRequestInit('model', 1), inputs: [int32('INPUT0', 1)], correlationId: corr, flags, tenant };
}

function submit(mv: ReturnType<typeof modelVersion>['mv'], init: InferenceRequestInit): Promise<Outcome> {
  const c = collector();
  mv.submit(init, c.sender);
  return c.done;
}

function refusal(fn: () => void): TritonError {
  try {
    fn();
  } catch (e) {
    return e as TritonError;
  }
  throw new Error('not refused');
}

describe('TenantSequenceIds', () => {
  it("refuses the operator's ids of the reserved forms, exactly at the bounds", () => {
    const w64 = new TenantSequenceIds('UINT64', 'm');
    for (const ok of [1, 2n ** 63n - 1n, '9223372036854775807', 'order-1', 'a@b', '18446744073709551616']) expect(() => w64.checkOperatorId(ok)).not.toThrow();
    for (const bad of [2n ** 63n, 2n ** 64n - 1n, '9223372036854775808', '@a/1', '@']) {
      const e = refusal(() => w64.checkOperatorId(bad));
      expect(e.code).toBe('INVALID_ARG');
      expect(e.message).toMatch(/^sequence ID .* for model 'm' is reserved: .*2\^63 to 2\^64-1/);
    }
    const w32 = new TenantSequenceIds('INT32', 'm');
    for (const ok of [2 ** 31 - 1, 2 ** 32, 2 ** 32 + 5, '4294967296']) expect(() => w32.checkOperatorId(ok)).not.toThrow();
    for (const bad of [2 ** 31, 2 ** 32 - 1, 2 ** 32 + 2 ** 31, '2147483648'])
      expect(refusal(() => w32.checkOperatorId(bad)).message).toMatch(/2\^31 to 2\^32-1/);
    // Without a CORRID control the width is 64.
    expect(() => new TenantSequenceIds(undefined, 'm').checkOperatorId(2 ** 31)).not.toThrow();
  });

  it('assigns distinct integers of the reserved half, strings `@<tenant>/<id>`, and skips ids still live after wrapping', () => {
    const w64 = new TenantSequenceIds('UINT64', 'm');
    const a = w64.assign('a', 4242);
    const b = w64.assign('b', 4242);
    expect(a).toBe(2n ** 63n);
    expect(b).toBe(2n ** 63n + 1n);
    // A string id for an integer CORRID stays a string: the decimal digits of its integer.
    expect(w64.assign('a', '4242')).toBe((2n ** 63n + 2n).toString());
    // A released id is not handed out again at once.
    w64.release(a);
    expect(w64.assign('c', 1)).toBe(2n ** 63n + 3n);
    const str = new TenantSequenceIds('BYTES', 'm');
    expect(str.assign('acme', 'order-7')).toBe('@acme/order-7');
    expect(str.assign('acme', 7)).toBe(2n ** 63n);
    const w32 = new TenantSequenceIds('UINT32', 'm');
    expect(w32.assign('a', 1)).toBe(2 ** 31); // a plain number: below 2^53
    const live = w32.assign('a', 2); // 2^31 + 1
    // At the end of the range the counter wraps, skipping the ids still in use.
    (w32 as unknown as { next: bigint }).next = 2n ** 31n - 1n;
    expect(w32.assign('a', 3)).toBe(2 ** 32 - 1);
    expect(w32.assign('a', 4)).toBe(2 ** 31 + 2); // 2^31 and 2^31 + 1 are live
    w32.release(live);
  });
});

describe('the sequence batcher hands backends tenant-scoped ids', () => {
  it('on an operator model in multi-tenant mode: own ids per tenant sequence (request and CORRID), raw for the operator', async () => {
    const inst = new IdInstance();
    const { mv } = modelVersion(seqModel('TYPE_UINT64'), [inst], { tenantSequenceIds: true });
    await submit(mv, req('a', 4242, START));
    await submit(mv, req('b', 4242, START));
    await submit(mv, req('', 4242, START));
    await submit(mv, req('a', 4242, END));
    await submit(mv, req('b', 4242, END));
    await submit(mv, req('', 4242, END));
    const by = (t: string) => inst.seen.filter((s) => s.tenant === t);
    expect(by('a').map((s) => [s.corr, s.corrid])).toEqual([
      [2n ** 63n, 2n ** 63n],
      [2n ** 63n, 2n ** 63n],
    ]);
    expect(by('b').map((s) => [s.corr, s.corrid])).toEqual([
      [2n ** 63n + 1n, 2n ** 63n + 1n],
      [2n ** 63n + 1n, 2n ** 63n + 1n],
    ]);
    expect(by('').map((s) => [s.corr, s.corrid])).toEqual([
      [4242, 4242n],
      [4242, 4242n],
    ]);
    // The operator's reserved ids are refused before anything is queued.
    expect(refusal(() => mv.submit(req('', 2n ** 63n, START), collector().sender)).code).toBe('INVALID_ARG');
    // A tenant's error texts name the tenant's own id.
    expect(refusal(() => mv.submit(req('a', 4242), collector().sender)).message).toBe(
      "inference request for sequence 4242 to model 'model' must specify the START flag on the first request of the sequence",
    );
  });

  it("without the option (single-user mode, a tenant's own model) every id reaches the backend raw, reserved forms included", async () => {
    const inst = new IdInstance();
    const { mv } = modelVersion(seqModel('TYPE_STRING'), [inst]);
    await submit(mv, req('a', 4242, START | END));
    await submit(mv, req('a', '@x/1', START | END));
    await submit(mv, req('', 2n ** 63n, START | END));
    expect(inst.seen.map((s) => [s.corr, s.corrid])).toEqual([
      [4242, '4242'],
      ['@x/1', '@x/1'],
      [2n ** 63n, String(2n ** 63n)],
    ]);
  });

  it("an INT32 CORRID: a tenant's id is from 2^31 up (negative as INT32), the request's id the same integer", async () => {
    const inst = new IdInstance();
    const { mv } = modelVersion(seqModel('TYPE_INT32'), [inst], { tenantSequenceIds: true });
    await submit(mv, req('a', 7, START | END));
    expect(inst.seen).toEqual([{ tenant: 'a', corr: 2 ** 31, corrid: -(2 ** 31) }]);
  });

  it("an iterative model numbers a tenant's id-less request with an id of its own, kept across reschedules", async () => {
    const seen: (number | bigint | string)[] = [];
    let left = 3;
    const inst: BackendModelInstance = {
      async execute(requests, senders) {
        for (const r of requests) seen.push(r.correlationId);
        await new Promise<void>((resolve) => setImmediate(resolve));
        const s = senders[0]!;
        if (--left > 0 && s.reschedule) {
          s.reschedule();
          s.send({ outputs: [int32('OUTPUT0', left)] }, false);
        } else s.send({ outputs: [int32('OUTPUT0', left)] }, true);
      },
      async finalize() {},
    };
    const { mv } = modelVersion(seqModel(undefined, 'iterative_sequence: true'), [inst], { tenantSequenceIds: true });
    const c = collector();
    mv.submit(req('a', 0), c.sender);
    expect((await c.done).error).toBeUndefined();
    expect(seen).toEqual([2n ** 63n, 2n ** 63n, 2n ** 63n]);
  });
});
