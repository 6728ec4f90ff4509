// Native Triton backends through Warden's libtritonserver.so, at the Backend contract level (no
// HTTP): the three sample backends (identity, add_sub, decoupled repeat), batching, statistics,
// auto-complete, logging, and load / unload / reload (spec §6).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeAddon } from '../../../host/src/platform/addon.js';
import { modelConfigToJson } from '../../../host/src/config/index.js';
import type { DataType } from '../../../host/src/contract/datatypes.js';
import { toConfigDataType } from '../../../host/src/contract/datatypes.js';
import {
  TEST_BACKEND_DIR,
  asF32,
  captureNativeLog,
  f32,
  loadNative,
  loadRepoModel,
  pbtxtConfig,
  request,
  requireNativeBuild,
  resolver,
  run,
  tensor,
  threadsNamed,
} from './helpers.js';

/**
 * The config of a one-tensor model `name` of `backend`: INPUT0 in, OUTPUT0 out, both `type`
 * (default FP32) with dims [ -1 ]; max_batch_size `maxBatch` (default 0), then `extra` (config text).
 */
function oneTensorConfig(name: string, backend: string, { type = 'FP32', maxBatch = 0, extra = '' } = {}) {
  return pbtxtConfig(
    name,
    `backend: "${backend}" max_batch_size: ${maxBatch}
    input { name: "INPUT0" data_type: TYPE_${type} dims: [ -1 ] }
    output { name: "OUTPUT0" data_type: TYPE_${type} dims: [ -1 ] }
    ${extra}`,
  );
}

const logLines: { level: number; msg: string; file?: string }[] = [];

beforeAll(() => {
  requireNativeBuild();
  // Capture backend log lines (TRITONSERVER_LogMessage) including VERBOSE (pino debug).
  captureNativeLog(logLines, 'debug');
});

