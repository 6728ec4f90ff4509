/**
 * Config bounds (DESIGN "Multi-tenancy": every config field a tenant sends is allowlisted with a
 * bound; nothing a config says allocates in proportion to an unchecked number): the allowlist
 * covers every field of the schema, each bound refuses with the field path and the bound, the
 * tenants file's `config_bounds`, the server-wide caps on operator models, and the scheduler's
 * allocations that no longer follow config numbers.
 */
import { describe, expect, it } from 'vitest';
import { normalizeModelConfig } from '../../host/src/config/normalize.js';
import { ModelConfigDesc, type MessageDesc } from '../../host/src/config/schema.js';
import type { ModelConfig } from '../../host/src/contract/model-config.js';
import { checkServerCaps, DEFAULT_SERVER_CAPS, ServerAdmission } from '../../host/src/lifecycle/admission.js';
import { TritonError } from '../../host/src/contract/errors.js';
import type { BackendModelInstance, InferenceRequest, ResponseSender } from '../../host/src/contract/types.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START } from '../../host/src/contract/types.js';
import { PendingQueue } from '../../host/src/scheduler/queue.js';
import { checkTenantModelConfig, CONFIG_RULES } from '../../host/src/tenancy/config-allowlist.js';
import { parseTenantsText } from '../../host/src/tenancy/parse.js';
import { CONFIG_BOUND_KEYS, DEFAULT_CONFIG_BOUNDS } from '../../host/src/tenancy/types.js';
import { request } from '../helpers/backend-request.js';
import { collector, config as pbtxtConfig, modelVersion } from '../helpers/model-version.js';

const B = DEFAULT_CONFIG_BOUNDS;
const io = { input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }], output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }] };
const config = (raw: Record<string, unknown>): ModelConfig =>
  normalizeModelConfig({ name: 'm', backend: 'wasm', ...io, ...raw } as Partial<ModelConfig>, { modelName: 'm', gpuCount: 0 });
const refusal = (raw: Record<string, unknown>, bounds = B): string => {
  try {
    checkTenantModelConfig('m', config(raw), bounds);
  } catch (e) {
    expect(e).toBeInstanceOf(TritonError);
    expect((e as TritonError).code).toBe('INVALID_ARG');
    return (e as TritonError).message;
  }
  throw new Error('the config was accepted');
};

