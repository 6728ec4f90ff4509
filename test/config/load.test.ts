/**
 * Server-side auto-complete (spec §5.7, Triton AutoCompleteBackendFields) and loadModelConfig
 * (config.pbtxt / configs/<name>.pbtxt / override JSON / missing config) on real directories.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { autoCompleteFromRepository, loadModelConfig, modelConfigToJson } from '../../host/src/config/index.js';
import type { ModelConfig } from '../../host/src/contract/model-config.js';
import { expectTritonErrorAsync, TRITON_EXAMPLES } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'warden-config-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
/** A model directory `<root>/<n>/<name>` with the given files ('dir/' entries are directories). */
function modelDir(name: string, files: Record<string, string>): string {
  const dir = join(root, String(counter++), name);
  mkdirSync(dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    const p = join(dir, rel);
    if (rel.endsWith('/')) mkdirSync(p, { recursive: true });
    else {
      mkdirSync(join(p, '..'), { recursive: true });
      writeFileSync(p, content);
    }
  }
  return dir;
}

async function complete(files: Record<string, string>, raw: Partial<ModelConfig> = {}, name = 'm', versions = [1]) {
  return autoCompleteFromRepository(raw, name, modelDir(name, files), versions);
}

const fields = (c: Partial<ModelConfig>) => [c.backend, c.platform, c.default_model_filename];

