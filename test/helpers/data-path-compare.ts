/**
 * The native data path's conformance comparison (DESIGN "The native data path"): the same raw
 * HTTP/1.1 request goes to a server with the data path and to one without, and the answers must
 * match — status line, header set (names compared case-insensitively; `Date` and the hop-by-hop
 * headers each server writes itself left out) and body byte for byte — while the data path's
 * counters show how it handled the request.
 */
import { expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
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
  /** served: answered natively; replayed: read, then answered by the TypeScript path; forwarded: never read. */
  how: 'served' | 'replayed' | 'forwarded';
  status: number;
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
      expect({ served: after.served - before.served, replayed: after.replayed - before.replayed, forwarded: after.forwarded - before.forwarded }).toEqual({
        served: c.how === 'served' ? 1 : 0,
        replayed: c.how === 'replayed' ? 1 : 0,
        forwarded: c.how === 'forwarded' ? 1 : 0,
      });
    });
  }
}
