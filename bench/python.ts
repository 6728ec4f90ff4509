/**
 * Python-backend benchmark (`benchPython(ctx)`, run by bench/run.ts; spec §7):
 *  - per-request cost of `identity_python` (a TritonPythonModel identity, FP32 [16], JSON) at
 *    concurrency 1 and 16, side by side with ONNX `simple` (INT32 [1,16] add/sub, JSON) and the
 *    bare Fastify floor replaying identity_python's answer, all in one run. Target: identity_python
 *    adds < 150 µs per request over the ONNX path at concurrency 1;
 *  - 64 MiB FP32 tensors in-process (no HTTP): the shared-memory arena's write + read (what one
 *    round trip copies) against a plain 2 × memcpy of the same bytes, and a full round trip
 *    through identity_python (data plane → stub → numpy view → response), in MB/s. Target: the
 *    transfer within 2× of memcpy speed.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchCase, BenchContext, HttpRequestSpec } from './ctx.js';
import { CONNECTIONS, measureTargets, startCannedFloor } from './identity-floor.js';
import { IDENTITY_INPUT, identityRequest, simpleRequest } from './requests.js';

const IDENTITY_CONFIG = `name: "identity_python"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU, count: 1 } ]
`;
const IDENTITY_MODEL = `import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT0", r.inputs()[0].as_numpy())]) for r in requests]
`;

/** Write identity_python into `repo`. */
function addIdentityPython(repo: string): void {
  mkdirSync(join(repo, 'identity_python', '1'), { recursive: true });
  writeFileSync(join(repo, 'identity_python', 'config.pbtxt'), IDENTITY_CONFIG);
  writeFileSync(join(repo, 'identity_python', '1', 'model.py'), IDENTITY_MODEL);
}

async function record(url: string, req: HttpRequestSpec): Promise<{ headers: Record<string, string>; body: Buffer }> {
  const res = await fetch(url + req.path, { method: 'POST', headers: req.headers, body: req.body as string });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`identity_python answered ${res.status}: ${body.toString()}`);
  const out = (JSON.parse(body.toString()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
  if (out.some((v, i) => v !== IDENTITY_INPUT[i])) throw new Error(`identity_python returned wrong data`);
  return { headers: { 'content-type': res.headers.get('content-type') ?? 'application/json' }, body };
}

/** MB/s of 64 MiB tensors: memcpy, arena write+read, full identity_python round trip (in-process). */
async function tensorThroughput(ctx: BenchContext, repo: string, iterations: number) {
  const { ArenaPair } = await import('../host/src/backends/python/shm.js');
  const { startServer } = await import('../host/src/server.js');
  const { inferAndCollect } = await import('../host/src/dataplane/inference.js');
  const { SINGLE_USER } = await import('../host/src/contract/types.js');
  const bytes = 64 * 1024 * 1024;
  const src = Buffer.alloc(bytes, 7);
  const dst = Buffer.allocUnsafe(bytes);
  const mbps = (ns: bigint) => bytes / 1e6 / (Number(ns) / 1e9);
  const time = async (fn: () => unknown | Promise<unknown>) => {
    const xs: number[] = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = process.hrtime.bigint();
      await fn();
      xs.push(mbps(process.hrtime.bigint() - t0));
    }
    return ctx.median(xs);
  };
  // a round trip copies twice: into the arena, and back out
  const memcpy = await time(() => {
    src.copy(dst);
    dst.copy(src);
  });
  const arenas = new ArenaPair('bench');
  let arena: number;
  try {
    // in-arena write, then the same bytes read back through the file (what reading an output costs)
    const { readSync, openSync, closeSync } = await import('node:fs');
    const fd = openSync(arenas.inPath, 'r');
    arena = await time(() => {
      const r = arenas.write(src);
      let done = 0;
      while (done < bytes) done += readSync(fd, dst, done, bytes - done, r.offset + done);
      arenas.release(r);
    });
    closeSync(fd);
  } finally {
    arenas.close();
  }
  const s = await startServer({
    modelRepositories: [repo],
    modelControlMode: 'explicit',
    loadModels: ['identity_python'],
    httpPort: 0,
    metricsPort: -1,
    logLevel: 'silent',
  });
  const data = new Uint8Array(src.buffer, src.byteOffset, bytes);
  let full: number;
  try {
    full = await time(() =>
      inferAndCollect(s.api, SINGLE_USER, 'identity_python', -1, {
        id: '',
        model: 'identity_python',
        version: -1,
        tenant: '',
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [bytes / 4], data }],
        requestedOutputs: [],
        parameters: {},
        correlationId: 0,
        flags: 0,
        priority: 0,
        timeoutUs: 0,
      }),
    );
  } finally {
    await s.stop();
  }
  return { memcpy, arena, full };
}

