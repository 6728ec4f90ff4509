/**
 * The gRPC port on the native data path (`--http-data-path=native`, native/rust/data-path
 * grpc.rs): the same calls go to a server with it and to one without, and the answers must match —
 * the decoded response, or the status code and message. The data path's counters prove which
 * calls it served itself (`grpcServed`) and which it forwarded to the grpc-js server behind it
 * (`grpcForwarded`): a ModelInfer call outside the native rules, every other method, streams.
 * Statistics count natively served calls as the TypeScript path counts its own.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { startMatrixServer, useMatrixRepository } from '../../helpers/http-matrix.js';
import { BACKEND_DIR, requireNativeBuild, writeDataPathModels } from '../../backends/native/helpers.js';
import { type TritonGrpcClient, tritonGrpcClient, unaryCall } from '../../helpers/grpc.js';
import { PROJECT_ROOT, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { startTestServer } from '../../helpers/servers.js';
import { until } from '../../helpers/wait.js';
import { ensureBuilt, newResolver, writeDataPathWasmModels } from '../../backends/wasm/helpers.js';

const repoPath = useMatrixRepository();

const f32 = (v: number[]) => Buffer.from(new Float32Array(v).buffer);
const i32 = (v: number[]) => Buffer.from(new Int32Array(v).buffer);

/** identity_native's request over `values` (FP32 [n], raw contents); `extra` overrides fields. */
const identity = (values: number[], extra: Record<string, unknown> = {}) => ({
  model_name: 'identity_native',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [values.length] }],
  raw_input_contents: [f32(values)],
  ...extra,
});

const addSub = (extra: Record<string, unknown> = {}) => ({
  model_name: 'add_sub_native',
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [4] },
    { name: 'INPUT1', datatype: 'FP32', shape: [4] },
  ],
  raw_input_contents: [f32([1, 2, 3, 4]), f32([0.5, 0.25, -1, 8])],
  ...extra,
});

/** A ModelInfer call and how the data path handles it. */
interface Case {
  name: string;
  request: Record<string, unknown>;
  how: 'served' | 'forwarded';
  /** The gRPC status expected (0 = a response). */
  code: number;
  /** Text the status's details contain. */
  details?: string;
}

function cases(): Case[] {
  return [
    { name: 'identity', request: identity([1, 2, 3]), how: 'served', code: 0 },
    { name: 'identity with an id', request: identity([1.5], { id: 'r-"1"\u0001é' }), how: 'served', code: 0 },
    { name: 'identity, version named', request: identity([7], { model_version: '1' }), how: 'served', code: 0 },
    { name: 'identity, a zero dimension (not served natively)', request: identity([]), how: 'forwarded', code: 0 },
    { name: 'add_sub, both outputs', request: addSub(), how: 'served', code: 0 },
    { name: 'add_sub, OUTPUT1 only', request: addSub({ outputs: [{ name: 'OUTPUT1' }] }), how: 'served', code: 0 },
    { name: 'add_sub, outputs in reverse', request: addSub({ outputs: [{ name: 'OUTPUT1' }, { name: 'OUTPUT0' }] }), how: 'served', code: 0 },
    { name: 'version that does not exist', request: identity([7], { model_version: '2' }), how: 'forwarded', code: 5 },
    { name: 'unknown model', request: identity([1], { model_name: 'nope' }), how: 'forwarded', code: 5 },
    {
      name: 'wrong shape (data of another size)',
      request: identity([1, 2], { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3] }] }),
      how: 'forwarded',
      code: 3,
    },
    {
      name: 'wrong datatype',
      request: identity([1], { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1] }] }),
      how: 'forwarded',
      code: 3,
    },
    {
      name: 'typed contents',
      request: { model_name: 'identity_native', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], contents: { fp32_contents: [1, 2] } }] },
      how: 'forwarded',
      code: 0,
    },
    { name: 'request parameters', request: identity([1], { parameters: { priority: { int64_param: '1' } } }), how: 'forwarded', code: 0 },
    { name: 'unknown request parameter', request: identity([1], { parameters: { nonsense: { bool_param: true } } }), how: 'forwarded', code: 0 },
    {
      name: 'output parameters',
      request: identity([1], { outputs: [{ name: 'OUTPUT0', parameters: { binary_data: { bool_param: true } } }] }),
      how: 'forwarded',
      code: 0,
    },
    { name: 'unknown output', request: identity([1], { outputs: [{ name: 'OUTPUT9' }] }), how: 'forwarded', code: 3 },
    { name: 'raw contents missing', request: identity([1], { raw_input_contents: [] }), how: 'forwarded', code: 3 },
    {
      name: 'backend Execute error',
      request: { model_name: 'execute_fails', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [2] }], raw_input_contents: [i32([1, 2])] },
      how: 'served',
      code: 14,
      details: 'execute failed on purpose',
    },
    {
      name: 'backend error response',
      request: { model_name: 'error_response', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [2] }], raw_input_contents: [i32([1, 2])] },
      how: 'served',
      code: 3,
      details: 'bad request on purpose',
    },
  ];
}

