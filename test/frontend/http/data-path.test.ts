/**
 * The native data path (`--http-data-path=native`, frontend/http/data-path/ over
 * native/rust/data-path) answers exactly as the TypeScript path: the same raw HTTP/1.1 requests go
 * to a server with it and to one without, and the answers must match — status line, the header set
 * (names compared case-insensitively; `Date` and the hop-by-hop headers each server writes itself
 * left out) and the body byte for byte. The data path's counters prove which requests it served
 * itself, which it handed back after reading them (every error text is the TypeScript path's), and
 * which it forwarded untouched. Statistics and metrics count natively served requests as their own.
 * Models on Triton C-API backend instances and on the in-process ONNX Runtime engine's sessions
 * (which the data path runs itself) are both covered.
 */
import { cpSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError, parseCli } from '../../../host/src/cli-options.js';
import { DEFAULT_HTTP_LIMITS } from '../../../host/src/frontend/http/limits.js';
import type { RunningServer, ServerOptions } from '../../../host/src/server.js';
import { DEFAULT_METRICS_CONFIG } from '../../../host/src/metrics/config.js';
import {
  INPUT0,
  INPUT1,
  JSON_TYPE,
  exchange,
  matrix,
  portOf,
  raw,
  simpleBinary,
  simpleJson,
  startMatrixServer,
  useMatrixRepository,
} from '../../helpers/http-matrix.js';
import { PROJECT_ROOT, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { startTestServer } from '../../helpers/servers.js';
import { sleep, until } from '../../helpers/wait.js';
import { executed } from '../../helpers/js-backend.js';
import { BACKEND_DIR, requireNativeBuild, writeDataPathModels } from '../../backends/native/helpers.js';
import { type NativeCase, canon, compareCases, statCounts } from '../../helpers/data-path-compare.js';

const repoPath = useMatrixRepository();

const id = (data: number[], extra: object = {}) => JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [data.length], data }], ...extra });
const addSub = (extra: object = {}) =>
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [0.5, 0.25, -1, 8] },
    ],
    ...extra,
  });

function binaryIdentity(values: number[], extra: object = {}): { body: Buffer; headers: Record<string, string> } {
  const header = Buffer.from(
    JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [values.length], parameters: { binary_data_size: values.length * 4 } }], ...extra }),
  );
  return {
    body: Buffer.concat([header, Buffer.from(new Float32Array(values).buffer)]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(header.length) },
  };
}

