/**
 * Warden's `triton_python_backend_utils` (spec §7.2) checked in Python without a server
 * (pb_utils_check.py), and the TypeScript side's wire pieces against hostile input: control
 * frames (bounded size, JSON objects only), the shared-memory region allocator, and a buggy stub
 * that sends malformed or oversized messages (its requests fail, Warden keeps serving).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultPython } from '../../../host/src/backends/python/index.js';
import { encodeFrame, FrameDecoder, InlineTail, MAX_MESSAGE_BYTES, TAIL } from '../../../host/src/backends/python/ipc.js';
import { ArenaPair, RegionAllocator, removeStaleArenas, type Region } from '../../../host/src/backends/python/shm.js';
import { INLINE_MAX_BYTES, INLINE_TAIL_MAX_BYTES, readTensors, writeTensors } from '../../../host/src/backends/python/wire.js';
import type { Tensor } from '../../../host/src/contract/types.js';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PYTHON_DIR } from '../../../host/src/backends/python/stub.js';
import { postJson, tempRepo } from '../../helpers/repo.js';
import { pythonEnvironment, pythonModel, pythonServer } from './helpers.js';

const skip = await pythonEnvironment();

describe('control frames', () => {
  it('round-trip, split anywhere', () => {
    const msgs = [{ op: 'a', n: 1 }, { op: 'b', s: 'x'.repeat(70_000) }, { op: 'c' }];
    const bytes = Buffer.concat(msgs.map((m) => encodeFrame(m)));
    for (const cut of [1, 3, 4, 5, 100, 70_003, bytes.length - 1]) {
      const d = new FrameDecoder();
      expect([...d.push(bytes.subarray(0, cut)), ...d.push(bytes.subarray(cut))]).toEqual(msgs);
    }
  });
  it('a tail of inline tensors follows the JSON after a newline, each part 8-byte aligned; a message without one has none', () => {
    const tail = new InlineTail();
    const a = Uint8Array.from([1, 2, 3]);
    const b = Uint8Array.from([0x0a, 0x0a, 9, 8, 7]); // newlines in the tail do not cut the JSON
    expect([tail.add(a), tail.add(b)]).toEqual([0, 8]);
    const msg = { op: 'execute', s: 'line\nbreak' }; // a newline inside a string is escaped in JSON
    const bytes = Buffer.concat([encodeFrame(msg, tail), encodeFrame({ op: 'free' }), encodeFrame({ op: 'x' }, new InlineTail())]);
    const [m1, m2, m3] = new FrameDecoder().push(bytes);
    expect({ op: m1!.op, s: m1!.s, keys: Object.keys(m1!) }).toEqual({ ...msg, keys: ['op', 's'] });
    expect([...m1![TAIL]!.subarray(0, 3)]).toEqual([1, 2, 3]);
    expect([...m1![TAIL]!.subarray(8)]).toEqual([...b]);
    expect(m1![TAIL]!.length).toBe(13);
    expect(m2![TAIL]).toBeUndefined();
    expect(m3![TAIL]).toBeUndefined();
  });
  it('an oversized length or a body that is not a JSON object is an error, before anything is buffered', () => {
    const head = Buffer.alloc(4);
    head.writeUInt32LE(MAX_MESSAGE_BYTES + 1);
    expect(() => new FrameDecoder().push(head)).toThrow(/exceeds/);
    const arr = Buffer.from('[1]');
    const f = Buffer.concat([Buffer.from([arr.length, 0, 0, 0]), arr]);
    expect(() => new FrameDecoder().push(f)).toThrow(/not a JSON object/);
    expect(() => encodeFrame({ s: 'x'.repeat(MAX_MESSAGE_BYTES) })).toThrow(/exceeds/);
  });
});

describe('inline tensors', () => {
  const tensor = (name: string, bytes: number): Tensor => ({ name, datatype: 'UINT8', shape: [bytes], data: Buffer.alloc(bytes, name.length) });
  it('small tensors ride in the tail up to its bound, the others go through the arena; reading checks the bounds', () => {
    const arenas = new ArenaPair('inline-test');
    try {
      const tail = new InlineTail();
      const regions: Region[] = [];
      const big = INLINE_MAX_BYTES + 1;
      const perTail = Math.floor(INLINE_TAIL_MAX_BYTES / INLINE_MAX_BYTES);
      const tensors = [tensor('a', 3), tensor('bb', big), ...Array.from({ length: perTail }, () => tensor('ccc', INLINE_MAX_BYTES))];
      const wire = writeTensors(arenas, tensors, regions, tail);
      expect(wire.map((w) => w.inline === true)).toEqual([true, false, ...Array.from({ length: perTail }, (_, i) => i < perTail - 1)]);
      expect(regions).toHaveLength(2);
      expect(arenas.inUsed).toBeGreaterThanOrEqual(big + INLINE_MAX_BYTES);
      expect(wire[0]).toMatchObject({ offset: 0, size: 3 });
      expect(wire[2]).toMatchObject({ offset: 8, size: INLINE_MAX_BYTES });
      // what the stub would read: the inline bytes out of the frame's tail
      const [decoded] = new FrameDecoder().push(encodeFrame({ op: 'x' }, tail));
      const back = readTensors(arenas, [wire[0], wire[2]], [], decoded![TAIL]);
      expect([...back[0]!.data]).toEqual([1, 1, 1]);
      expect(Buffer.from(back[1]!.data).equals(Buffer.alloc(INLINE_MAX_BYTES, 3))).toBe(true);
      expect(() => readTensors(arenas, [{ ...wire[0], offset: tail.length - 2 }], [], decoded![TAIL])).toThrow(/lies outside its message/);
      expect(() => readTensors(arenas, [wire[0]], [])).toThrow(/lies outside its message/);
    } finally {
      arenas.close();
    }
  });
});

describe('shared-memory region allocator', () => {
  it('first fit, 64-byte aligned, coalesces on release, grows at the tail', () => {
    const a = new RegionAllocator(1024);
    const x = a.alloc(10)!;
    const y = a.alloc(100)!;
    const z = a.alloc(64)!;
    expect([x, y, z]).toEqual([0, 64, 192]);
    expect(a.alloc(1024)).toBeUndefined();
    a.release(y, 100);
    expect(a.alloc(128)).toBe(64);
    a.release(x, 10);
    a.release(64, 128);
    a.release(z, 64);
    expect(a.used).toBe(0);
    expect(a.alloc(1024)).toBe(0);
    a.release(0, 1024);
    a.grow(4096);
    expect(a.tailFree).toBe(4096);
    expect(a.alloc(4096)).toBe(0);
  });
});

describe('stale arenas', () => {
  it('files of dead Warden processes are removed; live ones and other files are kept', () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-shm-'));
    const dead = join(dir, 'warden-py-999999999-m-x-in');
    const live = join(dir, `warden-py-${process.ppid}-m-x-in`);
    const other = join(dir, 'something-else');
    for (const f of [dead, live, other]) writeFileSync(f, '');
    expect(removeStaleArenas(dir)).toBe(1);
    expect([existsSync(dead), existsSync(live), existsSync(other)]).toEqual([false, true, true]);
    rmSync(dir, { recursive: true });
  });
});

describe.skipIf(skip !== undefined)('triton_python_backend_utils', () => {
  it('passes its Python checks (datatypes, BYTES codec, DLPack, errors, sender, auto-complete)', () => {
    const r = spawnSync(defaultPython(), [join(import.meta.dirname, 'pb_utils_check.py')], {
      env: { ...process.env, PYTHONPATH: PYTHON_DIR },
      encoding: 'utf8',
    });
    expect(r.stderr + r.stdout).toContain('ALL OK');
    expect(r.status).toBe(0);
  });
});

describe.skipIf(skip !== undefined)('a buggy stub', () => {
  const py = pythonServer(() => {
    const repo = tempRepo([]);
    pythonModel(
      repo,
      'buggy_py',
      `max_batch_size: 0\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
      `import struct
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        rt = pb_utils._runtime
        v = int(requests[0].inputs()[0].as_numpy()[0])
        rid = requests[0]._rid
        if v == 1:   # a region far past the end of the arena
            rt.send({"op": "response", "rid": rid, "final": True, "outputs": [{"name": "OUT", "datatype": "INT32", "shape": [1], "offset": 2**40, "size": 4}]})
        elif v == 2: # a bad datatype and a negative shape
            rt.send({"op": "response", "rid": rid, "final": True, "outputs": [{"name": "OUT", "datatype": "INT33", "shape": [-1], "offset": 0, "size": 4}]})
        elif v == 3: # a frame claiming 4 GiB
            with rt.send_lock:
                rt.sock.sendall(struct.pack("<I", 0xFFFFFFF0))
            import time; time.sleep(30)
        elif v == 4: # a response for a request that does not exist, then a normal one
            rt.send({"op": "response", "rid": 123456, "final": True})
            return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([4], np.int32))])]
        elif v == 8: # an inline tensor in a message without a tail, then one past its tail
            rt.send({"op": "response", "rid": rid, "final": False, "outputs": [{"name": "OUT", "datatype": "INT32", "shape": [1], "offset": 0, "size": 4, "inline": True}]})
            rt.send({"op": "response", "rid": rid, "final": True, "outputs": [{"name": "OUT", "datatype": "INT32", "shape": [1], "offset": 4, "size": 4, "inline": True}]}, bytearray(4))
        elif v == 7: # 3 GiB claimed at offset 0 (must fail before Warden allocates it)
            rt.send({"op": "response", "rid": rid, "final": True, "outputs": [{"name": "OUT", "datatype": "INT32", "shape": [3 * 2**28], "offset": 0, "size": 3 * 2**30}]})
        return [None] if v == 5 else None
`,
    );
    return repo;
  });
  const call = (v: number) => postJson(`${py.s.httpUrl}/v2/models/buggy_py/infer`, { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [v] }] });

  it('malformed responses, an oversized frame, unknown request ids, wrong return values: errors for its requests, nothing else', async () => {
    let r = await call(1);
    expect(r.status).toBe(500);
    expect(r.json.error).toMatch(/malformed response.*past the end of the arena/);
    r = await call(7);
    expect(r.status).toBe(500);
    expect(r.json.error).toMatch(/past the end of the arena/);
    r = await call(2);
    expect(r.status).toBe(500);
    expect(r.json.error).toMatch(/malformed/);
    r = await call(3);
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/buggy_py.*killed by signal SIGKILL/);
    r = await call(4);
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual([4]);
    r = await call(8);
    expect(r.status).toBe(500);
    expect(r.json.error).toMatch(/malformed response.*inline tensor 'OUT' \[0, \+4\) lies outside its message/);
    r = await call(5);
    expect(r.status).toBe(500);
    expect(r.json.error).toContain('execute returned None as a response');
    r = await call(6);
    expect(r.status).toBe(500);
    expect(r.json.error).toContain('execute must return a list of pb_utils.InferenceResponse, got NoneType');
    expect((await fetch(`${py.s.httpUrl}/v2/health/ready`)).status).toBe(200);
  }, 30_000);
});
