/**
 * Normalisation (spec §5.5–§5.7): every default Triton core fills (NormalizeModelConfig,
 * NormalizeInstanceGroup, SetDefaultInstanceCount), key order, idempotence.
 */
import { describe, expect, it } from 'vitest';
import { defaultHostPolicy, normalizeModelConfig, parseModelConfigPbtxt as parse } from '../../host/src/config/index.js';
import { ModelConfigDesc } from '../../host/src/config/schema.js';
import type { ModelConfig } from '../../host/src/contract/model-config.js';
import { expectTritonError, fixture } from './helpers.js';

const norm = (text: string, gpuCount = 0, modelName = 'm') => normalizeModelConfig(parse(text), { modelName, gpuCount });

describe('normalizeModelConfig', () => {
  it('fills name, version policy and every primitive default, keys in proto declaration order', () => {
    const c = norm('backend: "python"');
    expect(c.name).toBe('m');
    expect(c.version_policy).toEqual({ latest: { num_versions: 1 } });
    expect(Object.keys(c)).toEqual(
      ModelConfigDesc.fields
        .map((f) => f.name)
        .filter(
          (n) =>
            ![
              'dynamic_batching',
              'sequence_batching',
              'ensemble_scheduling',
              'model_operations',
              'model_transaction_policy',
              'model_repository_agents',
              'response_cache',
              'model_metrics',
            ].includes(n),
        ),
    );
    expect(c.optimization).toEqual({
      priority: 'PRIORITY_DEFAULT',
      input_pinned_memory: { enable: true },
      output_pinned_memory: { enable: true },
      gather_kernel_buffer_threshold: 0,
      eager_batching: false,
    });
    expect(c.model_warmup).toEqual([]);
    expect(c.parameters).toEqual({});
  });

  it('keeps an explicit version policy and explicit pinned-memory settings', () => {
    const c = norm('version_policy { specific { versions: [2] } } optimization { input_pinned_memory { enable: false } }');
    expect(c.version_policy).toEqual({ specific: { versions: [2] } });
    expect(c.optimization!.input_pinned_memory).toEqual({ enable: false });
    expect(c.optimization!.output_pinned_memory).toEqual({ enable: true });
  });

  it('defaults dynamic batching preferred sizes to [max_batch_size], only when batching', () => {
    expect(norm('max_batch_size: 8 dynamic_batching {}').dynamic_batching).toEqual({
      preferred_batch_size: [8],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
    });
    expect(norm('max_batch_size: 0 dynamic_batching {}').dynamic_batching!.preferred_batch_size).toEqual([]);
    expect(norm('max_batch_size: 8 dynamic_batching { preferred_batch_size: [2, 4] }').dynamic_batching!.preferred_batch_size).toEqual([2, 4]);
    expect(norm('max_batch_size: 8').dynamic_batching).toBeUndefined();
  });

  it('defaults the sequence idle time to 1 s and oldest preferred sizes to [max_batch_size]', () => {
    const s = norm('max_batch_size: 4 sequence_batching { oldest { max_candidate_sequences: 3 } }').sequence_batching!;
    expect(s.max_sequence_idle_microseconds).toBe(1_000_000);
    expect(s.oldest!.preferred_batch_size).toEqual([4]);
    expect(s.direct).toBeUndefined();
    expect(Object.keys(s)).toEqual(['oldest', 'max_sequence_idle_microseconds', 'control_input', 'state', 'iterative_sequence']);
    expect(norm('sequence_batching { max_sequence_idle_microseconds: 5 }').sequence_batching!.max_sequence_idle_microseconds).toBe(5);
  });

  it('leaves ensembles without optimization and instance groups', () => {
    const c = normalizeModelConfig(parse(fixture('oneof-alternatives-3.pbtxt')), { modelName: 'ensemble_alt', gpuCount: 1 });
    expect(c.optimization).toBeUndefined();
    expect(c.instance_group).toEqual([]);
    expect(c.ensemble_scheduling!.step[0]).toEqual({
      model_name: 'preprocess',
      model_version: -1,
      input_map: { RAW: 'IMAGE' },
      output_map: { OUT: 'preprocessed' },
      model_namespace: '',
    });
  });

  it('does not modify its input and is idempotent', () => {
    const raw = parse(fixture('every-field.pbtxt'));
    const copy = structuredClone(raw);
    const once = normalizeModelConfig(raw, { modelName: 'every_field', gpuCount: 2 });
    expect(raw).toEqual(copy);
    const twice = normalizeModelConfig(once, { modelName: 'every_field', gpuCount: 2 });
    expect(twice).toEqual(once);
    expect(JSON.stringify(twice)).toBe(JSON.stringify(once));
  });

  it('rejects structurally invalid input', () => {
    expectTritonError(
      () => normalizeModelConfig({ bogus: 1 } as never, { modelName: 'm', gpuCount: 0 }),
      "invalid model configuration: unknown field 'bogus' in ModelConfig",
    );
    expectTritonError(
      () => normalizeModelConfig({ input: [{ dims: ['1'] }] } as never, { modelName: 'm', gpuCount: 0 }),
      /expected an integer, got "1" \(at input\[0\]\.dims\[0\]\)/,
    );
    expectTritonError(
      () => normalizeModelConfig({ input: [{ data_type: 'TYPE_FP64X' }] } as never, { modelName: 'm', gpuCount: 0 }),
      /invalid inference\.DataType value/,
    );
  });
});