describe('the allowlist', () => {
  it('has a rule for every field of ModelConfig (or a refused ancestor); every number has a bound, every list a count', () => {
    const missing: string[] = [];
    const walk = (m: MessageDesc, prefix: string, seen: Set<MessageDesc>): void => {
      for (const f of m.fields) {
        const path = prefix ? `${prefix}.${f.name}` : f.name;
        const rule = CONFIG_RULES[path];
        if (!rule) {
          missing.push(path);
          continue;
        }
        if (rule.refuse || rule.quota) continue;
        const numeric = ['int32', 'uint32', 'int64', 'uint64', 'float', 'double'].includes(f.type.kind);
        if (numeric && !rule.dims && rule.max === undefined) missing.push(`${path} (no max)`);
        if (f.repeated && !rule.dims && rule.count === undefined) missing.push(`${path} (no count)`);
        if (f.type.kind === 'message' && !seen.has(f.type.messageType)) walk(f.type.messageType, path, new Set([...seen, m]));
      }
    };
    walk(ModelConfigDesc, '', new Set());
    expect(missing).toEqual([]);
    // Every rule names a real path (no stale entries).
    const paths = new Set<string>();
    const collect = (m: MessageDesc, prefix: string): void => {
      for (const f of m.fields) {
        const path = prefix ? `${prefix}.${f.name}` : f.name;
        paths.add(path);
        if (f.type.kind === 'message') collect(f.type.messageType, path);
      }
    };
    collect(ModelConfigDesc, '');
    expect(Object.keys(CONFIG_RULES).filter((k) => !paths.has(k))).toEqual([]);
  });

  it('accepts an ordinary wasm config, batching and sequence configs within the bounds', () => {
    checkTenantModelConfig('m', config({}), B);
    checkTenantModelConfig(
      'm',
      config({
        max_batch_size: 8,
        dynamic_batching: { preferred_batch_size: [4, 8], priority_levels: 4, default_priority_level: 2, max_queue_delay_microseconds: 100 },
      }),
      B,
    );
    checkTenantModelConfig(
      'm',
      config({ max_batch_size: 4, sequence_batching: { oldest: { max_candidate_sequences: 8 }, max_sequence_idle_microseconds: 5_000_000 } }),
      B,
    );
    checkTenantModelConfig(
      'm',
      config({ parameters: { k: { string_value: 'v' } }, response_cache: { enable: true }, model_transaction_policy: { decoupled: true } }),
      B,
    );
  });

  it.each([
    [
      { dynamic_batching: { priority_levels: 2_000_000_000, default_priority_level: 1 } },
      "dynamic_batching.priority_levels 2000000000 exceeds this tenant's bound 16 (config bound max_priority_levels)",
    ],
    [{ dynamic_batching: { priority_levels: 2_000_000, default_priority_level: 1 } }, 'dynamic_batching.priority_levels 2000000 exceeds'],
    [
      { max_batch_size: 1, sequence_batching: { oldest: { max_candidate_sequences: 2147483647 } } },
      "sequence_batching.oldest.max_candidate_sequences 2147483647 exceeds this tenant's bound 64 (config bound max_candidate_sequences)",
    ],
    [
      { max_batch_size: 2147483647, sequence_batching: { direct: {} } },
      "max_batch_size 2147483647 exceeds this tenant's bound 256 (config bound max_batch_size)",
    ],
    [
      { max_batch_size: 8, dynamic_batching: { default_queue_policy: { max_queue_size: 1_000_000 } } },
      "dynamic_batching.default_queue_policy.max_queue_size 1000000 exceeds this tenant's bound 4096 (config bound max_queue_size)",
    ],
    [
      { max_batch_size: 8, dynamic_batching: { default_queue_policy: { default_timeout_microseconds: 1e12 } } },
      "default_timeout_microseconds 1000000000000 exceeds this tenant's bound 60000000 (config bound max_timeout_microseconds)",
    ],
    [{ max_batch_size: 8, dynamic_batching: { max_queue_delay_microseconds: 1e10 } }, 'dynamic_batching.max_queue_delay_microseconds 10000000000 exceeds'],
    [
      { sequence_batching: { max_sequence_idle_microseconds: 1e12 } },
      "sequence_batching.max_sequence_idle_microseconds 1000000000000 exceeds this tenant's bound 60000000 (config bound max_sequence_idle_microseconds)",
    ],
    [
      { max_batch_size: 100, dynamic_batching: { preferred_batch_size: Array.from({ length: 20 }, (_, i) => i + 1) } },
      "dynamic_batching.preferred_batch_size has 20 entries, which exceeds this tenant's bound 16 (config bound max_preferred_batch_sizes)",
    ],
    [
      { input: [{ name: 'I', data_type: 'TYPE_FP32', dims: [1 << 20, 1 << 20] }] },
      "input[0].dims has 1099511627776 elements, which exceeds this tenant's bound 16777216 (config bound max_tensor_elements)",
    ],
    [{ input: [{ name: 'I', data_type: 'TYPE_FP32', dims: [2147483647] }] }, 'input[0].dims[0] 2147483647 exceeds'],
    [
      { input: [{ name: 'I', data_type: 'TYPE_FP32', dims: Array(17).fill(1) }] },
      "input[0].dims has 17 dims, which exceeds this tenant's bound 16 (config bound max_dims)",
    ],
    [{ input: Array.from({ length: 65 }, (_, i) => ({ name: `I${i}`, data_type: 'TYPE_FP32', dims: [1] })) }, 'input has 65 entries'],
    [{ output: Array.from({ length: 65 }, (_, i) => ({ name: `O${i}`, data_type: 'TYPE_FP32', dims: [1] })) }, 'output has 65 entries'],
    [
      { input: [{ name: 'x'.repeat(200), data_type: 'TYPE_FP32', dims: [1] }] },
      "input[0].name has 200 bytes, which exceeds this tenant's bound 128 (config bound max_name_bytes)",
    ],
    [{ parameters: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, { string_value: '' }])) }, 'parameters has 33 entries'],
    [
      { parameters: { k: { string_value: 'v'.repeat(5000) } } },
      'parameters["k"].string_value has 5000 bytes, which exceeds this tenant\'s bound 4096 (config bound max_parameter_value_bytes)',
    ],
    [{ parameters: { ['k'.repeat(300)]: { string_value: '' } } }, 'parameters has a key of 300 bytes'],
    [{ output: [{ name: 'O', data_type: 'TYPE_FP32', dims: [1], label_filename: 'l'.repeat(2000) }] }, 'output[0].label_filename has 2000 bytes'],
    [
      {
        platform: 'ensemble',
        input: [],
        output: [],
        ensemble_scheduling: { step: Array.from({ length: 17 }, () => ({ model_name: 'x', model_version: -1, input_map: {}, output_map: {} })) },
      },
      "ensemble_scheduling.step has 17 entries, which exceeds this tenant's bound 16 (config bound max_ensemble_steps)",
    ],
    [
      {
        model_warmup: [
          { name: 'w', batch_size: 1, count: 10 },
          { name: 'w2', batch_size: 1, count: 10 },
        ],
      },
      "model_warmup asks for 20 runs, which exceeds this tenant's bound 16 (config bound max_warmup_runs)",
    ],
    [{ model_warmup: [{ name: 'w', batch_size: 4_000_000_000, count: 1 }] }, 'model_warmup[0].batch_size 4000000000 exceeds'],
    [
      { model_warmup: [{ name: 'w', batch_size: 1, count: 1, inputs: { INPUT0: { data_type: 'TYPE_FP32', dims: [1 << 30], zero_data: true } } }] },
      'model_warmup[0].inputs["INPUT0"].dims[0] 1073741824 exceeds',
    ],
    [{ version_policy: { specific: { versions: Array.from({ length: 100 }, (_, i) => i + 1) } } }, 'version_policy.specific.versions has 100 entries'],
    [{ instance_group: Array.from({ length: 65 }, () => ({ kind: 'KIND_CPU', count: 1 })) }, 'instance_group has 65 entries'],
    [
      { sequence_batching: { state: [{ input_name: 'S', output_name: 'S', data_type: 'TYPE_FP32', dims: [1 << 30] }] } },
      'sequence_batching.state[0].dims[0] 1073741824 exceeds',
    ],
  ])('refuses %j naming the field and the bound', (raw, text) => {
    const msg = refusal(raw as Record<string, unknown>);
    expect(msg).toContain(text);
    expect(msg.startsWith("model 'm': ")).toBe(true);
  });

  it.each([
    [{ model_repository_agents: { agents: [{ name: 'checksum' }] } }, 'model_repository_agents may not be set'],
    [{ model_operations: { op_library_filename: ['libevil.so'] } }, 'model_operations may not be set'],
    [{ optimization: { cuda: { graphs: true } } }, 'optimization.cuda may not be set'],
    [{ optimization: { execution_accelerators: { cpu_execution_accelerator: [{ name: 'openvino' }] } } }, 'optimization.execution_accelerators may not be set'],
    [{ optimization: { priority: 'PRIORITY_MAX' } }, 'optimization.priority may not be set'],
    [{ metric_tags: { a: 'b' } }, 'metric_tags may not be set'],
    [{ model_metrics: { metric_control: [] } }, 'model_metrics may not be set'],
    [{ instance_group: [{ kind: 'KIND_CPU', count: 1, host_policy: 'numa0' }] }, 'instance_group[0].host_policy may not be set'],
    [
      { instance_group: [{ kind: 'KIND_CPU', count: 1, rate_limiter: { resources: [{ name: 'R', count: 1000000 }] } }] },
      'instance_group[0].rate_limiter may not be set',
    ],
  ])('refuses the operator-only field of %j', (raw, text) => {
    expect(refusal(raw as Record<string, unknown>)).toContain(text);
  });

  it('the same fields at their defaults are accepted', () => {
    checkTenantModelConfig(
      'm',
      config({ optimization: { priority: 'PRIORITY_DEFAULT' }, metric_tags: {}, instance_group: [{ kind: 'KIND_CPU', count: 1, host_policy: '' }] }),
      B,
    );
  });

  it('bounds are per tenant: a raised bound admits what the default refuses, a lowered one refuses more', () => {
    const raw = { dynamic_batching: { priority_levels: 32, default_priority_level: 1 } };
    expect(refusal(raw)).toContain('(config bound max_priority_levels)');
    checkTenantModelConfig('m', config(raw), { ...B, max_priority_levels: 64 });
    expect(refusal({ max_batch_size: 8 }, { ...B, max_batch_size: 4 })).toContain(
      "max_batch_size 8 exceeds this tenant's bound 4 (config bound max_batch_size)",
    );
  });

  it('works on a raw (unnormalised) config too: unset fields are skipped', () => {
    checkTenantModelConfig('m', { backend: 'wasm' }, B);
    expect(() => checkTenantModelConfig('m', { dynamic_batching: { priority_levels: 99 } as ModelConfig['dynamic_batching'] }, B)).toThrow(
      /dynamic_batching.priority_levels 99 exceeds/,
    );
  });
});