function nativeMatrix(): NativeCase[] {
  const url = '/v2/models/identity_native/infer';
  const bin = binaryIdentity([1.5, -2, 3.25, 0]);
  const binOut = binaryIdentity([1, 2], { parameters: { binary_data_output: true } });
  const odd = [0.1, 1e-7, 1e21, -0, 3.4028234663852886e38, 1.17549435e-38, 123456789, -1.5e-45, 2 ** 60];
  return [
    { name: 'identity JSON', bytes: raw('POST', url, id([1, 2, 3]), JSON_TYPE), how: 'served', status: 200 },
    { name: 'identity JSON, no Content-Type', bytes: raw('POST', url, id([4, 5])), how: 'served', status: 200 },
    { name: 'identity JSON with an id', bytes: raw('POST', url, id([1], { id: 'r-"1"\u0001é' }), JSON_TYPE), how: 'served', status: 200 },
    { name: 'numbers as ECMAScript prints them', bytes: raw('POST', url, id(odd), JSON_TYPE), how: 'served', status: 200 },
    {
      name: 'integer tokens beyond 2^53 and exponents',
      bytes: raw('POST', url, '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[3],"data":[18446744073709551615,1E3,-2.5e-3]}]}', JSON_TYPE),
      how: 'served',
      status: 200,
    },
    { name: 'binary input, JSON output', bytes: raw('POST', url, bin.body, bin.headers), how: 'served', status: 200 },
    { name: 'binary input and output', bytes: raw('POST', url, binOut.body, binOut.headers), how: 'served', status: 200 },
    { name: 'versioned URL', bytes: raw('POST', '/v2/models/identity_native/versions/1/infer', id([7]), JSON_TYPE), how: 'served', status: 200 },
    {
      name: 'version that does not exist',
      bytes: raw('POST', '/v2/models/identity_native/versions/2/infer', id([7]), JSON_TYPE),
      how: 'handed',
      status: 404,
    },
    { name: 'add_sub, both outputs', bytes: raw('POST', '/v2/models/add_sub_native/infer', addSub(), JSON_TYPE), how: 'served', status: 200 },
    {
      name: 'add_sub, OUTPUT1 only',
      bytes: raw('POST', '/v2/models/add_sub_native/infer', addSub({ outputs: [{ name: 'OUTPUT1' }] }), JSON_TYPE),
      how: 'served',
      status: 200,
    },
    {
      name: 'add_sub, OUTPUT0 binary, OUTPUT1 JSON, listed in reverse',
      bytes: raw(
        'POST',
        '/v2/models/add_sub_native/infer',
        addSub({
          outputs: [
            { name: 'OUTPUT1', parameters: { binary_data: false } },
            { name: 'OUTPUT0', parameters: { binary_data: true } },
          ],
        }),
        JSON_TYPE,
      ),
      how: 'served',
      status: 200,
    },
    { name: 'bad JSON', bytes: raw('POST', url, '{"inputs": [', JSON_TYPE), how: 'replayed', status: 500 },
    { name: 'wrong datatype', bytes: raw('POST', url, id([1]).replace('FP32', 'INT32'), JSON_TYPE), how: 'replayed', status: 400 },
    {
      name: 'data not matching the shape',
      bytes: raw('POST', url, '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[3],"data":[1,2]}]}', JSON_TYPE),
      how: 'replayed',
      status: 500,
    },
    {
      name: 'nested data',
      bytes: raw('POST', url, '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2],"data":[[1],[2]]}]}', JSON_TYPE),
      how: 'replayed',
      status: 200,
    },
    { name: 'unknown input', bytes: raw('POST', url, id([1]).replace('INPUT0', 'NOPE'), JSON_TYPE), how: 'replayed', status: 400 },
    { name: 'unknown output', bytes: raw('POST', url, id([1], { outputs: [{ name: 'NOPE' }] }), JSON_TYPE), how: 'replayed', status: 400 },
    { name: 'a request parameter', bytes: raw('POST', url, id([1], { parameters: { priority: 1 } }), JSON_TYPE), how: 'replayed', status: 200 },
    { name: 'an unknown member', bytes: raw('POST', url, id([1], { extra: 1 }), JSON_TYPE), how: 'replayed', status: 200 },
    {
      name: 'raw binary (header length 0)',
      bytes: raw('POST', url, Buffer.from(new Float32Array([1, 2]).buffer), { 'Inference-Header-Content-Length': '0' }),
      how: 'replayed',
      status: 200,
    },
    {
      name: 'bad Inference-Header-Content-Length',
      bytes: raw('POST', url, id([1]), { ...JSON_TYPE, 'Inference-Header-Content-Length': '-3' }),
      how: 'replayed',
      status: 400,
    },
    { name: 'gzip response asked', bytes: raw('POST', url, id([1]), { ...JSON_TYPE, 'Accept-Encoding': 'gzip' }), how: 'forwarded', status: 200 },
    { name: 'query string', bytes: raw('POST', `${url}?x=1`, id([1]), JSON_TYPE), how: 'forwarded', status: 200 },
    {
      name: 'execute returns an error',
      bytes: raw('POST', '/v2/models/execute_fails/infer', '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1]}]}', JSON_TYPE),
      how: 'served',
      status: 503,
    },
    {
      name: 'an error response',
      bytes: raw('POST', '/v2/models/error_response/infer', '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1]}]}', JSON_TYPE),
      how: 'served',
      status: 400,
    },
    {
      name: 'a client that claims to be the data path',
      bytes: raw('POST', url, id([1]), { ...JSON_TYPE, 'X-Warden-Native-Error': '3', 'Accept-Encoding': 'gzip' }),
      how: 'forwarded',
      status: 200,
    },
    { name: 'metadata', bytes: raw('GET', '/v2/models/identity_native'), how: 'forwarded', status: 200 },
  ];
}