describe('instance group normalisation', () => {
  const group = (c: ModelConfig) => c.instance_group;

  it('creates one group named after the model; onnxruntime/tensorflow CPU groups get 2 instances', () => {
    expect(group(norm('backend: "onnxruntime"'))).toEqual([
      { name: 'm', kind: 'KIND_CPU', count: 2, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '' },
    ]);
    expect(group(norm('backend: "tensorflow"'))[0]!.count).toBe(2);
    expect(group(norm('backend: "python"'))[0]!.count).toBe(1);
    expect(group(norm('backend: "wasm"'))[0]!.count).toBe(1);
  });

  it('names unnamed groups <model>_<index> and keeps explicit names and counts', () => {
    const g = group(norm('backend: "onnxruntime" instance_group [ { kind: KIND_CPU }, { name: "mine" count: 3 kind: KIND_CPU }, { kind: KIND_MODEL } ]'));
    expect(g.map((x) => [x.name, x.kind, x.count])).toEqual([
      ['m_0', 'KIND_CPU', 2],
      ['mine', 'KIND_CPU', 3],
      ['m_2', 'KIND_MODEL', 1],
    ]);
  });

  it('resolves KIND_AUTO: CPU without GPUs, GPU when every listed gpu exists', () => {
    expect(group(norm('instance_group { count: 1 }'))[0]!.kind).toBe('KIND_CPU');
    expect(group(norm('instance_group { count: 1 }', 2))[0]).toMatchObject({ kind: 'KIND_GPU', gpus: [0, 1] });
    expect(group(norm('instance_group { gpus: [1] }', 2))[0]).toMatchObject({ kind: 'KIND_GPU', gpus: [1] });
    expect(group(norm('instance_group { gpus: [3] }', 2))[0]).toMatchObject({ kind: 'KIND_CPU', gpus: [3] });
    expect(group(norm('', 1))[0]).toMatchObject({ name: 'm', kind: 'KIND_GPU', gpus: [0], count: 1 });
  });

  it('fills KIND_GPU gpus with every GPU, and leaves them empty without GPUs (validation rejects it)', () => {
    expect(group(norm('instance_group { kind: KIND_GPU }', 3))[0]!.gpus).toEqual([0, 1, 2]);
    expect(group(norm('instance_group { kind: KIND_GPU }', 0))[0]!.gpus).toEqual([]);
  });

  it("uses a backend's preferred instance groups", () => {
    const opts = (gpuCount: number) => ({
      modelName: 'm',
      gpuCount,
      preferredInstanceGroups: [
        { kind: 'KIND_GPU' as const, count: 4, gpus: [1] },
        { kind: 'KIND_CPU' as const, count: 3 },
      ],
    });
    expect(normalizeModelConfig({}, opts(2)).instance_group[0]).toMatchObject({ name: 'm', kind: 'KIND_GPU', count: 4, gpus: [1] });
    expect(normalizeModelConfig({}, opts(0)).instance_group[0]).toMatchObject({ name: 'm', kind: 'KIND_CPU', count: 3, gpus: [] });
    expect(normalizeModelConfig(parse('instance_group { kind: KIND_CPU }'), opts(0)).instance_group[0]!.count).toBe(3);
  });

  it('derives the per-instance host policy name when the group has none', () => {
    expect(defaultHostPolicy({ kind: 'KIND_CPU', host_policy: '' }, 0)).toBe('cpu');
    expect(defaultHostPolicy({ kind: 'KIND_MODEL', host_policy: '' }, 0)).toBe('model');
    expect(defaultHostPolicy({ kind: 'KIND_GPU', host_policy: '' }, 3)).toBe('gpu_3');
    expect(defaultHostPolicy({ kind: 'KIND_GPU', host_policy: 'numa1' }, 3)).toBe('numa1');
  });
});