describe('config_bounds in the tenants file', () => {
  const file = (bounds: unknown) => JSON.stringify({ tenants: [{ id: 'acme', role: 'tenant', config_bounds: bounds }] });

  it('fills defaults, takes any subset, and knows every bound', () => {
    expect(parseTenantsText(file(undefined), 'json', 't.json')[0]!.config_bounds).toEqual(DEFAULT_CONFIG_BOUNDS);
    const [t] = parseTenantsText(file({ max_priority_levels: 4, max_batch_size: 1024 }), 'json', 't.json');
    expect(t!.config_bounds).toEqual({ ...DEFAULT_CONFIG_BOUNDS, max_priority_levels: 4, max_batch_size: 1024 });
    expect(Object.isFrozen(t!.config_bounds)).toBe(true);
    expect(CONFIG_BOUND_KEYS.length).toBe(Object.keys(DEFAULT_CONFIG_BOUNDS).length);
  });

  it.each([
    [{ max_prio: 4 }, "config_bounds: unknown key 'max_prio'"],
    [{ max_batch_size: -1 }, 'config_bounds.max_batch_size: expected an integer >= 0, got -1'],
    [{ max_batch_size: 1.5 }, 'config_bounds.max_batch_size: expected an integer >= 0, got 1.5'],
    [{ max_batch_size: '8' }, 'config_bounds.max_batch_size: expected an integer >= 0, got a string'],
    [[1], 'config_bounds: expected a mapping'],
  ])('refuses %j', (bounds, text) => {
    expect(() => parseTenantsText(file(bounds), 'json', 't.json')).toThrow(text);
  });
});

