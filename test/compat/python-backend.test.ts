/**
 * tritonclient[http] against Warden's Python backend samples in the default repository
 * (explicit mode, nothing loaded at start): add_sub_python as Triton's python add_sub example,
 * bls_python's BLS call to simple, the decoupled repeat_python refused on /infer, statistics,
 * unload.
 */
import { describe, expect, it } from 'vitest';
import { useCompatServer } from './harness.js';

describe('tritonclient.http on Python models', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: [] });

  it('add_sub_python, bls_python, repeat_python', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'python_backend.py',
      [],
      [
        'load the Python samples',
        'add_sub_python, binary tensors',
        'add_sub_python, JSON tensors',
        'bls_python calls simple',
        'decoupled repeat_python refused on infer',
        'statistics',
        'unload',
      ],
    );
    expect(r.observed['statistics']).toMatchObject({ add_sub_python: 2, bls_python: 1 });
  });
});
