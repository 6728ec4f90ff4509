/**
 * System shared memory over HTTP (spec §3.3) with real /dev/shm objects, no Python needed:
 * register / status / unregister, `simple` with inputs read from a region and outputs written to
 * one (offsets included), Triton's errors and statuses, hostile keys; off by default (501); CUDA
 * shared memory as Triton built without GPUs; a region held by an inference in flight.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { getJson, postJson, tempRepo, type TempRepo } from '../helpers/repo.js';
import { echoConfig, executed, JsBackendResolver } from '../helpers/js-backend.js';
import { until } from '../helpers/wait.js';

const IN = `/dev/shm/warden_test_in_${process.pid}`;
const OUT = `/dev/shm/warden_test_out_${process.pid}`;
const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array(16).fill(5);
const i32 = (v: number[]) => Buffer.from(Int32Array.from(v).buffer);

describe('system shared memory over HTTP', () => {
  let repo: TempRepo;
  let server: RunningServer;
  let off: RunningServer;
  beforeAll(async () => {
    repo = tempRepo(['simple']);
    writeFileSync(IN, Buffer.concat([i32(A), i32(B)]));
    writeFileSync(OUT, Buffer.alloc(136));
    server = await startTestServer(repo, { modelControlMode: 'none', allowClientShm: true });
    off = await startTestServer(repo, { modelControlMode: 'none' });
  });
  afterAll(async () => {
    await server?.stop();
    await off?.stop();
    repo?.cleanup();
    rmSync(IN, { force: true });
    rmSync(OUT, { force: true });
  });
  const url = (p: string) => `${server.httpUrl}${p}`;

  it('GET /v2 lists system_shared_memory only where client shared memory is allowed', async () => {
    expect((await getJson(url('/v2'))).json.extensions).toContain('system_shared_memory');
    expect((await getJson(`${off.httpUrl}/v2`)).json.extensions).not.toContain('system_shared_memory');
    expect((await getJson(url('/v2'))).json.extensions).not.toContain('cuda_shared_memory');
  });

  it('register, infer with inputs and outputs in regions, status, unregister', async () => {
    expect((await postJson(url('/v2/systemsharedmemory/region/in/register'), { key: IN.slice('/dev/shm'.length), offset: 0, byte_size: 128 })).status).toBe(
      200,
    );
    expect((await postJson(url('/v2/systemsharedmemory/region/out/register'), { key: OUT.slice('/dev/shm'.length), offset: 8, byte_size: 128 })).status).toBe(
      200,
    );
    expect((await getJson(url('/v2/systemsharedmemory/status'))).json.map((r: { name: string }) => r.name)).toEqual(['in', 'out']);
    const shm = (region: string, offset: number) => ({ shared_memory_region: region, shared_memory_byte_size: 64, shared_memory_offset: offset });
    const r = await postJson(url('/v2/models/simple/infer'), {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 0) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 64) },
      ],
      outputs: [
        { name: 'OUTPUT0', parameters: shm('out', 0) },
        { name: 'OUTPUT1', parameters: shm('out', 64) },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.outputs[0]).toEqual({
      name: 'OUTPUT0',
      datatype: 'INT32',
      shape: [1, 16],
      parameters: { shared_memory_region: 'out', shared_memory_byte_size: 64 },
    });
    expect(r.json.outputs[0].data).toBeUndefined();
    const out = readFileSync(OUT);
    expect(out.subarray(8, 72).equals(i32(A.map((x, k) => x + B[k])))).toBe(true);
    expect(out.subarray(72, 136).equals(i32(A.map((x, k) => x - B[k])))).toBe(true);

    // Triton's errors
    /** `simple` with INPUT0 read from `input0` (INPUT1 from `in` at 64), and `extra` in the request. */
    const inferShm = (input0: ReturnType<typeof shm>, extra: object = {}) =>
      postJson(url('/v2/models/simple/infer'), {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: input0 },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 64) },
        ],
        ...extra,
      });
    const unknown = await inferShm(shm('nope', 0));
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toBe("Unable to find shared memory region: 'nope'");
    const oob = await inferShm(shm('in', 100));
    expect(oob.status).toBe(400);
    expect(oob.json.error).toBe("Invalid offset + byte size for shared memory region: 'in'");
    const small = await inferShm(shm('in', 0), {
      outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: 'out', shared_memory_byte_size: 8 } }],
    });
    expect(small.status).toBe(400);
    expect(small.json.error).toMatch(/should be at least 64 bytes/);
    expect((await getJson(url('/v2/systemsharedmemory/region/nope/status'))).status).toBe(404);
    expect((await postJson(url('/v2/systemsharedmemory/region/in/register'), { key: IN.slice(8), offset: 0, byte_size: 8 })).status).toBe(400);

    expect((await postJson(url('/v2/systemsharedmemory/region/in/unregister'), {})).status).toBe(200);
    expect((await getJson(url('/v2/systemsharedmemory/status'))).json.map((r: { name: string }) => r.name)).toEqual(['out']);
    expect((await postJson(url('/v2/systemsharedmemory/unregister'), {})).status).toBe(200);
    expect((await getJson(url('/v2/systemsharedmemory/status'))).json).toEqual([]);
  });

  it('hostile keys and sizes are refused with 400 / 404 and nothing is registered', async () => {
    for (const key of ['/../../etc/passwd', '/a/b', '/', '/warden-py-1-in', 'x\u0000y']) {
      const r = await postJson(url('/v2/systemsharedmemory/region/h/register'), { key, offset: 0, byte_size: 8 });
      expect(r.status, key).toBe(400);
    }
    // a missing object: Triton's code and text (server shared_memory_manager.cc OpenSharedMemoryRegion: INTERNAL)
    const missing = await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: '/no_such_object_here', offset: 0, byte_size: 8 });
    expect(missing.status).toBe(500);
    expect(missing.json.error).toBe("Unable to open shared memory region: '/no_such_object_here'");
    // Triton's Python backend's prefix is reserved (server common.cc ValidateSharedMemoryKey), with or without slashes
    for (const key of ['/triton_python_backend_shm_region_1', 'triton_python_backend_shm_region_x']) {
      const r = await postJson(url('/v2/systemsharedmemory/region/h/register'), { key, offset: 0, byte_size: 8 });
      expect(r.status, key).toBe(400);
      expect(r.json.error).toBe(
        `cannot register shared memory region 'h' with key '${key}' as the key contains the reserved prefix 'triton_python_backend_shm_region_'`,
      );
    }
    expect((await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: IN.slice(8), offset: 0, byte_size: 1 << 20 })).status).toBe(400);
    expect((await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: IN.slice(8), offset: -1, byte_size: 8 })).status).toBe(400);
    expect((await postJson(url('/v2/systemsharedmemory/region/h/register'), '[1]')).status).toBe(400);
    expect((await getJson(url('/v2/systemsharedmemory/status'))).json).toEqual([]);
    // the error never names the host path of the object
    const r = await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: IN.slice(8), offset: 0, byte_size: 1 << 20 });
    expect(r.text).not.toContain('/dev/shm');
  });

  it('off by default: 501 with the flag to set', async () => {
    const r = await postJson(`${off.httpUrl}/v2/systemsharedmemory/region/in/register`, { key: IN.slice(8), offset: 0, byte_size: 128 });
    expect(r.status).toBe(501);
    expect(r.json.error).toMatch(/--allow-client-shm=true/);
    expect((await getJson(`${off.httpUrl}/v2/systemsharedmemory/status`)).json).toEqual([]);
    expect((await getJson(`${off.httpUrl}/v2/systemsharedmemory/region/in/status`)).status).toBe(404);
  });

  // Triton built without GPUs (server http_server.cc HandleCudaSharedMemory, shared_memory_manager.cc):
  // the clean-up calls of every shm example succeed, register is 400.
  it('CUDA shared memory as Triton without GPUs: status [], unregister 200, register 400', async () => {
    expect((await getJson(url('/v2/cudasharedmemory/status'))).json).toEqual([]);
    expect((await postJson(url('/v2/cudasharedmemory/unregister'), {})).status).toBe(200);
    expect((await postJson(url('/v2/cudasharedmemory/region/c/unregister'), {})).status).toBe(200);
    const reg = await postJson(url('/v2/cudasharedmemory/region/c/register'), { raw_handle: { b64: 'AA==' }, device_id: 0, byte_size: 8 });
    expect(reg.status).toBe(400);
    expect(reg.json.error).toBe("failed to register CUDA shared memory region: 'c', GPUs not supported");
    const noName = await postJson(url('/v2/cudasharedmemory/register'), {});
    expect(noName.status).toBe(400);
    expect(noName.json.error).toBe("'region name' is necessary to register cuda shared memory region");
    const one = await getJson(url('/v2/cudasharedmemory/region/c/status'));
    expect(one.status).toBe(404);
    expect(one.json.error).toBe("Unable to find cuda shared memory region: 'c'");
    expect((await getJson(url('/v2/cudasharedmemory/status'))).json).toEqual([]);
    // off: status still answers, register / unregister are UNSUPPORTED with the flag to set
    expect((await getJson(`${off.httpUrl}/v2/cudasharedmemory/status`)).json).toEqual([]);
    for (const op of ['register', 'unregister']) {
      const r = await postJson(`${off.httpUrl}/v2/cudasharedmemory/region/c/${op}`, {});
      expect(r.status, op).toBe(501);
      expect(r.json.error).toMatch(/--allow-client-shm=true/);
    }
  });
});