describe('server-wide caps (operator models too)', () => {
  const admission = new ServerAdmission();
  const operator = { kind: 'repository' } as never;
  const admit = (raw: Record<string, unknown>, a = admission) => a.admit({ namespace: '', name: 'm' }, operator, config(raw), 1);

  it.each([
    [
      { max_batch_size: 8, dynamic_batching: { priority_levels: 2_000_000_000, default_priority_level: 1 } },
      "model 'm': dynamic_batching.priority_levels 2000000000 exceeds this server's bound 1024 (--max-priority-levels)",
    ],
    [
      { max_batch_size: 1, sequence_batching: { oldest: { max_candidate_sequences: 2147483647 } } },
      "sequence_batching.oldest.max_candidate_sequences 2147483647 exceeds this server's bound 1024 (--max-sequence-slots)",
    ],
    [
      { max_batch_size: 2147483647, sequence_batching: { direct: {} } },
      "max_batch_size (the slots of a direct sequence batcher) 2147483647 exceeds this server's bound 1024 (--max-sequence-slots)",
    ],
    [
      { max_batch_size: 1000, dynamic_batching: { preferred_batch_size: Array.from({ length: 100 }, (_, i) => i + 1) } },
      'dynamic_batching.preferred_batch_size count 100 exceeds',
    ],
    [
      { sequence_batching: { state: [{ input_name: 'S', output_name: 'S', data_type: 'TYPE_FP32', dims: [1 << 30] }] } },
      "sequence_batching.state[0] bytes 4294967296 exceeds this server's bound 67108864 (--max-state-bytes)",
    ],
  ])('refuses %j before anything is allocated', (raw, text) => {
    expect(() => admit(raw as Record<string, unknown>)).toThrow(text);
  });

  it('accepts ordinary configs, and an operator raises a cap with its flag', () => {
    admit({ max_batch_size: 8, dynamic_batching: { priority_levels: 100, default_priority_level: 1 } });
    admit({ max_batch_size: 1000, sequence_batching: { direct: {} } });
    const raised = new ServerAdmission({ ...DEFAULT_SERVER_CAPS, maxPriorityLevels: 5000 });
    admit({ max_batch_size: 8, dynamic_batching: { priority_levels: 4000, default_priority_level: 1 } }, raised);
    expect(() =>
      checkServerCaps('m', config({ max_batch_size: 8, dynamic_batching: { priority_levels: 6000, default_priority_level: 1 } }), {
        maxInstancesPerModel: 64,
        maxPriorityLevels: 5000,
      }),
    ).toThrow(/5000 \(--max-priority-levels\)/);
  });
});