/** Requests for models without a route: read natively, answered by the TypeScript data plane in process. */
function handedMatrix(): NativeCase[] {
  const echo = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}';
  return [
    { name: 'a JavaScript model', bytes: raw('POST', '/v2/models/echo/infer', echo, JSON_TYPE), how: 'handed', status: 200 },
    { name: 'a JavaScript model, versioned', bytes: raw('POST', '/v2/models/echo/versions/1/infer', echo, JSON_TYPE), how: 'handed', status: 200 },
    { name: 'a JavaScript model, malformed body', bytes: raw('POST', '/v2/models/echo/infer', '{"inputs": [', JSON_TYPE), how: 'handed', status: 500 },
    { name: 'a model that does not exist', bytes: raw('POST', '/v2/models/nope/infer', echo, JSON_TYPE), how: 'handed', status: 404 },
    {
      name: 'a decoupled model',
      bytes: raw('POST', '/v2/models/repeat/infer', '{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1]}]}', JSON_TYPE),
      how: 'handed',
      status: 501,
    },
    {
      name: 'a model name the fast path does not claim',
      bytes: raw('POST', '/v2/models/.echo/infer', echo, JSON_TYPE),
      how: 'forwarded',
      status: 404,
    },
    {
      name: 'a compressed answer asked',
      bytes: raw('POST', '/v2/models/echo/infer', echo, { ...JSON_TYPE, 'Accept-Encoding': 'gzip' }),
      how: 'forwarded',
      status: 200,
    },
  ];
}

describe('--http-data-path', () => {
  it('leaves the default to the server (native where the addon has it); js and native are accepted; nonsense is refused', () => {
    expect(parseCli(['--model-repository=/m']).httpDataPath).toBeUndefined();
    expect(parseCli(['--model-repository=/m', '--http-data-path=js']).httpDataPath).toBe('js');
    expect(parseCli(['--model-repository=/m', '--http-data-path=native']).httpDataPath).toBe('native');
    expect(() => parseCli(['--model-repository=/m', '--http-data-path=rust'])).toThrow(UsageError);
  });
});

