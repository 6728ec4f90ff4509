/**
 * JSON config (spec §1.7, §3.1): the load API's `config` reader (protobuf JSON rules with
 * case-insensitive enums, unknown fields rejected) and the `/config` JSON writer.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelConfigFromJson as fromJson, modelConfigToJson as toJson, normalizeModelConfig, parseModelConfigPbtxt } from '../../host/src/config/index.js';
import { ModelConfigDesc } from '../../host/src/config/schema.js';
import type { ModelConfig } from '../../host/src/contract/model-config.js';
import { messageArbitrary } from './arbitrary.js';
import { expectTritonError, fixture } from './helpers.js';

describe('modelConfigFromJson', () => {
  it('reads snake_case and lowerCamelCase names, enums in any case or by number, int64 as strings', () => {
    const c = fromJson({
      name: 'm',
      maxBatchSize: 4,
      input: [{ name: 'x', data_type: 'type_fp32', dims: ['16', -1], format: 2 }],
      instance_group: [{ kind: 'Kind_Cpu', count: '3' }],
      dynamic_batching: { max_queue_delay_microseconds: '100', priority_queue_policy: { '2': { timeout_action: 'delay' } } },
      parameters: { k: { string_value: 'v' } },
    });
    expect(c).toEqual({
      name: 'm',
      max_batch_size: 4,
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [16, -1], format: 'FORMAT_NCHW' }],
      instance_group: [{ kind: 'KIND_CPU', count: 3 }],
      dynamic_batching: { max_queue_delay_microseconds: 100, priority_queue_policy: { '2': { timeout_action: 'DELAY' } } },
      parameters: { k: { string_value: 'v' } },
    });
  });

  it('accepts a JSON text, treats null as "not set", and reads floats given as strings', () => {
    expect(fromJson('{"name":"m","platform":null,"input":null}')).toEqual({ name: 'm' });
    const c = fromJson({ model_metrics: { metric_control: [{ histogram_options: { buckets: ['1.5', 'NaN', 'Infinity', '-Infinity', 2] } }] } });
    expect(c.model_metrics!.metric_control[0]!.histogram_options!.buckets).toEqual([1.5, NaN, Infinity, -Infinity, 2]);
  });

  it('rejects unknown fields, wrong types, bad enums and oneof conflicts with the field path', () => {
    expectTritonError(() => fromJson({ name: 'm', dimz: [1] }), "unknown field 'dimz' in ModelConfig");
    expectTritonError(() => fromJson({ input: [{ dimz: [1] }] }), "unknown field 'dimz' in ModelInput (at input[0])");
    expectTritonError(() => fromJson({ max_batch_size: 1.5 }), 'expected an integer for int32, got 1.5 (at max_batch_size)');
    expectTritonError(() => fromJson({ max_batch_size: '8x' }), /expected an integer for int32 \(number or decimal string\), got "8x" \(at max_batch_size\)/);
    expectTritonError(() => fromJson({ max_batch_size: 2 ** 31 }), /out of range for int32/);
    expectTritonError(() => fromJson({ name: 5 }), 'expected a string, got 5 (at name)');
    expectTritonError(() => fromJson({ model_transaction_policy: { decoupled: 'true' } }), /expected true or false, got "true"/);
    expectTritonError(
      () => fromJson({ input: [{ data_type: 'FP32' }] }),
      /invalid value "FP32" for enum inference\.DataType; expected one of TYPE_INVALID, .* \(at input\[0\]\.data_type\)/,
    );
    expectTritonError(() => fromJson({ input: {} }), 'expected a JSON array, got an object (at input)');
    expectTritonError(() => fromJson({ parameters: [] }), 'expected a JSON object (map), got an array (at parameters)');
    expectTritonError(() => fromJson({ input: [null] }), 'null is not allowed here (at input[0])');
    expectTritonError(
      () => fromJson({ version_policy: { latest: {}, all: {} } }),
      /'all' cannot be set together with 'latest': both belong to oneof 'policy_choice'/,
    );
    expectTritonError(() => fromJson({ dynamic_batching: {}, sequence_batching: {} }), /oneof 'scheduling_choice'/);
    expectTritonError(
      () => fromJson({ max_batch_size: 1, maxBatchSize: 2 }),
      "field 'max_batch_size' is given twice (as 'max_batch_size' and 'maxBatchSize') (at max_batch_size)",
    );
    expectTritonError(() => fromJson({ dynamic_batching: { priority_queue_policy: { one: {} } } }), /map key must be an unsigned integer, got "one"/);
    expectTritonError(() => fromJson([]), 'expected a JSON object for ModelConfig, got an array');
    expectTritonError(() => fromJson('{"name": '), /^malformed JSON model configuration: /);
    expectTritonError(() => fromJson('{"__proto__": {"name": "x"}}'), "unknown field '__proto__' in ModelConfig");
  });

  it('rejects 64-bit values beyond 2^53-1 instead of silently rounding them', () => {
    expectTritonError(() => fromJson('{"input":[{"dims":[9007199254740993]}]}'), /exceeds 2\^53-1 .* \(at input\[0\]\.dims\[0\]\)/);
    expectTritonError(() => fromJson({ input: [{ dims: ['9007199254740993'] }] }), /exceeds 2\^53-1/);
    expect(fromJson({ input: [{ dims: ['9007199254740991'] }] }).input![0]!.dims).toEqual([Number.MAX_SAFE_INTEGER]);
  });

  it('reads back what modelConfigToJson prints, for arbitrary configs', () => {
    const arb = messageArbitrary(ModelConfigDesc) as unknown as fc.Arbitrary<Partial<ModelConfig>>;
    fc.assert(
      fc.property(arb, (raw) => {
        const json = toJson(raw);
        if (json === '') return;
        // Printing fills defaults; reading back and re-printing must be stable.
        expect(toJson(fromJson(json))).toBe(json);
      }),
      { numRuns: 300 },
    );
  });
});

describe('modelConfigToJson', () => {
  it('prints all primitive fields in proto order, sub-messages only when set', () => {
    const json = toJson({ name: 'm', max_batch_size: 2, input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [3] }] } as Partial<ModelConfig>);
    expect(json).toBe(
      '{"name":"m","platform":"","backend":"","runtime":"","max_batch_size":2,' +
        '"input":[{"name":"x","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[3],"is_shape_tensor":false,"allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}],' +
        '"output":[],"batch_input":[],"batch_output":[],"instance_group":[],"default_model_filename":"","cc_model_filenames":{},"metric_tags":{},"parameters":{},"model_warmup":[]}',
    );
  });

  it('keeps as strings the 64-bit fields Triton does not rewrite, and NaN/Infinity as protobuf spells them', () => {
    const c = normalizeModelConfig(parseModelConfigPbtxt(fixture('every-field.pbtxt')), { modelName: 'every_field', gpuCount: 2 });
    const j = JSON.parse(toJson(c));
    expect(j.instance_group[0].secondary_devices).toEqual([{ kind: 'KIND_NVDLA', device_id: '1' }]);
    expect(JSON.parse(toJson({ instance_group: [{ secondary_devices: [{}] }] } as never)).instance_group[0].secondary_devices[0].device_id).toBe('0');
    expect(j.optimization.cuda.graph_spec[0].input).toEqual({ IMAGE: { dim: ['3', '224', '224'] } });
    expect(j.optimization.cuda.graph_spec[0].graph_lower_bound.input.IMAGE.dim).toEqual(['3', '32', '32']);
    // The fields Triton's ModelConfigToJson rewrites are numbers.
    expect(j.version_policy.specific.versions).toEqual([1, 3, -2]);
    expect(j.input[0].dims).toEqual([3, -1, -1]);
    expect(j.input[0].reshape.shape).toEqual([3, -1, -1]);
    expect(j.sequence_batching.max_sequence_idle_microseconds).toBe(5000000);
    expect(j.sequence_batching.direct.max_queue_delay_microseconds).toBe(100);
    expect(j.sequence_batching.state[0].dims).toEqual([-1]);
    expect(j.sequence_batching.state[0].initial_state[0].dims).toEqual([4]);
    expect(j.model_warmup[0].inputs.IMAGE.dims).toEqual([3, 224, 224]);
    const m = toJson({ model_metrics: { metric_control: [{ histogram_options: { buckets: [NaN, Infinity, -Infinity, 1] } }] } } as Partial<ModelConfig>);
    expect(JSON.parse(m).model_metrics.metric_control[0].histogram_options.buckets).toEqual(['NaN', 'Infinity', '-Infinity', 1]);
  });

  it('prints an all-default config as the empty string, as Triton does', () => {
    expect(toJson({})).toBe('');
    expect(toJson({ name: '', max_batch_size: 0, input: [] })).toBe('');
    expect(toJson({ name: 'x' })).not.toBe('');
    expect(toJson({ response_cache: { enable: false } })).not.toBe('');
  });

  it('rejects structurally invalid configs', () => {
    expectTritonError(() => toJson({ nope: 1 } as never), "invalid model configuration: unknown field 'nope' in ModelConfig");
    expectTritonError(() => toJson({ version_policy: { latest: { num_versions: 1 }, all: {} } } as never), /both set but belong to oneof 'policy_choice'/);
  });
});
