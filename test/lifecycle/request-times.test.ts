/**
 * A request's statistics (spec §3.2): queue + compute_input + compute_infer + compute_output never
 * exceed its success duration, also when its backend answers before `execute` returns and reports
 * a compute end later than that answer (a native backend's final response reaches the JS thread
 * first). Time is a ManualClock, so the figures are exact.
 */
import { describe, expect, it } from 'vitest';
import type { BackendModelInstance, ExecuteTimings, InferenceRequest, ResponseSender } from '../../host/src/contract/types.js';
import { ManualClock } from '../helpers/clock.js';
import { collector, config, ECHO, echoInit, modelVersion } from '../helpers/model-version.js';

const MS = 1_000_000n;

/** Answers at +2 ms, returns at +3 ms reporting compute from +1 ms to +3 ms. */
class EarlyAnswer implements BackendModelInstance {
  constructor(private readonly clock: ManualClock) {}
  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings> {
    const t0 = this.clock.now();
    this.clock.advance(2);
    requests.forEach((r, i) => senders[i]!.send({ outputs: [{ ...r.inputs[0]!, name: 'OUTPUT0' }] }, true));
    this.clock.advance(1);
    return { computeStartNs: t0 + MS, computeEndNs: t0 + 3n * MS };
  }
  async finalize(): Promise<void> {}
}

describe('request times of a request answered before execute returned', () => {
  it('are cut at the answer: their sum is the success duration, not more', async () => {
    const clock = new ManualClock();
    const { mv, stats } = modelVersion(config(ECHO), [new EarlyAnswer(clock)], { clock });
    const c = collector();
    mv.submit(echoInit('a'), c.sender);
    expect((await c.done).response).toBeTruthy();
    await new Promise((r) => setImmediate(r));
    const s = (stats.toJson('model', 1) as { inference_stats: Record<string, { count: number; ns: number | bigint }> }).inference_stats;
    const ns = (k: string) => BigInt(s[k]!.ns);
    expect(ns('success')).toBe(2n * MS);
    expect(ns('compute_input')).toBe(1n * MS);
    expect(ns('compute_infer')).toBe(1n * MS);
    expect(ns('compute_output')).toBe(0n);
    expect(ns('queue') + ns('compute_input') + ns('compute_infer') + ns('compute_output')).toBe(ns('success'));
    await mv.retire();
  });
});
