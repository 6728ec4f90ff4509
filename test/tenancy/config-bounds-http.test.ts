/**
 * Config bounds end to end (DESIGN "Multi-tenancy": every config field a tenant sends is
 * allowlisted with a bound; nothing a config says allocates in proportion to an unchecked number):
 * a multi-tenant server over HTTP, a tenant uploading the sandboxed identity model with hostile
 * numbers in its config. Each reproduced attack is refused with 400 naming the field and the
 * bound, and another tenant keeps being answered; a property test sets every numeric field the
 * model can carry to 0, -1, 2^31-1, 2^63-1 or a random integer and requires either a clear refusal
 * or a load after which the server still answers with its heap bounded.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { fetchAs, PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { tenantServerPerSuite, testTokens } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';

const TOKENS = testTokens('acme', 'bob', 'big', 'ops');
type Who = keyof typeof TOKENS;
const IDENTITY = () => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'wasm', 'build', 'identity.wasm')).toString('base64');

let wasm: string;

const suite = tenantServerPerSuite(async () => {
  await ensureBuilt();
  wasm = IDENTITY();
  const repo = tempRepo([]);
  const tenants = [
    { id: 'acme', token: TOKENS.acme, quotas: { requests_per_second: 10_000, burst: 10_000 } },
    { id: 'bob', token: TOKENS.bob, quotas: { requests_per_second: 10_000, burst: 10_000 } },
    { id: 'big', token: TOKENS.big, config_bounds: { max_priority_levels: 64 } },
    { id: 'ops', role: 'admin' as const, token: TOKENS.ops },
  ];
  return { repo, tenants, opts: { logger: pino({ level: 'silent' }) } };
}, 120_000);
beforeAll(async () => {
  expect((await upload('bob', 'm', {})).status).toBe(200);
});

const call = (who: Who, method: 'GET' | 'POST', path: string, body?: unknown) => fetchAs(TOKENS[who], method, `${suite.server.httpUrl}${path}`, body);
/** The identity model's config with `extra` merged in, as JSON text (`raw` numbers are spliced in verbatim). */
const configText = (extra: Record<string, unknown>): string =>
  JSON.stringify({
    backend: 'wasm',
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    ...extra,
  });
