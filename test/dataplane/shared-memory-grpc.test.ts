/**
 * The shared-memory RPCs over gRPC against Triton's server sources: CUDA shared memory as Triton
 * built without GPUs (server `grpc_server.cc` CudaSharedMemory*: status lists nothing, unregister
 * succeeds, register is INVALID_ARG), system regions (`shared_memory_manager.cc`: a missing key is
 * INTERNAL, Triton's Python-backend prefix is reserved), and a region held by a ModelInfer in
 * flight stays registered until that inference ends (`UnregisterHelper`, `infer_handler.h`).
 */
import { status } from '@grpc/grpc-js';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { int32s, tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../helpers/grpc.js';
import { echoConfig, executed, JsBackendResolver } from '../helpers/js-backend.js';
import { tempRepo, type TempRepo } from '../helpers/repo.js';
import { until } from '../helpers/wait.js';

const KEY = `/warden_test_grpc_held_${process.pid}`;
const i32 = (v: number[]) => Buffer.from(Int32Array.from(v).buffer);

describe('shared memory over gRPC', () => {
  let repo: TempRepo;
  let server: RunningServer;
  let off: RunningServer;
  let client: TritonGrpcClient;
  let offClient: TritonGrpcClient;
  beforeAll(async () => {
    repo = tempRepo();
    repo.addModel('slow', echoConfig('parameters { key: "delay_ms" value: { string_value: "600" } }'));
    writeFileSync(`/dev/shm${KEY}`, Buffer.concat([i32([1, 2, 3, 4]), Buffer.alloc(16)]));
    const common = { modelControlMode: 'none' as const, grpcPort: 0, backendResolvers: [new JsBackendResolver()] };
    server = await startTestServer(repo, { ...common, allowClientShm: true });
    off = await startTestServer(repo, common);
    client = tritonGrpcClient(server.grpcUrl!);
    offClient = tritonGrpcClient(off.grpcUrl!);
  });
  afterAll(async () => {
    client?.close();
    offClient?.close();
    await server?.stop();
    await off?.stop();
    repo?.cleanup();
    rmSync(`/dev/shm${KEY}`, { force: true });
  });

  it('CUDA shared memory as Triton without GPUs: status empty, unregister OK, register INVALID_ARGUMENT', async () => {
    expect((await unaryCall(client, 'CudaSharedMemoryStatus', {})).res).toEqual({ regions: {} });
    expect((await unaryCall(client, 'CudaSharedMemoryUnregister', {})).err).toBeUndefined();
    expect((await unaryCall(client, 'CudaSharedMemoryUnregister', { name: 'c' })).err).toBeUndefined();
    const reg = await unaryCall(client, 'CudaSharedMemoryRegister', { name: 'c', raw_handle: Buffer.alloc(64), device_id: 0, byte_size: 8 });
    expect(reg.err?.code).toBe(status.INVALID_ARGUMENT);
    expect(reg.err?.details).toBe("failed to register CUDA shared memory region: 'c', GPUs not supported");
    const one = await unaryCall(client, 'CudaSharedMemoryStatus', { name: 'c' });
    expect(one.err?.code).toBe(status.NOT_FOUND);
    expect(one.err?.details).toBe("Unable to find cuda shared memory region: 'c'");
    // off: status answers, unregister is UNSUPPORTED (UNIMPLEMENTED) with the flag to set
    expect((await unaryCall(offClient, 'CudaSharedMemoryStatus', {})).res).toEqual({ regions: {} });
    const un = await unaryCall(offClient, 'CudaSharedMemoryUnregister', {});
    expect(un.err?.code).toBe(status.UNIMPLEMENTED);
    expect(un.err?.details).toMatch(/--allow-client-shm=true/);
  });

  it("system regions: a missing key is Triton's INTERNAL, Triton's Python-backend prefix is reserved", async () => {
    const missing = await unaryCall(client, 'SystemSharedMemoryRegister', { name: 'm', key: '/no_such_object_here', offset: 0, byte_size: 8 });
    expect(missing.err?.code).toBe(status.INTERNAL);
    expect(missing.err?.details).toBe("Unable to open shared memory region: '/no_such_object_here'");
    const key = '/triton_python_backend_shm_region_7';
    const reserved = await unaryCall(client, 'SystemSharedMemoryRegister', { name: 'm', key, offset: 0, byte_size: 8 });
    expect(reserved.err?.code).toBe(status.INVALID_ARGUMENT);
    expect(reserved.err?.details).toBe(
      `cannot register shared memory region 'm' with key '${key}' as the key contains the reserved prefix 'triton_python_backend_shm_region_'`,
    );
    expect((await unaryCall(client, 'SystemSharedMemoryStatus', {})).res).toEqual({ regions: {} });
  });

  it('a region unregistered while a ModelInfer uses it stays listed until that inference ends', async () => {
    const reg = (name: string, offset: number) => unaryCall(client, 'SystemSharedMemoryRegister', { name, key: KEY, offset, byte_size: 16 });
    expect((await reg('in', 0)).err).toBeUndefined();
    expect((await reg('out', 16)).err).toBeUndefined();
    const shm = (region: string) => ({ shared_memory_region: { string_param: region }, shared_memory_byte_size: { int64_param: 16 } });
    const before = executed.length;
    const pending = unaryCall(client, 'ModelInfer', {
      model_name: 'slow',
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4], parameters: shm('in') }],
      outputs: [{ name: 'OUTPUT0', parameters: shm('out') }],
    });
    await until(() => executed.slice(before).some((e) => e.model === 'slow'), { every: 10 });
    expect((await unaryCall(client, 'SystemSharedMemoryUnregister', {})).err).toBeUndefined();
    const listed = async () => Object.keys((await unaryCall(client, 'SystemSharedMemoryStatus', {})).res.regions).sort();
    expect(await listed()).toEqual(['in', 'out']);
    const r = await pending;
    expect(r.err).toBeUndefined();
    expect(r.res.outputs[0].parameters.shared_memory_region.string_param).toBe('out');
    expect(int32s(readFileSync(`/dev/shm${KEY}`).subarray(16, 32))).toEqual([1, 2, 3, 4]);
    expect(await listed()).toEqual([]);
  });
});
