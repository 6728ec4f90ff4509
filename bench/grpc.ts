/**
 * gRPC and client shared memory (spec §3.3): Triton's `simple` over gRPC (tritonclient's raw
 * contents) at concurrency 1 and 16 beside the same request over HTTP (binary extension), and a
 * 16 MiB FP32 tensor through `identity_native` sent in the body vs through system shared memory
 * (input read from, output written to /dev/shm regions) over both protocols.
 *
 * One Warden child process serves both protocols; one closed-loop driver here (fetch for HTTP,
 * one grpc-js channel for gRPC, as tritonclient uses one) runs every case, so the protocols are
 * compared with the same load generator in the same run. Cases are interleaved per round;
 * figures are medians over rounds. Every case checks its answer once before it is timed.
 */
import { credentials, makeGenericClientConstructor, type Client, type ServiceError } from '@grpc/grpc-js';
import { closeSync, mkdirSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadTritonService } from '../host/src/frontend/grpc/proto.js';
import type { BenchContext } from './ctx.js';

const IN0 = Array.from({ length: 16 }, (_, i) => i * 3 - 7);
const IN1 = Array.from({ length: 16 }, (_, i) => 100 - i);
const BIG_BYTES = 16 << 20;

interface LoopResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

/** `concurrency` workers calling `once` back to back for `seconds`. */
async function closedLoop(concurrency: number, seconds: number, once: () => Promise<void>): Promise<LoopResult> {
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await once();
        lat.push(performance.now() - t);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  return { rps: lat.length / seconds, p50Ms: q(0.5), p99Ms: q(0.99) };
}

type Rpc = (req: unknown) => Promise<any>;

function grpcClient(root: string, address: string): { client: Client; call(method: string): Rpc } {
  const Ctor = makeGenericClientConstructor(
    loadTritonService(join(root, 'third_party', 'triton-grpc-protos', 'grpc_service.protoset')) as never,
    'GRPCInferenceService',
  );
  const client = new Ctor(address, credentials.createInsecure(), { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 });
  const call =
    (method: string): Rpc =>
    (req) =>
      new Promise((resolve, reject) =>
        (client as unknown as Record<string, (r: unknown, cb: (e: ServiceError | null, v: unknown) => void) => void>)[method]!(req, (e, v) =>
          e ? reject(e) : resolve(v),
        ),
      );
  return { client, call };
}

function int32Buffer(v: number[]): Buffer {
  const b = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => b.writeInt32LE(x, i * 4));
  return b;
}