describe('system shared memory held by an inference (HTTP)', () => {
  let repo: TempRepo;
  let server: RunningServer;
  const KEY = `/warden_test_held_${process.pid}`;
  beforeAll(async () => {
    repo = tempRepo();
    repo.addModel('slow', echoConfig('parameters { key: "delay_ms" value: { string_value: "600" } }'));
    writeFileSync(`/dev/shm${KEY}`, Buffer.concat([i32([1, 2, 3, 4]), Buffer.alloc(16)]));
    server = await startTestServer(repo, {
      modelControlMode: 'none',
      allowClientShm: true,
      backendResolvers: [new JsBackendResolver()],
    });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
    rmSync(`/dev/shm${KEY}`, { force: true });
  });
  const url = (p: string) => `${server.httpUrl}${p}`;
  const names = async () => (await getJson(url('/v2/systemsharedmemory/status'))).json.map((r: { name: string }) => r.name);

  // Triton: shared_memory_manager.cc UnregisterHelper (awaiting_unregister_), http_server.h ~InferRequestClass
  it('a region unregistered while an inference uses it stays listed until that inference ends', async () => {
    expect((await postJson(url('/v2/systemsharedmemory/region/in/register'), { key: KEY, offset: 0, byte_size: 16 })).status).toBe(200);
    expect((await postJson(url('/v2/systemsharedmemory/region/out/register'), { key: KEY, offset: 16, byte_size: 16 })).status).toBe(200);
    const shm = (region: string) => ({ shared_memory_region: region, shared_memory_byte_size: 16 });
    const before = executed.length;
    const pending = postJson(url('/v2/models/slow/infer'), {
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4], parameters: shm('in') }],
      outputs: [{ name: 'OUTPUT0', parameters: shm('out') }],
    });
    await until(() => executed.slice(before).some((e) => e.model === 'slow'), { every: 10 });
    expect((await postJson(url('/v2/systemsharedmemory/unregister'), {})).status).toBe(200);
    expect(await names()).toEqual(['in', 'out']);
    // still registered: the name cannot be taken again meanwhile
    const again = await postJson(url('/v2/systemsharedmemory/region/in/register'), { key: KEY, offset: 0, byte_size: 16 });
    expect(again.status).toBe(400);
    expect(again.json.error).toBe("shared memory region 'in' already in manager");
    const r = await pending;
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].parameters).toEqual({ shared_memory_region: 'out', shared_memory_byte_size: 16 });
    expect(
      readFileSync(`/dev/shm${KEY}`)
        .subarray(16, 32)
        .equals(i32([1, 2, 3, 4])),
    ).toBe(true);
    expect(await names()).toEqual([]);
    // a region no inference holds goes at once
    expect((await postJson(url('/v2/systemsharedmemory/region/in/register'), { key: KEY, offset: 0, byte_size: 16 })).status).toBe(200);
    expect((await postJson(url('/v2/systemsharedmemory/region/in/unregister'), {})).status).toBe(200);
    expect(await names()).toEqual([]);
  });
});
