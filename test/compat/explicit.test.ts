/**
 * tritonclient[http] against Warden in explicit model-control mode with Triton's four example
 * ONNX models loaded: health, metadata, config, readiness, inference (JSON / binary, batch 1 / 8,
 * batch 9 rejected, output subsets, per-output binary_data, async_infer), error cases and
 * exact statistics. Real sockets, NVIDIA's own client, exact numbers.
 */
import { describe, expect, it } from 'vitest';
import { useCompatServer } from './harness.js';
import { SIMPLE_METADATA } from '../helpers/repo.js';

const EXAMPLES = ['simple', 'simple_string', 'simple_int8', 'addsub_onnx'] as const;
const BATCHING = ['simple', 'simple_string', 'simple_int8'] as const;

/** Case names infer_models.py must run (mirrors its loop; a skipped case fails the test). */
function inferCases(): string[] {
  const modes = ['binary inputs, default outputs', 'JSON inputs, json outputs', 'JSON inputs, binary outputs', 'binary inputs, json outputs'];
  const names: string[] = [];
  for (const m of EXAMPLES) {
    const batched = (BATCHING as readonly string[]).includes(m);
    for (const tag of batched ? ['batch 1', 'batch 8'] : ['no batch']) {
      for (const mode of modes) names.push(`${m} ${tag}: ${mode}`);
      names.push(`${m} ${tag}: requested output subset [OUTPUT1]`);
      names.push(`${m} ${tag}: binary_data per output (OUTPUT0 binary, OUTPUT1 JSON)`);
      names.push(`${m} ${tag}: request id echoed`);
    }
    names.push(batched ? `${m}: batch 9 rejected` : `${m}: batch dimension rejected`);
  }
  names.push('simple: async_infer x16', 'addsub_onnx: async_infer x16');
  names.push(
    "simple: model_version '1'",
    'simple: tritonclient.http.aio infer',
    'simple: gzip request and response',
    'simple: deflate request and response',
    'simple_string: gzip request and response',
  );
  return names;
}

describe('tritonclient.http against Warden (explicit mode, example models loaded)', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: [...EXAMPLES] });

  it('health, server metadata, model metadata / config / ready', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'health_metadata.py',
      ['--models', EXAMPLES.join(','), '--expect-ready', 'true', '--unavailable', 'simple_sequence,simple_dyna_sequence,no_such_model'],
      [
        'is_server_live',
        'is_server_ready is True',
        'server metadata',
        ...EXAMPLES.flatMap((m) => [`${m}: model metadata`, `${m}: model config`, `${m}: model ready`]),
        'simple_sequence: not ready',
        'simple_dyna_sequence: not ready',
        'no_such_model: not ready',
      ],
    );
    // The vitest side checks the raw answers too.
    expect(r.observed['metadata:simple']).toEqual(SIMPLE_METADATA);
    expect(r.observed['metadata:addsub_onnx']).toMatchObject({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16] },
        { name: 'INPUT1', datatype: 'FP32', shape: [16] },
      ],
    });
    expect(r.observed['metadata:simple_string']).toMatchObject({
      inputs: [
        { datatype: 'BYTES', shape: [-1, 16] },
        { datatype: 'BYTES', shape: [-1, 16] },
      ],
    });
    expect(r.observed['config:simple_string']).toMatchObject({
      name: 'simple_string',
      max_batch_size: 8,
      input: [
        { name: 'INPUT0', data_type: 'TYPE_STRING', dims: [16] },
        { name: 'INPUT1', data_type: 'TYPE_STRING', dims: [16] },
      ],
    });
    expect(r.observed['config:addsub_onnx']).toMatchObject({ name: 'addsub_onnx', max_batch_size: 0 });
    const md = r.observed['server_metadata'] as { extensions: string[] };
    expect(md.extensions).toEqual(expect.arrayContaining(['binary_tensor_data', 'model_repository', 'statistics']));
  });

  it('inference on every example model: JSON / binary, batch 1 / 8 / 9, subsets, async', async (ctx) => {
    const r = await c.expectScript(ctx, 'infer_models.py', ['--models', EXAMPLES.join(',')], inferCases());
    expect(r.cases.length).toBe(inferCases().length);
  });

  it('error cases: unknown model / version, wrong datatype / shape, missing input, unknown output', async (ctx) => {
    await c.expectScript(
      ctx,
      'errors.py',
      [],
      [
        'unknown model: infer',
        'unknown model: metadata / ready',
        'unknown version: infer',
        'wrong datatype',
        'wrong shape',
        'missing input',
        'unknown requested output',
        'server unchanged after errors',
      ],
    );
  });

  it('statistics: exact inference / execution counts after N requests', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'statistics.py',
      [],
      [
        'simple reloaded: statistics start at zero',
        '6 requests (batch 1,8,1,4,8,1) + 1 rejected, exact results',
        'inference / execution counts exact',
        'batch_stats per batch size',
        'all-model and per-version statistics',
        'statistics of an unknown model',
      ],
    );
    const st = r.observed['stats_after_requests'] as {
      inference_count: number;
      execution_count: number;
      inference_stats: Record<string, { count: number; ns: number }>;
    };
    expect(st.inference_count).toBe(1 + 8 + 1 + 4 + 8 + 1);
    expect(st.execution_count).toBe(6);
    expect(st.inference_stats.success.count).toBe(6);
  });
});
