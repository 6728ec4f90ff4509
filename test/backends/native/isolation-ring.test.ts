// The request path to a backend-host process: binary records in two shared
// memory rings (host/src/backends/native/isolation/ring.ts, served natively in the child by
// native/src/addon/iso_server.cc). The ring logic on its own (wrap-around, a full ring, records no
// valid producer writes), then a real isolated model with a small ring: inputs, outputs and
// parameters cross byte for byte, a batch or a response larger than the ring fails with a clear
// error (the model goes on), and a corrupted ring makes Warden kill and restart the process, never
// read out of bounds.
import { afterAll, describe, expect, it } from 'vitest';
import { IsolatedNativeModel } from '../../../host/src/backends/native/index.js';
import {
  RING_HEADER_BYTES,
  RecordKind,
  RecordReader,
  RingError,
  RingReader,
  RingWriter,
  executeRecordBytes,
  readResponse,
  writeExecute,
  type RingRequest,
} from '../../../host/src/backends/native/isolation/ring.js';
import { TEST_BACKEND_DIR, collector, loadNative, pbtxtConfig, request, requireNativeBuild, resolver, run, tensor } from './helpers.js';

const region = (cap: number) => new ArrayBuffer(RING_HEADER_BYTES + cap);
const u32s = (r: RecordReader, n: number) => Array.from({ length: n }, () => r.u32());

describe('isolation ring', () => {
  it('wraps around with a pad record, refuses what does not fit until consumed, and refuses what never fits', () => {
    const buf = region(64);
    const w = new RingWriter(buf);
    const r = new RingReader(buf);
    const put = (v: number, bytes = 24) => w.write(RecordKind.Released, bytes, (x) => x.u32(v));
    expect(put(1)).toBe('ring'); // [0,24): the consumer had nothing left, it may sleep: doorbell
    expect(put(2)).toBe('busy'); // [24,48): record 1 not consumed yet, the consumer will see this one too
    expect(put(3)).toBe(false); // 16 free at the end, 8 kept free: no room
    const seen: number[][] = [];
    r.drain((kind, rec) => seen.push([kind, ...u32s(rec, 1)]));
    expect(seen).toEqual([
      [RecordKind.Released, 1],
      [RecordKind.Released, 2],
    ]);
    expect(put(3)).toBe('ring'); // does not fit in [48,64): a pad there, the record at 0
    expect(put(4, 16)).toBe('busy');
    seen.length = 0;
    r.drain((kind, rec) => seen.push([kind, ...u32s(rec, 1)]));
    expect(seen).toEqual([
      [RecordKind.Released, 3],
      [RecordKind.Released, 4],
    ]);
    expect(() => put(5, 64)).toThrow(RangeError);
  });

  it('an empty ring whose end is too short for the record: a pad first, the record at the start once the pad is skipped', () => {
    const buf = region(64);
    const w = new RingWriter(buf);
    const r = new RingReader(buf);
    const put = (v: number, bytes: number) => w.write(RecordKind.Released, bytes, (x) => x.u32(v));
    expect(put(1, 40)).toBe('ring');
    r.drain(() => undefined); // empty, head = tail = 40
    expect(put(2, 40)).toBe('padded'); // 24 at the end < 40, and 24 + 40 > 56 free
    expect(put(2, 40)).toBe(false); // the consumer has not skipped the pad yet
    const seen: number[] = [];
    r.drain((_k, rec) => seen.push(rec.u32()));
    expect(seen).toEqual([]); // only the pad
    expect(put(2, 40)).toBe('ring');
    r.drain((_k, rec) => seen.push(rec.u32()));
    expect(seen).toEqual([2]);
  });

  it('a record or position no valid producer writes throws RingError before anything past it is read', () => {
    const bad = (mutate: (v: DataView, idx: Int32Array) => void, read?: (r: RecordReader) => void) => {
      const buf = region(256);
      const w = new RingWriter(buf);
      w.write(RecordKind.Response, 32, (x) => x.u32(7));
      mutate(new DataView(buf, RING_HEADER_BYTES), new Int32Array(buf, 0, 32));
      return () => new RingReader(buf).drain((_k, r) => read?.(r));
    };
    expect(bad((_v, idx) => (idx[0] = 1 << 30))).toThrow(RingError); // head beyond the ring
    expect(bad((_v, idx) => (idx[0] = 12))).toThrow(RingError); // unaligned head
    expect(bad((v) => v.setUint32(0, 4096, true))).toThrow(RingError); // length past the head
    expect(bad((v) => v.setUint32(0, 3, true))).toThrow(RingError); // length below a header
    expect(
      bad(
        () => undefined,
        (r) => r.copy(1000),
      ),
    ).toThrow(RingError); // a field past the record
    expect(
      bad(
        (v) => v.setUint32(12, 1000, true),
        (r) => (r.u32(), r.str()),
      ),
    ).toThrow(RingError); // string length past the record
    expect(
      bad(
        (v) => v.setUint32(12, 1000, true),
        (r) => (r.u32(), r.count(8)),
      ),
    ).toThrow(RingError); // 1000 × 8 bytes claimed
  });

  it('a response record claiming more outputs or bytes than it holds is refused (no allocation from the count)', () => {
    const buf = region(256);
    const w = new RingWriter(buf);
    w.write(RecordKind.Response, 40, (x) => {
      x.u32(1); // token
      x.u32(1); // FINAL
      x.u8(2); // outputs
      x.u32(0xffffffff); // count
    });
    expect(() => new RingReader(buf).drain((_k, r) => readResponse(r))).toThrow(/count 4294967295 larger than its record/);
  });

  it('an Execute record is exactly as long as executeRecordBytes says', () => {
    const req: RingRequest = {
      token: 9,
      id: 'ré',
      correlationId: 'seq-1',
      flags: 3,
      timeoutUs: 2 ** 40,
      priority: 2,
      cancelled: false,
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [3], data: new Uint8Array(12).fill(5) }],
      requestedOutputs: ['OUTPUT0'],
      parameters: { s: 'x', i: 7, b: true, d: 0.5, big: 2n ** 60n },
    };
    const bytes = executeRecordBytes([req, { ...req, correlationId: 12n }]);
    const buf = region(1024);
    const w = new RingWriter(buf);
    let end = 0;
    w.write(RecordKind.Execute, bytes, (x) => {
      writeExecute(x, 1, 2, [req, { ...req, correlationId: 12n }]);
      end = x.pos;
    });
    expect(bytes - end).toBeGreaterThanOrEqual(0);
    expect(bytes - end).toBeLessThan(8); // only the alignment padding is left over
    // Checked while sizing, before anything is written or registered.
    expect(() => executeRecordBytes([{ ...req, correlationId: -1 }])).toThrow(RangeError);
    expect(() => executeRecordBytes([{ ...req, correlationId: 2n ** 64n }])).toThrow(RangeError);
  });
});