describe('the native data path answers as the TypeScript path does', () => {
  let native: RunningServer;
  let js: RunningServer;
  beforeAll(async () => {
    requireNativeBuild();
    writeDataPathModels(repoPath());
    const opts = { backendDirectory: BACKEND_DIR, metricsPort: 0, modelControlMode: 'explicit', loadModels: ['*'] };
    [native, js] = await Promise.all([
      startMatrixServer(repoPath(), { ...opts, httpDataPath: 'native' }),
      startMatrixServer(repoPath(), { ...opts, httpDataPath: 'js' }),
    ]);
    // the matrix's `simple` is ONNX Runtime's: published once its engine session is open
    await until(() => native.dataPath!.routes.includes('simple'), { what: "simple's route", within: 30_000 });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([native?.stop(), js?.stop()]);
  });

  it('publishes the native models it can serve, and only those', () => {
    expect(native.dataPath!.routes.sort()).toEqual(['add_sub_native', 'error_response', 'execute_fails', 'identity_native', 'simple']);
    expect(js.dataPath).toBeUndefined();
  });

  compareCases(nativeMatrix, () => [native, js]);

  it('keep-alive pipelining mixes served, replayed and forwarded requests on one connection', async () => {
    const url = '/v2/models/identity_native/infer';
    const bytes = Buffer.concat([
      raw('POST', url, id([1, 2]), JSON_TYPE),
      raw('POST', url, '{"inputs": [', JSON_TYPE),
      raw('GET', '/v2/health/ready'),
      raw('POST', url, id([3]), JSON_TYPE),
    ]);
    const a = await exchange(portOf(native), bytes, 4);
    const b = await exchange(portOf(js), bytes, 4);
    expect(a.map(canon)).toEqual(b.map(canon));
    expect(a.map((r) => r.head.split(' ')[1])).toEqual(['200', '500', '200', '200']);
  });

  compareCases(handedMatrix, () => [native, js]);

  it('a client that goes away while its handed-over request is queued: cancelled, never executed', async () => {
    const slowBody = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}';
    const runs = () => executed.filter((e) => e.model === 'slow').length;
    const before = runs();
    const handedBefore = native.dataPath!.counters().handedOver;
    const first = exchange(portOf(native), raw('POST', '/v2/models/slow/infer', slowBody, JSON_TYPE));
    await until(() => runs() > before, { what: 'the first holding the only instance (600 ms)' });
    await new Promise<void>((resolve) => {
      const sock = connect(portOf(native), '127.0.0.1', () =>
        sock.write(raw('POST', '/v2/models/slow/infer', slowBody, JSON_TYPE), () => setTimeout(() => (sock.destroy(), resolve()), 100)),
      );
      sock.on('error', () => undefined);
    });
    const [r] = await first;
    expect(r!.head).toMatch(/^HTTP\/1.1 200/);
    await sleep(800); // long enough for a second run, had it not been cancelled
    expect(runs() - before).toBe(1);
    expect(native.dataPath!.counters().handedOver).toBe(handedBefore + 1);
  });

  describe('a connection that sends a handed-over request moves to the JavaScript thread (DESIGN "The native data path")', () => {
    const echo = raw('POST', '/v2/models/echo/infer', '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}', JSON_TYPE);
    const identity = raw('POST', '/v2/models/identity_native/infer', id([5, 6]), JSON_TYPE);
    const counts = () => native.dataPath!.counters();
    const delta = (before: ReturnType<typeof counts>) => {
      const now = counts();
      return { handed: now.handedOver - before.handedOver, moved: now.movedConnections - before.movedConnections, served: now.served - before.served };
    };

    it('after its answer: what follows on it is answered by the TypeScript path, as on the default path', async () => {
      const before = counts();
      const moved = () => until(() => counts().movedConnections > before.movedConnections, { what: 'the move' });
      const a = await exchange(portOf(native), [echo, moved, echo, () => sleep(50), identity, () => sleep(50), echo], 4);
      const b = await exchange(portOf(js), [echo, () => sleep(50), echo, () => sleep(50), identity, () => sleep(50), echo], 4);
      expect(a.map(canon)).toEqual(b.map(canon));
      expect(a.map((r) => r.head.split(' ')[1])).toEqual(['200', '200', '200', '200']);
      // one request handed over, then the connection moved; the native model's request on it went to the TypeScript path
      expect(delta(before)).toEqual({ handed: 1, moved: 1, served: 0 });
    });

    it('pipelined requests are all answered, in order, before the connection moves', async () => {
      const before = counts();
      const a = await exchange(portOf(native), Buffer.concat([echo, identity, echo]), 3);
      const b = await exchange(portOf(js), Buffer.concat([echo, identity, echo]), 3);
      expect(a.map(canon)).toEqual(b.map(canon));
      expect(delta(before).moved).toBe(1);
    });

    it('a request cut in two across the move is read whole: the connection stays on the data path', async () => {
      const before = counts();
      const half = Math.floor(echo.length / 2);
      const steps = [Buffer.concat([echo, echo.subarray(0, half)]), () => sleep(150), echo.subarray(half), () => sleep(50), identity];
      const a = await exchange(portOf(native), steps, 3);
      const b = await exchange(portOf(js), steps, 3);
      expect(a.map(canon)).toEqual(b.map(canon));
      expect(delta(before)).toEqual({ handed: 2, moved: 0, served: 1 });
    });

    it('a request asking to close is answered and the connection closes: nothing moves', async () => {
      const before = counts();
      const closing = raw('POST', '/v2/models/echo/infer', '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}', {
        ...JSON_TYPE,
        Connection: 'close',
      });
      const a = await exchange(portOf(native), [closing, () => sleep(100), echo], 2);
      expect(a).toHaveLength(1);
      expect(a[0]!.head).toMatch(/^HTTP\/1.1 200/);
      expect(delta(before)).toEqual({ handed: 1, moved: 0, served: 0 });
    });
  });

  for (const c of matrix()) {
    it(`a JavaScript model's answer comes through unchanged: ${c.name}`, async () => {
      const a = await exchange(portOf(native), c.bytes, c.count ?? 1, c.heads);
      const b = await exchange(portOf(js), c.bytes, c.count ?? 1, c.heads);
      expect(a.map(canon)).toEqual(b.map(canon));
    });
  }

  it('statistics and metrics count what the data path served as the TypeScript path counts it', async () => {
    // (self-contained: six answered and two replayed requests on each server, beside what earlier cases sent)
    for (const s of [native, js]) {
      for (let i = 0; i < 6; i++) await exchange(portOf(s), raw('POST', '/v2/models/identity_native/infer', id([i]), JSON_TYPE));
      for (let i = 0; i < 2; i++) await exchange(portOf(s), raw('POST', '/v2/models/identity_native/infer', '{"inputs": [', JSON_TYPE));
    }
    const [a, b] = await Promise.all([statCounts(native, 'identity_native'), statCounts(js, 'identity_native')]);
    expect(a.success).toBeGreaterThan(5);
    expect(a).toEqual(b);
    const metric = async (s: RunningServer) => {
      const text = await (await fetch(`${s.metricsUrl}/metrics`)).text();
      return /nv_inference_request_success\{model="identity_native",version="1"\} (\d+)/.exec(text)?.[1];
    };
    expect(await metric(native)).toBe(String(a.success));
    expect(await metric(native)).toBe(await metric(js));
    // the fallbacks are counted where operators look
    const text = await (await fetch(`${native.metricsUrl}/metrics`)).text();
    const counted = (handled: string) => Number(new RegExp(`warden_data_path_requests_total\\{handled="${handled}"\\} (\\d+)`).exec(text)?.[1]);
    const c = native.dataPath!.counters();
    expect({ native: counted('native'), replayed: counted('replayed'), forwarded: counted('forwarded') }).toEqual({
      native: c.served,
      replayed: c.replayed,
      forwarded: c.forwarded,
    });
    expect(c.replayed).toBeGreaterThan(1);
    expect(text).not.toContain('warden_data_path_requests_total{handled="native"} 0\n');
    expect((await (await fetch(`${js.metricsUrl}/metrics`)).text()).includes('warden_data_path_requests_total')).toBe(false);
  });

  it('while tracing is on, every request goes through the TypeScript path (which traces)', async () => {
    const setting = (level: string) =>
      fetch(`${native.httpUrl}/v2/trace/setting`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify({ trace_level: [level] }) });
    expect((await setting('TIMESTAMPS')).status).toBe(200);
    try {
      const before = native.dataPath!.counters();
      const [a] = await exchange(portOf(native), raw('POST', '/v2/models/identity_native/infer', id([1]), JSON_TYPE));
      expect(a!.head).toMatch(/^HTTP\/1\.1 200/);
      expect(native.dataPath!.counters().served).toBe(before.served);
    } finally {
      expect((await setting('OFF')).status).toBe(200);
    }
    const before = native.dataPath!.counters();
    await exchange(portOf(native), raw('POST', '/v2/models/identity_native/infer', id([1]), JSON_TYPE));
    expect(native.dataPath!.counters().served).toBe(before.served + 1);
  });

  it('an unload withdraws the route; a load publishes it again', async () => {
    const post = (path: string) => fetch(`${native.httpUrl}${path}`, { method: 'POST', headers: JSON_TYPE, body: '{}' });
    expect((await post('/v2/repository/models/identity_native/unload')).status).toBe(200);
    expect(native.dataPath!.routes).not.toContain('identity_native');
    const [gone] = await exchange(portOf(native), raw('POST', '/v2/models/identity_native/infer', id([1]), JSON_TYPE));
    expect(gone!.head).not.toMatch(/^HTTP\/1\.1 200/);
    expect((await post('/v2/repository/models/identity_native/load')).status).toBe(200);
    expect(native.dataPath!.routes).toContain('identity_native');
    const before = native.dataPath!.counters();
    const [back] = await exchange(portOf(native), raw('POST', '/v2/models/identity_native/infer', id([1]), JSON_TYPE));
    expect(back!.head).toMatch(/^HTTP\/1\.1 200/);
    expect(native.dataPath!.counters().served).toBe(before.served + 1);
  });
});

