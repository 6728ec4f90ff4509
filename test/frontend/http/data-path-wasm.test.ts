/**
 * The native data path serves models in wasmtime sandboxes itself (native/rust/data-path
 * wasm_exec.rs over the engine's direct executes) and answers exactly as the TypeScript path does:
 * the same raw requests go to a server with the data path and to one without, over the same
 * components (the C guests of test/fixtures/wasm/hostile.c and the TypeScript add_sub sample), and
 * the answers must match byte for byte — the guest's outputs, the checks of what leaves the
 * sandbox, response parameters, a guest that traps, runs past its deadline or sends what it may
 * not. The data path's counters prove it served them; statistics count them as their own.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, until } from '../../helpers/wait.js';
import type { RunningServer } from '../../../host/src/server.js';
import { DEFAULT_HTTP_LIMITS } from '../../../host/src/frontend/http/limits.js';
import { type NativeCase, canon, compareCases, statCounts } from '../../helpers/data-path-compare.js';
import { JSON_TYPE, exchange, portOf, raw } from '../../helpers/http-matrix.js';
import { tempRepo, type TempRepo } from '../../helpers/repo.js';
import { startTestServer } from '../../helpers/servers.js';
import { DATA_PATH_GUESTS, ensureBuilt, newResolver, writeDataPathWasmModels } from '../../backends/wasm/helpers.js';

const body = (data: number[], extra: object = {}, shape = [data.length]) =>
  JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape, data }], ...extra });
const infer = (model: string, json: string) => raw('POST', `/v2/models/${model}/infer`, json, JSON_TYPE);
const addSub = (extra: object = {}) =>
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [0.5, 0.25, -1, 8] },
    ],
    ...extra,
  });

/** `--http-max-json-output-bytes` of both servers: 2 + 26 bytes per FP32 element, 40 elements pass it. */
const JSON_BOUND = 1000;

function wasmMatrix(): NativeCase[] {
  const many = Array.from({ length: 40 }, (_, i) => i / 3);
  const bin = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 8 } }] }));
  return [
    { name: 'C guest identity', bytes: infer('identity_c', body([1, 2.5, -3])), how: 'served', status: 200 },
    { name: 'C guest identity with an id', bytes: infer('identity_c', body([0.1], { id: 'w-"1"' })), how: 'served', status: 200 },
    { name: 'C guest identity, empty tensor (not decoded natively)', bytes: infer('identity_c', body([])), how: 'replayed', status: 200 },
    {
      name: 'C guest identity, binary in and out',
      bytes: raw('POST', '/v2/models/identity_c/infer', Buffer.concat([bin, Buffer.from(new Float32Array([7, -8]).buffer)]), {
        'Content-Type': 'application/octet-stream',
        'Inference-Header-Content-Length': String(bin.length),
      }),
      how: 'served',
      status: 200,
    },
    // the C identity answers a flat shape: the checks of what leaves the sandbox see the batch dimension missing
    { name: 'a batched output without its batch dimension', bytes: infer('identity_c_batched', body([1, 2, 3, 4], {}, [2, 2])), how: 'served', status: 500 },
    { name: 'TypeScript guest add_sub', bytes: infer('add_sub_wasm', addSub()), how: 'served', status: 200 },
    {
      name: 'TypeScript guest add_sub, OUTPUT1 only, binary',
      bytes: infer('add_sub_wasm', addSub({ outputs: [{ name: 'OUTPUT1', parameters: { binary_data: true } }] })),
      how: 'served',
      status: 200,
    },
    { name: 'a guest that traps', bytes: infer('trap_c', body([1])), how: 'served', status: 500 },
    { name: 'after the trap, the respawned sandbox traps again', bytes: infer('trap_c', body([2])), how: 'served', status: 500 },
    { name: 'a guest past its deadline', bytes: infer('loop_c', body([1])), how: 'served', status: 503 },
    { name: 'an output with the wrong datatype', bytes: infer('wrong_dtype_c', body([1])), how: 'served', status: 500 },
    { name: 'an output the config does not name', bytes: infer('wrong_name_c', body([1])), how: 'served', status: 500 },
    { name: 'a guest that sends a non-final response', bytes: infer('send_after_c', body([1, 2])), how: 'served', status: 200 },
    { name: 'response parameters', bytes: infer('echo_meta_c', body([3, 4], { id: 'meta' })), how: 'served', status: 200 },
    { name: 'JSON outputs that could print past the bound', bytes: infer('identity_c', body(many)), how: 'served', status: 400 },
    {
      name: 'the same outputs in binary',
      bytes: infer('identity_c', body(many, { parameters: { binary_data_output: true } })),
      how: 'served',
      status: 200,
    },
    { name: 'a request the data path does not decode', bytes: infer('identity_c', '{"inputs": ['), how: 'replayed', status: 500 },
    { name: 'a request parameter', bytes: infer('identity_c', body([1], { parameters: { x: 1 } })), how: 'replayed', status: 200 },
  ];
}