/** A call's outcome in comparable form. */
function outcome(r: { res?: unknown; err?: ServiceError }): unknown {
  if (r.err) return { code: r.err.code, details: r.err.details };
  return { code: 0, res: r.res };
}

describe('the native data path serves gRPC as the TypeScript path does', () => {
  let native: RunningServer;
  let js: RunningServer;
  let nc: TritonGrpcClient;
  let jc: TritonGrpcClient;
  beforeAll(async () => {
    requireNativeBuild();
    writeDataPathModels(repoPath());
    const opts = { backendDirectory: BACKEND_DIR, metricsPort: 0, grpcPort: 0, modelControlMode: 'explicit', loadModels: ['*'] };
    [native, js] = await Promise.all([
      startMatrixServer(repoPath(), { ...opts, httpDataPath: 'native' }),
      startMatrixServer(repoPath(), { ...opts, httpDataPath: 'js' }),
    ]);
    nc = tritonGrpcClient(native.grpcUrl!);
    jc = tritonGrpcClient(js.grpcUrl!);
  }, 60_000);
  afterAll(async () => {
    nc?.close();
    jc?.close();
    await Promise.all([native?.stop(), js?.stop()]);
  });

  const counters = () => {
    const c = native.dataPath!.counters();
    return { served: c.grpcServed, forwarded: c.grpcForwarded };
  };

  for (const c of cases()) {
    it(`${c.name}: identical outcome, ${c.how}`, async () => {
      const before = counters();
      const a = outcome(await unaryCall(nc, 'ModelInfer', c.request));
      const after = counters();
      const b = outcome(await unaryCall(jc, 'ModelInfer', c.request));
      expect(a).toEqual(b);
      expect((a as { code: number }).code).toBe(c.code);
      if (c.details !== undefined) expect((a as { details: string }).details).toContain(c.details);
      expect({ served: after.served - before.served, forwarded: after.forwarded - before.forwarded }).toEqual({
        served: c.how === 'served' ? 1 : 0,
        forwarded: c.how === 'forwarded' ? 1 : 0,
      });
    });
  }

  it('a served response carries what the TypeScript path builds, field by field', async () => {
    const r = await unaryCall(nc, 'ModelInfer', addSub({ id: 'x' }));
    expect(r.err).toBeUndefined();
    expect(r.res.model_name).toBe('add_sub_native');
    expect(r.res.model_version).toBe('1');
    expect(r.res.id).toBe('x');
    expect(r.res.outputs.map((o: { name: string; datatype: string; shape: string[] }) => [o.name, o.datatype, o.shape])).toEqual([
      ['OUTPUT0', 'FP32', ['4']],
      ['OUTPUT1', 'FP32', ['4']],
    ]);
    const floats = (b: Buffer) => Array.from(new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
    expect(floats(r.res.raw_output_contents[0])).toEqual([1.5, 2.25, 2, 12]);
    expect(floats(r.res.raw_output_contents[1])).toEqual([0.5, 1.75, 4, -4]);
  });

  it('other methods are forwarded and answer the same: ServerLive, ModelMetadata, an unknown model', async () => {
    for (const [method, request] of [
      ['ServerLive', {}],
      ['ModelMetadata', { name: 'identity_native' }],
      ['ModelMetadata', { name: 'nope' }],
      ['ModelReady', { name: 'add_sub_native' }],
    ] as const) {
      const before = counters();
      const a = outcome(await unaryCall(nc, method, request));
      expect(counters().forwarded - before.forwarded).toBe(1);
      expect(a).toEqual(outcome(await unaryCall(jc, method, request)));
    }
  });

  it('ModelStreamInfer is forwarded both ways and answers the same', async () => {
    const run = (client: TritonGrpcClient) =>
      new Promise<unknown[]>((resolve, reject) => {
        const stream = (client as unknown as { ModelStreamInfer(): NodeJS.EventEmitter & { write(m: unknown): void; end(): void } }).ModelStreamInfer();
        const got: unknown[] = [];
        stream.on('data', (m: unknown) => got.push(m));
        stream.on('end', () => resolve(got));
        stream.on('error', reject);
        stream.write(identity([1, 2], { id: 'a' }));
        stream.write(identity([1], { id: 'b', model_name: 'nope' }));
        stream.write(addSub({ id: 'c' }));
        stream.end();
      });
    const before = counters();
    const a = await run(nc);
    expect(counters()).toEqual({ served: before.served, forwarded: before.forwarded + 1 });
    expect(a).toHaveLength(3);
    expect(a).toEqual(await run(jc));
  });

  it('statistics count what the data path served as the TypeScript path counts it', async () => {
    const stats = async (client: TritonGrpcClient) => {
      const r = await unaryCall(client, 'ModelStatistics', { name: 'identity_native', version: '' });
      const m = r.res.model_stats[0];
      return {
        inferences: String(m.inference_count),
        executions: String(m.execution_count),
        success: String(m.inference_stats.success.count),
        fail: String(m.inference_stats.fail.count),
      };
    };
    const a = await stats(nc);
    expect(Number(a.success)).toBeGreaterThan(2);
    expect(a).toEqual(await stats(jc));
  });

  it('while tracing is on, ModelInfer goes through the TypeScript path', async () => {
    const setting = (level: string) =>
      fetch(`${native.httpUrl}/v2/trace/setting`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ trace_level: [level] }),
      });
    expect((await setting('TIMESTAMPS')).status).toBe(200);
    try {
      const before = counters();
      expect((await unaryCall(nc, 'ModelInfer', identity([1]))).err).toBeUndefined();
      expect(counters()).toEqual({ served: before.served, forwarded: before.forwarded + 1 });
    } finally {
      expect((await setting('OFF')).status).toBe(200);
    }
    const before = counters();
    expect((await unaryCall(nc, 'ModelInfer', identity([1]))).err).toBeUndefined();
    expect(counters().served).toBe(before.served + 1);
  });
});