/**
 * Requests to the ONNX Runtime models `simple` (INT32, batched), `addsub_onnx` (FP32, unbatched)
 * and `addsub_misdeclared` (addsub_onnx's graph, its config declaring [8] where the graph has [16]:
 * ONNX Runtime refuses every run).
 */
function onnxMatrix(): NativeCase[] {
  const url = '/v2/models/simple/infer';
  const bin = simpleBinary();
  const binHeaders = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(bin.headerLength) };
  const outputs = (list: object[]) => JSON.stringify({ ...(JSON.parse(simpleJson()) as object), outputs: list });
  const batch2 = JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [2, 16], data: [...INPUT0, ...INPUT1] },
      { name: 'INPUT1', datatype: 'INT32', shape: [2, 16], data: [...INPUT1, ...INPUT0] },
    ],
  });
  const fp = Array.from({ length: 16 }, (_, i) => i / 3 - 2);
  const addsub = JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [16], data: fp },
      { name: 'INPUT1', datatype: 'FP32', shape: [16], data: fp.map((v) => v * 1e-7 + 0.1) },
    ],
  });
  return [
    { name: 'simple JSON', bytes: raw('POST', url, simpleJson(), JSON_TYPE), how: 'served', status: 200 },
    { name: 'simple binary input and output', bytes: raw('POST', url, bin.body, binHeaders), how: 'served', status: 200 },
    { name: 'simple, versioned URL', bytes: raw('POST', '/v2/models/simple/versions/1/infer', simpleJson(), JSON_TYPE), how: 'served', status: 200 },
    { name: 'simple, a batch of 2', bytes: raw('POST', url, batch2, JSON_TYPE), how: 'served', status: 200 },
    { name: 'simple, OUTPUT1 only', bytes: raw('POST', url, outputs([{ name: 'OUTPUT1' }]), JSON_TYPE), how: 'served', status: 200 },
    {
      name: 'simple, OUTPUT0 binary and OUTPUT1 JSON, listed in reverse',
      bytes: raw(
        'POST',
        url,
        outputs([
          { name: 'OUTPUT1', parameters: { binary_data: false } },
          { name: 'OUTPUT0', parameters: { binary_data: true } },
        ]),
        JSON_TYPE,
      ),
      how: 'served',
      status: 200,
    },
    { name: 'simple, wrong shape', bytes: raw('POST', url, simpleJson('INT32', [16]), JSON_TYPE), how: 'replayed', status: 400 },
    { name: 'simple, wrong datatype', bytes: raw('POST', url, simpleJson('FP32'), JSON_TYPE), how: 'replayed', status: 400 },
    {
      name: 'addsub_onnx JSON (FP32 as ECMAScript prints it)',
      bytes: raw('POST', '/v2/models/addsub_onnx/infer', addsub, JSON_TYPE),
      how: 'served',
      status: 200,
    },
    {
      name: "ONNX Runtime's own failure",
      bytes: raw(
        'POST',
        '/v2/models/addsub_misdeclared/infer',
        JSON.stringify({
          inputs: [
            { name: 'INPUT0', datatype: 'FP32', shape: [8], data: fp.slice(0, 8) },
            { name: 'INPUT1', datatype: 'FP32', shape: [8], data: fp.slice(8) },
          ],
        }),
        JSON_TYPE,
      ),
      how: 'served',
      status: 500,
    },
  ];
}

