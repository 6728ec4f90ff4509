/**
 * tritonclient[http] against Warden in model-control mode NONE on the default repository, as
 * `npm start` serves it: the four example ONNX models READY, the sequence-batching examples
 * UNAVAILABLE with a reason, strict readiness therefore false, load / unload refused (503).
 */
import { describe, expect, it } from 'vitest';
import { expectAllPassed, runScript, useCompatServer } from './harness.js';

const READY = ['simple', 'simple_string', 'simple_int8', 'addsub_onnx'];
const UNAVAILABLE = ['simple_sequence', 'simple_dyna_sequence'];

describe('tritonclient.http against Warden (mode none, default repository)', () => {
  const c = useCompatServer({ modelControlMode: 'none' });

  it('liveness, strict readiness, metadata of the READY models', async (ctx) => {
    c.skipIfNoClient(ctx);
    const run = await runScript(c.python, 'health_metadata.py', [
      '--url', c.url, '--models', READY.join(','), '--expect-ready', 'false', '--unavailable', UNAVAILABLE.join(','),
    ]);
    expectAllPassed(run, [
      'is_server_live',
      'is_server_ready is False',
      ...READY.map((m) => `${m}: model metadata`),
      ...UNAVAILABLE.map((m) => `${m}: not ready`),
    ]);
  });

  it('index states, inference, unavailable models refused, load / unload refused', async (ctx) => {
    c.skipIfNoClient(ctx);
    const run = await runScript(c.python, 'control_none.py', [
      '--url', c.url, '--models', READY.join(','), '--unavailable', UNAVAILABLE.join(','),
    ]);
    const r = expectAllPassed(run, [
      'index: READY and UNAVAILABLE models',
      'example models infer exactly',
      'unavailable models refuse inference',
      'load / unload refused',
    ]);
    const index = r.observed['index'] as { name: string; state?: string; reason?: string }[];
    for (const m of UNAVAILABLE) {
      const e = index.find((x) => x.name === m);
      expect(e?.state).toBe('UNAVAILABLE');
      expect(e?.reason?.length ?? 0).toBeGreaterThan(0);
    }
  });
});
