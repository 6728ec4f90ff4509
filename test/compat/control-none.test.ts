/**
 * tritonclient[http] against Warden in model-control mode NONE on the default repository, as
 * `npm start` serves it: the example ONNX models READY (the sequence examples too), a model with a
 * bad sequence control (from a second repository) UNAVAILABLE with a reason, strict readiness
 * following the index, load / unload refused (503).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { addBadSequence, tempRepo } from '../helpers/repo.js';
import { useCompatServer, type ScriptResult } from './harness.js';

const READY = ['simple', 'simple_string', 'simple_int8', 'addsub_onnx'];
/** Triton's sequence examples, served READY from model_repository/ (`sequence.test.ts` infers on them). */
const SEQUENCE_EXAMPLES = ['simple_sequence', 'simple_dyna_sequence'];
/**
 * A model that fails to load, so UNAVAILABLE with a reason: `simple_sequence` with a START control
 * of three values. Not in model_repository/ (a server with unready models is not ready); a second
 * repository beside it holds it.
 */
const UNAVAILABLE = ['bad_sequence'];
const badRepo = tempRepo();
addBadSequence(badRepo);
afterAll(() => badRepo.cleanup());

describe('tritonclient.http against Warden (mode none, default repository)', () => {
  const c = useCompatServer({ modelControlMode: 'none', extraRepositories: [badRepo.path] });

  it('liveness, metadata / config / readiness of the example models', async (ctx) => {
    await c.expectScript(
      ctx,
      'health_metadata.py',
      ['--models', READY.join(','), '--unavailable', UNAVAILABLE.join(',')],
      [
        'is_server_live',
        ...READY.flatMap((m) => [`${m}: model metadata`, `${m}: model config`, `${m}: model ready`]),
        ...UNAVAILABLE.map((m) => `${m}: not ready`),
      ],
    );
  });

  let noneResult: ScriptResult | undefined;

  it('index states, strict readiness, inference, unavailable models refused, load / unload refused', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'control_none.py',
      ['--models', READY.join(','), '--unavailable', UNAVAILABLE.join(',')],
      [
        'index: READY and UNAVAILABLE models',
        'strict readiness follows the index',
        'example models infer exactly',
        'unavailable models refuse inference',
        'load / unload refused',
      ],
    );
    noneResult = r;
    const index = r.observed['index'] as { name: string; state?: string; reason?: string }[];
    for (const m of READY) expect(index.find((x) => x.name === m)).toEqual({ name: m, version: '1', state: 'READY' });
  });

  it(`sequence-batching examples (${SEQUENCE_EXAMPLES.join(', ')}) READY; ${UNAVAILABLE.join(', ')} UNAVAILABLE with its reason`, () => {
    expect(noneResult, 'the index test above ran').toBeDefined();
    const index = noneResult!.observed['index'] as { name: string; state?: string; reason?: string }[];
    for (const m of SEQUENCE_EXAMPLES) expect(index.find((x) => x.name === m)).toEqual({ name: m, version: '1', state: 'READY' });
    const bad = index.find((x) => x.name === 'bad_sequence');
    expect(bad?.state).toBe('UNAVAILABLE');
    expect(bad?.reason).toMatch(/'int32_false_true' must have exactly 2 entries/);
  });
});
