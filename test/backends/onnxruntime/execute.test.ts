/**
 * OnnxInstance.execute on Triton's `simple` (INT32 [-1,16] add/sub, max_batch_size 8): one request
 * (the no-array fast path) and a dynamic batch of several (concatenated along dim 0, split back),
 * each request getting exactly the outputs it asked for.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxInstance, OnnxRuntimeResolver } from '../../../host/src/backends/onnxruntime/index.js';
import type { BackendModel, InstanceSpec, ModelLoadContext } from '../../../host/src/contract/types.js';
import { request, tensor } from '../../helpers/backend-request.js';
import { collector, config } from '../../helpers/model-version.js';

const DIR = join(__dirname, '..', '..', '..', 'third_party', 'triton-examples', 'simple');
const SPEC: InstanceSpec = { name: 'simple_0', groupName: 'simple', kind: 'KIND_CPU', deviceId: 0 } as InstanceSpec;
const resolver = new OnnxRuntimeResolver();
let model: BackendModel;
let inst: OnnxInstance;

beforeAll(async () => {
  const cfg = config(readFileSync(join(DIR, 'config.pbtxt'), 'utf8'), 'simple');
  const backend = (await resolver.resolve({ config: cfg } as never))!;
  model = await backend.loadModel({
    key: { namespace: '', name: 'simple' },
    name: 'simple',
    version: 1,
    origin: { kind: 'repository', repository: join(DIR, '..') },
    server: undefined as never,
    modelPath: DIR,
    versionPath: join(DIR, '1'),
    config: cfg,
    autoCompleteConfig: false,
    logger: pino({ level: 'silent' }),
  } as ModelLoadContext);
  inst = (await model.createInstance(SPEC)) as OnnxInstance;
});

afterAll(async () => {
  await inst?.finalize();
  await model?.finalize();
  await resolver.finalizeAll();
});

const ints = (rows: number, f: (i: number) => number) => Int32Array.from({ length: rows * 16 }, (_, i) => f(i));
const req = (rows: number, a: Int32Array, b: Int32Array, outputs: string[]) =>
  request('simple', [tensor('INPUT0', 'INT32', [rows, 16], a), tensor('INPUT1', 'INT32', [rows, 16], b)], outputs, { batchSize: rows });
const values = (t: { data: Uint8Array }) => Array.from(new Int32Array(t.data.buffer, t.data.byteOffset, t.data.byteLength / 4));

describe('OnnxInstance.execute', () => {
  it('one request: both outputs, or only the one asked for (also when named twice)', async () => {
    const a = ints(1, (i) => i);
    const b = ints(1, () => 1);
    for (const [outputs, names] of [
      [
        ['OUTPUT0', 'OUTPUT1'],
        ['OUTPUT0', 'OUTPUT1'],
      ],
      [['OUTPUT1'], ['OUTPUT1']],
      [['OUTPUT0', 'OUTPUT0'], ['OUTPUT0']],
    ] as const) {
      const { sender, done } = collector();
      await inst.execute([req(1, a, b, [...outputs])], [sender]);
      const { response, error } = await done;
      expect(error).toBeUndefined();
      expect(response!.outputs.map((t) => t.name)).toEqual(names);
      for (const t of response!.outputs) {
        expect(t.shape).toEqual([1, 16]);
        expect(values(t)).toEqual(Array.from(a, (x, i) => (t.name === 'OUTPUT0' ? x + b[i]! : x - b[i]!)));
      }
    }
  });

  it('a batch of three requests (1, 2 and 1 rows) runs once and each gets its own rows and outputs', async () => {
    const rows = [1, 2, 1];
    const reqs = rows.map((r, k) =>
      req(
        r,
        ints(r, (i) => i + 100 * k),
        ints(r, () => k + 1),
        k === 1 ? ['OUTPUT1'] : ['OUTPUT0', 'OUTPUT1'],
      ),
    );
    const cs = rows.map(() => collector());
    await inst.execute(
      reqs,
      cs.map((c) => c.sender),
    );
    for (const [k, c] of cs.entries()) {
      const { response, error } = await c.done;
      expect(error).toBeUndefined();
      expect(response!.outputs.map((t) => t.name)).toEqual(k === 1 ? ['OUTPUT1'] : ['OUTPUT0', 'OUTPUT1']);
      const a = values(reqs[k]!.inputs[0]!);
      for (const t of response!.outputs) {
        expect(t.shape).toEqual([rows[k], 16]);
        expect(values(t)).toEqual(a.map((x) => (t.name === 'OUTPUT0' ? x + k + 1 : x - k - 1)));
      }
    }
  });
});
