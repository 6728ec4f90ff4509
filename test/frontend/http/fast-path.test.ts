/**
 * The `/infer` fast path (frontend/http/fast-path.ts) answers exactly as Fastify does:
 * the same matrix of raw HTTP/1.1 requests goes to a server with the fast path (the default) and
 * to one with `httpFastPath: false`, and the raw answers must be byte-identical but for the `Date`
 * line: status line, header names / case / order, body. `fastPathCounters` proves which cases the
 * fast path served itself (the comparison would be empty otherwise) and which it left to Fastify.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError, parseCli } from '../../../host/src/cli-options.js';
import { fastPathCounters, matchInferUrl } from '../../../host/src/frontend/http/fast-path.js';
import type { RunningServer } from '../../../host/src/server.js';
import { executed } from '../../helpers/js-backend.js';
import {
  exchange,
  INPUT0,
  JSON_TYPE,
  LIMITED_TOKEN,
  matrix,
  portOf,
  raw,
  simpleBinary,
  simpleJson,
  startMatrixServer,
  tenancyAnswers,
  useMatrixRepository,
  writeLimitedTenants,
} from '../../helpers/http-matrix.js';
import { sleep, until } from '../../helpers/wait.js';

const repoPath = useMatrixRepository();

// the JavaScript listener's own paths (the native data path has its own suite, data-path.test.ts)
const start = (fast: boolean, extra: object = {}) => startMatrixServer(repoPath(), { httpFastPath: fast, httpDataPath: 'js', ...extra });

describe('--http-fast-path', () => {
  it('defaults to on; false turns it off; nonsense is refused', () => {
    expect(parseCli(['--model-repository=/m']).httpFastPath).toBe(true);
    expect(parseCli(['--model-repository=/m', '--http-fast-path=false']).httpFastPath).toBe(false);
    expect(() => parseCli(['--model-repository=/m', '--http-fast-path=maybe'])).toThrow(UsageError);
  });
});

describe('the /infer fast path answers as Fastify does', () => {
  let on: RunningServer;
  let off: RunningServer;
  beforeAll(async () => {
    [on, off] = await Promise.all([start(true), start(false)]);
  });
  afterAll(async () => {
    await Promise.all([on?.stop(), off?.stop()]);
  });

  it('matches only the plain infer URLs', () => {
    expect(matchInferUrl('/v2/models/simple/infer')).toEqual({ model: 'simple', version: -1 });
    expect(matchInferUrl('/v2/models/a.b-c_1/versions/12/infer')).toEqual({ model: 'a.b-c_1', version: 12 });
    for (const url of [
      '/v2/models/../infer',
      '/v2/models/.x/infer',
      '/v2/models/a/b/infer',
      '/v2/models/a/versions//infer',
      '/v2/models/a/versions/1234567890123456/infer',
      '/v2/models/a/infer?',
      '/v2/models/%2e/infer',
      `/v2/models/${'a'.repeat(256)}/infer`,
      '/V2/models/a/infer',
    ]) {
      expect(matchInferUrl(url), url).toBeUndefined();
    }
  });

  for (const c of matrix()) {
    it(`${c.name}: identical answer${c.fast ? ', served by the fast path' : ', left to Fastify'}`, async () => {
      const before = fastPathCounters.claimed;
      const a = await exchange(portOf(on), c.bytes, c.count ?? 1, c.heads);
      const claimed = fastPathCounters.claimed - before;
      const b = await exchange(portOf(off), c.bytes, c.count ?? 1, c.heads);
      expect(fastPathCounters.claimed - before - claimed, 'the server without the fast path claimed nothing').toBe(0);
      expect(claimed).toBe(c.fast ? (c.count ?? 1) : 0);
      expect(a.map((r) => Number(r.head.split(' ')[1]))).toEqual(c.status);
      expect(a.map((r) => r.head)).toEqual(b.map((r) => r.head));
      expect(a.map((r) => r.body.toString('base64'))).toEqual(b.map((r) => r.body.toString('base64')));
    });
  }

  it('a binary answer carries Inference-Header-Content-Length and the sums', async () => {
    const bin = simpleBinary();
    const [r] = await exchange(portOf(on), raw('POST', '/v2/models/simple/infer', bin.body, { 'Inference-Header-Content-Length': String(bin.headerLength) }));
    const hl = Number(/inference-header-content-length: (\d+)/.exec(r!.head)![1]);
    expect(JSON.parse(r!.body.subarray(0, hl).toString()).outputs[0].name).toBe('OUTPUT0');
    const out0 = new Int32Array(r!.body.buffer.slice(r!.body.byteOffset + hl, r!.body.byteOffset + hl + 64));
    expect([...out0]).toEqual(INPUT0.map((x) => x + 1));
  });

  it('a client that disconnects mid-body: no answer, no inference, the server keeps serving', async () => {
    const countOf = async (s: RunningServer) => (await (await fetch(`${s.httpUrl}/v2/models/simple/stats`)).json()).model_stats[0].inference_count as number;
    for (const s of [on, off]) {
      const before = await countOf(s);
      const body = simpleJson();
      const partial = raw('POST', '/v2/models/simple/infer', body, JSON_TYPE).subarray(0, -Math.floor(body.length / 2));
      await new Promise<void>((resolve) => {
        const sock = connect(portOf(s), '127.0.0.1', () => sock.write(partial, () => setTimeout(() => (sock.destroy(), resolve()), 50)));
        sock.on('error', () => undefined);
      });
      await sleep(100);
      const [r] = await exchange(portOf(s), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE));
      expect(r!.head).toMatch(/^HTTP\/1.1 200/);
      expect(await countOf(s)).toBe(before + 1);
    }
  });

  it('a client that goes away while its request is queued: cancelled, never executed; the one in flight is answered', async () => {
    const slowBody = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}';
    const runs = () => executed.filter((e) => e.model === 'slow').length;
    for (const s of [on, off]) {
      const before = runs();
      const first = exchange(portOf(s), raw('POST', '/v2/models/slow/infer', slowBody, JSON_TYPE));
      await until(() => runs() > before, { what: 'the first holding the only instance (600 ms)' });
      await new Promise<void>((resolve) => {
        const sock = connect(portOf(s), '127.0.0.1', () =>
          sock.write(raw('POST', '/v2/models/slow/infer', slowBody, JSON_TYPE), () => setTimeout(() => (sock.destroy(), resolve()), 100)),
        );
        sock.on('error', () => undefined);
      });
      const [r] = await first;
      expect(r!.head).toMatch(/^HTTP\/1.1 200/);
      await sleep(800); // long enough for a second run, had it not been cancelled
      expect(runs() - before).toBe(1);
      const [again] = await exchange(portOf(s), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE));
      expect(again!.head).toMatch(/^HTTP\/1.1 200/);
    }
  });

  // Last: it stops both servers.
  it('server draining: a request arriving on an open connection after close began gets the same 503 from Fastify', async () => {
    const both = await Promise.all(
      [on, off].map(async (s) => {
        let claimedAfterClose = 0;
        let stopped: Promise<void> | undefined;
        const got = await exchange(
          portOf(s),
          [
            // In flight (600 ms in its backend) while the server begins to close: the connection is not idle.
            raw('POST', '/v2/models/slow/infer', '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}', JSON_TYPE),
            () => sleep(200),
            async () => {
              claimedAfterClose = -fastPathCounters.claimed;
              stopped = s.stop();
              await sleep(50);
            },
            raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE),
          ],
          2,
        );
        await stopped;
        claimedAfterClose += fastPathCounters.claimed;
        return { got, claimedAfterClose };
      }),
    );
    const [a, b] = both;
    expect(a!.got.map((r) => r.head.split(' ')[1])).toEqual(['200', '503']);
    expect(a!.got.map((r) => r.head)).toEqual(b!.got.map((r) => r.head));
    expect(a!.got.map((r) => r.body.toString())).toEqual(b!.got.map((r) => r.body.toString()));
    expect(a!.claimedAfterClose + b!.claimedAfterClose).toBe(0);
  });
});

describe('multi-tenant: authentication and the request rate are the ones Fastify applies', () => {
  let dir: string;
  let on: RunningServer;
  let off: RunningServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warden-fastpath-tenants-'));
    const extra = { tenantsFile: writeLimitedTenants(dir), modelControlMode: 'explicit', loadModels: ['simple'] };
    [on, off] = await Promise.all([start(true, extra), start(false, extra)]);
  });
  afterAll(async () => {
    await Promise.all([on?.stop(), off?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('200, 200, then 429 with Retry-After after the tarpit; 401 without or with a wrong token', async () => {
    // The fast path claims the three authorised infers; the rest go to Fastify. The rate counts every
    // request once, whichever path served it: Fastify's route (the metadata GET) is over it too.
    const { statuses, probed } = await tenancyAnswers(LIMITED_TOKEN, portOf(on), portOf(off), () => fastPathCounters.claimed);
    expect(probed).toEqual([1, 1, 1, 0, 0, 0]);
    expect(statuses).toEqual(['200', '200', '429', '401', '401', '429']);
  });
});
