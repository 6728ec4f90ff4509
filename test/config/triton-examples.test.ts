/**
 * Every real Triton example config (third_party/triton-examples, vendored) parses, auto-completes,
 * normalises and validates; `simple`'s `/config` JSON is byte-for-byte what Triton prints; the
 * copies model_repository/ serves are identical to the vendored originals.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadModelConfig, modelConfigToJson } from '../../host/src/config/index.js';
import { TRITON_EXAMPLES } from './helpers.js';

/*
 * What Triton prints from GET /v2/models/simple/config for docs/examples/model_repository/simple on a
 * host without GPUs (auto-complete on), constructed field by field from Triton's sources:
 * - triton-inference-server/common protobuf/model_config.proto: the fields, their declaration order
 *   (the order protobuf's JSON printer uses) and proto3 defaults; current protos include
 *   `is_non_linear_format_io` in ModelInput/ModelOutput.
 * - triton-inference-server/core src/model_config_utils.cc:
 *   AutoCompleteBackendFields — platform "onnxruntime_onnx" ⇒ backend "onnxruntime",
 *   default_model_filename "model.onnx"; NormalizeModelConfig — version_policy latest{1},
 *   optimization input/output_pinned_memory enable:true; NormalizeInstanceGroup — no group ⇒ one
 *   group *named after the model*, KIND_AUTO ⇒ KIND_CPU without GPUs, host_policy left "";
 *   SetDefaultInstanceCount — KIND_CPU with backend onnxruntime ⇒ count 2; ModelConfigToJson —
 *   preserve_proto_field_names, always_print_primitive_fields, int64 dims rewritten as numbers.
 * - triton-inference-server/onnxruntime_backend src/onnxruntime.cc ModelState::AutoCompleteConfig —
 *   skipped when the config already lists inputs and outputs, so no dynamic_batching is added.
 * Cross-check: published `curl .../v2/models/densenet_onnx/config` output of the Triton quick start
 * (same situation: ONNX, CPU-only, no instance_group) has exactly this shape, including
 * `"instance_group":[{"name":"densenet_onnx","kind":"KIND_CPU","count":2,...,"host_policy":""}]`.
 */
const io = (name: string, input: boolean) =>
  input
    ? `{"name":"${name}","data_type":"TYPE_INT32","format":"FORMAT_NONE","dims":[16],"is_shape_tensor":false,"allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}`
    : `{"name":"${name}","data_type":"TYPE_INT32","dims":[16],"label_filename":"","is_shape_tensor":false,"is_non_linear_format_io":false}`;
const TRITON_SIMPLE_CONFIG_JSON =
  '{"name":"simple","platform":"onnxruntime_onnx","backend":"onnxruntime","runtime":"",' +
  '"version_policy":{"latest":{"num_versions":1}},"max_batch_size":8,' +
  `"input":[${io('INPUT0', true)},${io('INPUT1', true)}],` +
  `"output":[${io('OUTPUT0', false)},${io('OUTPUT1', false)}],` +
  '"batch_input":[],"batch_output":[],' +
  '"optimization":{"priority":"PRIORITY_DEFAULT","input_pinned_memory":{"enable":true},"output_pinned_memory":{"enable":true},"gather_kernel_buffer_threshold":0,"eager_batching":false},' +
  '"instance_group":[{"name":"simple","kind":"KIND_CPU","count":2,"gpus":[],"secondary_devices":[],"profile":[],"passive":false,"host_policy":""}],' +
  '"default_model_filename":"model.onnx","cc_model_filenames":{},"metric_tags":{},"parameters":{},"model_warmup":[]}';