describe('identity_native (sample backend warden_identity)', () => {
  const r = resolver();
  afterAll(() => r.finalizeAll());

  it('loads, infers, unloads and reloads; reports API 1.19 and sees its backend config and instance', async () => {
    expect(nativeAddon().apiVersion()).toEqual({ backend: '1.19', server: '1.34' });
    for (let round = 0; round < 2; round++) {
      const m = await loadRepoModel(r, 'identity_native');
      expect(m.instances).toHaveLength(1);
      const input = f32(1.5, -2, 3.25, 1e30);
      const { collected, error } = await run(m.instances[0]!, [request('identity_native', [tensor('INPUT0', 'FP32', [4], input)], ['OUTPUT0'])]);
      expect(error).toBeUndefined();
      const [res] = collected[0]!.responses;
      expect(res!.final).toBe(true);
      const out = res!.response!.outputs[0]!;
      expect(out).toMatchObject({ name: 'OUTPUT0', datatype: 'FP32', shape: [4] });
      expect(asF32(out)).toEqual(Array.from(input));
      await m.unload();
    }
    // Log lines cross threads asynchronously.
    await expect.poll(() => logLines.some((l) => l.msg.startsWith('instance identity_native_0_0'))).toBe(true);
    const initLog = logLines.find((l) => l.msg.startsWith('backend warden_identity initialized'));
    expect(initLog?.msg).toContain('"backend-directory"');
    expect(initLog?.msg).toContain('"default-max-batch-size":"4"');
    expect(logLines.some((l) => l.msg === 'instance identity_native_0_0 (CPU device 0, host policy {"cpu":{}}) initialized')).toBe(true);
    // Initialize runs once per backend object, however many models / reloads use it.
    expect(logLines.filter((l) => l.msg.startsWith('backend warden_identity initialized'))).toHaveLength(1);
  });

  it('copies every datatype, BYTES included, byte for byte', async () => {
    const types: DataType[] = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES', 'BF16'];
    const pairs = types.map(
      (t, i) => `input { name: "INPUT${i}" data_type: ${toConfigDataType(t)} dims: [ -1 ] }
      output { name: "OUTPUT${i}" data_type: ${toConfigDataType(t)} dims: [ -1 ] }`,
    );
    const config = pbtxtConfig('identity_all', `backend: "warden_identity" max_batch_size: 0 ${pairs.join('\n')}`);
    const m = await loadNative(r, config, '/nonexistent/identity_all');
    const inputs = types.map((t, i) => {
      if (t === 'BYTES') {
        const parts = ['', 'warden', 'ünïcode'].map((s) => Buffer.from(s));
        const data = Buffer.concat(parts.flatMap((p) => [Buffer.from(new Uint32Array([p.length]).buffer), p]));
        return tensor(`INPUT${i}`, t, [3], data);
      }
      const size = { BOOL: 1, UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, FP16: 2, BF16: 2, UINT32: 4, INT32: 4, FP32: 4, UINT64: 8, INT64: 8, FP64: 8 }[t];
      const data = new Uint8Array(5 * size).map((_, k) => (t === 'BOOL' ? k % 2 : (k * 37 + i) & 0xff));
      return tensor(`INPUT${i}`, t, [5], data);
    });
    const { collected } = await run(m.instances[0]!, [
      request(
        'identity_all',
        inputs,
        types.map((_, i) => `OUTPUT${i}`),
      ),
    ]);
    const outputs = collected[0]!.responses[0]!.response!.outputs;
    expect(outputs).toHaveLength(types.length);
    for (const [i, t] of types.entries()) {
      const out = outputs.find((o) => o.name === `OUTPUT${i}`)!;
      expect(out.datatype).toBe(t);
      expect(out.shape).toEqual(inputs[i]!.shape);
      expect(Buffer.from(out.data).equals(Buffer.from(inputs[i]!.data))).toBe(true);
    }
    await m.unload();
  });

  it('executes a batch of requests in one call and reports batch statistics', async () => {
    const config = oneTensorConfig('identity_batch', 'warden_identity', { type: 'INT32', maxBatch: 8, extra: 'dynamic_batching { }' });
    const m = await loadNative(r, config, '/nonexistent/identity_batch');
    const reqs = [1, 3, 2].map((rows, k) =>
      request('identity_batch', [tensor('INPUT0', 'INT32', [rows, 2], new Int32Array(rows * 2).fill(k + 1))], ['OUTPUT0'], { batchSize: rows, id: `r${k}` }),
    );
    const before = process.hrtime.bigint();
    const { collected, timings } = await run(m.instances[0]!, reqs);
    const after = process.hrtime.bigint();
    collected.forEach((c, k) => {
      const out = c.responses[0]!.response!.outputs[0]!;
      expect(out.shape).toEqual(reqs[k]!.inputs[0]!.shape);
      expect(Array.from(new Int32Array(out.data.slice().buffer))).toEqual(new Array(out.shape[0]! * 2).fill(k + 1));
    });
    // Timestamps come from the backend's CLOCK_MONOTONIC, the same clock as process.hrtime.
    const t = timings as { computeStartNs: bigint; computeEndNs: bigint };
    expect(t.computeStartNs).toBeGreaterThanOrEqual(before);
    expect(t.computeEndNs).toBeGreaterThanOrEqual(t.computeStartNs);
    expect(t.computeEndNs).toBeLessThanOrEqual(after);
    await m.unload();
  });

  it('runs execute on a native thread: a slow backend does not block the event loop', async () => {
    const config = oneTensorConfig('identity_slow', 'warden_identity', {
      extra: 'instance_group { kind: KIND_CPU count: 2 } parameters { key: "execute_delay_ms" value: { string_value: "200" } }',
    });
    const m = await loadNative(r, config, '/nonexistent/identity_slow');
    expect(m.instances).toHaveLength(2);
    expect(threadsNamed('w:identity_slow')).toBe(2); // BLOCKING policy: one native thread per instance
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t0 = performance.now();
    // Two instances execute in parallel: ~200 ms in total, not ~400.
    await Promise.all(m.instances.map((inst) => run(inst, [request('identity_slow', [tensor('INPUT0', 'FP32', [1], f32(7))], ['OUTPUT0'])])));
    const elapsed = performance.now() - t0;
    clearInterval(timer);
    expect(elapsed).toBeGreaterThanOrEqual(195);
    expect(elapsed).toBeLessThan(390);
    expect(ticks).toBeGreaterThanOrEqual(10);
    await m.unload();
    expect(threadsNamed('w:identity_slow')).toBe(0);
  });

  it('rejects an execute_delay_ms that is not an integer at load time', async () => {
    const config = oneTensorConfig('identity_bad_param', 'warden_identity', {
      extra: 'parameters { key: "execute_delay_ms" value: { string_value: "soon" } }',
    });
    await expect(loadNative(r, config, '/nonexistent/identity_bad_param')).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: expect.stringContaining("'execute_delay_ms' must be a non-negative integer"),
    });
  });
});

