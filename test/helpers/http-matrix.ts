/**
 * Raw HTTP/1.1 exchanges and the matrix of `/infer` cases the fast-path tests send to servers
 * built differently (fast path on / off: test/frontend/http/fast-path.test.ts; front-end threads on / off:
 * test/frontend/http/frontend-threads.test.ts) and compare byte for byte.
 */
import { connect } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect } from 'vitest';
import { startServer, type RunningServer } from '../../host/src/server.js';
import { echoConfig, JsBackendResolver, REPEAT_CONFIG } from './js-backend.js';
import { tempRepo, type TempRepo } from './repo.js';
import { TEST_HTTP_DATA_PATH, writeTenantsFile } from './servers.js';

export interface RawResponse {
  /** Status line and headers, `Date` removed. */
  head: string;
  body: Buffer;
}

/** One raw request: method, path, extra header lines, body (Content-Length added unless `chunked`). */
export function raw(
  method: string,
  path: string,
  body: string | Buffer = '',
  headers: Record<string, string> = {},
  opts: { chunked?: boolean; noLength?: boolean } = {},
): Buffer {
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
export function exchange(port: number, bytes: Buffer | (Buffer | (() => Promise<unknown>))[], count = 1, heads: boolean[] = []): Promise<RawResponse[]> {
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
        out.push({
          head: head
            .split('\r\n')
            .filter((l) => !/^date:/i.test(l))
            .join('\r\n'),
          body: Buffer.from(buf.subarray(end + 4, end + 4 + len)),
        });
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

export const INPUT0 = Array.from({ length: 16 }, (_, i) => i);
export const INPUT1 = Array.from({ length: 16 }, () => 1);
export const simpleJson = (datatype = 'INT32', shape = [1, 16]) =>
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype, shape, data: INPUT0 },
      { name: 'INPUT1', datatype, shape, data: INPUT1 },
    ],
  });

/** `simple` with binary inputs and outputs (binary tensor data extension, spec §2). */
export function simpleBinary(): { body: Buffer; headerLength: number } {
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

export const JSON_TYPE = { 'Content-Type': 'application/json' };
export const MAX_INPUT = 100_000;

export interface Case {
  name: string;
  bytes: Buffer;
  /** Whether the fast path serves it (the rest go to Fastify). */
  fast: boolean;
  count?: number;
  heads?: boolean[];
  status: number[];
}

export function matrix(): Case[] {
  const bin = simpleBinary();
  const binHeaders = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(bin.headerLength) };
  const echo = JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 4], data: [1, 2, 3, 4] }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  });
  return [
    { name: 'simple JSON', bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE), fast: true, status: [200] },
    { name: 'simple JSON, no Content-Type', bytes: raw('POST', '/v2/models/simple/infer', simpleJson()), fast: true, status: [200] },
    { name: 'simple binary', bytes: raw('POST', '/v2/models/simple/infer', bin.body, binHeaders), fast: true, status: [200] },
    { name: 'versioned route', bytes: raw('POST', '/v2/models/simple/versions/1/infer', simpleJson(), JSON_TYPE), fast: true, status: [200] },
    { name: 'version that does not exist', bytes: raw('POST', '/v2/models/simple/versions/7/infer', simpleJson(), JSON_TYPE), fast: true, status: [404] },
    {
      name: 'identity (echo) with a binary output and id',
      bytes: raw('POST', '/v2/models/echo/infer', echo.replace('{', '{"id":"r-1",'), JSON_TYPE),
      fast: true,
      status: [200],
    },
    {
      name: 'Accept-Encoding: identity',
      bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, 'Accept-Encoding': 'identity' }),
      fast: true,
      status: [200],
    },
    // tritonserver answers malformed JSON 500 (TritonJson's parse error; test/backends/native/triton-differential.test.ts).
    { name: 'bad JSON', bytes: raw('POST', '/v2/models/simple/infer', '{"inputs": [', JSON_TYPE), fast: true, status: [500] },
    { name: 'unknown model', bytes: raw('POST', '/v2/models/nope/infer', simpleJson(), JSON_TYPE), fast: true, status: [404] },
    { name: 'wrong datatype', bytes: raw('POST', '/v2/models/simple/infer', simpleJson('FP32'), JSON_TYPE), fast: true, status: [400] },
    { name: 'wrong shape', bytes: raw('POST', '/v2/models/simple/infer', simpleJson('INT32', [2, 8]), JSON_TYPE), fast: true, status: [400] },
    {
      name: 'bad Inference-Header-Content-Length',
      bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, 'Inference-Header-Content-Length': '-3' }),
      fast: true,
      status: [400],
    },
    {
      name: 'decoupled model',
      bytes: raw('POST', '/v2/models/repeat/infer', '{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1]}]}', JSON_TYPE),
      fast: true,
      status: [501],
    },
    {
      name: 'body over --http-max-input-size',
      bytes: raw('POST', '/v2/models/simple/infer', Buffer.alloc(MAX_INPUT + 10, 0x20), JSON_TYPE),
      fast: true,
      status: [400],
    },
    // Left to Fastify: each differs from the plain case in one thing the fast path does not take.
    {
      name: 'body at or over the offload size',
      bytes: raw('POST', '/v2/models/simple/infer', Buffer.alloc(300_000, 0x20), JSON_TYPE),
      fast: false,
      status: [400],
    },
    { name: 'GET on the infer URL', bytes: raw('GET', '/v2/models/simple/infer'), fast: false, status: [405] },
    { name: 'HEAD on the infer URL', bytes: raw('HEAD', '/v2/models/simple/infer'), fast: false, heads: [true], status: [405] },
    {
      name: 'gzip request body',
      bytes: raw('POST', '/v2/models/simple/infer', gzipSync(simpleJson()), { ...JSON_TYPE, 'Content-Encoding': 'gzip' }),
      fast: false,
      status: [200],
    },
    {
      name: 'gzip response',
      bytes: raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, 'Accept-Encoding': 'gzip' }),
      fast: false,
      status: [200],
    },
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
      status: [200, 200, 500, 200],
    },
  ];
}