const models = readdirSync(TRITON_EXAMPLES, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

describe('Triton example models', () => {
  it('finds the example repository', () => {
    expect(models).toEqual(expect.arrayContaining(['simple', 'simple_string', 'simple_int8', 'simple_sequence', 'simple_dyna_sequence', 'addsub_onnx']));
  });

  for (const m of models) {
    it(`${m}: parses, auto-completes, normalises and validates (auto-complete on and off)`, async () => {
      for (const autoComplete of [true, false]) {
        const c = await loadModelConfig(join(TRITON_EXAMPLES, m), { modelName: m, autoComplete, versions: [1] });
        expect(c.name).toBe(m);
        expect(c.backend).toBe('onnxruntime');
        expect(c.default_model_filename).toBe('model.onnx');
        expect(c.instance_group.length).toBeGreaterThan(0);
        for (const g of c.instance_group) expect(g.kind).toBe('KIND_CPU');
        // The in-memory config serialises exactly like Triton's JSON.
        expect(JSON.stringify(c)).toBe(modelConfigToJson(c));
      }
    });
  }

  it('simple: the /config JSON equals what Triton prints', async () => {
    const c = await loadModelConfig(join(TRITON_EXAMPLES, 'simple'), { modelName: 'simple', autoComplete: true, versions: [1] });
    expect(modelConfigToJson(c)).toBe(TRITON_SIMPLE_CONFIG_JSON);
  });

  it('simple_sequence / simple_dyna_sequence: sequence batcher defaults and explicit groups', async () => {
    const seq = await loadModelConfig(join(TRITON_EXAMPLES, 'simple_sequence'), { modelName: 'simple_sequence', autoComplete: true, versions: [1] });
    expect(seq.sequence_batching!.max_sequence_idle_microseconds).toBe(1_000_000);
    expect(seq.sequence_batching!.control_input.map((c) => c.control[0]!.kind)).toEqual(['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY']);
    expect(seq.instance_group).toEqual([
      { name: 'simple_sequence_0', kind: 'KIND_CPU', count: 2, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '' },
    ]);
    const dyna = await loadModelConfig(join(TRITON_EXAMPLES, 'simple_dyna_sequence'), { modelName: 'simple_dyna_sequence', autoComplete: true, versions: [1] });
    expect(dyna.sequence_batching!.oldest).toEqual({
      max_candidate_sequences: 1024,
      preferred_batch_size: [8],
      max_queue_delay_microseconds: 10000,
      preserve_ordering: false,
    });
    expect(dyna.sequence_batching!.max_sequence_idle_microseconds).toBe(10_000_000);
    expect(dyna.sequence_batching!.control_input[3]!.control[0]).toEqual({
      kind: 'CONTROL_SEQUENCE_CORRID',
      int32_false_true: [],
      fp32_false_true: [],
      bool_false_true: [],
      data_type: 'TYPE_UINT64',
    });
    expect(dyna.parameters).toEqual({ execute_delay_ms: { string_value: '3' } });
    expect(dyna.instance_group[0]).toMatchObject({ name: 'simple_dyna_sequence_0', count: 2 });
  });

  it('addsub_onnx: max_batch_size 0, FP32', async () => {
    const c = await loadModelConfig(join(TRITON_EXAMPLES, 'addsub_onnx'), { modelName: 'addsub_onnx', autoComplete: true, versions: [1] });
    expect(c.max_batch_size).toBe(0);
    expect(c.input.map((i) => [i.name, i.data_type, i.dims])).toEqual([
      ['INPUT0', 'TYPE_FP32', [16]],
      ['INPUT1', 'TYPE_FP32', [16]],
    ]);
  });

  it("model_repository/'s copies are identical to the vendored originals, and carry their notice", () => {
    const served = join(TRITON_EXAMPLES, '..', '..', 'model_repository');
    for (const m of ['simple', 'simple_string', 'simple_int8', 'simple_sequence', 'simple_dyna_sequence', 'addsub_onnx']) {
      for (const f of ['config.pbtxt', join('1', 'model.onnx')]) {
        expect(readFileSync(join(served, m, f)).equals(readFileSync(join(TRITON_EXAMPLES, m, f))), `model_repository/${m}/${f}`).toBe(true);
      }
    }
    // The notice beside the copies is the vendored NOTICE.md up to its "In this repository" section.
    const notice = (p: string) => readFileSync(p, 'utf8').split('\n## In this repository\n')[0];
    expect(notice(join(served, 'NOTICE-triton-examples.md'))).toBe(notice(join(TRITON_EXAMPLES, 'NOTICE.md')));
  });
});
