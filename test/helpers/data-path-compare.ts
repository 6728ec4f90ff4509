/**
 * The native data path's conformance comparison (DESIGN "The native data path"): the same raw
 * HTTP/1.1 request goes to a server with the data path and to one without, and the answers must
 * match — status line, header set (names compared case-insensitively; `Date` and the hop-by-hop
 * headers each server writes itself left out) and body byte for byte — while the data path's
 * counters show how it handled the request.
 */
import { expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import type { DataPathCounters } from '../../host/src/platform/addon.js';
import { type RawResponse, exchange, portOf } from './http-matrix.js';

/** Status line and header set (lower-case names, sorted; `Date` and hop-by-hop headers left out). */
export function canon(r: RawResponse): { head: string; body: string } {
  const [status, ...lines] = r.head.split('\r\n');
  const headers = lines
    .map((l) => {
      const i = l.indexOf(':');
      return `${l.slice(0, i).toLowerCase()}:${l.slice(i + 1).trim()}`;
    })
    .filter((l) => !/^(date|connection|keep-alive|transfer-encoding):/.test(l))
    .sort();
  return { head: [status, ...headers].join('\n'), body: r.body.toString('base64') };
}

/** A request to a native model and how the data path handles it. */
export interface NativeCase {
  name: string;
  bytes: Buffer;
  /**
   * served: answered natively; handed: read natively, answered by the TypeScript data plane in
   * process (a model without a route); replayed: read, then answered by the TypeScript path through
   * its listener; forwarded: never read.
   */
  how: 'served' | 'handed' | 'replayed' | 'forwarded';
  status: number;
}

/** How the data path handled what it counted between two readings of its counters. */
export function handling(before: DataPathCounters, after: DataPathCounters): Record<NativeCase['how'], number> {
  return {
    served: after.served - before.served,
    handed: after.handedOver - before.handedOver,
    replayed: after.replayed - before.replayed,
    forwarded: after.forwarded - before.forwarded,
  };
}

/** The counts of {@link handling} for one request handled `how`. */
export function handled(how: NativeCase['how']): Record<NativeCase['how'], number> {
  return { served: 0, handed: 0, replayed: 0, forwarded: 0, [how]: 1 };
}

/**
 * One test per case: the same raw request to the server with the native data path and to the one
 * without gives the same answer (status line, header set, body), with the status the case expects,
 * and the data path's counters show it handled the case as `how` says.
 */
export function compareCases(cases: () => NativeCase[], servers: () => [RunningServer, RunningServer]): void {
  for (const c of cases()) {
    it(`${c.name}: identical answer, ${c.how}`, async () => {
      const [native, js] = servers();
      const before = native.dataPath!.counters();
      const [a] = await exchange(portOf(native), c.bytes);
      const after = native.dataPath!.counters();
      const [b] = await exchange(portOf(js), c.bytes);
      expect(a, 'an answer from the native data path').toBeDefined();
      expect(canon(a!)).toEqual(canon(b!));
      expect(Number(/^HTTP\/1\.1 (\d+)/.exec(a!.head)![1])).toBe(c.status);
      expect(handling(before, after)).toEqual(handled(c.how));
    });
  }
}

/** A model's counts in `/v2/models/{model}/stats` (first version listed): inferences, executions, success, fail, queue. */
export async function statCounts(s: RunningServer, model: string): Promise<Record<string, number>> {
  const r = await fetch(`${s.httpUrl}/v2/models/${model}/stats`);
  const m = ((await r.json()) as { model_stats: { inference_count: number; execution_count: number; inference_stats: Record<string, { count: number }> }[] })
    .model_stats[0]!;
  return {
    inferences: m.inference_count,
    executions: m.execution_count,
    success: m.inference_stats.success!.count,
    fail: m.inference_stats.fail!.count,
    queue: m.inference_stats.queue!.count,
  };
}