export async function benchPython(ctx: BenchContext): Promise<{ addedOverOnnxUs: number; targetMet: boolean }> {
  ctx.log('\n== Python backend: identity_python vs ONNX simple vs Fastify floor; 64 MiB tensors ==');
  const repo = await ctx.makeRepository(['simple']);
  addIdentityPython(repo);
  const warden = await ctx.startWarden(repo);
  const idReq = identityRequest('identity_python');
  const canned = await record(warden.url, idReq);
  const floor = await startCannedFloor(ctx, canned, 'warden-bench-python-');
  const cases: BenchCase[] = [];
  for (const connections of CONNECTIONS) {
    cases.push({ label: `c=${connections}`, target: 'identity_python', server: warden, request: idReq, connections });
    cases.push({ label: `c=${connections}`, target: 'simple (ONNX)', server: warden, request: simpleRequest(), connections });
    cases.push({ label: `c=${connections}`, target: 'fastify floor', server: floor, request: { ...idReq }, connections });
  }
  const { rows, get } = await measureTargets(ctx, cases, ['identity_python', 'simple (ONNX)', 'fastify floor'], [warden, floor]);
  const perReq = (target: string, connections: number) => 1e6 / get(target, connections).rps;
  const addedOverOnnx = perReq('identity_python', 1) - perReq('simple (ONNX)', 1);
  const addedOverFloor = perReq('identity_python', 1) - perReq('fastify floor', 1);
  ctx.log('  64 MiB tensors in-process...');
  const tp = await tensorThroughput(ctx, repo, Math.max(3, ctx.rounds));
  const targetMet = addedOverOnnx < 150;
  const body =
    `${ctx.table(['case', 'target', 'infer/s (min–max)', 'p50 ms', 'p99 ms', 'server CPU µs/req (Warden + stubs)', 'µs/req (1/rps)'], rows)}\n\n` +
    `Medians over ${ctx.rounds} rounds of ${ctx.durationS} s. The floor replays identity_python's ${canned.body.length}-byte JSON answer.\n` +
    `- identity_python adds ${addedOverOnnx.toFixed(1)} µs per request over ONNX simple at concurrency 1 (target < 150 µs: ${targetMet ? 'MET' : 'MISSED'}); ${addedOverFloor.toFixed(1)} µs over the floor.\n` +
    `- 64 MiB FP32, in-process: memcpy there and back ${tp.memcpy.toFixed(0)} MB/s; shared-memory arena write + read ${tp.arena.toFixed(0)} MB/s ` +
    `(${(tp.memcpy / tp.arena).toFixed(2)}× memcpy time; target within 2×: ${tp.memcpy / tp.arena <= 2 ? 'MET' : 'MISSED'}); ` +
    `full identity_python round trip (data plane, stub, numpy, response) ${tp.full.toFixed(0)} MB/s.`;
  ctx.log('\n' + body);
  ctx.section('Python backend (identity_python)', body);
  return { addedOverOnnxUs: addedOverOnnx, targetMet };
}
