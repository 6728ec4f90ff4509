/**
 * tritonclient[http] against Warden (explicit mode, nothing loaded at start) on the default
 * repository's ensemble `add_sub_ensemble`: loading it loads its composing models, metadata,
 * config, inference (binary / JSON, output subset) and statistics per composing model.
 */
import { describe, expect, it } from 'vitest';
import { useCompatServer } from './harness.js';

describe('tritonclient.http on an ensemble', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: [] });

  it('add_sub_ensemble: load, metadata, infer, statistics', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'ensemble.py',
      [],
      [
        'load loads the composing models',
        'metadata and config',
        'infer, binary tensors',
        'infer, JSON tensors',
        'infer, output subset [OUTPUT1]',
        'statistics per composing model',
      ],
    );
    expect(r.observed['metadata']).toMatchObject({ name: 'add_sub_ensemble', platform: 'ensemble' });
    expect(r.observed['statistics']).toEqual({ add_sub_ensemble: 3, add_sub_wasm: 3, addsub_onnx: 3 });
  });
});
