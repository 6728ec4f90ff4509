/**
 * Warden's in-process ONNX Runtime engine (native/rust/ort-engine through the addon's `ort` binding,
 * host/src/backends/onnxruntime/native-engine.ts): right answers on Triton's `simple` and an
 * Identity graph, zero-copy large outputs that outlive the session's run, unaligned input views,
 * and hostile calls to the raw binding (bad counts, ranks, sizes, types) answered with an error,
 * never a crash. Then the backend: which engine inline runs go through, and that both give the same
 * answers.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityConfig, identityModel } from '../../../bench/onnx-model.js';
import { OnnxInstance, OnnxRuntimeResolver } from '../../../host/src/backends/onnxruntime/index.js';
import { NativeSession, nativeOrtEngine, nativeOrtEngineUnavailable } from '../../../host/src/backends/onnxruntime/native-engine.js';
import type { OrtEngineBinding } from '../../../host/src/platform/addon.js';
import type { TritonError } from '../../../host/src/contract/errors.js';
import type { InstanceSpec, ModelLoadContext, Tensor } from '../../../host/src/contract/types.js';
import { request, tensor } from '../../helpers/backend-request.js';
import { collector, config } from '../../helpers/model-version.js';
import { sleep } from '../../helpers/wait.js';

const SIMPLE = join(__dirname, '..', '..', '..', 'model_repository', 'simple', '1', 'model.onnx');
const SIMPLE_STRING_DIR = join(__dirname, '..', '..', '..', 'model_repository', 'simple_string');
const A = Int32Array.from({ length: 16 }, (_, i) => i * 3 - 7);
const B = Int32Array.from({ length: 16 }, (_, i) => 100 - i);

let dir: string;
let engine: OrtEngineBinding;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'warden-ort-engine-'));
  mkdirSync(join(dir, 'id', '1'), { recursive: true });
  writeFileSync(join(dir, 'id', '1', 'model.onnx'), identityModel());
  writeFileSync(join(dir, 'id', 'config.pbtxt'), identityConfig('id'));
  // the addon is built by `npm install` (scripts/build-native.mjs) on every supported machine
  const e = nativeOrtEngine();
  expect(e, nativeOrtEngineUnavailable()).toBeDefined();
  engine = e!;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const int32 = (t: Tensor) => Array.from(new Int32Array(t.data.buffer, t.data.byteOffset, t.data.byteLength / 4));
const INT32_OUTS = [
  { name: 'OUTPUT0', datatype: 'INT32' as const },
  { name: 'OUTPUT1', datatype: 'INT32' as const },
];

describe('in-process ONNX Runtime engine', () => {
  it('runs simple: sums and differences, shapes and types as the graph gives them', async () => {
    const s = await NativeSession.open(engine, SIMPLE, 1, 1);
    try {
      const out = s.run([tensor('INPUT0', 'INT32', [1, 16], A), tensor('INPUT1', 'INT32', [1, 16], B)], INT32_OUTS);
      expect(out.map((t) => [t.name, t.datatype, t.shape])).toEqual([
        ['OUTPUT0', 'INT32', [1, 16]],
        ['OUTPUT1', 'INT32', [1, 16]],
      ]);
      expect(int32(out[0]!)).toEqual(Array.from(A, (v, i) => v + B[i]!));
      expect(int32(out[1]!)).toEqual(Array.from(A, (v, i) => v - B[i]!));
      // one output only, in the order asked
      const one = s.run([tensor('INPUT0', 'INT32', [1, 16], A), tensor('INPUT1', 'INT32', [1, 16], B)], [INT32_OUTS[1]!]);
      expect(one.map((t) => t.name)).toEqual(['OUTPUT1']);
    } finally {
      await s.close();
    }
  });

  it('reads inputs at any byte offset (a binary request body views them unaligned)', async () => {
    const s = await NativeSession.open(engine, SIMPLE, 1, 1);
    try {
      const body = new Uint8Array(1 + 64 + 64);
      body.set(bytes(A), 1);
      body.set(bytes(B), 65);
      const out = s.run(
        [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: body.subarray(1, 65) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: body.subarray(65, 129) },
        ],
        INT32_OUTS,
      );
      expect(int32(out[0]!)).toEqual(Array.from(A, (v, i) => v + B[i]!));
    } finally {
      await s.close();
    }
  });

  it("a large output (ONNX Runtime's memory, handed over without a copy) stays readable after more runs and after close", async () => {
    const s = await NativeSession.open(engine, join(dir, 'id', '1', 'model.onnx'), 1, 1);
    const n = 100_000; // 400 KB: over the copy threshold
    const x = Float32Array.from({ length: n }, (_, i) => i / 7);
    const first = s.run([tensor('INPUT0', 'FP32', [n], x)], [{ name: 'OUTPUT0', datatype: 'FP32' }])[0]!;
    for (let i = 0; i < 5; i++) s.run([tensor('INPUT0', 'FP32', [n], new Float32Array(n).fill(i))], [{ name: 'OUTPUT0', datatype: 'FP32' }]);
    await s.close();
    expect(first.shape).toEqual([n]);
    expect(first.data.byteLength).toBe(n * 4);
    expect(new Float32Array(first.data.buffer, first.data.byteOffset, n)).toEqual(x);
    // small and empty outputs (copied)
    const s2 = await NativeSession.open(engine, join(dir, 'id', '1', 'model.onnx'), 1, 1);
    try {
      const empty = s2.run([tensor('INPUT0', 'FP32', [0], new Float32Array(0))], [{ name: 'OUTPUT0', datatype: 'FP32' }])[0]!;
      expect(empty.shape).toEqual([0]);
      expect(empty.data.byteLength).toBe(0);
    } finally {
      await s2.close();
    }
  });

  it('outputs collected after their session closed are released safely (ONNX Runtime memory outlives the session)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let kept: Tensor[] = [];
    for (let round = 0; round < 6; round++) {
      const s = await NativeSession.open(engine, join(dir, 'id', '1', 'model.onnx'), 1, 1);
      for (let i = 0; i < 10; i++) {
        kept.push(s.run([tensor('INPUT0', 'FP32', [50_000], new Float32Array(50_000).fill(round))], [{ name: 'OUTPUT0', datatype: 'FP32' }])[0]!);
      }
      await s.close();
      gc(); // finalizers of earlier rounds' outputs run after their sessions are gone
      expect(new Float32Array(kept.at(-1)!.data.buffer, kept.at(-1)!.data.byteOffset, 50_000)[49_999]).toBe(round);
      kept = kept.slice(-5);
    }
    kept.length = 0; // the last outputs too: their finalizers may run now
    gc();
    await sleep(20);
    gc();
  });

  it('answers bad runs with INTERNAL and the reason, and keeps serving', async () => {
    const s = await NativeSession.open(engine, SIMPLE, 1, 1);
    try {
      const bad: [Tensor[], string][] = [
        // bytes that do not match the shape
        [[tensor('INPUT0', 'INT32', [1, 16], new Int32Array(15)), tensor('INPUT1', 'INT32', [1, 16], B)], 'holds 60 bytes'],
        // a type the graph does not take (ONNX Runtime's own check)
        [[tensor('INPUT0', 'FP32', [1, 16], new Float32Array(16)), tensor('INPUT1', 'INT32', [1, 16], B)], 'Unexpected input data type'],
        // a shape the graph does not take
        [[tensor('INPUT0', 'INT32', [1, 15], new Int32Array(15)), tensor('INPUT1', 'INT32', [1, 16], B)], 'invalid dimensions'],
        // an input the graph does not have
        [[tensor('NOPE', 'INT32', [1, 16], A)], "no input 'NOPE'"],
        // a type the engine does not pass
        [[{ name: 'INPUT0', datatype: 'BYTES', shape: [1], data: new Uint8Array(5) }], 'not passed'],
      ];
      for (const [inputs, why] of bad) {
        let err: TritonError | undefined;
        try {
          s.run(inputs, INT32_OUTS);
        } catch (e) {
          err = e as TritonError;
        }
        expect(err?.code, why).toBe('INTERNAL');
        expect(err?.message).toContain(why);
      }
      // an output the config types differently from the graph
      expect(() => s.run([tensor('INPUT0', 'INT32', [1, 16], A), tensor('INPUT1', 'INT32', [1, 16], B)], [{ name: 'OUTPUT0', datatype: 'FP32' }])).toThrow(
        /OUTPUT0.*element type 6.*FP32/,
      );
      const ok = s.run([tensor('INPUT0', 'INT32', [1, 16], A), tensor('INPUT1', 'INT32', [1, 16], B)], INT32_OUTS);
      expect(int32(ok[0]!)[0]).toBe(A[0]! + B[0]!);
    } finally {
      await s.close();
    }
    expect(() => s.run([tensor('INPUT0', 'INT32', [1, 16], A), tensor('INPUT1', 'INT32', [1, 16], B)], INT32_OUTS)).toThrow(/closed/);
  });

  it("a model file that does not load rejects the open with ONNX Runtime's reason", async () => {
    const junk = join(dir, 'junk.onnx');
    writeFileSync(junk, 'not a model');
    await expect(NativeSession.open(engine, junk, 1, 1)).rejects.toThrow(/protobuf|parse|load/i);
    await expect(NativeSession.open(engine, join(dir, 'absent.onnx'), 1, 1)).rejects.toThrow();
  });

  it('the raw binding refuses malformed calls (counts, ranks, dims, buffers) before it allocates, without crashing', async () => {
    const { session } = await engine.open(SIMPLE, 1, 1);
    const shapes = new Float64Array(2 * (2 + engine.maxRank));
    const data = [bytes(A), bytes(B)];
    const good = [2, 2, 0, 6, 2, 1, 16, 1, 6, 2, 1, 16, 0, 1];
    expect(engine.run(session, new Float64Array(good), data, shapes)).toHaveLength(2);
    const cases: [number[], Uint8Array[] | unknown[], RegExp][] = [
      [good.slice(0, 9), data, /truncated/],
      [[1e9, 2, ...good.slice(2)], data, /input count/],
      [[2, 4097, ...good.slice(2)], data, /output count/],
      [[2, 2, 0, 6, 33, ...good.slice(5)], data, /rank/],
      [[2, 2, 0, 6, 2, -1, 16, 1, 6, 2, 1, 16, 0, 1], data, /dimension/],
      [[2, 2, 0, 6, 2, 1.5, 16, 1, 6, 2, 1, 16, 0, 1], data, /dimension/],
      [[2, 2, 0, 6, 2, 2 ** 40, 2 ** 40, 1, 6, 2, 1, 16, 0, 1], data, /overflow|holds/],
      [[2, 2, 7, 6, 2, 1, 16, 1, 6, 2, 1, 16, 0, 1], data, /out of range/],
      [[2, 2, 0, 6, 2, 1, 16, 1, 6, 2, 1, 16, 0, 9], data, /out of range/],
      [[2, 2, 0, 8, 2, 1, 16, 1, 6, 2, 1, 16, 0, 1], data, /not supported/],
      [good, [bytes(A)], /one data buffer per input/],
      [good, [new Int32Array(16), bytes(B)], /Uint8Array/],
      [good, ['x', bytes(B)], /Uint8Array/],
    ];
    for (const [spec, d, why] of cases) {
      expect(() => engine.run(session, new Float64Array(spec), d as Uint8Array[], shapes), String(why)).toThrow(why);
    }
    expect(() => engine.run(session, new Float64Array(good), data, new Float64Array(3))).toThrow(/shapes buffer/);
    expect(() => engine.run({} as object, new Float64Array(good), data, shapes)).toThrow(/session/);
    // random specs: an error or a result, never a crash
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: -3, max: 40 }), fc.double()), { maxLength: 24 }), (spec) => {
        try {
          engine.run(session, new Float64Array(spec), data, shapes);
        } catch (e) {
          expect(e).toBeInstanceOf(Error);
        }
      }),
      { numRuns: 500 },
    );
    await engine.close(session);
    expect(() => engine.run(session, new Float64Array(good), data, shapes)).toThrow(/closed/);
  });
});

const SPEC: InstanceSpec = { name: 'm_0', groupName: 'm', kind: 'KIND_CPU', deviceId: 0 } as InstanceSpec;

describe("the onnxruntime backend's inline engine", () => {
  const resolver = new OnnxRuntimeResolver();
  afterAll(() => resolver.finalizeAll());

  async function load(name: string, pbtxt: string, modelDir: string) {
    const cfg = config(pbtxt + INLINE_ALWAYS, name);
    const backend = (await resolver.resolve({ config: cfg } as never))!;
    return backend.loadModel({
      key: { namespace: '', name },
      name,
      version: 1,
      origin: { kind: 'repository', repository: dir },
      server: undefined as never,
      modelPath: modelDir,
      versionPath: join(modelDir, '1'),
      config: cfg,
      autoCompleteConfig: true,
      logger: pino({ level: 'silent' }),
    } as ModelLoadContext);
  }

  /** Keeps every run of these small models inline, however slow a loaded test machine makes one. */
  const INLINE_ALWAYS = 'parameters { key: "inline_run_max_us" value: { string_value: "10000000" } }\n';

  /** Runs `inst` until its inline session is open and has served a run; returns the last answer. */
  async function runInline(inst: OnnxInstance, req: () => ReturnType<typeof request>) {
    let outcome;
    for (let i = 0; i < 50 && inst.runs.inline < 2; i++) {
      const { sender, done } = collector();
      await inst.execute([req()], [sender]);
      outcome = await done;
      await sleep(2); // the inline session opens in the background
    }
    expect(inst.runs.inline, JSON.stringify(inst.runs)).toBeGreaterThanOrEqual(2);
    return outcome!;
  }

  it('inline runs go through the engine by default, through onnxruntime-node with inline_engine, with the same answers', async () => {
    const simpleDir = join(dir, 'simple');
    mkdirSync(join(simpleDir, '1'), { recursive: true });
    writeFileSync(join(simpleDir, '1', 'model.onnx'), (await import('node:fs')).readFileSync(SIMPLE));
    const pbtxt = (extra: string) => `name: "simple"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n${extra}
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]`;
    const answers: Record<string, unknown> = {};
    for (const [engineParam, expected] of [
      ['', 'warden'],
      ['parameters { key: "inline_engine" value: { string_value: "onnxruntime-node" } }', 'onnxruntime-node'],
    ] as const) {
      const m = await load('simple', pbtxt(engineParam), simpleDir);
      const inst = (await m.createInstance(SPEC)) as OnnxInstance;
      try {
        const outcome = await runInline(inst, () =>
          request('simple', [tensor('INPUT0', 'INT32', [1, 16], A), tensor('INPUT1', 'INT32', [1, 16], B)], ['OUTPUT1', 'OUTPUT0']),
        );
        expect(inst.inlineEngine).toBe(expected);
        answers[expected] = outcome.response!.outputs.map((t) => [t.name, t.shape, int32(t)]);
      } finally {
        await inst.finalize();
        await m.finalize();
      }
    }
    expect(answers.warden).toEqual([
      ['OUTPUT1', [1, 16], Array.from(A, (v, i) => v - B[i]!)],
      ['OUTPUT0', [1, 16], Array.from(A, (v, i) => v + B[i]!)],
    ]);
    expect(answers['onnxruntime-node']).toEqual(answers.warden);
  });

  it('a model with string tensors keeps onnxruntime-node inline; an unknown inline_engine fails the load', async () => {
    const { readFileSync } = await import('node:fs');
    const m = await load('simple_string', readFileSync(join(SIMPLE_STRING_DIR, 'config.pbtxt'), 'utf8'), SIMPLE_STRING_DIR);
    const inst = (await m.createInstance(SPEC)) as OnnxInstance;
    const enc = (vals: number[]) => {
      const parts = vals.map((v) => Buffer.from(String(v)));
      const out = Buffer.alloc(parts.reduce((n, p) => n + 4 + p.length, 0));
      let off = 0;
      for (const p of parts) {
        out.writeUInt32LE(p.length, off);
        p.copy(out, off + 4);
        off += 4 + p.length;
      }
      return out;
    };
    try {
      const outcome = await runInline(inst, () =>
        request(
          'simple_string',
          [
            { name: 'INPUT0', datatype: 'BYTES', shape: [1, 16], data: enc(Array.from(A)) },
            { name: 'INPUT1', datatype: 'BYTES', shape: [1, 16], data: enc(Array.from(B)) },
          ],
          ['OUTPUT0'],
        ),
      );
      expect(inst.inlineEngine).toBe('onnxruntime-node');
      expect(outcome.response!.outputs[0]!.name).toBe('OUTPUT0');
    } finally {
      await inst.finalize();
      await m.finalize();
    }
    await expect(
      load('id', identityConfig('id') + 'parameters { key: "inline_engine" value: { string_value: "tensorrt" } }\n', join(dir, 'id')),
    ).rejects.toMatchObject({ code: 'INVALID_ARG', message: expect.stringContaining('inline_engine') });
  });
});