describe('allocations follow use, not config numbers', () => {
  const sender: ResponseSender = { send: () => undefined, sendError: () => undefined };
  it('a queue with a million priority levels costs what its used levels cost', () => {
    const before = process.memoryUsage().heapUsed;
    const levels = 1_000_000;
    const q = new PendingQueue({
      preferred_batch_size: [],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: levels,
      default_priority_level: levels,
      priority_queue_policy: {},
    });
    const grown = process.memoryUsage().heapUsed - before;
    const push = (id: string, priority: number) => q.push({ request: request('m', [], [], { id, priority }), sender, queueStartNs: 0n });
    push('low', 0);
    push('top', 1);
    push('mid', 500_000);
    expect([q.shift(), q.shift(), q.shift()].map((p) => p!.request.id)).toEqual(['top', 'mid', 'low']);
    expect(q.size).toBe(0);
    // A level object per configured level would be well over 100 MB here.
    expect(grown).toBeLessThan(16 * 1024 * 1024);
  });
});

describe('sequence slots follow use', () => {
  /** Answers OUTPUT0 = INPUT0 for every request of a batch. */
  const echo: BackendModelInstance = {
    async execute(requests: InferenceRequest[], senders: ResponseSender[]) {
      requests.forEach((r, i) => senders[i]!.send({ outputs: [{ ...r.inputs.find((t) => t.name === 'INPUT0')!, name: 'OUTPUT0' }] }, true));
    },
    async finalize() {},
  };
  const seqModel = (mbs: number, strategy: string) =>
    pbtxtConfig(`
backend: "fake"
max_batch_size: ${mbs}
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching { ${strategy} }
`);

  it.each([
    ['oldest, max_candidate_sequences 2^31-1', seqModel(1, 'oldest { max_candidate_sequences: 2147483647 }')],
    ['direct, max_batch_size 2^31-1', seqModel(2147483647, 'direct { }')],
  ])('%s (past admission, as an operator could raise the cap): no slot array up front, a sequence still runs', async (_what, cfg) => {
    const before = process.memoryUsage().heapUsed;
    const { mv } = modelVersion(cfg, [echo]);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(16 * 1024 * 1024);
    const c = collector();
    const data = new Uint8Array(Int32Array.of(7).buffer);
    mv.submit(
      {
        id: 'r',
        model: 'model',
        version: 1,
        inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data }],
        requestedOutputs: [],
        parameters: {},
        correlationId: 9,
        flags: REQUEST_FLAG_SEQUENCE_START | REQUEST_FLAG_SEQUENCE_END,
        timeoutUs: 0,
        priority: 0,
      } as never,
      c.sender,
    );
    const outcome = await c.done;
    expect(outcome.error, outcome.error?.message).toBeUndefined();
    expect([...outcome.response!.outputs[0]!.data]).toEqual([...data]);
  });
});
