/**
 * tritonclient[http] driving Warden's model repository extension (spec §3.1) in explicit mode,
 * starting with no model loaded: index, load / unload, config override, file override
 * (`load_model(name, config=..., files={"file:1/model.onnx": bytes})`), error cases.
 */
import { describe, expect, it } from 'vitest';
import { MODEL_REPOSITORY, useCompatServer } from './harness.js';

describe('tritonclient.http model repository API against Warden (explicit mode)', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: [] });

  it('index, load, unload, config override, file override', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'repository.py',
      ['--repo', MODEL_REPOSITORY],
      [
        'index before any load',
        'load simple',
        'load with config override (max_batch_size 4)',
        'load without override reverts to config.pbtxt',
        'file override without config is rejected, model unchanged',
        'file override replaces simple with the INT8 model, then reverts',
        'file override creates a new model simple_uploaded',
        'unload simple',
        'unload of a never-loaded model succeeds',
        'load of a model missing from the repository fails',
        'load the four example models',
      ],
    );
    const after = r.observed['index_after_unload'] as { name: string }[];
    expect(after.find((e) => e.name === 'simple')).toEqual({
      name: 'simple',
      version: '1',
      state: 'UNAVAILABLE',
      reason: 'unloaded',
    });
  });
});