export const REPO_CONFIGS: Record<string, string> = {
  'echo/config.pbtxt': echoConfig(),
  'repeat/config.pbtxt': REPEAT_CONFIG,
  'slow/config.pbtxt': echoConfig('parameters { key: "delay_ms" value: { string_value: "600" } }'),
};

/**
 * The matrix's repository (`simple` plus {@link REPO_CONFIGS}), made in a `beforeAll` and removed
 * in an `afterAll` of the calling test file.
 * @returns its path (valid once the file's `beforeAll` hooks ran)
 */
export function useMatrixRepository(): () => string {
  let repo: TempRepo | undefined;
  beforeAll(() => {
    repo = tempRepo(['simple']);
    for (const [rel, text] of Object.entries(REPO_CONFIGS)) {
      repo.write(rel, text);
      repo.write(`${rel.split('/')[0]}/1/.keep`, '');
    }
  });
  afterAll(() => repo?.cleanup());
  return () => repo!.path;
}

/** A server on `repoPath` with the JS test backends, an ephemeral HTTP port, no metrics, {@link MAX_INPUT}; `options` override. */
export const startMatrixServer = (repoPath: string, options: object = {}): Promise<RunningServer> =>
  startServer({
    modelRepositories: [repoPath],
    httpPort: 0,
    metricsPort: -1,
    logLevel: 'silent',
    backendResolvers: [new JsBackendResolver()],
    maxInputSize: MAX_INPUT,
    ...TEST_HTTP_DATA_PATH,
    ...options,
  });

/** The HTTP port a started server listens on. */
export const portOf = (s: RunningServer): number => Number(new URL(s.httpUrl).port);

/**
 * The tenancy sequence both servers must answer alike: three authorised `simple` requests (the third
 * over a burst of 2), one without a token, one with a wrong token, and an authorised metadata GET.
 */
export function tenancyRequests(token: string): Buffer[] {
  const auth = { ...JSON_TYPE, Authorization: `Bearer ${token}` };
  return [
    raw('POST', '/v2/models/simple/infer', simpleJson(), auth),
    raw('POST', '/v2/models/simple/infer', simpleJson(), auth),
    raw('POST', '/v2/models/simple/infer', simpleJson(), auth),
    raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE),
    raw('POST', '/v2/models/simple/infer', simpleJson(), { ...JSON_TYPE, Authorization: 'Bearer not-a-token-0123456789abcdefghij' }),
    raw('GET', '/v2/models/simple', '', { Authorization: `Bearer ${token}` }),
  ];
}

/** The token of tenant `limited` in {@link writeLimitedTenants}' file. */
export const LIMITED_TOKEN = 'limited-token-0123456789abcdefghij';

/**
 * The tenants file {@link tenancyAnswers} expects, written to `dir/tenants.json`: tenant `limited`
 * ({@link LIMITED_TOKEN}) with `simple` shared and a burst of 2 per 200 s, so the third request
 * within the window is over the rate.
 * @returns the file's path
 */
export function writeLimitedTenants(dir: string): string {
  const file = join(dir, 'tenants.json');
  writeTenantsFile(file, [{ id: 'limited', token: LIMITED_TOKEN, shared_models: ['simple'], quotas: { requests_per_second: 0.01, burst: 2 } }]);
  return file;
}

/**
 * Sends {@link tenancyRequests} to two servers one by one and expects the same status line, headers
 * and body from both, and every 429 only after the tarpit (≥ 240 ms).
 * @param probe read before and after each exchange with the first server (e.g. a claim counter)
 * @returns the status codes, and per request what `probe` advanced by
 */
export async function tenancyAnswers(
  token: string,
  portA: number,
  portB: number,
  probe: () => number = () => 0,
): Promise<{ statuses: string[]; probed: number[] }> {
  const statuses: string[] = [];
  const probed: number[] = [];
  for (const bytes of tenancyRequests(token)) {
    const t0 = Date.now();
    const before = probe();
    const [a] = await exchange(portA, bytes);
    probed.push(probe() - before);
    const [b] = await exchange(portB, bytes);
    expect(a!.head).toEqual(b!.head);
    expect(a!.body.toString()).toEqual(b!.body.toString());
    const status = a!.head.split(' ')[1]!;
    if (status === '429') expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
    statuses.push(status);
  }
  return { statuses, probed };
}
