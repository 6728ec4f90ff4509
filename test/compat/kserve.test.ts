/**
 * KServe's own Python client (`kserve.InferenceRESTClient`, PyPI `kserve`, pinned in venv.ts)
 * against Warden in explicit mode with two of Triton's example models loaded: health live / ready
 * (the client reads `{"live": true}` / `{"ready": true}` from the body, which Triton does not
 * send), model ready, inference with JSON and binary tensor data, and an error's text (Warden
 * is a superset of both protocol readings).
 */
import { describe, it } from 'vitest';
import { useCompatServer } from './harness.js';

const MODELS = ['simple', 'simple_string'] as const;

describe('kserve.InferenceRESTClient against Warden (explicit mode, example models loaded)', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: [...MODELS] });

  it('health live / ready, model ready, infer JSON and binary, error text', async (ctx) => {
    await c.expectScript(
      ctx,
      'kserve_client.py',
      ['--models', MODELS.join(',')],
      [
        'kserve: server live and ready',
        ...MODELS.map((m) => `kserve: ${m} model ready`),
        'kserve: unknown model not ready',
        ...MODELS.flatMap((m) => [`kserve: ${m} infer JSON`, `kserve: ${m} infer binary`]),
        'kserve: unknown model error text',
      ],
    );
  });
});