describe('lifecycle order', () => {
  it("calls Initialize, ModelInitialize, ModelInstanceInitialize ... ModelInstanceFinalize, ModelFinalize, Finalize in Triton's order", async () => {
    const r = resolver({ backendConfig: { '': { 'global-setting': 'g' }, warden_identity: { 'my-setting': 'x' }, other: { ignored: 'y' } } });
    const config = oneTensorConfig('identity_order', 'warden_identity', { extra: 'instance_group { name: "g" kind: KIND_MODEL count: 2 }' });
    const m = await loadNative(r, config, '/nonexistent/identity_order');
    expect(m.model.parallelInstanceLoading).toBe(true); // TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading
    await m.unload();
    await r.finalizeAll();
    // Log lines cross threads asynchronously; lines of earlier tests may still trickle in before ours.
    const start = () => logLines.findIndex((l) => l.msg.includes('"my-setting":"x"'));
    await expect.poll(() => start() >= 0 && logLines.slice(start()).some((l) => l.msg === 'backend warden_identity finalized')).toBe(true);
    const events = logLines
      .slice(start())
      .map((l) => l.msg)
      .filter((msg) => /initialized|finalized/.test(msg));
    expect(events).toEqual([
      expect.stringMatching(
        /^backend warden_identity initialized, config \{"cmdline":\{"auto-complete-config":"true",.*"global-setting":"g","my-setting":"x"\}\}$/,
      ),
      'model identity_order version 1 initialized',
      'instance g_0 (MODEL device 0, host policy {"model":{}}) initialized',
      'instance g_1 (MODEL device 0, host policy {"model":{}}) initialized',
      'instance g_0 finalized',
      'instance g_1 finalized',
      'model identity_order finalized',
      'backend warden_identity finalized',
    ]);
  });
});

describe('add_sub_native (sample backend warden_add_sub)', () => {
  const r = resolver();
  afterAll(() => r.finalizeAll());

  it('computes sum and difference, honours requested outputs, and answers bad shapes with INVALID_ARG', async () => {
    const m = await loadRepoModel(r, 'add_sub_native');
    const a = f32(1, 2, 3, 4.5);
    const b = f32(10, 20, 30, 0.25);
    const { collected } = await run(m.instances[0]!, [
      request('add_sub_native', [tensor('INPUT0', 'FP32', [4], a), tensor('INPUT1', 'FP32', [4], b)], ['OUTPUT0', 'OUTPUT1']),
    ]);
    const outs = collected[0]!.responses[0]!.response!.outputs;
    expect(asF32(outs.find((o) => o.name === 'OUTPUT0')!)).toEqual([11, 22, 33, 4.75]);
    expect(asF32(outs.find((o) => o.name === 'OUTPUT1')!)).toEqual([-9, -18, -27, 4.25]);

    const only = await run(m.instances[0]!, [
      request('add_sub_native', [tensor('INPUT0', 'FP32', [1], f32(5)), tensor('INPUT1', 'FP32', [1], f32(2))], ['OUTPUT1']),
    ]);
    expect(only.collected[0]!.responses[0]!.response!.outputs.map((o) => [o.name, asF32(o)])).toEqual([['OUTPUT1', [3]]]);

    const bad = await run(m.instances[0]!, [
      request('add_sub_native', [tensor('INPUT0', 'FP32', [2], f32(1, 2)), tensor('INPUT1', 'FP32', [3], f32(1, 2, 3))], ['OUTPUT0']),
    ]);
    const [err] = bad.collected[0]!.responses;
    expect(err!.final).toBe(true);
    expect(err!.error).toMatchObject({ code: 'INVALID_ARG', message: 'add_sub: INPUT0 and INPUT1 must have the same shape' });
    await m.unload();
  });
});

