/**
 * The execute path's binary descriptors (host/src/backends/wasm/wasmtime/descriptor.ts,
 * native/rust/wasmtime-engine/src/descriptor.rs): every request field and every response parameter type
 * crosses the sandbox boundary intact on both engines (the ECHO_META fixture sends the request's
 * metadata back), and malformed descriptors reaching the native side are refused with a message —
 * no crash, no allocation sized by the descriptor, and the instance keeps serving.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SandboxedInstance } from '../../../host/src/backends/wasm/engine.js';
import { decodeResults, DescriptorWriter, encodeRequests } from '../../../host/src/backends/wasm/wasmtime/descriptor.js';
import type { InstancePort, WasmtimeInstance } from '../../../host/src/backends/wasm/wasmtime/instance.js';
import { MSG, type InstanceHandle } from '../../../host/src/backends/wasm/wasmtime/native.js';
import type { EngineName } from '../../../host/src/backends/wasm/index.js';
import * as h from './helpers.js';
import { until } from '../../helpers/wait.js';

const io = { inputs: [['INPUT0', 'FP32', [-1]]] as h.IO[], outputs: [['OUTPUT0', 'FP32', [-1]]] as h.IO[] };
const ws = h.wasmWorkspace('warden-descriptor-');

async function echoInstance(engine: EngineName, name: string): Promise<SandboxedInstance> {
  const dir = join(ws.dir, name);
  mkdirSync(join(dir, '1'), { recursive: true });
  copyFileSync(join(h.FIXTURES, 'build', 'echo_meta.wasm'), join(dir, '1', 'model.wasm'));
  const r = h.newResolver(engine);
  ws.keep(r);
  const m = await h.loadModel(r, h.wasmConfig(name, io.inputs, io.outputs), dir);
  return m.createInstance(h.instanceSpec(name));
}

const v = Float32Array.of(1.5, -2, 3, 4, 5, 6);
const input = () => h.tensor('INPUT0', 'FP32', [6], v);

describe.each(h.ENGINES)('request metadata and response parameters cross the %s engine intact', (engine) => {
  it('every field, unicode strings, all four parameter types, the three correlation id kinds', async () => {
    const inst = await echoInstance(engine, `echo_${engine}`);
    const cases = [
      { correlationId: 0, tag: 0n },
      { correlationId: 2n ** 64n - 2n, tag: 1n, int: -2n }, // u64 echoed back through an s64 parameter
      { correlationId: 'séquence-🚀', tag: 2n, str: 'séquence-🚀' },
    ];
    for (const c of cases) {
      const req = h.request(`echo_${engine}`, [input()], ['OUTPUT0'], {
        id: 'requête-✓',
        correlationId: c.correlationId,
        flags: 3,
        priority: 7,
        timeoutUs: 123456,
        batchSize: 1,
        parameters: { s: 'ünï', i: -42, big: Number.MAX_SAFE_INTEGER, neg: -Number.MAX_SAFE_INTEGER, b: true, d: 0.25, nan: Number.NaN },
      });
      const rec = await h.infer(inst, req);
      expect(rec.errors).toEqual([]);
      const res = rec.responses[0]!;
      expect([...h.f32(res.outputs[0]!)]).toEqual([...v]);
      expect(res.outputs[0]!.shape).toEqual([6]);
      const p = res.parameters!;
      expect(p.s).toBe('ünï');
      expect(p.i).toBe(-42);
      expect(p.big).toBe(Number.MAX_SAFE_INTEGER);
      expect(p.neg).toBe(-Number.MAX_SAFE_INTEGER);
      expect(p.b).toBe(true);
      expect(p.d).toBe(0.25);
      expect(Number.isNaN(p.nan)).toBe(true);
      expect(p.echo_id).toBe('requête-✓');
      expect(BigInt(p.echo_corr_tag as number)).toBe(c.tag);
      if (c.int !== undefined) expect(BigInt(p.echo_corr_int as number | bigint)).toBe(c.int);
      if (c.str !== undefined) expect(p.echo_corr_string).toBe(c.str);
      expect(p.echo_flags).toBe(3);
      expect(p.echo_priority).toBe(7);
      expect(p.echo_timeout_us).toBe(123456);
      expect(p.echo_batch_size).toBe(1);
      expect(p.echo_requested).toBe('OUTPUT0');
      expect(p.echo_dims).toBe('6');
    }
    await inst.finalize();
  });
});

describe('wasmtime: malformed descriptors are refused by the native side', () => {
  it('truncated, oversized counts, bad UTF-8, unknown tags, missing buffers, trailing bytes: a clear trap message each, and the instance still serves', async () => {
    const inst = await echoInstance('wasmtime', 'echo_hostile');
    // a good descriptor to mutate
    const good = Buffer.from(
      encodeRequests(
        new DescriptorWriter(),
        [
          {
            handle: 1,
            id: 'x',
            correlationId: 0,
            flags: 0,
            priority: 0,
            timeoutUs: 0,
            batchSize: 1,
            inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], data: new Uint8Array(4) }],
            requestedOutputs: ['OUTPUT0'],
            parameters: {},
          },
        ],
        [],
      ),
    );
    const u32 = (n: number) => Buffer.from(Uint32Array.of(n).buffer);
    const bad: [string, Buffer, number][] = [
      ['empty', Buffer.alloc(0), 0],
      ['truncated', good.subarray(0, good.length - 3), 1],
      ['a request count of 2^32 - 1', Buffer.concat([u32(0xffffffff), good.subarray(4)]), 1],
      ['an id length of 2^32 - 1', Buffer.concat([good.subarray(0, 8), u32(0xffffffff), good.subarray(12)]), 1],
      ['an id that is not UTF-8', Buffer.concat([good.subarray(0, 12), Buffer.from([0xff]), good.subarray(13)]), 1],
      ['an unknown correlation tag', Buffer.concat([good.subarray(0, 13), Buffer.from([9]), good.subarray(14)]), 1],
      ['a buffer index with no buffer', good, 0],
      ['trailing bytes', Buffer.concat([good, Buffer.from([0])]), 1],
    ];
    // The instance's private fields, reached for the test (WasmtimeInstance & {...} would be never).
    const i = inst as unknown as Pick<WasmtimeInstance, 'onMessage'> & { handle: InstanceHandle; port: InstancePort; threadId: number };
    const traps: string[] = [];
    const onMessage = i.onMessage.bind(i);
    i.onMessage = (tid, kind, json, bufs) => {
      if (kind === MSG.TRAP) traps.push(String(JSON.parse(json).message));
      onMessage(tid, kind, json, bufs);
    };
    for (const [what, desc, nbufs] of bad) {
      const before = traps.length;
      expect(
        i.port.execute(
          i.handle,
          desc,
          Array.from({ length: nbufs }, () => new Uint8Array(4)),
        ),
        what,
      ).toBe(true);
      await until(() => traps.length !== before, { within: 1000, every: 5 });
      expect(traps[before], what).toMatch(/^host sent a malformed request: /);
    }
    expect(traps.join('\n')).toMatch(/count 4294967295 exceeds its size/);
    expect(traps.join('\n')).toMatch(/not UTF-8/);
    expect(traps.join('\n')).toMatch(/buffer 0 missing/);
    expect(traps.join('\n')).toMatch(/trailing bytes/);
    const rec = await h.infer(inst, h.request('echo_hostile', [input()], ['OUTPUT0']));
    expect(rec.errors).toEqual([]);
    expect([...h.f32(rec.responses[0]!.outputs[0]!)]).toEqual([...v]);
    await inst.finalize();
  });

  it('a truncated results descriptor fails to decode with a RangeError (the execute then fails, the host survives)', () => {
    const desc = new Uint8Array(8 + 8 + 1 + 8 + 4 + 1 + 4); // one ok result claiming outputs it does not hold
    const dv = new DataView(desc.buffer);
    dv.setUint32(25, 1, true);
    dv.setUint32(30, 5, true);
    expect(() => decodeResults(desc, [])).toThrow(RangeError);
    expect(() => decodeResults(new Uint8Array(3), [])).toThrow(RangeError);
  });
});
