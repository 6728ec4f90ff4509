/**
 * pbtxt parser (spec §5.2): every syntactic construct Triton configs use, schema coverage of the
 * whole ModelConfig, and the error for each kind of bad input (INVALID_ARG with line:column).
 */
import { describe, expect, it } from 'vitest';
import { parseModelConfigPbtxt as parse } from '../../host/src/config/index.js';
import { allMessages, ModelConfigDesc } from '../../host/src/config/schema.js';
import { expectTritonError, fieldsPresent, fixture } from './helpers.js';

describe('pbtxt constructs', () => {
  it('reads scalars, comments and the three message syntaxes', () => {
    const c = parse(`
      # leading comment
      name: "m"  # trailing comment
      max_batch_size: 4
      version_policy { latest { num_versions: 2 } }
      response_cache: { enable: true }
      model_transaction_policy < decoupled: false >
    `);
    expect(c).toEqual({
      name: 'm',
      max_batch_size: 4,
      version_policy: { latest: { num_versions: 2 } },
      response_cache: { enable: true },
      model_transaction_policy: { decoupled: false },
    });
  });

  it('decodes string escapes, single quotes and adjacent literals', () => {
    const c = parse(String.raw`name: 'it\'s' platform: "a\"b\\c\n\t\101\x42\u00e9\U0001F600" backend: "con" 'cat' "enated"`);
    expect(c.name).toBe("it's");
    expect(c.platform).toBe('a"b\\c\n\tAB\u00e9\u{1F600}');
    expect(c.backend).toBe('concatenated');
    expect(parse(String.raw`name: "\303\251"`).name).toBe('é'); // octal escapes are UTF-8 bytes
    expect(parse('name: "naïve ☃"').name).toBe('naïve ☃');
    expect(parse('name: "\ufeffx"').name).toBe('\ufeffx'); // a leading U+FEFF is content, not a BOM
  });

  it('reads repeated messages as lists, as repeated blocks, and concatenates them', () => {
    const c = parse(`
      input [ { name: "A" dims: [1] }, { name: "B" dims: [2] } ]
      output { name: "X" dims: 1 }
      input [ { name: "C" dims: [3] } ]
      output: { name: "Y" dims: [ 4 ] }
      input: [ { name: "D" } ]
      input { name: "E" }
    `);
    expect(c.input!.map((i) => i.name)).toEqual(['A', 'B', 'C', 'D', 'E']);
    expect(c.output!.map((o) => o.name)).toEqual(['X', 'Y']);
  });

  it('reads repeated scalars as lists, repeated lines, or both', () => {
    const c = parse('input { dims: [ 4, -1 ] dims: 5 dims: [] dims: [6] }');
    expect(c.input![0]!.dims).toEqual([4, -1, 5, 6]);
    expect(parse('input { dims: [] }').input![0]!.dims).toEqual([]);
    expect(parse('input []').input).toEqual([]);
  });

  it('reads maps in block and list form; a later key wins; missing key/value default', () => {
    const c = parse(`
      parameters { key: "a" value: { string_value: "1" } }
      parameters [ { key: "b", value { string_value: "2" } }, { key: "a" value: { string_value: "3" } } ]
      cc_model_filenames { key: "8.0" value: "m.plan" }
      metric_tags { value: "no key" }
      dynamic_batching { priority_queue_policy { key: 2 value { max_queue_size: 7 } } priority_queue_policy { key: 1 } }
    `);
    expect(c.parameters).toEqual({ a: { string_value: '3' }, b: { string_value: '2' } });
    expect(c.cc_model_filenames).toEqual({ '8.0': 'm.plan' });
    expect(c.metric_tags).toEqual({ '': 'no key' });
    expect(c.dynamic_batching!.priority_queue_policy).toEqual({ '2': { max_queue_size: 7 }, '1': {} });
  });

  it('keeps a map key named __proto__ as a plain entry', () => {
    const c = parse('parameters { key: "__proto__" value { string_value: "x" } }');
    expect(Object.keys(c.parameters!)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(c.parameters)).toBe(Object.prototype);
    expect(c.parameters!['__proto__']).toEqual({ string_value: 'x' });
  });

  it('reads enums by name and by number', () => {
    const c = parse('input { data_type: TYPE_FP32 format: 1 } instance_group { kind: KIND_CPU }');
    expect(c.input![0]).toEqual({ data_type: 'TYPE_FP32', format: 'FORMAT_NHWC' });
    expect(c.instance_group![0]!.kind).toBe('KIND_CPU');
  });

  it('reads every boolean spelling', () => {
    const spellings: [string, boolean][] = [
      ['true', true],
      ['True', true],
      ['t', true],
      ['1', true],
      ['false', false],
      ['False', false],
      ['f', false],
      ['0', false],
    ];
    for (const [text, value] of spellings) {
      expect(parse(`model_transaction_policy { decoupled: ${text} }`).model_transaction_policy!.decoupled).toBe(value);
    }
  });

  it('accepts optional , and ; separators between fields', () => {
    const c = parse('name: "a", max_batch_size: 2; platform: "p"; input { name: "x"; dims: [1], }');
    expect(c).toEqual({ name: 'a', max_batch_size: 2, platform: 'p', input: [{ name: 'x', dims: [1] }] });
    // One separator per field, as protobuf: a second one is a syntax error.
    expectTritonError(() => parse('name: "a";, platform: "p"'), /1:11: expected a field name in ModelConfig, got ','/);
  });

  it('reads negative, hex, octal and float numbers', () => {
    const c = parse(`
      max_batch_size: 0x10
      input { dims: [ -1, 010, 7 ] }
      sequence_batching { direct { minimum_slot_utilization: .5 } control_input { control { fp32_false_true: [ 1e3, -2.5f, inf, -Infinity, 3 ] } } }
    `);
    expect(c.max_batch_size).toBe(16);
    expect(c.input![0]!.dims).toEqual([-1, 8, 7]);
    expect(parse('ensemble_scheduling { step { model_version: -1 } }').ensemble_scheduling!.step[0]!.model_version).toBe(-1);
    expect(c.sequence_batching!.direct!.minimum_slot_utilization).toBe(0.5);
    expect(c.sequence_batching!.control_input[0]!.control[0]!.fp32_false_true).toEqual([1000, -2.5, Infinity, -Infinity, 3]);
    expect(
      parse('model_metrics { metric_control { histogram_options { buckets: nan } } }').model_metrics!.metric_control[0]!.histogram_options!.buckets[0],
    ).toBeNaN();
  });

  it('keeps 64-bit values up to 2^53-1 exactly', () => {
    const c = parse('input { dims: [ 9007199254740991, -9007199254740991 ] } dynamic_batching { max_queue_delay_microseconds: 9007199254740991 }');
    expect(c.input![0]!.dims).toEqual([Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER]);
    expect(c.dynamic_batching!.max_queue_delay_microseconds).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('accepts the older name of ensemble field 2 (max_inflight_responses)', () => {
    expect(parse('ensemble_scheduling { max_inflight_responses: 4 }').ensemble_scheduling).toEqual({ max_inflight_requests: 4 });
  });

  it('parses an empty file and a comment-only file as an empty config', () => {
    expect(parse('')).toEqual({});
    expect(parse('# nothing\n\n  # here\n')).toEqual({});
  });

  it('covers every field of every message of ModelConfig', () => {
    const present = new Set<string>();
    for (const f of ['every-field.pbtxt', 'oneof-alternatives.pbtxt', 'oneof-alternatives-2.pbtxt', 'oneof-alternatives-3.pbtxt']) {
      fieldsPresent(parse(fixture(f), f), ModelConfigDesc, present);
    }
    const all = allMessages().flatMap((m) => m.fields.map((f) => `${m.name}.${f.name}`));
    const missing = all.filter((f) => !present.has(f));
    expect(missing).toEqual([]);
    expect(all.length).toBeGreaterThan(150);
  });

  it('reads the every-field fixture with the right types and values', () => {
    const c = parse(fixture('every-field.pbtxt'));
    expect(c.version_policy).toEqual({ specific: { versions: [1, 3, -2] } });
    expect(c.model_transaction_policy).toEqual({ decoupled: true });
    expect(c.optimization!.cuda!.graph_spec[0]!.input).toEqual({ IMAGE: { dim: [3, 224, 224] } });
    expect(c.sequence_batching!.state[0]!.initial_state[1]).toEqual({ data_type: 'TYPE_FP32', dims: [4], data_file: 'init.bin', name: 'from_file' });
    expect(c.instance_group![0]!.secondary_devices).toEqual([{ kind: 'KIND_NVDLA', device_id: 1 }]);
    expect(c.model_warmup!.map((w) => Object.keys(w.inputs.IMAGE!))).toEqual([
      ['data_type', 'dims', 'zero_data'],
      ['data_type', 'dims', 'random_data'],
      ['data_type', 'dims', 'input_data_file'],
    ]);
    expect(c.model_metrics!.metric_control[0]!.histogram_options!.buckets).toEqual([-5, -2, 0, 3.5, 5]);
  });
});

describe('pbtxt errors', () => {
  it('reports an unknown field with line:column, message type and field path', () => {
    const text = 'name: "x"\ninput [\n  {\n    name: "a"\n    dimz: [ 3 ]\n  }\n]\n';
    expectTritonError(() => parse(text, 'config.pbtxt'), "config.pbtxt:5:5: unknown field 'dimz' in ModelInput (at input[0])");
    expectTritonError(() => parse('\n  nmae: "x"', 'm/config.pbtxt'), "m/config.pbtxt:2:3: unknown field 'nmae' in ModelConfig");
    expectTritonError(
      () => parse('sequence_batching { control_input { control { knd: CONTROL_SEQUENCE_START } } }'),
      /^config\.pbtxt:1:47: unknown field 'knd' in ModelSequenceBatching\.Control \(at sequence_batching\.control_input\[0\]\.control\[0\]\)$/,
    );
  });

  it('reports a bad enum name with the allowed names', () => {
    expectTritonError(
      () => parse('input { data_type: TYPE_FP33 }'),
      /^config\.pbtxt:1:20: unknown enum value 'TYPE_FP33' for inference\.DataType; expected one of TYPE_INVALID, TYPE_BOOL, .*TYPE_BF16 \(at input\[0\]\.data_type\)$/,
    );
    expectTritonError(() => parse('instance_group { kind: 7 }'), /unknown enum number 7 for inference\.ModelInstanceGroup\.Kind/);
    expectTritonError(() => parse('input { data_type: "TYPE_FP32" }'), /1:20: expected an enum value of inference\.DataType, got '"TYPE_FP32"'/);
  });

  it('reports values of the wrong type', () => {
    expectTritonError(() => parse('max_batch_size: "8"'), 'config.pbtxt:1:17: expected an integer for int32, got \'"8"\' (at max_batch_size)');
    expectTritonError(() => parse('max_batch_size: 1.5'), /1:17: expected an integer for int32, got '1\.5' \(at max_batch_size\)/);
    expectTritonError(() => parse('name: 12'), /1:7: expected a string, got '12' \(at name\)/);
    expectTritonError(() => parse('model_transaction_policy { decoupled: yes }'), /expected a boolean \(true\/false\), got 'yes'/);
    expectTritonError(() => parse('model_transaction_policy { decoupled: 2 }'), /expected a boolean/);
    expectTritonError(() => parse('sequence_batching { direct { minimum_slot_utilization: "x" } }'), /expected a number for float/);
    expectTritonError(() => parse('version_policy: 3'), /1:17: expected '\{' to start a ModelVersionPolicy value, got '3'/);
  });

  it('rejects numbers out of range, and 64-bit values beyond 2^53-1', () => {
    expectTritonError(() => parse('max_batch_size: 2147483648'), /1:17: value 2147483648 is out of range for int32 \(at max_batch_size\)/);
    expectTritonError(() => parse('max_batch_size: -2147483649'), /value -2147483649 is out of range for int32/);
    expectTritonError(
      () => parse('version_policy { latest { num_versions: -1 } }'),
      /value -1 is out of range for uint32 \(at version_policy\.latest\.num_versions\)/,
    );
    expectTritonError(
      () => parse('input { dims: [ 9007199254740992 ] }'),
      /1:17: value 9007199254740992 exceeds 2\^53-1 in magnitude; .* \(at input\[0\]\.dims\[0\]\)/,
    );
    expectTritonError(() => parse('dynamic_batching { max_queue_delay_microseconds: 18446744073709551615 }'), /exceeds 2\^53-1/);
    expectTritonError(() => parse('dynamic_batching { max_queue_delay_microseconds: 18446744073709551616 }'), /out of range for uint64/);
  });

  it('rejects setting two members of a oneof', () => {
    expectTritonError(
      () => parse('version_policy { latest { num_versions: 1 } all {} }'),
      /1:45: field 'all' cannot be set together with 'latest': both belong to oneof 'policy_choice' of ModelVersionPolicy \(at version_policy\.all\)/,
    );
    expectTritonError(
      () => parse('dynamic_batching {}\nsequence_batching {}'),
      /2:1: field 'sequence_batching' cannot be set together with 'dynamic_batching': both belong to oneof 'scheduling_choice'/,
    );
    expectTritonError(() => parse('ensemble_scheduling {} dynamic_batching {}'), /oneof 'scheduling_choice'/);
    expectTritonError(() => parse('sequence_batching { direct {} oldest {} }'), /oneof 'strategy_choice'/);
    expectTritonError(() => parse('model_warmup { inputs { key: "a" value { zero_data: true random_data: true } } }'), /oneof 'input_data_type'/);
    expectTritonError(() => parse('sequence_batching { state { initial_state { zero_data: true data_file: "f" } } }'), /oneof 'state_data'/);
  });

  it('rejects a non-repeated field given twice', () => {
    expectTritonError(() => parse('name: "a"\nname: "b"'), /2:1: non-repeated field 'name' is specified more than once in ModelConfig \(at name\)/);
    expectTritonError(() => parse('dynamic_batching {} dynamic_batching {}'), /non-repeated field 'dynamic_batching'/);
    expectTritonError(() => parse('ensemble_scheduling { max_inflight_requests: 1 max_inflight_responses: 2 }'), /non-repeated field 'max_inflight_requests'/);
    expectTritonError(() => parse('parameters { key: "a" key: "b" }'), /'key' is specified more than once in a map entry/);
  });

  it('reports syntax errors with their position', () => {
    expectTritonError(() => parse('name "x"'), "config.pbtxt:1:6: expected ':' after field name 'name', got '\"x\"' (at name)");
    expectTritonError(() => parse('name: "x'), /1:7: unterminated string/);
    expectTritonError(() => parse('name: "a\nb"'), /1:7: unterminated string/);
    expectTritonError(() => parse('input {\n  name: "a"\n'), /3:1: unexpected end of input: expected '\}' to close 'input' opened at 1:7/);
    expectTritonError(() => parse('input [ { name: "a" } { name: "b" } ]'), /1:23: expected ',' or '\]' in the list of 'input', got '\{'/);
    expectTritonError(() => parse('max_batch_size: [ 1 ]'), /1:17: field 'max_batch_size' is not repeated; a list '\[\.\.\.\]' is not allowed/);
    expectTritonError(() => parse('}'), /1:1: expected a field name in ModelConfig, got '\}'/);
    expectTritonError(() => parse('input { dims: 12abc }'), /1:17: need space between number and identifier/);
    expectTritonError(() => parse(String.raw`name: "\q"`), /1:8: invalid escape sequence '\\q' in string literal/);
    expectTritonError(() => parse(String.raw`name: "\xff"`), /1:7: string contains invalid UTF-8/);
    expectTritonError(() => parse('max_batch_size: 09'), /numbers starting with leading zero must be in octal/);
    expectTritonError(() => parse('[ext.field]: 1'), /extension and Any syntax/);
    expectTritonError(() => parse('input { dims: - }'), /expected an integer for int64, got '\}'/);
  });

  it('errors are INVALID_ARG TritonErrors and never plain exceptions, for arbitrary garbage', () => {
    const garbage = ['{', ':', '"', "'", 'name: {', 'input [', 'input [ {', '<<<', 'name: "x" }', '\u0000', 'max_batch_size: -', 'dims', 'a.b: 1'];
    for (const g of garbage) expectTritonError(() => parse(g), /^config\.pbtxt:\d+:\d+: /);
  });
});
