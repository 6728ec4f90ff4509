/**
 * tritonclient[http] against Warden in model-control mode NONE on the default repository, as
 * `npm start` serves it: the four example ONNX models READY, the sequence-batching examples (if
 * present) UNAVAILABLE with a reason, strict readiness following the index, load / unload
 * refused (503).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectAllPassed, MODEL_REPOSITORY, runScript, useCompatServer, type ScriptResult } from './harness.js';

const READY = ['simple', 'simple_string', 'simple_int8', 'addsub_onnx'];
/** Sequence-batching examples: served UNAVAILABLE (with a reason) when present on disk. */
const SEQUENCE_EXAMPLES = ['simple_sequence', 'simple_dyna_sequence'];
const UNAVAILABLE = SEQUENCE_EXAMPLES.filter((m) => existsSync(join(MODEL_REPOSITORY, m, 'config.pbtxt')));

describe('tritonclient.http against Warden (mode none, default repository)', () => {
  const c = useCompatServer({ modelControlMode: 'none' });

  it('liveness, metadata / config / readiness of the example models', async (ctx) => {
    c.skipIfNoClient(ctx);
    const run = await runScript(c.python, 'health_metadata.py', [
      '--url', c.url, '--models', READY.join(','), '--unavailable', UNAVAILABLE.join(','),
    ]);
    expectAllPassed(run, [
      'is_server_live',
      ...READY.flatMap((m) => [`${m}: model metadata`, `${m}: model config`, `${m}: model ready`]),
      ...UNAVAILABLE.map((m) => `${m}: not ready`),
    ]);
  });

  let noneResult: ScriptResult | undefined;

  it('index states, strict readiness, inference, unavailable models refused, load / unload refused', async (ctx) => {
    c.skipIfNoClient(ctx);
    const run = await runScript(c.python, 'control_none.py', [
      '--url', c.url, '--models', READY.join(','), '--unavailable', UNAVAILABLE.join(','),
    ]);
    const r = expectAllPassed(run, [
      'index: READY and UNAVAILABLE models',
      'strict readiness follows the index',
      'example models infer exactly',
      'unavailable models refuse inference',
      'load / unload refused',
    ]);
    noneResult = r;
    const index = r.observed['index'] as { name: string; state?: string; reason?: string }[];
    for (const m of READY) expect(index.find((x) => x.name === m)).toEqual({ name: m, version: '1', state: 'READY' });
  });

  it.skipIf(UNAVAILABLE.length < SEQUENCE_EXAMPLES.length)(
    `sequence-batching examples (${SEQUENCE_EXAMPLES.join(', ')}) listed UNAVAILABLE with a reason [skipped when absent from model_repository/]`,
    () => {
      expect(noneResult, 'the index test above ran').toBeDefined();
      const index = noneResult!.observed['index'] as { name: string; state?: string; reason?: string }[];
      for (const m of SEQUENCE_EXAMPLES) {
        const e = index.find((x) => x.name === m);
        expect(e?.state, m).toBe('UNAVAILABLE');
        expect(e?.reason?.length ?? 0, `${m} reason`).toBeGreaterThan(0);
      }
    },
  );
});
