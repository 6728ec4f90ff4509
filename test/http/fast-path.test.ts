/**
 * The `/infer` fast path (frontend/http/fast-path.ts, issue 14) answers exactly as Fastify does:
 * the same matrix of raw HTTP/1.1 requests goes to a server with the fast path (the default) and
 * to one with `httpFastPath: false`, and the raw answers must be byte-identical but for the `Date`
 * line: status line, header names / case / order, body. `fastPathCounters` proves which cases the
 * fast path served itself (the comparison would be empty otherwise) and which it left to Fastify.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError, parseCli } from '../../host/src/cli-options.js';
import { fastPathCounters, matchInferUrl } from '../../host/src/frontend/http/fast-path.js';
import { startServer, type RunningServer } from '../../host/src/server.js';
import { hashToken } from '../../host/src/tenancy/token.js';
import { JsBackendResolver, REPEAT_CONFIG, echoConfig, executed } from '../helpers/js-backend.js';
import { tempRepo, type TempRepo } from '../helpers/repo.js';

interface RawResponse {
  /** Status line and headers, `Date` removed. */
  head: string;
  body: Buffer;
}

/** One raw request: method, path, extra header lines, body (Content-Length added unless `chunked`). */
function raw(method: string, path: string, body: string | Buffer = '', headers: Record<string, string> = {}, opts: { chunked?: boolean; noLength?: boolean } = {}): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  let head = `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  if (opts.chunked) {
    head += 'Transfer-Encoding: chunked\r\n\r\n';
    return Buffer.concat([Buffer.from(head), Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);
  }
  if (!opts.noLength) head += `Content-Length: ${b.length}\r\n`;
  return Buffer.concat([Buffer.from(head + '\r\n'), b]);
}

/**
 * Send `bytes` on a fresh connection (a list: buffers written in turn, functions awaited between
 * them) and read `count` responses (each has a Content-Length; a
 * response to HEAD has no body): fewer if the server closes first.
 */
function exchange(port: number, bytes: Buffer | (Buffer | (() => Promise<unknown>))[], count = 1, heads: boolean[] = []): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const out: RawResponse[] = [];
    let buf = Buffer.alloc(0);
    const send = async () => {
      for (const step of Array.isArray(bytes) ? bytes : [bytes]) {
        if (Buffer.isBuffer(step)) sock.write(step);
        else await step();
      }
    };
    const sock = connect(port, '127.0.0.1', () => void send().catch(reject));
    const timer = setTimeout(() => (sock.destroy(), reject(new Error(`timed out after ${out.length} of ${count} responses`))), 10_000);
    const done = () => (clearTimeout(timer), sock.destroy(), resolve(out));
    const parse = () => {
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const m = /\r\ncontent-length: *(\d+)/i.exec(head);
        const len = heads[out.length] ? 0 : m ? Number(m[1]) : 0;
        if (buf.length < end + 4 + len) return;
        out.push({ head: head.split('\r\n').filter((l) => !/^date:/i.test(l)).join('\r\n'), body: Buffer.from(buf.subarray(end + 4, end + 4 + len)) });
        buf = buf.subarray(end + 4 + len);
        if (out.length === count) return done();
      }
    };
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      parse();
    });
    sock.on('error', () => undefined);
    sock.on('close', done);
  });
}

const INPUT0 = Array.from({ length: 16 }, (_, i) => i);
const INPUT1 = Array.from({ length: 16 }, () => 1);
const simpleJson = (datatype = 'INT32', shape = [1, 16]) =>
  JSON.stringify({ inputs: [{ name: 'INPUT0', datatype, shape, data: INPUT0 }, { name: 'INPUT1', datatype, shape, data: INPUT1 }] });

/** `simple` with binary inputs and outputs (binary tensor data extension, spec §2). */
function simpleBinary(): { body: Buffer; headerLength: number } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
      ],
      parameters: { binary_data_output: true },
    }),
  );
  const data = Buffer.from(Int32Array.from([...INPUT0, ...INPUT1]).buffer);
  return { body: Buffer.concat([header, data]), headerLength: header.length };
}

const JSON_TYPE = { 'Content-Type': 'application/json' };
const MAX_INPUT = 100_000;

interface Case {
  name: string;
  bytes: Buffer;
  /** Whether the fast path serves it (the rest go to Fastify). */
  fast: boolean;
  count?: number;
  heads?: boolean[];
  status: number[];
}

function matrix(): Case[] {
  const bin = simpleBinary();
  const binHeaders = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(bin.headerLength) };
  const echo = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4], data: [1, 2, 3, 4] }], outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }] });
  return [
    { name: 'simple JSON', bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE), fast: true, status: [200] },
    { name: 'simple JSON, no Content-Type', bytes: raw('POST', '/v2/models/simple/infer', simpleJson()), fast: true, status: [200] },
    { name: 'simple binary', bytes: raw('POST', '/v2/models/simple/infer', bin.body, binHeaders), fast: true, status: [200] },
    { name: 'versioned route', bytes: raw('POST', '/v2/models/simple/versions/1/infer', simpleJson(), JSON_TYPE), fast: true, status: [200] },
    { name: 'version that does not exist', bytes: raw('POST', '/v2/models/simple/versions/7/infer', simpleJson(), JSON_TYPE), fast: true, status: [404] },
    { name: 'identity (echo) with a binary output and id', bytes: raw('POST', '/v2/models/echo/infer', echo.replace('{', '{"id":"r-1",'), JSON_TYPE), fast: true, status: [200] },
    { name: 'Accept-Encoding: identity', bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, 'Accept-Encoding': 'identity' }), fast: true, status: [200] },
    { name: 'bad JSON', bytes: raw('POST', '/v2/models/simple/infer', '{"inputs": [', JSON_TYPE), fast: true, status: [400] },
    { name: 'unknown model', bytes: raw('POST', '/v2/models/nope/infer', simpleJson(), JSON_TYPE), fast: true, status: [404] },
    { name: 'wrong datatype', bytes: raw('POST', '/v2/models/simple/infer', simpleJson('FP32'), JSON_TYPE), fast: true, status: [400] },
    { name: 'wrong shape', bytes: raw('POST', '/v2/models/simple/infer', simpleJson('INT32', [2, 8]), JSON_TYPE), fast: true, status: [400] },
    { name: 'bad Inference-Header-Content-Length', bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, 'Inference-Header-Content-Length': '-3' }), fast: true, status: [400] },
    { name: 'decoupled model', bytes: raw('POST', '/v2/models/repeat/infer', '{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1]}]}', JSON_TYPE), fast: true, status: [501] },
    { name: 'body over --http-max-input-size', bytes: raw('POST', '/v2/models/simple/infer', Buffer.alloc(MAX_INPUT + 10, 0x20), JSON_TYPE), fast: true, status: [400] },
    // Left to Fastify: each differs from the plain case in one thing the fast path does not take.
    { name: 'body at or over the offload size', bytes: raw('POST', '/v2/models/simple/infer', Buffer.alloc(300_000, 0x20), JSON_TYPE), fast: false, status: [400] },
    { name: 'GET on the infer URL', bytes: raw('GET', '/v2/models/simple/infer'), fast: false, status: [405] },
    { name: 'HEAD on the infer URL', bytes: raw('HEAD', '/v2/models/simple/infer'), fast: false, heads: [true], status: [405] },
    { name: 'gzip request body', bytes: raw('POST', '/v2/models/simple/infer', gzipSync(simpleJson()), { ...JSON_TYPE, 'Content-Encoding': 'gzip' }), fast: false, status: [200] },
    { name: 'gzip response', bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, 'Accept-Encoding': 'gzip' }), fast: false, status: [200] },
    { name: 'chunked body', bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE, { chunked: true }), fast: false, status: [200] },
    { name: 'query string', bytes: raw('POST', '/v2/models/simple/infer?x=1', simpleJson(), JSON_TYPE), fast: false, status: [200] },
    { name: 'percent-encoded name', bytes: raw('POST', '/v2/models/simpl%65/infer', simpleJson(), JSON_TYPE), fast: false, status: [200] },
    { name: 'empty name', bytes: raw('POST', '/v2/models//infer', simpleJson(), JSON_TYPE), fast: false, status: [404] },
    { name: 'non-digit version', bytes: raw('POST', '/v2/models/simple/versions/x1/infer', simpleJson(), JSON_TYPE), fast: false, status: [404] },
    { name: 'trailing slash', bytes: raw('POST', '/v2/models/simple/infer/', simpleJson(), JSON_TYPE), fast: false, status: [404] },
    { name: 'other content type', bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { 'Content-Type': 'text/plain' }), fast: false, status: [200] },
    { name: 'no Content-Length, no body', bytes: raw('POST', '/v2/models/simple/infer', '', {}, { noLength: true }), fast: false, status: [400] },
    {
      name: 'keep-alive pipelining of four requests on one socket',
      bytes: Buffer.concat([
        raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE),
        raw('POST', '/v2/models/simple/infer', bin.body, binHeaders),
        raw('POST', '/v2/models/simple/infer', '{"inputs": [', JSON_TYPE),
        raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE),
      ]),
      fast: true,
      count: 4,
      status: [200, 200, 400, 200],
    },
  ];
}

const REPO_CONFIGS: Record<string, string> = {
  'echo/config.pbtxt': echoConfig(),
  'repeat/config.pbtxt': REPEAT_CONFIG,
  'slow/config.pbtxt': echoConfig('parameters { key: "delay_ms" value: { string_value: "600" } }'),
};

let repo: TempRepo;
beforeAll(() => {
  repo = tempRepo(['simple']);
  for (const [rel, text] of Object.entries(REPO_CONFIGS)) {
    repo.write(rel, text);
    repo.write(`${rel.split('/')[0]}/1/.keep`, '');
  }
});
afterAll(() => repo?.cleanup());

const start = (fast: boolean, extra: Parameters<typeof startServer>[0] | object = {}) =>
  startServer({ modelRepositories: [repo.path], httpPort: 0, metricsPort: -1, logLevel: 'silent', backendResolvers: [new JsBackendResolver()], maxInputSize: MAX_INPUT, httpFastPath: fast, ...extra });
const portOf = (s: RunningServer) => Number(new URL(s.httpUrl).port);

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
    for (const url of ['/v2/models/../infer', '/v2/models/.x/infer', '/v2/models/a/b/infer', '/v2/models/a/versions//infer', '/v2/models/a/versions/1234567890123456/infer', '/v2/models/a/infer?', '/v2/models/%2e/infer', `/v2/models/${'a'.repeat(256)}/infer`, '/V2/models/a/infer']) {
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
      await new Promise((r) => setTimeout(r, 100));
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
      await new Promise((r) => setTimeout(r, 100)); // the first holds the only instance for 600 ms
      await new Promise<void>((resolve) => {
        const sock = connect(portOf(s), '127.0.0.1', () => sock.write(raw('POST', '/v2/models/slow/infer', slowBody, JSON_TYPE), () => setTimeout(() => (sock.destroy(), resolve()), 100)));
        sock.on('error', () => undefined);
      });
      const [r] = await first;
      expect(r!.head).toMatch(/^HTTP\/1.1 200/);
      await new Promise((r) => setTimeout(r, 800)); // long enough for a second run, had it not been cancelled
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
            () => new Promise((r) => setTimeout(r, 200)),
            async () => {
              claimedAfterClose = -fastPathCounters.claimed;
              stopped = s.stop();
              await new Promise((r) => setTimeout(r, 50));
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
  const TOKEN = 'limited-token-0123456789abcdefghij';
  let dir: string;
  let on: RunningServer;
  let off: RunningServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warden-fastpath-tenants-'));
    // burst 2 per 200 s: the third request within the window is over the rate.
    const tenants = { tenants: [{ id: 'limited', role: 'tenant', tokens: [hashToken(TOKEN)], shared_models: ['simple'], quotas: { requests_per_second: 0.01, burst: 2 } }] };
    writeFileSync(join(dir, 'tenants.json'), JSON.stringify(tenants));
    const extra = { tenantsFile: join(dir, 'tenants.json'), modelControlMode: 'explicit', loadModels: ['simple'] };
    [on, off] = await Promise.all([start(true, extra), start(false, extra)]);
  });
  afterAll(async () => {
    await Promise.all([on?.stop(), off?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('200, 200, then 429 with Retry-After after the tarpit; 401 without or with a wrong token', async () => {
    const auth = { ...JSON_TYPE, Authorization: `Bearer ${TOKEN}` };
    const cases = [
      { bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), auth), fast: 1 },
      { bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), auth), fast: 1 },
      { bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), auth), fast: 1 },
      { bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE), fast: 0 },
      { bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, Authorization: 'Bearer not-a-token-0123456789abcdefghij' }), fast: 0 },
      // The rate counts every request once, whichever path served it: Fastify's route is over it too.
      { bytes: raw('GET', '/v2/models/simple', '', { Authorization: `Bearer ${TOKEN}` }), fast: 0 },
    ];
    const statuses: string[] = [];
    for (const c of cases) {
      const before = fastPathCounters.claimed;
      const t0 = Date.now();
      const [a] = await exchange(portOf(on), c.bytes);
      const claimed = fastPathCounters.claimed - before;
      const [b] = await exchange(portOf(off), c.bytes);
      expect(claimed).toBe(c.fast);
      expect(a!.head).toEqual(b!.head);
      expect(a!.body.toString()).toEqual(b!.body.toString());
      const status = a!.head.split(' ')[1]!;
      if (status === '429') expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
      statuses.push(status);
    }
    expect(statuses).toEqual(['200', '200', '429', '401', '401', '429']);
    expect(statuses.length).toBe(6);
  });
});