describe('latencies of natively served requests', () => {
  const start = (opts: Partial<ServerOptions> = {}) =>
    startMatrixServer(repoPath(), { backendDirectory: BACKEND_DIR, modelControlMode: 'explicit', loadModels: ['identity_native'], metricsPort: 0, ...opts });
  const identity = raw('POST', '/v2/models/identity_native/infer', id([1, 2]), JSON_TYPE);

  it('reach latency_percentiles_us (the route keeps the latest durations)', async () => {
    requireNativeBuild();
    writeDataPathModels(repoPath());
    const server = await start({ httpDataPath: 'native' });
    try {
      for (let i = 0; i < 5; i++) await exchange(portOf(server), identity);
      expect(server.dataPath!.counters().served).toBe(5);
      const stats = (await (await fetch(`${server.httpUrl}/v2/models/identity_native/stats`)).json()) as {
        model_stats: { latency_percentiles_us?: { request?: { p50: number; p99: number }; queue?: { p50: number } } }[];
      };
      const p = stats.model_stats[0]!.latency_percentiles_us;
      expect(p?.request?.p50).toBeGreaterThan(0);
      expect(p!.request!.p99).toBeGreaterThanOrEqual(p!.request!.p50);
      expect(p?.queue).toBeDefined();
    } finally {
      await server.stop();
    }
  });

  it("with Triton's latency summaries on, every request goes through the TypeScript path (the summaries see each one)", async () => {
    requireNativeBuild();
    writeDataPathModels(repoPath());
    const server = await start({ httpDataPath: 'native', metricsConfig: { ...DEFAULT_METRICS_CONFIG, summaryLatencies: true } });
    try {
      for (let i = 0; i < 4; i++) await exchange(portOf(server), identity);
      expect(server.dataPath!.counters().served).toBe(0);
      const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
      expect(text).toMatch(/nv_inference_request_summary_us_count\{model="identity_native",version="1"\} 4/);
    } finally {
      await server.stop();
    }
  });
});

