/**
 * System shared memory over HTTP (spec §3.3) with real /dev/shm objects, no Python needed:
 * register / status / unregister, `simple` with inputs read from a region and outputs written to
 * one (offsets included), Triton's errors and statuses, hostile keys; off by default (501).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../host/src/server.js';
import { getJson, postJson, tempRepo, type TempRepo } from '../helpers/repo.js';

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
    server = await startServer({ modelRepositories: [repo.path], httpPort: 0, metricsPort: -1, allowClientShm: true, logLevel: 'silent' });
    off = await startServer({ modelRepositories: [repo.path], httpPort: 0, metricsPort: -1, logLevel: 'silent' });
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
    expect((await postJson(url('/v2/systemsharedmemory/region/in/register'), { key: IN.slice('/dev/shm'.length), offset: 0, byte_size: 128 })).status).toBe(200);
    expect((await postJson(url('/v2/systemsharedmemory/region/out/register'), { key: OUT.slice('/dev/shm'.length), offset: 8, byte_size: 128 })).status).toBe(200);
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
    expect(r.json.outputs[0]).toEqual({ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'out', shared_memory_byte_size: 64 } });
    expect(r.json.outputs[0].data).toBeUndefined();
    const out = readFileSync(OUT);
    expect(out.subarray(8, 72).equals(i32(A.map((x, k) => x + B[k])))).toBe(true);
    expect(out.subarray(72, 136).equals(i32(A.map((x, k) => x - B[k])))).toBe(true);

    // Triton's errors
    const unknown = await postJson(url('/v2/models/simple/infer'), { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('nope', 0) }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 64) }] });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toBe("Unable to find shared memory region: 'nope'");
    const oob = await postJson(url('/v2/models/simple/infer'), { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 100) }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 64) }] });
    expect(oob.status).toBe(400);
    expect(oob.json.error).toBe("Invalid offset + byte size for shared memory region: 'in'");
    const small = await postJson(url('/v2/models/simple/infer'), {
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 0) }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('in', 64) }],
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
    expect((await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: '/no_such_object_here', offset: 0, byte_size: 8 })).status).toBe(404);
    expect((await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: IN.slice(8), offset: 0, byte_size: 1 << 20 })).status).toBe(400);
    expect((await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: IN.slice(8), offset: -1, byte_size: 8 })).status).toBe(400);
    expect((await postJson(url('/v2/systemsharedmemory/region/h/register'), '[1]')).status).toBe(400);
    expect((await getJson(url('/v2/systemsharedmemory/status'))).json).toEqual([]);
    // the error never names the host path of the object
    const r = await postJson(url('/v2/systemsharedmemory/region/h/register'), { key: IN.slice(8), offset: 0, byte_size: 1 << 20 });
    expect(r.text).not.toContain('/dev/shm');
  });

  it('off by default: 501 with the flag to set; CUDA shared memory is 501', async () => {
    const r = await postJson(`${off.httpUrl}/v2/systemsharedmemory/region/in/register`, { key: IN.slice(8), offset: 0, byte_size: 128 });
    expect(r.status).toBe(501);
    expect(r.json.error).toMatch(/--allow-client-shm=true/);
    expect((await getJson(`${off.httpUrl}/v2/systemsharedmemory/status`)).json).toEqual([]);
    const cuda = await postJson(url('/v2/cudasharedmemory/region/c/register'), { raw_handle: { b64: 'AA==' }, device_id: 0, byte_size: 8 });
    expect(cuda.status).toBe(501);
    expect(cuda.json.error).toMatch(/CUDA shared memory is not supported/);
  });
});