describe('repeat_native (decoupled sample backend warden_repeat)', () => {
  const r = resolver();
  afterAll(() => r.finalizeAll());

  it('streams one response per element as it is sent, after execute returned, then a flags-only final', async () => {
    const m = await loadRepoModel(r, 'repeat_native');
    const values = [7, -3, 42];
    const c = (
      await Promise.all([
        (async () => {
          const reqs = [
            request(
              'repeat_native',
              [
                tensor('IN', 'INT32', [3], new Int32Array(values)),
                tensor('DELAY', 'UINT32', [3], new Uint32Array([40, 40, 40])),
                tensor('WAIT', 'UINT32', [1], new Uint32Array([10])),
              ],
              ['OUT', 'IDX'],
            ),
          ];
          const t0 = performance.now();
          const res = await run(m.instances[0]!, reqs);
          return { ...res, t0 };
        })(),
      ])
    )[0]!;
    const responses = c.collected[0]!.responses;
    expect(responses).toHaveLength(4);
    responses.slice(0, 3).forEach((res, i) => {
      expect(res.final).toBe(false);
      const out = res.response!.outputs.find((o) => o.name === 'OUT')!;
      const idx = res.response!.outputs.find((o) => o.name === 'IDX')!;
      expect(out.shape).toEqual([1]);
      expect(new Int32Array(out.data.slice().buffer)[0]).toBe(values[i]);
      expect(new Uint32Array(idx.data.slice().buffer)[0]).toBe(i);
    });
    expect(responses[3]).toMatchObject({ response: null, final: true });
    // Responses arrive spread over time (~40 ms apart), not all at the end.
    expect(responses[2]!.atMs - responses[0]!.atMs).toBeGreaterThanOrEqual(60);
    expect(responses[0]!.atMs - c.t0).toBeGreaterThanOrEqual(30);

    // Empty IN: no data responses, just the final flag. Wrong WAIT shape: an error as the final response.
    const empty = await run(m.instances[0]!, [
      request(
        'repeat_native',
        [
          tensor('IN', 'INT32', [0], new Int32Array(0)),
          tensor('DELAY', 'UINT32', [0], new Uint32Array(0)),
          tensor('WAIT', 'UINT32', [1], new Uint32Array([0])),
        ],
        ['OUT'],
      ),
      request(
        'repeat_native',
        [tensor('IN', 'INT32', [1], new Int32Array(1)), tensor('DELAY', 'UINT32', [1], new Uint32Array(1)), tensor('WAIT', 'UINT32', [2], new Uint32Array(2))],
        ['OUT'],
      ),
    ]);
    expect(empty.collected[0]!.responses).toEqual([{ response: null, final: true, atMs: expect.any(Number) }]);
    expect(empty.collected[1]!.responses[0]!.error).toMatchObject({ code: 'INVALID_ARG', message: 'repeat: WAIT must have one element' });
    await m.unload();
  });

  it('refuses to load as a non-decoupled model', async () => {
    const config = pbtxtConfig(
      'repeat_plain',
      `backend: "warden_repeat" max_batch_size: 0
      input { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }
      output { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }`,
    );
    await expect(loadNative(r, config, '/nonexistent/repeat_plain')).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: expect.stringContaining('decoupled: true'),
    });
  });
});