describe('a moved connection keeps its slot under the connection caps until it closes', () => {
  it('a second connection from the address is refused while the moved one is open, admitted once it closed; stop does not wait on it', async () => {
    requireNativeBuild();
    writeDataPathModels(repoPath());
    const server = await startMatrixServer(repoPath(), {
      backendDirectory: BACKEND_DIR,
      modelControlMode: 'explicit',
      loadModels: ['echo'],
      httpDataPath: 'native',
      httpLimits: { ...DEFAULT_HTTP_LIMITS, maxConnectionsPerAddress: 1 },
    });
    try {
      const echo = raw('POST', '/v2/models/echo/infer', '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}', JSON_TYPE);
      const first = connect(portOf(server), '127.0.0.1');
      let got = '';
      first.on('data', (d) => (got += d.toString('latin1')));
      first.write(echo);
      await until(() => server.dataPath!.counters().movedConnections === 1, { what: 'the move' });
      expect(got).toMatch(/^HTTP\/1.1 200/);
      // the moved connection still holds the address's one slot
      const refused = await exchange(portOf(server), echo);
      expect(refused).toHaveLength(0);
      // and it is served on: a second request on it
      got = '';
      first.write(echo);
      await until(() => /\r\n\r\n\{/.test(got), { what: 'the answer on the moved connection' });
      expect(got).toMatch(/^HTTP\/1.1 200/);
      first.destroy();
      await until(() => server.dataPath!.counters().openConnections === 0, { what: 'the slot released' });
      const again = await exchange(portOf(server), echo);
      expect(again[0]?.head).toMatch(/^HTTP\/1.1 200/);
      // an idle moved connection does not hold the shutdown
      await until(() => server.dataPath!.counters().openConnections === 0, { what: 'that slot released too' });
      const movedBefore = server.dataPath!.counters().movedConnections;
      const idle = connect(portOf(server), '127.0.0.1');
      idle.on('error', () => undefined);
      idle.write(echo);
      await until(() => server.dataPath!.counters().movedConnections === movedBefore + 1, { what: 'the idle connection moved' });
      const t0 = Date.now();
      await server.stop();
      expect(Date.now() - t0).toBeLessThan(3000);
      idle.destroy();
    } finally {
      await server.stop();
    }
  }, 30_000);
});

describe('ONNX Runtime models on the native data path answer as the TypeScript path does', () => {
  let repo: TempRepo;
  let native: RunningServer;
  let js: RunningServer;
  beforeAll(async () => {
    requireNativeBuild();
    repo = tempRepo(['simple']);
    cpSync(join(PROJECT_ROOT, 'model_repository', 'addsub_onnx'), join(repo.path, 'addsub_onnx'), { recursive: true });
    cpSync(join(PROJECT_ROOT, 'model_repository', 'addsub_onnx', '1'), join(repo.path, 'addsub_misdeclared', '1'), { recursive: true });
    const config = readFileSync(join(PROJECT_ROOT, 'model_repository', 'addsub_onnx', 'config.pbtxt'), 'utf8');
    repo.write('addsub_misdeclared/config.pbtxt', config.replace('"addsub_onnx"', '"addsub_misdeclared"').replaceAll('dims: [ 16 ]', 'dims: [ 8 ]'));
    const opts = { loadModels: ['*'] };
    [native, js] = await Promise.all([startTestServer(repo, { ...opts, httpDataPath: 'native' }), startTestServer(repo, { ...opts, httpDataPath: 'js' })]);
    // an ONNX Runtime route is published once its instances' engine sessions are open
    await until(() => native.dataPath!.routes.length === 3, { what: 'the ONNX Runtime routes' });
  }, 60_000);
  afterAll(async () => {
    await Promise.all([native?.stop(), js?.stop()]);
    repo?.cleanup();
  });

  it('publishes the ONNX Runtime models', () => {
    expect(native.dataPath!.routes.sort()).toEqual(['addsub_misdeclared', 'addsub_onnx', 'simple']);
  });

  compareCases(onnxMatrix, () => [native, js]);

  it("batch statistics are kept by the requests' batch sizes, as the TypeScript path keeps them", async () => {
    const batchStats = async (s: RunningServer) => {
      const m = (
        (await (await fetch(`${s.httpUrl}/v2/models/simple/stats`)).json()) as {
          model_stats: { batch_stats: { batch_size: number; compute_infer: { count: number } }[] }[];
        }
      ).model_stats[0]!;
      return Object.fromEntries(m.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]));
    };
    const batched = (n: number) =>
      raw(
        'POST',
        '/v2/models/simple/infer',
        JSON.stringify({ inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [n, 16], data: Array(n * 16).fill(1) })) }),
        JSON_TYPE,
      );
    const before = await Promise.all([batchStats(native), batchStats(js)]);
    const served = native.dataPath!.counters().served;
    for (const s of [native, js]) for (const n of [8, 1, 4, 8]) await exchange(portOf(s), batched(n));
    expect(native.dataPath!.counters().served).toBe(served + 4);
    const [a, b] = await Promise.all([batchStats(native), batchStats(js)]);
    const added = (now: Record<string, number>, then: Record<string, number>) =>
      Object.fromEntries(Object.entries(now).flatMap(([k, v]) => (v > (then[k] ?? 0) ? [[k, v - (then[k] ?? 0)]] : [])));
    expect(added(a, before[0])).toEqual({ 1: 1, 4: 1, 8: 2 });
    expect(added(a, before[0])).toEqual(added(b, before[1]));
  });

  it('concurrent requests on one instance all come back right', async () => {
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => exchange(portOf(native), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE))),
    );
    const [expected] = await exchange(portOf(js), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE));
    for (const [a] of answers) expect(canon(a!)).toEqual(canon(expected!));
  });

  it('statistics count what the data path served as the TypeScript path counts it', async () => {
    type Stats = {
      inference_count: number;
      execution_count: number;
      inference_stats: Record<string, { count: number; ns: number }>;
      batch_stats: { batch_size: number; compute_infer: { count: number } }[];
    };
    const stats = async (s: RunningServer, model = 'addsub_onnx') => {
      const m = ((await (await fetch(`${s.httpUrl}/v2/models/${model}/stats`)).json()) as { model_stats: Stats[] }).model_stats[0]!;
      const counts = Object.fromEntries(Object.entries(m.inference_stats).map(([k, v]) => [k, v.count]));
      return {
        inferences: m.inference_count,
        executions: m.execution_count,
        counts,
        batches: m.batch_stats.map((b) => [b.batch_size, b.compute_infer.count]),
        m,
      };
    };
    const body = JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [16], data: INPUT0 },
        { name: 'INPUT1', datatype: 'FP32', shape: [16], data: INPUT1 },
      ],
    });
    const before = native.dataPath!.counters().served;
    for (const s of [native, js]) for (let i = 0; i < 5; i++) await exchange(portOf(s), raw('POST', '/v2/models/addsub_onnx/infer', body, JSON_TYPE));
    expect(native.dataPath!.counters().served).toBe(before + 5);
    const [a, b] = await Promise.all([stats(native), stats(js)]);
    expect(a.counts.success).toBeGreaterThan(4);
    expect({ ...a, m: undefined }).toEqual({ ...b, m: undefined });
    // the data path reports queue and compute times of its own runs
    expect(a.m.inference_stats.compute_infer!.ns).toBeGreaterThan(0);
    expect(a.m.inference_stats.queue!.ns).toBeGreaterThan(0);
    // failed runs: counted as failures with their queue and compute times, and no execution
    const failing = raw(
      'POST',
      '/v2/models/addsub_misdeclared/infer',
      JSON.stringify({
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [8], data: INPUT0.slice(0, 8) },
          { name: 'INPUT1', datatype: 'FP32', shape: [8], data: INPUT1.slice(0, 8) },
        ],
      }),
      JSON_TYPE,
    );
    for (const s of [native, js]) for (let i = 0; i < 3; i++) await exchange(portOf(s), failing);
    const [fa, fb] = await Promise.all([stats(native, 'addsub_misdeclared'), stats(js, 'addsub_misdeclared')]);
    expect(fa.counts.fail).toBeGreaterThan(2);
    expect({ ...fa, m: undefined }).toEqual({ ...fb, m: undefined });
  });
});