describe('the native data path serves wasmtime sandboxes as the TypeScript path does', () => {
  let repo: TempRepo;
  let native: RunningServer;
  let js: RunningServer;
  beforeAll(async () => {
    await ensureBuilt();
    repo = tempRepo();
    writeDataPathWasmModels(repo.path);
    // each server its own engine (and sandbox memory budget)
    // (a JSON output bound small enough for a case to pass it)
    const opts = () => ({
      backendResolvers: [newResolver('wasmtime')],
      metricsPort: 0,
      modelControlMode: 'explicit' as const,
      loadModels: ['*'],
      httpLimits: { ...DEFAULT_HTTP_LIMITS, maxJsonOutputBytes: JSON_BOUND },
    });
    [native, js] = await Promise.all([
      startTestServer(repo.path, { ...opts(), httpDataPath: 'native' }),
      startTestServer(repo.path, { ...opts(), httpDataPath: 'js' }),
    ]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([native?.stop(), js?.stop()]);
    repo?.cleanup();
  });

  it('publishes every wasmtime model it can serve', () => {
    expect(native.dataPath!.routes.sort()).toEqual(['add_sub_wasm', ...Object.keys(DATA_PATH_GUESTS)].sort());
  });

  compareCases(wasmMatrix, () => [native, js]);

  it('a trap is the sandbox supervisor’s as well: the route stays and the next request is served natively', async () => {
    const [trapped] = await exchange(portOf(native), infer('trap_c', body([1])));
    expect(trapped!.head).toMatch(/^HTTP\/1\.1 500/);
    expect(native.dataPath!.routes).toContain('trap_c');
    const before = native.dataPath!.counters();
    const [a] = await exchange(portOf(native), infer('identity_c', body([5])));
    const [b] = await exchange(portOf(js), infer('identity_c', body([5])));
    expect(canon(a!)).toEqual(canon(b!));
    expect(native.dataPath!.counters().served).toBe(before.served + 1);
    const log = await (await fetch(`${native.metricsUrl}/metrics`)).text();
    expect(log).toMatch(/warden_data_path_requests_total\{handled="native"\} [1-9]/);
  });

  it('a client that goes away cancels its request: the guest sees is-cancelled, on both paths', async () => {
    for (const s of [native, js]) {
      const before = s.dataPath?.counters();
      const sock = connect(portOf(s), '127.0.0.1');
      sock.on('error', () => undefined);
      await new Promise<void>((resolve) => sock.on('connect', resolve));
      sock.write(infer('wait_cancel_c', body([1])));
      await sleep(200);
      sock.destroy();
      // the guest spins until is-cancelled; its deadline is 20 s, so only the cancel ends it in time
      const seen = async () => {
        const log = (await (await fetch(`${s.httpUrl}/v2/models/wait_cancel_c/log`)).json()) as { lines: { message: string }[] };
        return log.lines.filter((l) => l.message === 'cancel seen').length;
      };
      await until(async () => (await seen()) === 1, { what: `the guest seeing the cancel (${s === native ? 'native' : 'js'} path)`, within: 3000 });
      // on the data path, executed there: neither replayed nor handed over (and not counted as
      // served: its client is gone; the log reads above were forwarded)
      if (before) {
        const after = s.dataPath!.counters();
        expect([after.served, after.replayed, after.handedOver]).toEqual([before.served, before.replayed, before.handedOver]);
      }
    }
  });

  it('statistics count what the data path served as the TypeScript path counts it', async () => {
    for (const s of [native, js]) for (let i = 0; i < 5; i++) await exchange(portOf(s), infer('identity_c', body([i])));
    const [a, b] = await Promise.all([statCounts(native, 'identity_c'), statCounts(js, 'identity_c')]);
    expect(a.success).toBeGreaterThan(4);
    expect(a).toEqual(b);
  });

  it('an unload withdraws the route and drains it; a load publishes it again', async () => {
    const post = (path: string) => fetch(`${native.httpUrl}${path}`, { method: 'POST', headers: JSON_TYPE, body: '{}' });
    const inflight = Promise.all(Array.from({ length: 8 }, (_, i) => exchange(portOf(native), infer('identity_c', body([i])))));
    expect((await post('/v2/repository/models/identity_c/unload')).status).toBe(200);
    expect(native.dataPath!.routes).not.toContain('identity_c');
    for (const [r] of await inflight) expect(r!.head).toMatch(/^HTTP\/1\.1 (200|4\d\d|503)/);
    expect((await post('/v2/repository/models/identity_c/load')).status).toBe(200);
    expect(native.dataPath!.routes).toContain('identity_c');
    const before = native.dataPath!.counters();
    const [back] = await exchange(portOf(native), infer('identity_c', body([1])));
    expect(back!.head).toMatch(/^HTTP\/1\.1 200/);
    expect(native.dataPath!.counters().served).toBe(before.served + 1);
  });
});
