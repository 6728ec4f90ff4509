/**
 * tritonclient[http] against Warden in model-control mode NONE on the default repository, as
 * `npm start` serves it: the four example ONNX models READY, the sequence-batching examples (from a
 * second repository) UNAVAILABLE with a reason, strict readiness following the index, load / unload
 * refused (503).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { tempRepo } from '../helpers/repo.js';
import { expectAllPassed, runScript, useCompatServer, type ScriptResult } from './harness.js';

const READY = ['simple', 'simple_string', 'simple_int8', 'addsub_onnx'];
/**
 * Sequence-batching examples: Warden has no sequence batcher yet, so they are served UNAVAILABLE
 * with a reason. They are not in model_repository/ (a server with unready models is not ready);
 * a second repository beside it holds them.
 */
const SEQUENCE_EXAMPLES = ['simple_sequence', 'simple_dyna_sequence'];
const UNAVAILABLE = SEQUENCE_EXAMPLES;
const sequenceRepo = tempRepo(SEQUENCE_EXAMPLES);
afterAll(() => sequenceRepo.cleanup());

describe('tritonclient.http against Warden (mode none, default repository)', () => {
  const c = useCompatServer({ modelControlMode: 'none', extraRepositories: [sequenceRepo.path] });

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

  it(
    `sequence-batching examples (${SEQUENCE_EXAMPLES.join(', ')}) listed UNAVAILABLE with a reason`,
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