describe('backend-side auto-complete (TRITONBACKEND_ModelSetConfig)', () => {
  const r = resolver({ backendDirectory: TEST_BACKEND_DIR });
  afterAll(() => r.finalizeAll());

  it('takes inputs, outputs, max_batch_size and the scheduler from the backend and re-normalises', async () => {
    const config = pbtxtConfig('completed', `backend: "warden_test_autocomplete"`);
    expect(config.input).toEqual([]);
    const m = await loadNative(r, config, '/nonexistent/completed');
    expect(m.model.config).toBeDefined();
    expect(m.config.max_batch_size).toBe(4);
    expect(m.config.input.map((i) => [i.name, i.data_type, i.dims, i.optional])).toEqual([['INPUT0', 'TYPE_INT32', [-1], false]]);
    expect(m.config.output.map((o) => o.name)).toEqual(['OUTPUT0']);
    expect(m.config.dynamic_batching?.preferred_batch_size).toEqual([4]);
    expect(m.config.parameters).toEqual({}); // not an auto-completable field
    expect(m.model.parallelInstanceLoading).toBe(false);
    const { collected } = await run(m.instances[0]!, [
      request('completed', [tensor('INPUT0', 'INT32', [2, 2], new Int32Array([1, 2, 3, 4]))], ['OUTPUT0'], { batchSize: 2 }),
    ]);
    expect(Array.from(new Int32Array(collected[0]!.responses[0]!.response!.outputs[0]!.data.slice().buffer))).toEqual([1, 2, 3, 4]);
    await m.unload();
  });

  it('DEVICE_BLOCKING: instances on one device share one native thread, executions serialise and still all complete', async () => {
    const config = oneTensorConfig('shared_thread', 'warden_test_autocomplete', { type: 'INT32', extra: 'instance_group { kind: KIND_CPU count: 3 }' });
    const m = await loadNative(r, config, '/nonexistent/shared_thread');
    expect(m.instances).toHaveLength(3);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, k) =>
        run(m.instances[k % 3]!, [request('shared_thread', [tensor('INPUT0', 'INT32', [1], new Int32Array([k]))], ['OUTPUT0'])]),
      ),
    );
    results.forEach((res, k) => expect(new Int32Array(res.collected[0]!.responses[0]!.response!.outputs[0]!.data.slice().buffer)[0]).toBe(k));
    expect(threadsNamed('wd:warden_test_')).toBe(1);
    await m.unload(); // the shared worker is joined after the last instance goes
    expect(threadsNamed('wd:warden_test_')).toBe(0);
  });

  it('hands the backend exactly the normalised config JSON Triton prints (every default, 64-bit numbers as numbers)', async () => {
    const errors = resolver({ backendDirectory: TEST_BACKEND_DIR });
    const config = pbtxtConfig(
      'config_echo',
      `backend: "warden_test_errors" max_batch_size: 2
      input { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }
      output { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] }
      dynamic_batching { max_queue_delay_microseconds: 9007199254740991 }
      parameters { key: "mode" value: { string_value: "config_echo" } }`,
    );
    const m = await loadNative(errors, config, '/nonexistent/config_echo');
    const { collected } = await run(m.instances[0]!, [request('config_echo', [tensor('INPUT0', 'INT32', [1, 1], new Int32Array(1))], ['OUTPUT0'])]);
    const out = collected[0]!.responses[0]!.response!.outputs[0]!;
    const json = Buffer.from(out.data).subarray(4).toString();
    expect(json).toBe(modelConfigToJson(config));
    const parsed = JSON.parse(json);
    expect(parsed.dynamic_batching.max_queue_delay_microseconds).toBe(9007199254740991);
    expect(parsed.input[0]).toMatchObject({ optional: false, allow_ragged_batch: false, format: 'FORMAT_NONE' });
    expect(parsed.default_model_filename).toBe('');
    await m.unload();
    await errors.finalizeAll();
  });

  it('leaves the config alone when auto-complete is disabled', async () => {
    const config = pbtxtConfig('not_completed', `backend: "warden_test_autocomplete"`);
    const m = await loadNative(r, config, '/nonexistent/not_completed', { autoCompleteConfig: false });
    expect(m.model.config).toBeUndefined();
    await m.unload();
  });
});
