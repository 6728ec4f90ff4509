// Tensors between Warden and a backend-host process go through two shared memory rings
// (host/src/backends/native/isolation/shm-ring.ts): the ring logic on its own (wrap-around, a full
// ring, acknowledgements), then a real isolated model with a small ring — inputs and outputs cross
// in shared memory, byte for byte; a tensor larger than the ring crosses inline.
import { describe, expect, it, afterAll } from 'vitest';
import { IsolatedNativeModel } from '../../host/src/backends/native/index.js';
import { ShmReader, ShmWriter } from '../../host/src/backends/native/isolation/shm-ring.js';
import { TEST_BACKEND_DIR, loadNative, pbtxtConfig, request, requireNativeBuild, resolver, run, tensor } from './helpers.js';

describe('shared memory ring', () => {
  it('wraps around, refuses what does not fit until acknowledged, and never splits a tensor', () => {
    const mem = new Uint8Array(10);
    const w = new ShmWriter(mem);
    const r = new ShmReader(mem);
    expect(w.put(new Uint8Array([1, 2, 3, 4]))).toEqual([0, 4]);
    expect(w.put(new Uint8Array([5, 6, 7, 8]))).toEqual([4, 4]);
    expect(w.put(new Uint8Array([9, 9, 9]))).toBeUndefined(); // 2 bytes left at the end, 0 free before
    expect(Array.from(r.take([0, 4]))).toEqual([1, 2, 3, 4]);
    r.done(4);
    w.ack(r.consumed); // slot [0,4) is free again; the tail end [8,10) is too small: wraps to 0
    expect(w.put(new Uint8Array([9, 9, 9]))).toEqual([0, 3]);
    expect(Array.from(r.take([4, 4]))).toEqual([5, 6, 7, 8]); // untouched by the wrap
    expect(w.put(new Uint8Array(11))).toBeUndefined(); // larger than the ring: inline
    expect(w.put(new Uint8Array(0))).toEqual([0, 0]);
    expect(() => r.take([8, 4])).toThrow(RangeError);
    w.ack(1e12); // an acknowledgement beyond what was written is ignored
    expect(w.put(new Uint8Array(8))).toBeUndefined();
  });
});

describe('an isolated model with a 4 KiB ring', () => {
  const rv = resolver({ backendDirectory: TEST_BACKEND_DIR });
  afterAll(() => rv.finalizeAll());

  it('moves inputs and outputs through shared memory, and a larger tensor inline, all byte for byte', async () => {
    requireNativeBuild();
    const config = pbtxtConfig(
      'shm_echo',
      `backend: "warden_test_cpp_faults" max_batch_size: 0
       input { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
       output { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
       parameters { key: "warden.isolation" value { string_value: "process" } }
       parameters { key: "warden.isolation_shm_bytes" value { string_value: "4096" } }`,
    );
    const m = await loadNative(rv, config, '/nonexistent/shm_echo');
    expect(m.model).toBeInstanceOf(IsolatedNativeModel);
    const isolated = m.model as IsolatedNativeModel;
    try {
      // 300 requests of up to 1 KiB wrap the 4 KiB rings many times over.
      for (let i = 0; i < 300; i++) {
        const v = Int32Array.from({ length: 1 + (i % 256) }, (_, k) => i * 1000 + k);
        const { collected, error } = await run(m.instances[0]!, [request('shm_echo', [tensor('INPUT0', 'INT32', [v.length], v)], ['OUTPUT0'])]);
        expect(error).toBeUndefined();
        const out = collected[0]!.responses.at(-1)!.response!.outputs[0]!;
        expect(Array.from(new Int32Array(out.data.slice().buffer))).toEqual(Array.from(v));
      }
      expect(isolated.transport.shmBytes).toBeGreaterThan(100_000);
      expect(isolated.transport.inlineBytes).toBe(0);
      const big = Int32Array.from({ length: 2048 }, (_, k) => k); // 8 KiB > the ring
      const { collected } = await run(m.instances[0]!, [request('shm_echo', [tensor('INPUT0', 'INT32', [big.length], big)], ['OUTPUT0'])]);
      expect(Array.from(new Int32Array(collected[0]!.responses.at(-1)!.response!.outputs[0]!.data.slice().buffer))).toEqual(Array.from(big));
      expect(isolated.transport.inlineBytes).toBe(8192);
    } finally {
      await m.unload();
    }
  }, 60_000);
});