function upload(who: Who, model: string, extra: Record<string, unknown> | string) {
  const config = typeof extra === 'string' ? extra : configText(extra);
  return call(who, 'POST', `/v2/repository/models/${model}/load`, { parameters: { config, 'file:1/model.wasm': wasm } });
}
const infer = (who: Who, model: string, data: number[]) =>
  call(who, 'POST', `/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [data.length], data }] });
/** Bob's model still answers (the server is alive and not held up). */
async function othersStillServed(): Promise<void> {
  const r = await infer('bob', 'm', [1, 2, 3]);
  expect(r.status).toBe(200);
  expect(r.json.outputs[0].data).toEqual([1, 2, 3]);
}

describe('reproduced attacks: one config field', () => {
  it.each([
    [
      'dynamic_batching.priority_levels 2e9',
      { max_batch_size: 4, dynamic_batching: { priority_levels: 2_000_000_000, default_priority_level: 1 } },
      "model 'evil': dynamic_batching.priority_levels 2000000000 exceeds this tenant's bound 16 (config bound max_priority_levels)",
    ],
    [
      'sequence_batching.oldest.max_candidate_sequences 2^31-1',
      { max_batch_size: 1, sequence_batching: { oldest: { max_candidate_sequences: 2147483647 } } },
      "model 'evil': sequence_batching.oldest.max_candidate_sequences 2147483647 exceeds this tenant's bound 64 (config bound max_candidate_sequences)",
    ],
    [
      'max_batch_size 2^31-1 with a direct sequence batcher',
      { max_batch_size: 2147483647, sequence_batching: { direct: {} } },
      "model 'evil': max_batch_size 2147483647 exceeds this tenant's bound 256 (config bound max_batch_size)",
    ],
    [
      'dynamic_batching.priority_levels 2e6 (below crash size)',
      { max_batch_size: 4, dynamic_batching: { priority_levels: 2_000_000, default_priority_level: 1 } },
      "model 'evil': dynamic_batching.priority_levels 2000000 exceeds this tenant's bound 16 (config bound max_priority_levels)",
    ],
  ])(
    '%s: 400 naming the field and the bound, nothing loaded, another tenant still answered',
    async (_what, extra, text) => {
      const r = await upload('acme', 'evil', extra);
      expect(r.status).toBe(400);
      expect(r.json.error).toBe(text);
      expect((await call('acme', 'GET', '/v2/models/evil/ready')).status).not.toBe(200);
      await othersStillServed();
    },
    60_000,
  );

  it("an operator's model is held to the server-wide caps (--max-priority-levels, --max-sequence-slots)", async () => {
    const levels = await upload('ops', 'evil_op', { max_batch_size: 4, dynamic_batching: { priority_levels: 2_000_000_000, default_priority_level: 1 } });
    expect(levels.status).toBe(400);
    expect(levels.json.error).toBe("model 'evil_op': dynamic_batching.priority_levels 2000000000 exceeds this server's bound 1024 (--max-priority-levels)");
    const slots = await upload('ops', 'evil_op', { max_batch_size: 1, sequence_batching: { oldest: { max_candidate_sequences: 2147483647 } } });
    expect(slots.status).toBe(400);
    expect(slots.json.error).toContain('(--max-sequence-slots)');
    await othersStillServed();
  }, 60_000);

  it('operator-only fields are refused for tenants', async () => {
    const r = await upload('acme', 'agents', { model_repository_agents: { agents: [{ name: 'checksum' }] } });
    expect(r.status).toBe(400);
    expect(r.json.error).toContain("model_repository_agents may not be set in a tenant's model config");
  });

  it("bounds are the tenant's: a tenant whose config_bounds allow 64 levels loads 32 and is served", async () => {
    const extra = { dynamic_batching: { priority_levels: 32, default_priority_level: 1 } };
    expect((await upload('acme', 'levels', extra)).status).toBe(400);
    expect((await upload('big', 'levels', extra)).status).toBe(200);
    const r = await call('big', 'POST', '/v2/models/levels/infer', {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [5, 6] }],
      parameters: { priority: 20 },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs[0].data).toEqual([5, 6]);
  }, 60_000);
});

/** Every numeric field the identity model's config can carry, as a config with `v` (JSON text of a number) in it. */
const NUMERIC_FIELDS: readonly [path: string, leaf: string, config: (v: string) => string][] = (() => {
  const io = (dims: string) =>
    `"input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":${dims}}],"output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":${dims}}]`;
  const base = (rest: string, dims = '[-1]') => `{"backend":"wasm",${io(dims)}${rest ? `,${rest}` : ''}}`;
  const db = (inner: string) => base(`"max_batch_size":4,"dynamic_batching":{${inner}}`);
  const sb = (inner: string, mbs = '1') => base(`"max_batch_size":${mbs},"sequence_batching":{${inner}}`);
  return [
    ['max_batch_size', 'max_batch_size', (v) => base(`"max_batch_size":${v}`)],
    ['input.dims', 'dims', (v) => base('', `[${v}]`)],
    ['instance_group.count', 'count', (v) => base(`"instance_group":[{"kind":"KIND_CPU","count":${v}}]`)],
    ['version_policy.latest.num_versions', 'num_versions', (v) => base(`"version_policy":{"latest":{"num_versions":${v}}}`)],
    ['version_policy.specific.versions', 'versions', (v) => base(`"version_policy":{"specific":{"versions":[${v}]}}`)],
    ['dynamic_batching.priority_levels', 'priority_levels', (v) => db(`"priority_levels":${v},"default_priority_level":1`)],
    ['dynamic_batching.default_priority_level', 'default_priority_level', (v) => db(`"priority_levels":2,"default_priority_level":${v}`)],
    ['dynamic_batching.preferred_batch_size', 'preferred_batch_size', (v) => db(`"preferred_batch_size":[${v}]`)],
    ['dynamic_batching.max_queue_delay_microseconds', 'max_queue_delay_microseconds', (v) => db(`"max_queue_delay_microseconds":${v}`)],
    ['dynamic_batching.default_queue_policy.max_queue_size', 'max_queue_size', (v) => db(`"default_queue_policy":{"max_queue_size":${v}}`)],
    [
      'dynamic_batching.default_queue_policy.default_timeout_microseconds',
      'default_timeout_microseconds',
      (v) => db(`"default_queue_policy":{"default_timeout_microseconds":${v}}`),
    ],
    ['sequence_batching.max_sequence_idle_microseconds', 'max_sequence_idle_microseconds', (v) => sb(`"max_sequence_idle_microseconds":${v}`)],
    ['sequence_batching.direct.max_queue_delay_microseconds', 'max_queue_delay_microseconds', (v) => sb(`"direct":{"max_queue_delay_microseconds":${v}}`)],
    ['sequence_batching (direct) max_batch_size', 'max_batch_size', (v) => sb('"direct":{}', v)],
    ['sequence_batching.oldest.max_candidate_sequences', 'max_candidate_sequences', (v) => sb(`"oldest":{"max_candidate_sequences":${v}}`)],
    [
      'sequence_batching.oldest.preferred_batch_size',
      'preferred_batch_size',
      (v) => sb(`"oldest":{"max_candidate_sequences":2,"preferred_batch_size":[${v}]}`, '4'),
    ],
    ['sequence_batching.state.dims', 'dims', (v) => sb(`"state":[{"input_name":"S_IN","output_name":"S_OUT","data_type":"TYPE_FP32","dims":[${v}]}]`)],
    ['optimization.graph.level', 'level', (v) => base(`"optimization":{"graph":{"level":${v}}}`)],
    ['optimization.gather_kernel_buffer_threshold', 'gather_kernel_buffer_threshold', (v) => base(`"optimization":{"gather_kernel_buffer_threshold":${v}}`)],
    ['model_warmup.batch_size', 'batch_size', (v) => base(`"model_warmup":[{"name":"w","batch_size":${v},"count":1}]`)],
    ['model_warmup.count', 'count', (v) => base(`"model_warmup":[{"name":"w","batch_size":1,"count":${v}}]`)],
  ];
})();
const EDGE_VALUES = ['0', '-1', '2147483647', '9223372036854775807'];

describe('property: every numeric field at 0, -1, 2^31-1, 2^63-1 or random', () => {
  it('is refused with a clear error, or loads and the server still answers with its heap bounded', async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    let loaded = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: NUMERIC_FIELDS.length - 1 }),
        fc.oneof(fc.constantFrom(...EDGE_VALUES), fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String), fc.integer({ min: -2, max: 300 }).map(String)),
        async (field, value) => {
          const [path, leaf, make] = NUMERIC_FIELDS[field]!;
          const r = await upload('acme', 'prop', make(value));
          if (r.status === 200) {
            loaded++;
            expect((await call('acme', 'GET', '/v2/models/prop/ready')).status).toBe(200);
            expect((await call('acme', 'POST', '/v2/repository/models/prop/unload', {})).status).toBe(200);
          } else {
            refused++;
            expect([400, 403], `${path}=${value}: ${r.text}`).toContain(r.status);
            const error = String(r.json?.error ?? '');
            // A clear error: it names the field, the model (Triton's validation wording names the
            // tensor or setting in words) or the quota that bounds it, and no host path.
            expect(error, `${path}=${value}`).toMatch(new RegExp(`${leaf}|'prop'|\\bprop\\b|quota`));
            expect(error).not.toContain(PROJECT_ROOT);
            expect(error).not.toContain(tmpdir());
          }
          await othersStillServed();
          expect(process.memoryUsage().heapUsed - heapBefore, `${path}=${value}`).toBeLessThan(512 * 1024 * 1024);
        },
      ),
      { numRuns: 60, examples: NUMERIC_FIELDS.flatMap((_, i) => EDGE_VALUES.map((v) => [i, v] as [number, string])) },
    );
    expect(refused).toBeGreaterThan(0);
    expect(loaded).toBeGreaterThan(0);
  }, 300_000);
});