describe('an isolated model with a 4 KiB ring', () => {
  const rv = resolver({ backendDirectory: TEST_BACKEND_DIR });
  afterAll(() => rv.finalizeAll());
  /** The faults test backend (echo) in a backend-host process with 4 KiB rings, plus `extra` config text. */
  const ringConfig = (name: string, extra = '') =>
    pbtxtConfig(
      name,
      `backend: "warden_test_cpp_faults" max_batch_size: 0
       input { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
       output { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
       parameters { key: "warden.isolation" value { string_value: "process" } }
       parameters { key: "warden.isolation_shm_bytes" value { string_value: "4096" } }
       ${extra}`,
    );
  const config = ringConfig('ring_echo');
  const echo = async (m: Awaited<ReturnType<typeof loadNative>>, v: Int32Array) => {
    const { collected, error } = await run(m.instances[0]!, [request('ring_echo', [tensor('INPUT0', 'INT32', [v.length], v)], ['OUTPUT0'])]);
    return { error, out: collected[0]!.responses.at(-1)?.response?.outputs[0], collected };
  };

  it('moves inputs and outputs through the rings byte for byte, wrapping them many times', async () => {
    requireNativeBuild();
    const m = await loadNative(rv, config, '/nonexistent/ring_echo');
    expect(m.model).toBeInstanceOf(IsolatedNativeModel);
    const isolated = m.model as IsolatedNativeModel;
    try {
      // 300 requests of up to 1 KiB wrap the 4 KiB rings many times over.
      for (let i = 0; i < 300; i++) {
        const v = Int32Array.from({ length: 1 + (i % 256) }, (_, k) => i * 1000 + k);
        const { error, out } = await echo(m, v);
        expect(error).toBeUndefined();
        expect(out!.shape).toEqual([v.length]);
        expect(Array.from(new Int32Array(out!.data.slice().buffer))).toEqual(Array.from(v));
      }
      expect(isolated.ringStats).toMatchObject({ executes: 300, responses: 300 });
      await expect.poll(() => isolated.ringStats.releases).toBe(300);
      // 200 batches at once: doorbells are skipped while the other side is still draining, the
      // process waits for room in its ring back — and no record or wake-up is lost.
      const burst = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          echo(
            m,
            Int32Array.from({ length: 1 + ((i * 37) % 200) }, (_, k) => i - k),
          ),
        ),
      );
      burst.forEach(({ error, out }, i) => {
        expect(error).toBeUndefined();
        expect(Array.from(new Int32Array(out!.data.slice().buffer))).toEqual(Array.from({ length: 1 + ((i * 37) % 200) }, (_, k) => i - k));
      });
      // Batches of 2.8 KiB: two never fit the 3968-byte ring at once, so they wait in Warden
      // (written in order as the process drains); 20 written back to back cannot all miss that.
      const large = await Promise.all(Array.from({ length: 20 }, (_, i) => echo(m, new Int32Array(700).fill(i))));
      large.forEach(({ error, out }, i) => {
        expect(error).toBeUndefined();
        expect(new Int32Array(out!.data.slice().buffer).every((v) => v === i)).toBe(true);
      });
      expect(isolated.ringStats.backlogged).toBeGreaterThan(0);
      // Larger than the whole ring: a clear error naming the parameter, and the model goes on.
      const big = new Int32Array(2048);
      const refused = m.instances[0]!.execute([request('ring_echo', [tensor('INPUT0', 'INT32', [big.length], big)], ['OUTPUT0'])], [collector().sender]);
      await expect(refused).rejects.toMatchObject({
        code: 'INVALID_ARG',
        message: expect.stringMatching(/a batch of \d+ bytes does not fit the backend host process's ring of 3968 bytes \(raise warden.isolation_shm_bytes\)/),
      });
      expect((await echo(m, Int32Array.of(42))).out!.data).toEqual(new Uint8Array(Int32Array.of(42).buffer));
    } finally {
      await m.unload();
    }
  }, 60_000);

  it('a response larger than the ring: that request fails with UNAVAILABLE naming the parameter, and the model goes on', async () => {
    requireNativeBuild();
    // The same backend answering INPUT0 repeated 16 times: 64 INT32 in (256 bytes) is 4 KiB out.
    const amplified = ringConfig('ring_amplify', 'parameters { key: "amplify" value { string_value: "16" } }');
    const m = await loadNative(rv, amplified, '/nonexistent/ring_amplify');
    const send = async (v: Int32Array) => {
      const { collected, error } = await run(m.instances[0]!, [request('ring_amplify', [tensor('INPUT0', 'INT32', [v.length], v)], ['OUTPUT0'])]);
      return { error, last: collected[0]!.responses.at(-1) };
    };
    try {
      // fits: 4 elements in, 64 out, each the input repeated
      const small = await send(Int32Array.of(1, 2, 3, 4));
      expect(small.error).toBeUndefined();
      expect(small.last!.response!.outputs[0]!.shape).toEqual([64]);
      expect(Array.from(new Int32Array(small.last!.response!.outputs[0]!.data.slice().buffer))).toEqual(Array.from({ length: 64 }, (_, i) => (i % 4) + 1));
      // does not fit: the request's answer is the error, nothing else breaks
      const big = await send(new Int32Array(64).fill(7));
      const e = big.error ?? big.last?.error;
      expect(e).toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringMatching(/response of \d+ bytes does not fit the backend host process's ring of 3968 bytes \(raise warden.isolation_shm_bytes\)/),
      });
      expect((m.model as IsolatedNativeModel).restarts).toBe(0);
      const again = await send(Int32Array.of(9));
      expect(again.error).toBeUndefined();
      expect(again.last!.response!.outputs[0]!.shape).toEqual([16]);
    } finally {
      await m.unload();
    }
  }, 60_000);

  it('a corrupted ring from the process: Warden kills it (never reads out of bounds), the model restarts and serves again', async () => {
    requireNativeBuild();
    const m = await loadNative(rv, config, '/nonexistent/ring_echo');
    const isolated = m.model as IsolatedNativeModel;
    try {
      expect((await echo(m, Int32Array.of(1))).error).toBeUndefined();
      // What a corrupted child could leave: a head far outside the ring, then its doorbell.
      const internals = isolated as unknown as { fromChild: { idx: Int32Array }; proc: { doorbell: { emit(e: string, b: Buffer): void } } };
      Atomics.store(internals.fromChild.idx, 0, 0x7ffffff8);
      internals.proc.doorbell.emit('data', Buffer.from([1]));
      await expect.poll(() => isolated.unavailableReason(), { timeout: 5_000 }).toMatch(/was killed by signal SIGKILL; restarting/);
      await expect.poll(() => isolated.restarts, { timeout: 10_000 }).toBe(1);
      const again = await echo(m, Int32Array.of(7, 8));
      expect(again.error).toBeUndefined();
      expect(Array.from(new Int32Array(again.out!.data.slice().buffer))).toEqual([7, 8]);
    } finally {
      await m.unload();
    }
  }, 60_000);
});