describe('an ONNX Runtime model on the native data path serves gRPC as the TypeScript path does', () => {
  let repo: TempRepo;
  let native: RunningServer;
  let js: RunningServer;
  let nc: TritonGrpcClient;
  let jc: TritonGrpcClient;
  beforeAll(async () => {
    requireNativeBuild();
    repo = tempRepo(['simple']);
    cpSync(join(PROJECT_ROOT, 'model_repository', 'addsub_onnx'), join(repo.path, 'addsub_onnx'), { recursive: true });
    const opts = { grpcPort: 0, loadModels: ['*'] };
    [native, js] = await Promise.all([startTestServer(repo, { ...opts, httpDataPath: 'native' }), startTestServer(repo, { ...opts, httpDataPath: 'js' })]);
    await until(() => native.dataPath!.routes.includes('simple'), { what: 'the ONNX Runtime route' });
    nc = tritonGrpcClient(native.grpcUrl!);
    jc = tritonGrpcClient(js.grpcUrl!);
  }, 60_000);
  afterAll(async () => {
    nc?.close();
    jc?.close();
    await Promise.all([native?.stop(), js?.stop()]);
    repo?.cleanup();
  });

  it('simple, OUTPUT1 then OUTPUT0: identical outcome, served', async () => {
    const request = {
      model_name: 'simple',
      id: 'g',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      outputs: [{ name: 'OUTPUT1' }, { name: 'OUTPUT0' }],
      raw_input_contents: [i32(Array.from({ length: 16 }, (_, i) => i)), i32(Array.from({ length: 16 }, () => 3))],
    };
    const before = native.dataPath!.counters().grpcServed;
    const a = await unaryCall(nc, 'ModelInfer', request);
    expect(native.dataPath!.counters().grpcServed).toBe(before + 1);
    const b = await unaryCall(jc, 'ModelInfer', request);
    expect(outcome(a)).toEqual(outcome(b));
    expect(a.err).toBeUndefined();
    const ints = (x: Buffer) => Array.from(new Int32Array(x.buffer.slice(x.byteOffset, x.byteOffset + x.byteLength)));
    expect(a.res.outputs.map((o: { name: string; datatype: string }) => [o.name, o.datatype])).toEqual([
      ['OUTPUT1', 'INT32'],
      ['OUTPUT0', 'INT32'],
    ]);
    expect(ints(a.res.raw_output_contents[0])).toEqual(Array.from({ length: 16 }, (_, i) => i - 3));
  });
});

