/**
 * The sample sandboxed backends of model_repository/ at the Backend level: identity for every
 * datatype (BYTES included), add_sub (Triton `simple` semantics), decoupled repeat (streamed
 * responses, DELAY pacing, cancellation), preprocess (C + SIMD, checked against a JS reference),
 * and parallel instances; on every sandbox engine.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataType } from '../../../host/src/contract/datatypes.js';
import type { SandboxedInstance } from '../../../host/src/backends/wasm/engine.js';
import type { WasmBackendResolver } from '../../../host/src/backends/wasm/index.js';
import * as h from './helpers.js';

/** model_repository/repeat_wasm's config (decoupled: IN, DELAY, WAIT in; OUT, IDX out) under the name `name`. */
const repeatConfig = (name: string) =>
  h.wasmConfig(
    name,
    [
      ['IN', 'INT32', [-1]],
      ['DELAY', 'UINT32', [-1]],
      ['WAIT', 'UINT32', [1]],
    ],
    [
      ['OUT', 'INT32', [1]],
      ['IDX', 'UINT32', [1]],
    ],
    { model_transaction_policy: { decoupled: true } },
  );

describe.each(h.ENGINES)('%s engine', (engine) => {
  let resolver: WasmBackendResolver;

  beforeAll(async () => {
    await h.ensureBuilt();
    resolver = h.newResolver(engine);
  });
  afterAll(async () => {
    await resolver.finalizeAll();
  });

  async function start(model: string, config: ReturnType<typeof h.wasmConfig>, k = 0): Promise<SandboxedInstance> {
    const m = await h.loadModel(resolver, config, join(h.REPO, model));
    return m.createInstance(h.instanceSpec(model, k));
  }

  describe('identity_wasm', () => {
    const samples: [DataType, Uint8Array][] = [
      ['BOOL', Uint8Array.of(0, 1, 1)],
      ['UINT8', Uint8Array.of(0, 7, 255)],
      ['UINT16', new Uint8Array(Uint16Array.of(1, 65535, 3).buffer)],
      ['UINT32', new Uint8Array(Uint32Array.of(1, 4294967295, 3).buffer)],
      ['UINT64', new Uint8Array(BigUint64Array.of(1n, 2n ** 64n - 1n, 3n).buffer)],
      ['INT8', new Uint8Array(Int8Array.of(-128, 0, 127).buffer)],
      ['INT16', new Uint8Array(Int16Array.of(-32768, 0, 32767).buffer)],
      ['INT32', new Uint8Array(Int32Array.of(-1, 0, 2147483647).buffer)],
      ['INT64', new Uint8Array(BigInt64Array.of(-(2n ** 63n), 0n, 2n ** 63n - 1n).buffer)],
      ['FP16', Uint8Array.of(0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b)],
      ['FP32', new Uint8Array(Float32Array.of(0.1, -2.5, 3e38).buffer)],
      ['FP64', new Uint8Array(Float64Array.of(0.1, -2.5, 1e308).buffer)],
      ['BF16', Uint8Array.of(0x80, 0x3f, 0x00, 0xc0, 0x7f, 0x7f)],
    ];

    it.each(samples)('passes %s through unchanged', async (dt, data) => {
      const inst = await start('identity_wasm', h.wasmConfig(`identity_${dt}`, [['INPUT0', dt, [-1]]], [['OUTPUT0', dt, [-1]]]));
      const rec = await h.infer(inst, h.request('identity', [{ name: 'INPUT0', datatype: dt, shape: [3], data }], ['OUTPUT0']));
      expect(rec.errors).toEqual([]);
      const out = rec.responses[0]!.outputs[0]!;
      expect(out.name).toBe('OUTPUT0');
      expect(out.datatype).toBe(dt);
      expect(out.shape).toEqual([3]);
      expect(Buffer.from(out.data).equals(Buffer.from(data))).toBe(true);
      await inst.finalize();
    });

    it('passes BYTES (length-prefixed, incl. empty and binary elements) and 2-D shapes through', async () => {
      const elems = [Buffer.from('hello'), Buffer.alloc(0), Buffer.from([0, 255, 10, 13]), Buffer.from('ünïcødé')];
      const data = Buffer.concat(elems.flatMap((e) => [Buffer.from(Uint32Array.of(e.length).buffer), e]));
      const inst = await start('identity_wasm', h.wasmConfig('identity_bytes', [['INPUT0', 'BYTES', [-1, -1]]], [['OUTPUT0', 'BYTES', [-1, -1]]]));
      const rec = await h.infer(inst, h.request('identity', [{ name: 'INPUT0', datatype: 'BYTES', shape: [2, 2], data }], ['OUTPUT0']));
      expect(rec.errors).toEqual([]);
      expect(rec.responses[0]!.outputs[0]!.shape).toEqual([2, 2]);
      expect(Buffer.from(rec.responses[0]!.outputs[0]!.data).equals(data)).toBe(true);
      await inst.finalize();
    });

    it('refuses a config whose input and output datatypes differ, at instance start', async () => {
      const m = await h.loadModel(
        resolver,
        h.wasmConfig('identity_bad', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'INT32', [-1]]]),
        join(h.REPO, 'identity_wasm'),
      );
      await expect(m.createInstance(h.instanceSpec('identity_bad'))).rejects.toMatchObject({
        code: 'INVALID_ARG',
        message: expect.stringMatching(/input 'INPUT0' is TYPE_FP32 but output 'OUTPUT0' is TYPE_INT32/),
      });
    });

    it('serves a batch of requests in one execute, one response each', async () => {
      const inst = await start('identity_wasm', h.wasmConfig('identity_batch', [['INPUT0', 'FP32', [-1]]], [['OUTPUT0', 'FP32', [-1]]]));
      const recs = [h.recorder(), h.recorder(), h.recorder()];
      const reqs = [1, 2, 3].map((n) => h.request('identity', [h.tensor('INPUT0', 'FP32', [n], new Float32Array(n).fill(n))], ['OUTPUT0']));
      await inst.execute(
        reqs,
        recs.map((r) => r.sender),
      );
      recs.forEach((r, i) => {
        expect(r.rec.finals).toBe(1);
        expect(Array.from(h.f32(r.rec.responses[0]!.outputs[0]!))).toEqual(new Array(i + 1).fill(i + 1));
      });
      await inst.finalize();
    });
  });

  describe('add_sub_wasm', () => {
    const config = h.wasmConfig(
      'add_sub_wasm',
      [
        ['INPUT0', 'FP32', [-1]],
        ['INPUT1', 'FP32', [-1]],
      ],
      [
        ['OUTPUT0', 'FP32', [-1]],
        ['OUTPUT1', 'FP32', [-1]],
      ],
    );

    it('OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (only the requested outputs)', async () => {
      const inst = await start('add_sub_wasm', config);
      const a = Float32Array.from({ length: 16 }, (_, i) => i);
      const b = Float32Array.from({ length: 16 }, () => 1);
      const both = await h.infer(
        inst,
        h.request('add_sub_wasm', [h.tensor('INPUT0', 'FP32', [16], a), h.tensor('INPUT1', 'FP32', [16], b)], ['OUTPUT0', 'OUTPUT1']),
      );
      expect(both.responses[0]!.outputs.map((o) => o.name)).toEqual(['OUTPUT0', 'OUTPUT1']);
      expect(Array.from(h.f32(both.responses[0]!.outputs[0]!))).toEqual(Array.from(a, (x) => x + 1));
      expect(Array.from(h.f32(both.responses[0]!.outputs[1]!))).toEqual(Array.from(a, (x) => x - 1));
      const one = await h.infer(inst, h.request('add_sub_wasm', [h.tensor('INPUT0', 'FP32', [16], a), h.tensor('INPUT1', 'FP32', [16], b)], ['OUTPUT1']));
      expect(one.responses[0]!.outputs.map((o) => o.name)).toEqual(['OUTPUT1']);
      const bad = await h.infer(
        inst,
        h.request('add_sub_wasm', [h.tensor('INPUT0', 'FP32', [16], a), h.tensor('INPUT1', 'FP32', [2], b.subarray(0, 2))], ['OUTPUT0']),
      );
      expect(bad.errors[0]).toMatchObject({ code: 'INVALID_ARG', message: 'INPUT0 shape [16] and INPUT1 shape [2] differ' });
      // a guest error is not a trap: same sandbox
      expect(inst.stats.starts).toBe(1);
      await inst.finalize();
    });

    it('takes inputs that are views into one shared request Buffer, and leaves that Buffer intact', async () => {
      const inst = await start('add_sub_wasm', config);
      const body = Buffer.alloc(8 + 64 + 64);
      for (let i = 0; i < 16; i++) {
        body.writeFloatLE(i, 8 + i * 4);
        body.writeFloatLE(10, 72 + i * 4);
      }
      const a = { name: 'INPUT0', datatype: 'FP32' as const, shape: [16], data: body.subarray(8, 72) };
      const b = { name: 'INPUT1', datatype: 'FP32' as const, shape: [16], data: body.subarray(72, 136) };
      const rec = await h.infer(inst, h.request('add_sub_wasm', [a, b], ['OUTPUT0']));
      expect(rec.errors).toEqual([]);
      expect(Array.from(h.f32(rec.responses[0]!.outputs[0]!))).toEqual(Array.from({ length: 16 }, (_, i) => i + 10));
      expect(body.buffer.byteLength).toBeGreaterThan(0); // not detached by a transfer
      expect(body.readFloatLE(8 + 4)).toBe(1);
      await inst.finalize();
    });

    it('handles 1 MiB inputs', async () => {
      const inst = await start('add_sub_wasm', config);
      const n = 262144;
      const a = Float32Array.from({ length: n }, (_, i) => i * 0.5);
      const b = Float32Array.from({ length: n }, (_, i) => n - i);
      const rec = await h.infer(
        inst,
        h.request('add_sub_wasm', [h.tensor('INPUT0', 'FP32', [n], a), h.tensor('INPUT1', 'FP32', [n], b)], ['OUTPUT0', 'OUTPUT1']),
      );
      const sum = h.f32(rec.responses[0]!.outputs[0]!);
      const diff = h.f32(rec.responses[0]!.outputs[1]!);
      for (const i of [0, 1, 12345, n - 1]) {
        expect(sum[i]).toBe(Math.fround(a[i]! + b[i]!));
        expect(diff[i]).toBe(Math.fround(a[i]! - b[i]!));
      }
      await inst.finalize();
    });
  });

  describe('repeat_wasm (decoupled)', () => {
    const config = repeatConfig('repeat_wasm');
    const req = (values: number[], delays: number[], wait: number) =>
      h.request(
        'repeat_wasm',
        [
          h.tensor('IN', 'INT32', [values.length], Int32Array.from(values)),
          h.tensor('DELAY', 'UINT32', [delays.length], Uint32Array.from(delays)),
          h.tensor('WAIT', 'UINT32', [1], Uint32Array.of(wait)),
        ],
        ['OUT', 'IDX'],
      );

    it('a guest sleeping (wasi:clocks + poll) past its execute deadline is stopped near the deadline, and serves again', async () => {
      const m = await h.loadModel(resolver, { ...config, parameters: { execute_timeout_ms: { string_value: '300' } } }, join(h.REPO, 'repeat_wasm'));
      const inst = await m.createInstance(h.instanceSpec('repeat_wasm_sleepy'));
      const t0 = performance.now();
      const { sender, rec } = h.recorder();
      await inst.execute([req([1], [60_000], 0)], [sender]); // would sleep a minute
      await rec.done;
      const took = performance.now() - t0;
      expect(rec.errors[0]?.code).toBe('UNAVAILABLE');
      expect(rec.errors[0]?.message).toMatch(/exceeded its execute deadline of 300 ms/);
      expect(took).toBeLessThan(5_000);
      const again = h.recorder();
      await inst.execute([req([7], [0], 0)], [again.sender]);
      await again.rec.done;
      expect(again.rec.errors).toEqual([]);
      expect(new Int32Array(again.rec.responses[0]!.outputs.find((o) => o.name === 'OUT')!.data.slice().buffer)[0]).toBe(7);
      await m.finalize();
    });

    it('streams one response per IN element, paced by DELAY, then a flags-only final', async () => {
      const inst = await start('repeat_wasm', config);
      const { sender, rec } = h.recorder();
      const t0 = performance.now();
      const firstAt: number[] = [];
      const s = {
        send: (r: Parameters<typeof sender.send>[0], f: boolean) => (firstAt.push(performance.now() - t0), sender.send(r, f)),
        sendError: sender.sendError,
      };
      await inst.execute([req([10, 20, 30, 40], [50, 50, 50, 50], 0)], [s]);
      await rec.done;
      expect(rec.errors).toEqual([]);
      expect(rec.finals).toBe(1);
      expect(rec.responses).toHaveLength(5);
      expect(rec.responses[4]).toBeNull(); // flags-only final
      rec.responses.slice(0, 4).forEach((r, i) => {
        const out = r!.outputs.find((o) => o.name === 'OUT')!;
        const idx = r!.outputs.find((o) => o.name === 'IDX')!;
        expect(out.shape).toEqual([1]);
        expect(new Int32Array(out.data.slice().buffer)[0]).toBe((i + 1) * 10);
        expect(new Uint32Array(idx.data.slice().buffer)[0]).toBe(i);
      });
      // responses arrive while execute runs, ~50 ms apart (not all at the end)
      expect(firstAt[0]!).toBeGreaterThanOrEqual(45);
      expect(firstAt[3]! - firstAt[0]!).toBeGreaterThanOrEqual(140);
      await inst.finalize();
    });

    it('sends no response for an empty IN, only the final; WAIT bounds execute from below', async () => {
      const inst = await start('repeat_wasm', config);
      const t0 = performance.now();
      const rec = await h.infer(inst, req([], [], 100));
      expect(performance.now() - t0).toBeGreaterThanOrEqual(95);
      expect(rec.responses).toEqual([null]);
      await inst.finalize();
    });

    it('stops when the request is cancelled and still sends the final', async () => {
      const inst = await start('repeat_wasm', config);
      const r = req(
        Array.from({ length: 50 }, (_, i) => i),
        new Array(50).fill(20),
        0,
      );
      const { sender: recording, rec } = h.recorder();
      // Cancelled once the third response has arrived (by event, not by wall time): the guest,
      // which asks between responses, stops long before its 50th.
      const sender: typeof recording = {
        send(response, final) {
          recording.send(response, final);
          if (rec.responses.length === 3) r.cancelled = true;
        },
        sendError: (error, final) => recording.sendError(error, final),
      };
      await inst.execute([r], [sender]);
      await rec.done;
      expect(rec.responses.length).toBeGreaterThan(3);
      expect(rec.responses.length).toBeLessThan(30);
      expect(rec.responses.at(-1)).toBeNull();
      await inst.finalize();
    });

    it('an invalid request gets an INVALID_ARG error as its final response', async () => {
      const inst = await start('repeat_wasm', config);
      const rec = await h.infer(inst, req([1, 2, 3], [0], 0));
      expect(rec.errors[0]).toMatchObject({ code: 'INVALID_ARG', message: 'DELAY has 1 elements, IN has 3' });
      expect(rec.finals).toBe(1);
      await inst.finalize();
    });

    it('refuses to load without the decoupled transaction policy', async () => {
      const m = await h.loadModel(resolver, { ...config, model_transaction_policy: { decoupled: false } }, join(h.REPO, 'repeat_wasm'));
      await expect(m.createInstance(h.instanceSpec('repeat_wasm'))).rejects.toMatchObject({
        code: 'INVALID_ARG',
        message: expect.stringMatching(/enable decoupled transaction policy/),
      });
    });
  });

  describe('preprocess_wasm (C, SIMD)', () => {
    /** Reference implementation of the sample (bilinear, half-pixel, normalise) in JS. */
    function reference(img: Uint8Array, H: number, W: number, OH: number, OW: number, mean: number[], std: number[]): Float32Array {
      const out = new Float32Array(3 * OH * OW);
      const map = (o: number, inN: number, outN: number) => {
        let s = ((o + 0.5) * inN) / outN - 0.5;
        if (s < 0) s = 0;
        const i0 = Math.min(Math.floor(s), inN - 1);
        return [i0, Math.min(i0 + 1, inN - 1), s - i0] as const;
      };
      for (let y = 0; y < OH; y++) {
        const [y0, y1, wy] = map(y, H, OH);
        for (let x = 0; x < OW; x++) {
          const [x0, x1, wx] = map(x, W, OW);
          for (let c = 0; c < 3; c++) {
            const p = (yy: number, xx: number) => img[(yy * W + xx) * 3 + c]!;
            const v = (p(y0, x0) * (1 - wx) + p(y0, x1) * wx) * (1 - wy) + (p(y1, x0) * (1 - wx) + p(y1, x1) * wx) * wy;
            out[(c * OH + y) * OW + x] = (v / 255 - mean[c]!) / std[c]!;
          }
        }
      }
      return out;
    }

    it('resizes and normalises a UINT8 HWC image to FP32 CHW like the reference', async () => {
      const cfg = h.wasmConfig('preprocess_wasm', [['IMAGE', 'UINT8', [-1, -1, 3]]], [['OUTPUT', 'FP32', [3, 56, 40]]], {
        params: { mean: '0.5,0.4,0.3', std: '0.2,0.25,0.5' },
      });
      const inst = await start('preprocess_wasm', cfg);
      for (const [H, W] of [
        [97, 131],
        [20, 17],
        [56, 40],
      ] as const) {
        const img = Uint8Array.from({ length: H * W * 3 }, (_, i) => (i * 7919) % 256);
        const rec = await h.infer(inst, h.request('preprocess_wasm', [h.tensor('IMAGE', 'UINT8', [H, W, 3], img)], ['OUTPUT']));
        expect(rec.errors).toEqual([]);
        const out = rec.responses[0]!.outputs[0]!;
        expect(out.shape).toEqual([3, 56, 40]);
        const got = h.f32(out);
        const want = reference(img, H, W, 56, 40, [0.5, 0.4, 0.3], [0.2, 0.25, 0.5]);
        let maxErr = 0;
        for (let i = 0; i < want.length; i++) maxErr = Math.max(maxErr, Math.abs(got[i]! - want[i]!));
        expect(maxErr).toBeLessThan(1e-4);
      }
      const bad = await h.infer(inst, h.request('preprocess_wasm', [h.tensor('IMAGE', 'UINT8', [4, 4, 4], new Uint8Array(64))], ['OUTPUT']));
      expect(bad.errors[0]).toMatchObject({ code: 'INVALID_ARG', message: "input 'IMAGE' must be UINT8 with shape [height, width, 3]" });
      await inst.finalize();
    });

    it('refuses output dims that are not [3, H, W] and malformed mean/std at instance start', async () => {
      const m1 = await h.loadModel(
        resolver,
        h.wasmConfig('pp_bad', [['IMAGE', 'UINT8', [-1, -1, 3]]], [['OUTPUT', 'FP32', [4, 8, 8]]]),
        join(h.REPO, 'preprocess_wasm'),
      );
      await expect(m1.createInstance(h.instanceSpec('pp_bad'))).rejects.toMatchObject({
        code: 'INVALID_ARG',
        message: expect.stringMatching(/fixed dims \[3, height, width\]/),
      });
      const m2 = await h.loadModel(
        resolver,
        h.wasmConfig('pp_bad2', [['IMAGE', 'UINT8', [-1, -1, 3]]], [['OUTPUT', 'FP32', [3, 8, 8]]], { params: { mean: '1,2' } }),
        join(h.REPO, 'preprocess_wasm'),
      );
      await expect(m2.createInstance(h.instanceSpec('pp_bad2'))).rejects.toMatchObject({ code: 'INVALID_ARG', message: expect.stringMatching(/mean and std/) });
    });
  });

  describe('instance groups', () => {
    it('instances run in parallel: two decoupled executes overlap', async () => {
      const cfg = repeatConfig('repeat_par');
      const m = await h.loadModel(resolver, cfg, join(h.REPO, 'repeat_wasm'));
      const [a, b] = await Promise.all([m.createInstance(h.instanceSpec('repeat_par', 0)), m.createInstance(h.instanceSpec('repeat_par', 1))]);
      // Two responses 300 ms apart each: run one after the other, b's first response would come
      // after a's last; overlapping, each one's first comes before the other's last.
      const mk = () =>
        h.request(
          'repeat_par',
          [
            h.tensor('IN', 'INT32', [2], Int32Array.of(1, 2)),
            h.tensor('DELAY', 'UINT32', [2], Uint32Array.of(300, 300)),
            h.tensor('WAIT', 'UINT32', [1], Uint32Array.of(0)),
          ],
          ['OUT', 'IDX'],
        );
      const [ra, rb] = await Promise.all([h.infer(a!, mk()), h.infer(b!, mk())]);
      expect([ra.errors, rb.errors, ra.responses.length, rb.responses.length]).toEqual([[], [], 3, 3]);
      expect(ra.times[0]! < rb.times.at(-1)! && rb.times[0]! < ra.times.at(-1)!, `a ${ra.times}, b ${rb.times}`).toBe(true);
      await m.finalize();
    });
  });
});