async function httpPost(url: string, body: Buffer | string, headers: Record<string, string>): Promise<Buffer> {
  // A Buffer is a valid fetch body at run time (undici); the DOM typings do not say so.
  const res = await fetch(url, { method: 'POST', body: body as unknown as string, headers });
  const out = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${out.subarray(0, 300).toString()}`);
  return out;
}

function binaryBody(
  inputs: { name: string; datatype: string; shape: number[]; data: Buffer }[],
  extra: Record<string, unknown> = {},
): { body: Buffer; headers: Record<string, string> } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, parameters: { binary_data_size: t.data.length } })),
      parameters: { binary_data_output: true },
      ...extra,
    }),
  );
  return {
    body: Buffer.concat([header, ...inputs.map((t) => t.data)]),
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
  };
}

export async function benchGrpc(ctx: BenchContext): Promise<unknown> {
  const repo = await ctx.makeRepository(['simple', 'identity_native']);
  // identity_native's version directory is empty (git does not keep it): make sure it exists.
  mkdirSync(join(repo, 'identity_native', '1'), { recursive: true });
  const grpcPort = await ctx.freePort();
  const server = await ctx.startWarden(repo, ['--grpc-port', String(grpcPort), '--allow-client-shm=true']);
  const { client, call } = grpcClient(ctx.root, `127.0.0.1:${grpcPort}`);
  const infer = call('ModelInfer');
  const shmKeys = [`bench_in_${process.pid}`, `bench_out_${process.pid}`];
  try {
    // ---- simple, c=1 / c=16 ----
    const simpleHttp = binaryBody([
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: int32Buffer(IN0) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: int32Buffer(IN1) },
    ]);
    const simpleGrpc = {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [int32Buffer(IN0), int32Buffer(IN1)],
    };
    const want0 = int32Buffer(IN0.map((v, i) => v + IN1[i]!));
    const httpSimple = async () => void (await httpPost(`${server.url}/v2/models/simple/infer`, simpleHttp.body, simpleHttp.headers));
    const grpcSimple = async () => void (await infer(simpleGrpc));
    const r = await infer(simpleGrpc);
    if (!Buffer.from(r.raw_output_contents[0]).equals(want0)) throw new Error('gRPC simple: wrong OUTPUT0');
    const h = await httpPost(`${server.url}/v2/models/simple/infer`, simpleHttp.body, simpleHttp.headers);
    if (!h.subarray(h.length - 128, h.length - 64).equals(want0)) throw new Error('HTTP simple: wrong OUTPUT0');

    // ---- 16 MiB through identity_native: body vs shared memory ----
    const big = Buffer.alloc(BIG_BYTES);
    for (let i = 0; i < BIG_BYTES; i += 4) big.writeFloatLE((i / 4) % 1000, i);
    const n = BIG_BYTES / 4;
    writeFileSync(join('/dev/shm', shmKeys[0]!), big);
    writeFileSync(join('/dev/shm', shmKeys[1]!), Buffer.alloc(BIG_BYTES));
    const reg = (name: string, key: string) =>
      httpPost(`${server.url}/v2/systemsharedmemory/region/${name}/register`, JSON.stringify({ key: `/${key}`, offset: 0, byte_size: BIG_BYTES }), {
        'content-type': 'application/json',
      });
    await reg('in', shmKeys[0]!);
    await reg('out', shmKeys[1]!);
    const outFd = openSync(join('/dev/shm', shmKeys[1]!), 'r');
    const readBack = Buffer.alloc(BIG_BYTES);
    const consumeShmOutput = () => {
      let done = 0;
      while (done < BIG_BYTES) done += readSync(outFd, readBack, done, BIG_BYTES - done, done);
    };
    const bigHttp = binaryBody([{ name: 'INPUT0', datatype: 'FP32', shape: [n], data: big }]);
    const shmParams = (region: string) => ({ shared_memory_region: region, shared_memory_byte_size: BIG_BYTES });
    const bigHttpShm = JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [n], parameters: shmParams('in') }],
      outputs: [{ name: 'OUTPUT0', parameters: shmParams('out') }],
    });
    const grpcShm = (region: string) => ({ shared_memory_region: { string_param: region }, shared_memory_byte_size: { int64_param: String(BIG_BYTES) } });
    const bigGrpc = { model_name: 'identity_native', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [n] }], raw_input_contents: [big] };
    const bigGrpcShm = {
      model_name: 'identity_native',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [n], parameters: grpcShm('in') }],
      outputs: [{ name: 'OUTPUT0', parameters: grpcShm('out') }],
    };
    const url = `${server.url}/v2/models/identity_native/infer`;
    const bigCases: Record<string, () => Promise<void>> = {
      'HTTP body': async () => void (await httpPost(url, bigHttp.body, bigHttp.headers)),
      'HTTP shm': async () => {
        await httpPost(url, bigHttpShm, { 'content-type': 'application/json' });
        consumeShmOutput();
      },
      'gRPC body': async () => void (await infer(bigGrpc)),
      'gRPC shm': async () => {
        await infer(bigGrpcShm);
        consumeShmOutput();
      },
    };
    // check each path once: the output equals the input
    const gb = await infer(bigGrpc);
    if (!Buffer.from(gb.raw_output_contents[0]).equals(big)) throw new Error('gRPC 16 MiB: output differs from input');
    await infer(bigGrpcShm);
    consumeShmOutput();
    if (!readBack.equals(big)) throw new Error('gRPC shm 16 MiB: output region differs from input');
    readBack.fill(0);
    await httpPost(url, bigHttpShm, { 'content-type': 'application/json' });
    consumeShmOutput();
    if (!readBack.equals(big)) throw new Error('HTTP shm 16 MiB: output region differs from input');

    const cases: { label: string; c: number; run: () => Promise<void> }[] = [
      { label: 'simple HTTP c=1', c: 1, run: httpSimple },
      { label: 'simple gRPC c=1', c: 1, run: grpcSimple },
      { label: 'simple HTTP c=16', c: 16, run: httpSimple },
      { label: 'simple gRPC c=16', c: 16, run: grpcSimple },
      ...Object.entries(bigCases).map(([k, run]) => ({ label: `16 MiB ${k} c=1`, c: 1, run })),
    ];
    for (const cs of cases) await closedLoop(cs.c, ctx.warmupS, cs.run);
    const results = new Map<string, LoopResult[]>();
    for (let round = 0; round < ctx.rounds; round++) {
      for (const cs of cases) {
        const res = await closedLoop(cs.c, ctx.durationS, cs.run);
        (results.get(cs.label) ?? results.set(cs.label, []).get(cs.label)!).push(res);
        ctx.log(`  round ${round + 1} ${cs.label}: ${res.rps.toFixed(0)} infer/s, p50 ${res.p50Ms.toFixed(2)} ms, p99 ${res.p99Ms.toFixed(2)} ms`);
      }
    }
    closeSync(outFd);
    const med = (label: string) => {
      const rs = results.get(label)!;
      return { rps: ctx.median(rs.map((x) => x.rps)), p50: ctx.median(rs.map((x) => x.p50Ms)), p99: ctx.median(rs.map((x) => x.p99Ms)) };
    };
    const row = (label: string, base?: string) => {
      const m = med(label);
      return [label, m.rps.toFixed(0), m.p50.toFixed(2), m.p99.toFixed(2), base ? (m.rps / med(base).rps).toFixed(2) : '1.00'];
    };
    const body = ctx.table(
      ['case', 'infer/s', 'p50 ms', 'p99 ms', 'ratio'],
      [
        row('simple HTTP c=1'),
        row('simple gRPC c=1', 'simple HTTP c=1'),
        row('simple HTTP c=16'),
        row('simple gRPC c=16', 'simple HTTP c=16'),
        row('16 MiB HTTP body c=1'),
        row('16 MiB HTTP shm c=1', '16 MiB HTTP body c=1'),
        row('16 MiB gRPC body c=1', '16 MiB HTTP body c=1'),
        row('16 MiB gRPC shm c=1', '16 MiB HTTP body c=1'),
      ],
    );
    ctx.log(`\n${body}`);
    ctx.section('gRPC beside HTTP; 16 MiB through shared memory vs the body (ratio: infer/s over the HTTP row above it)', body);
    return Object.fromEntries([...results.keys()].map((k) => [k, med(k)]));
  } finally {
    client.close();
    for (const k of shmKeys) rmSync(join('/dev/shm', k), { force: true });
    await server.stop();
  }
}