describe('autoCompleteFromRepository', () => {
  it('detects the backend from the version directory', async () => {
    expect(fields(await complete({ '1/model.onnx': '' }))).toEqual(['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
    expect(fields(await complete({ '1/model.onnx/': '' }))).toEqual(['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
    expect(fields(await complete({ '1/model.plan': '' }))).toEqual(['tensorrt', 'tensorrt_plan', 'model.plan']);
    expect(fields(await complete({ '1/model.savedmodel/': '' }))).toEqual(['tensorflow', 'tensorflow_savedmodel', 'model.savedmodel']);
    expect(fields(await complete({ '1/model.graphdef': '' }))).toEqual(['tensorflow', 'tensorflow_graphdef', 'model.graphdef']);
    expect(fields(await complete({ '1/model.xml': '' }))).toEqual(['openvino', undefined, 'model.xml']);
    expect(fields(await complete({ '1/model.pt': '' }))).toEqual(['pytorch', 'pytorch_libtorch', undefined]);
    expect(fields(await complete({ '1/model.pt2': '' }))).toEqual(['pytorch', 'torch_aoti', 'model.pt2']);
    expect(fields(await complete({ '1/model.py': '' }))).toEqual(['python', undefined, 'model.py']);
    expect(fields(await complete({ '1/model.wasm': '' }))).toEqual(['wasm', undefined, 'model.wasm']);
  });

  it('ignores directories where Triton expects files, and vice versa', async () => {
    await expectTritonErrorAsync(complete({ '1/model.plan/': '' }), /Could not determine backend/);
    await expectTritonErrorAsync(complete({ '1/model.savedmodel': '' }), /Could not determine backend/);
    await expectTritonErrorAsync(complete({ '1/model.wasm/': '' }), /Could not determine backend/);
  });

  it('completes from the config fields alone', async () => {
    expect(fields(await complete({}, { platform: 'onnxruntime_onnx' }))).toEqual(['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
    expect(fields(await complete({}, { backend: 'onnxruntime' }))).toEqual(['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
    expect(fields(await complete({}, { platform: 'tensorrt_plan' }))).toEqual(['tensorrt', 'tensorrt_plan', 'model.plan']);
    expect(fields(await complete({}, { default_model_filename: 'model.savedmodel' }))).toEqual(['tensorflow', 'tensorflow_savedmodel', 'model.savedmodel']);
    expect(fields(await complete({}, { backend: 'pytorch' }))).toEqual(['pytorch', 'pytorch_libtorch', 'model.pt']);
    expect(fields(await complete({}, { backend: 'python' }))).toEqual(['python', undefined, 'model.py']);
    expect(fields(await complete({}, { backend: 'identity' }))).toEqual(['identity', undefined, undefined]);
    expect(fields(await complete({ '1/model.onnx': '' }, { backend: 'python', default_model_filename: 'x.py' }))).toEqual(['python', undefined, 'x.py']);
  });

  it('derives a custom backend from a model name of the form model.<backend>', async () => {
    const c = await complete({ '1/anything.bin': '' }, {}, 'my_model.identity');
    expect(c).toEqual({ name: 'my_model.identity', backend: 'identity', default_model_filename: 'model.identity' });
  });

  it('fails like Triton when nothing determines the backend', async () => {
    await expectTritonErrorAsync(
      complete({ '1/weights.bin': '' }, {}, 'plain'),
      "Invalid model name: Could not determine backend for model 'plain' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.",
    );
    await expectTritonErrorAsync(complete({}, {}, 'noversions', []), /Could not determine backend for model 'noversions'/);
  });

  it('fills the name, keeps an explicit one, and does not modify its input', async () => {
    const raw = { name: 'explicit', backend: 'python' };
    const c = await complete({}, raw);
    expect(c.name).toBe('explicit');
    expect(raw).toEqual({ name: 'explicit', backend: 'python' });
    expect((await complete({}, { backend: 'python' })).name).toBe('m');
  });

  it('inspects the first version directory in lexical order, as Triton does', async () => {
    const c = await complete({ '10/model.py': '', '2/model.onnx': '' }, {}, 'm', [2, 10]);
    expect(c.backend).toBe('python');
  });
});

describe('loadModelConfig', () => {
  const simpleText = `name: "simple" platform: "onnxruntime_onnx" max_batch_size: 8
    input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
    output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]`;

  it('loads config.pbtxt and produces a normalised, validated config', async () => {
    const dir = modelDir('simple', { 'config.pbtxt': simpleText, '1/model.onnx': '' });
    const c = await loadModelConfig(dir, { modelName: 'simple', autoComplete: true, versions: [1] });
    expect(c.instance_group[0]).toMatchObject({ name: 'simple', kind: 'KIND_CPU', count: 2 });
    expect(c.backend).toBe('onnxruntime');
  });

  it('without config.pbtxt: auto-completes when enabled, error when disabled', async () => {
    const dir = modelDir('auto', { '1/model.onnx': '' });
    const c = await loadModelConfig(dir, { modelName: 'auto', autoComplete: true, versions: [1] });
    expect(modelConfigToJson(c)).toContain('"name":"auto","platform":"onnxruntime_onnx","backend":"onnxruntime"');
    await expectTritonErrorAsync(loadModelConfig(dir, { modelName: 'auto', autoComplete: false, versions: [1] }), 'model configuration is not provided');
    const unknown = modelDir('unknown', { '1/weights.bin': '' });
    await expectTritonErrorAsync(
      loadModelConfig(unknown, { modelName: 'unknown', autoComplete: true, versions: [1] }),
      /Could not determine backend for model 'unknown'/,
    );
  });

  it('with auto-complete disabled still fills the backend fields (Triton does this server-side always)', async () => {
    const dir = join(TRITON_EXAMPLES, 'simple');
    const c = await loadModelConfig(dir, { modelName: 'simple', autoComplete: false, versions: [1] });
    expect([c.backend, c.default_model_filename]).toEqual(['onnxruntime', 'model.onnx']);
  });

  it('reads configs/<name>.pbtxt when it exists and falls back to config.pbtxt', async () => {
    const dir = modelDir('simple', {
      'config.pbtxt': simpleText,
      'configs/big.pbtxt': simpleText.replace('max_batch_size: 8', 'max_batch_size: 32'),
      '1/model.onnx': '',
    });
    const big = await loadModelConfig(dir, { modelName: 'simple', autoComplete: true, versions: [1], configName: 'big' });
    expect(big.max_batch_size).toBe(32);
    const fallback = await loadModelConfig(dir, { modelName: 'simple', autoComplete: true, versions: [1], configName: 'absent' });
    expect(fallback.max_batch_size).toBe(8);
    await expectTritonErrorAsync(
      loadModelConfig(dir, { modelName: 'simple', autoComplete: true, versions: [1], configName: '../x' }),
      "invalid model config name '../x'",
    );
  });

  it('uses the override JSON instead of the file; its errors are prefixed as in Triton', async () => {
    const dir = modelDir('simple', { 'config.pbtxt': simpleText, '1/model.onnx': '' });
    const override = JSON.stringify({
      name: 'simple',
      backend: 'onnxruntime',
      max_batch_size: 2,
      input: [{ name: 'A', data_type: 'TYPE_FP32', dims: [1] }],
      output: [{ name: 'B', data_type: 'type_fp32', dims: [1] }],
    });
    const c = await loadModelConfig(dir, { modelName: 'simple', autoComplete: true, versions: [1], overrideJson: override });
    expect([c.max_batch_size, c.input[0]!.name, c.output[0]!.data_type, c.platform]).toEqual([2, 'A', 'TYPE_FP32', 'onnxruntime_onnx']);
    await expectTritonErrorAsync(
      loadModelConfig(dir, { modelName: 'simple', autoComplete: true, versions: [1], overrideJson: { nmae: 'x' } }),
      "Invalid config override: unknown field 'nmae' in ModelConfig",
    );
  });

  it('reports pbtxt errors with the model-relative file name, line and column', async () => {
    const dir = modelDir('broken', { 'config.pbtxt': 'name: "broken"\nmax_batch_size: 8\ninput [ { nme: "x" } ]\n', '1/model.onnx': '' });
    await expectTritonErrorAsync(
      loadModelConfig(dir, { modelName: 'broken', autoComplete: true, versions: [1] }),
      "broken/config.pbtxt:3:11: unknown field 'nme' in ModelInput (at input[0])",
    );
    const bin = modelDir('binary', { '1/model.onnx': '' });
    writeFileSync(join(bin, 'config.pbtxt'), Buffer.from([0x6e, 0x61, 0x6d, 0x65, 0x3a, 0x20, 0x22, 0xff, 0x22]));
    await expectTritonErrorAsync(
      loadModelConfig(bin, { modelName: 'binary', autoComplete: true, versions: [1] }),
      'binary/config.pbtxt: file is not valid UTF-8',
    );
  });

  it('reports an unreadable config.pbtxt as INTERNAL', async () => {
    const dir = modelDir('unreadable', { 'config.pbtxt/': '', '1/model.py': '' });
    await expectTritonErrorAsync(
      loadModelConfig(dir, { modelName: 'unreadable', autoComplete: true, versions: [1] }),
      new RegExp(`^failed to open text file for read ${join(dir, 'config.pbtxt')}: EISDIR`),
      'INTERNAL',
    );
  });

  it('accepts a UTF-8 byte-order mark', async () => {
    const dir = modelDir('bom', { 'config.pbtxt': '\ufeffbackend: "python"', '1/model.py': '' });
    expect((await loadModelConfig(dir, { modelName: 'bom', autoComplete: true, versions: [1] })).backend).toBe('python');
  });

  it('requires the config name to equal the directory name', async () => {
    const dir = modelDir('dir_name', { 'config.pbtxt': 'name: "other" backend: "python"', '1/model.py': '' });
    await expectTritonErrorAsync(
      loadModelConfig(dir, { modelName: 'dir_name', autoComplete: true, versions: [1] }),
      "unexpected directory name 'dir_name' for model 'other', directory name must equal model name",
    );
  });

  it('reports validation errors (e.g. KIND_GPU on a CPU-only host) as INVALID_ARG', async () => {
    const dir = modelDir('gpu', { 'config.pbtxt': 'backend: "python" instance_group { kind: KIND_GPU }', '1/model.py': '' });
    await expectTritonErrorAsync(
      loadModelConfig(dir, { modelName: 'gpu', autoComplete: true, versions: [1] }),
      'instance group gpu_0 of model gpu has kind KIND_GPU but no GPUs are available',
    );
    const ok = await loadModelConfig(dir, { modelName: 'gpu', autoComplete: true, versions: [1], gpuCount: 1 });
    expect(ok.instance_group[0]).toMatchObject({ kind: 'KIND_GPU', gpus: [0] });
  });

  it('loads a copy of every Triton example from a fresh directory (no shared state)', async () => {
    const dir = join(root, 'copy', 'simple_dyna_sequence');
    cpSync(join(TRITON_EXAMPLES, 'simple_dyna_sequence'), dir, { recursive: true });
    const c = await loadModelConfig(dir, { modelName: 'simple_dyna_sequence', autoComplete: true, versions: [1] });
    expect(c.sequence_batching!.oldest!.max_candidate_sequences).toBe(1024);
  });
});