describe('wasmtime sandboxes on the native data path serve gRPC as the TypeScript path does', () => {
  let repo: TempRepo;
  let native: RunningServer;
  let js: RunningServer;
  let nc: TritonGrpcClient;
  let jc: TritonGrpcClient;
  beforeAll(async () => {
    await ensureBuilt();
    repo = tempRepo();
    writeDataPathWasmModels(repo.path);
    // each server its own engine (and sandbox memory budget)
    const opts = () => ({ backendResolvers: [newResolver('wasmtime')], grpcPort: 0, modelControlMode: 'explicit' as const, loadModels: ['*'] });
    [native, js] = await Promise.all([startTestServer(repo, { ...opts(), httpDataPath: 'native' }), startTestServer(repo, { ...opts(), httpDataPath: 'js' })]);
    nc = tritonGrpcClient(native.grpcUrl!);
    jc = tritonGrpcClient(js.grpcUrl!);
  }, 120_000);
  afterAll(async () => {
    nc?.close();
    jc?.close();
    await Promise.all([native?.stop(), js?.stop()]);
    repo?.cleanup();
  });

  const call = (model: string, values: number[], extra: Record<string, unknown> = {}) => identity(values, { model_name: model, ...extra });
  const wasmCases: Case[] = [
    { name: 'C guest identity', request: call('identity_c', [1, -2.5]), how: 'served', code: 0 },
    { name: 'TypeScript guest add_sub, OUTPUT1 only', request: addSub({ model_name: 'add_sub_wasm', outputs: [{ name: 'OUTPUT1' }] }), how: 'served', code: 0 },
    { name: 'a guest that traps', request: call('trap_c', [1]), how: 'served', code: 13, details: 'trapped' },
    { name: 'a guest past its deadline', request: call('loop_c', [1]), how: 'served', code: 14, details: 'deadline' },
    { name: 'an output the config does not name', request: call('wrong_name_c', [1]), how: 'served', code: 13, details: 'NOT_IN_CONFIG' },
    { name: 'response parameters', request: call('echo_meta_c', [3], { id: 'meta' }), how: 'served', code: 0 },
  ];
  for (const c of wasmCases) {
    it(`${c.name}: identical outcome, ${c.how}`, async () => {
      const before = native.dataPath!.counters().grpcServed;
      const a = outcome(await unaryCall(nc, 'ModelInfer', c.request));
      const served = native.dataPath!.counters().grpcServed - before;
      const b = outcome(await unaryCall(jc, 'ModelInfer', c.request));
      expect(a).toEqual(b);
      expect((a as { code: number }).code).toBe(c.code);
      if (c.details !== undefined) expect((a as { details: string }).details).toContain(c.details);
      expect(served).toBe(c.how === 'served' ? 1 : 0);
    });
  }

  it('response parameters arrive as the TypeScript path types them', async () => {
    const r = await unaryCall(nc, 'ModelInfer', call('echo_meta_c', [3], { id: 'meta' }));
    expect(r.err).toBeUndefined();
    expect(r.res.parameters.echo_id).toMatchObject({ string_param: 'meta' });
    expect(r.res.parameters.echo_batch_size).toMatchObject({ int64_param: expect.anything() });
  });
});
