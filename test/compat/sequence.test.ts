/**
 * tritonclient[http] against Warden's sequence batcher on the default repository (mode none, as
 * `npm start` serves it): Triton's sequence client example on `simple_sequence` (direct) and
 * `simple_dyna_sequence` (oldest, CORRID), with integer and string sequence ids, and Triton's
 * sequence errors (`sequence.py`).
 */
import { describe, expect, it } from 'vitest';
import { useCompatServer } from './harness.js';

describe('tritonclient.http sequence inference against Warden (mode none, default repository)', () => {
  const c = useCompatServer({ modelControlMode: 'none' });

  it("Triton's sequence client example, interleaved sequences, errors", async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'sequence.py',
      [],
      [
        "simple_sequence: Triton's sequence client example",
        "simple_dyna_sequence: Triton's sequence client example (--dyna)",
        'simple_sequence: interleaved sequences, integer and string ids',
        'simple_dyna_sequence: interleaved sequences, integer and string ids',
        'sequence errors',
      ],
    );
    // The raw answers, as the example prints them: seq 1000, seq 1001, the string-id sequence.
    expect(r.observed['simple_dyna_sequence:results']).toEqual([
      [1, 11, 7, 5, 3, 2, 0, 1 + 1000],
      [101, -11, -7, -5, -3, -2, 0, -1 + 1001],
      [21, -11, -7, -5, -3, -2, 0, -1 + 1002],
    ]);
  });
});
