/**
 * The budget of sandbox linear memory (host/src/backends/wasm/memory-budget.ts): nested budgets
 * (a tenant's inside the server's), each sandbox reserving its model's memory limit × the
 * component's memories when it starts and releasing it when it is gone (finalized, or released
 * by the idle policy); a sandbox that does not fit first has idle sandboxes released, least
 * recently used first, and fails to start when none is left; a model one of whose sandboxes
 * could never fit fails to load; a component cannot make more memories than it reserved for;
 * the budget never holds more than its limit; and over HTTP, a load that does not fit fails
 * cleanly while the other models keep serving, or, with the idle policy, takes the room of idle
 * sandboxes.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TritonError } from '../../../host/src/contract/errors.js';
import { MemoryBudget, SERVER_BUDGET_NAME, WasmBackendResolver, type WasmModel } from '../../../host/src/backends/wasm/index.js';
import { DEFAULT_IDLE_MS } from '../../../host/src/backends/wasm/limits.js';
import { idlePolicy } from '../../../host/src/backends/wasm/backend.js';
import type { SandboxedInstance } from '../../../host/src/backends/wasm/engine.js';
import * as h from './helpers.js';
import { until } from '../../helpers/wait.js';

const MiB = 1024 * 1024;
const BUILD = join(h.FIXTURES, 'build');

describe('MemoryBudget', () => {
  it('reserves in the budget and every budget above it, all or nothing; release is idempotent', () => {
    const server = new MemoryBudget('server', 100);
    const a = server.child('tenant a', 60);
    const b = server.child('tenant b', 60);
    const r1 = a.tryReserve(50)!;
    expect([a.usedBytes, server.usedBytes, b.usedBytes]).toEqual([50, 50, 0]);
    expect(a.tryReserve(20)).toBeUndefined(); // the tenant's quota
    expect(a.blocker(20)).toBe(a);
    const r2 = b.tryReserve(40)!;
    expect(b.tryReserve(15)).toBeUndefined(); // the server's budget: 90 + 15 > 100, though b has 20 left
    expect(b.blocker(15)).toBe(server);
    expect([a.usedBytes, b.usedBytes, server.usedBytes]).toEqual([50, 40, 90]);
    r1.release();
    r1.release();
    expect([a.usedBytes, server.usedBytes]).toEqual([0, 40]);
    expect(b.tryReserve(15)).toBeDefined();
    r2.release();
    expect(server.tooSmallFor(101)).toBe(server);
    expect(a.tooSmallFor(61)).toBe(a);
    expect(a.tooSmallFor(60)).toBeUndefined();
    expect(a.within(server) && !server.within(a) && !a.within(b)).toBe(true);
    expect(server.tryReserve(0)).toBeDefined();
    expect(() => server.tryReserve(-1)).toThrow(RangeError);
    expect(() => new MemoryBudget('x', -5)).toThrow(RangeError);
  });

  it('reserve() releases idle reservations in the blocking budget, least recently used first, and fails when none is left', async () => {
    const server = new MemoryBudget('server', 100);
    const a = server.child('tenant a', 50);
    const b = server.child('tenant b', 100);
    const asked: string[] = [];
    // an owner that releases its sandbox when asked (the sandbox is gone a tick later)
    const hold = (budget: MemoryBudget, bytes: number, name: string) => {
      const r = budget.tryReserve(bytes)!;
      return Object.assign(r, {
        idleNow: () =>
          r.idle(() => {
            asked.push(name);
            setImmediate(() => r.release());
            return true;
          }),
      });
    };
    const a1 = hold(a, 25, 'a1');
    const b1 = hold(b, 25, 'b1');
    const a2 = hold(a, 25, 'a2');
    const b2 = hold(b, 25, 'b2');
    b1.idleNow();
    a1.idleNow();
    a2.idleNow();
    a1.idleNow(); // used again: now the most recently used
    // tenant a is full: only a's idle sandboxes are candidates, the least recently used first
    const a3 = await a.reserve(25);
    expect(a3).toBeDefined();
    expect(asked).toEqual(['a2']);
    expect([a.usedBytes, server.usedBytes]).toEqual([50, 100]);
    // the server is full: any idle sandbox, least recently used first (b1), busy ones never
    b2.idleNow();
    b2.busy();
    const b3 = await b.reserve(25);
    expect(b3).toBeDefined();
    expect(asked).toEqual(['a2', 'b1']);
    // nothing idle is in the way in tenant b (a1 holds memory in tenant a): refused, nothing released
    expect(server.idleReservations().map((r) => r.bytes)).toEqual([25]);
    expect(await b.reserve(60)).toBeUndefined();
    expect(asked).toEqual(['a2', 'b1']);
    // the server's budget blocks: a1 is released, and still there is no room
    expect(await server.reserve(60)).toBeUndefined();
    expect(asked).toEqual(['a2', 'b1', 'a1']);
    expect(server.usedBytes).toBeLessThanOrEqual(server.limitBytes);
    // an owner that is busy again declines: the next candidate is asked
    const c = new MemoryBudget('c', 20);
    const busyOne = c.tryReserve(10)!;
    busyOne.idle(() => false);
    const other = c.tryReserve(10)!;
    other.idle(() => (setImmediate(() => other.release()), true));
    expect(await c.reserve(10)).toBeDefined();
    expect([busyOne.released, other.released]).toEqual([false, true]);
    for (const r of [a3!, b2, b3!, busyOne]) r.release();
  });
});

describe.each(h.ENGINES)('%s engine: instances and the memory budget', (engine) => {
  const ws = h.wasmWorkspace('warden-budget-');

  const io = { inputs: [['INPUT0', 'FP32', [-1]]] as h.IO[], outputs: [['OUTPUT0', 'FP32', [-1]]] as h.IO[] };
  /** `idleMs` 0 (the default here): no sandbox is ever idle, so nothing is released to make room. */
  function resolver(totalBytes: number, memoryBudgetFor?: ConstructorParameters<typeof WasmBackendResolver>[0]['memoryBudgetFor'], idleMs = 0) {
    const r = new WasmBackendResolver({
      cacheDir: join(ws.dir, 'cache'),
      limits: { maxMemoryBytes: 16 * MiB, maxExecuteMs: 5000, maxLogBytes: 4096, maxTotalMemoryBytes: totalBytes },
      logger: h.silentLogger,
      engine,
      memoryBudgetFor,
      idleMs,
    });
    ws.keep(r);
    return r;
  }
  async function load(
    r: WasmBackendResolver,
    name: string,
    instances = 1,
    fixture = 'identity',
    namespace = '',
    uploaded = false,
    params: Record<string, string> = {},
  ): Promise<WasmModel> {
    const dir = join(ws.dir, name);
    mkdirSync(join(dir, '1'), { recursive: true });
    copyFileSync(join(BUILD, `${fixture}.wasm`), join(dir, '1', 'model.wasm'));
    const cfg = h.wasmConfig(name, io.inputs, io.outputs, { params });
    cfg.instance_group[0]!.count = instances;
    const { backendResolveRequest, modelLoadContext } = await import('../../../host/src/contract/load-context.js');
    const request = backendResolveRequest(cfg, dir, 1, uploaded ? { kind: 'upload', tenant: namespace } : undefined);
    const req = namespace ? { ...request, key: { ...request.key, namespace } } : request;
    const backend = await r.resolve(req);
    return (await backend!.loadModel(modelLoadContext(req, 1, { logger: h.silentLogger }))) as WasmModel;
  }
  const rejection = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error('expected a rejection');
      },
      (e: unknown) => e as TritonError,
    );

  it('each instance reserves memory limit × memories at start and releases it at finalize', async () => {
    const r = resolver(64 * MiB);
    const m = await load(r, 'reserve');
    expect(m.instanceMemoryBytes).toBe(16 * MiB); // the C identity component defines one memory
    const a = await m.createInstance(h.instanceSpec('reserve', 0));
    const b = await m.createInstance(h.instanceSpec('reserve', 1));
    expect(r.memoryBudget.usedBytes).toBe(32 * MiB);
    await a.finalize();
    expect(r.memoryBudget.usedBytes).toBe(16 * MiB);
    await m.finalize();
    expect(r.memoryBudget.usedBytes).toBe(0);
    await b.finalize(); // again: nothing released twice
    expect(r.memoryBudget.usedBytes).toBe(0);
  });

  it('an instance that does not fit fails to start with UNAVAILABLE naming the budget and the flag; the others keep running', async () => {
    const r = resolver(40 * MiB);
    const m = await load(r, 'fits', 2);
    const i0 = await m.createInstance(h.instanceSpec('fits', 0));
    const i1 = await m.createInstance(h.instanceSpec('fits', 1));
    const other = await load(r, 'no_room', 1);
    const e = await rejection(other.createInstance(h.instanceSpec('no_room', 0)));
    expect(e).toBeInstanceOf(TritonError);
    expect(e.code).toBe('UNAVAILABLE');
    expect(e.message).toBe(
      `model 'no_room' instance no_room_0 needs ${16 * MiB} bytes of sandbox memory (1 linear memory × ${16 * MiB} bytes (memory_limit_bytes)), ` +
        `but ${SERVER_BUDGET_NAME} has only ${8 * MiB} of ${40 * MiB} bytes free`,
    );
    expect(e.message).toContain('--wasm-max-total-memory-bytes');
    expect(r.memoryBudget.usedBytes).toBe(32 * MiB);
    expect(other.engine.liveSandboxes()).toBe(2); // no sandbox was started for it
    const rec = await h.infer(i0, h.request('fits', [h.tensor('INPUT0', 'FP32', [2], Float32Array.of(3, 4))], ['OUTPUT0']));
    expect(Array.from(h.f32(rec.responses[0]!.outputs[0]!))).toEqual([3, 4]);
    await other.finalize();
    // unloading frees the budget: now it fits
    await m.finalize();
    expect(r.memoryBudget.usedBytes).toBe(0);
    const again = await load(r, 'no_room', 1);
    await again.createInstance(h.instanceSpec('no_room', 0));
    expect(r.memoryBudget.usedBytes).toBe(16 * MiB);
    await again.finalize();
    void i1;
  });

  it('a model one of whose sandboxes could never fit fails to load with INVALID_ARG, starting nothing; more instances than fit at once load', async () => {
    const r = resolver(8 * MiB);
    const e = await rejection(load(r, 'too_big', 1));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe(
      `model 'too_big' needs ${16 * MiB} bytes of sandbox memory for one instance (1 linear memory × ${16 * MiB} bytes (memory_limit_bytes)), ` +
        `more than ${SERVER_BUDGET_NAME} allows: ${8 * MiB} bytes; lower memory_limit_bytes`,
    );
    expect(r.memoryBudget.usedBytes).toBe(0);
    // the load checks one sandbox: three instances of 16 MiB load under 40 MiB (their sandboxes take turns)
    const many = await load(resolver(40 * MiB), 'many', 3);
    expect(many.instanceMemoryBytes).toBe(16 * MiB);
    await many.finalize();
  });

  it('a sandbox that does not fit releases the least recently used idle sandbox first; the budget never holds more than its limit', async () => {
    const r = resolver(32 * MiB, undefined, 600_000); // idle policy on (its timer never fires here)
    const limit = r.memoryBudget.limitBytes;
    let peak = 0;
    const tryReserve = r.memoryBudget.tryReserve.bind(r.memoryBudget);
    r.memoryBudget.tryReserve = (bytes) => {
      const got = tryReserve(bytes);
      peak = Math.max(peak, r.memoryBudget.usedBytes); // after every reservation, granted or not
      return got;
    };
    const names = ['lru_a', 'lru_b', 'lru_c'];
    const ms = await Promise.all(names.map((n) => load(r, n)));
    const insts: SandboxedInstance[] = [];
    for (const [i, m] of ms.entries()) insts.push(await m.createInstance(h.instanceSpec(names[i]!, 0)));
    const engine = ms[0]!.engine;
    const idle = (i: number) => (insts[i] as unknown as { idle: { releases: number; coldStarts: number } }).idle;
    // 3 sandboxes of 16 MiB under 32 MiB: the third start released the least recently used idle one (a's)
    expect(r.memoryBudget.usedBytes).toBe(32 * MiB);
    expect([0, 1, 2].map((i) => idle(i).releases)).toEqual([1, 0, 0]);
    await until(() => engine.liveSandboxes() === 2, { within: 5_000, every: 10 });
    for (const k of [0, 1, 2, 0, 2, 1, 1, 0, 2]) {
      const rec = await h.infer(insts[k]!, h.request(names[k]!, [h.tensor('INPUT0', 'FP32', [1], Float32Array.of(k))], ['OUTPUT0']));
      expect(rec.errors).toEqual([]);
      expect(h.f32(rec.responses[0]!.outputs[0]!)[0]).toBe(k);
      expect(engine.liveSandboxes()).toBeLessThanOrEqual(2); // sandboxes alive never exceed what the budget holds
    }
    expect(peak).toBe(limit);
    // each cold start released the least recently used of the two live sandboxes
    expect([0, 1, 2].map((i) => idle(i).coldStarts)).toEqual([3, 2, 2]);
    expect([0, 1, 2].map((i) => idle(i).releases)).toEqual([3, 3, 2]);
    await Promise.all(ms.map((m) => m.finalize()));
    expect(r.memoryBudget.usedBytes).toBe(0);
  });

  it("without a server idle policy, uploads are released after DEFAULT_IDLE_MS and the repositories' models stay warm", async () => {
    const r = new WasmBackendResolver({
      cacheDir: join(ws.dir, 'cache'),
      limits: { maxMemoryBytes: 16 * MiB, maxExecuteMs: 5000, maxLogBytes: 4096, maxTotalMemoryBytes: 64 * MiB },
      logger: h.silentLogger,
      engine,
    });
    ws.keep(r);
    const idleOf = (m: WasmModel) => (m as unknown as { host: { limits: { idleMs?: number } } }).host.limits.idleMs;
    expect(idleOf(await load(r, 'warm_op'))).toBe(0);
    expect(idleOf(await load(r, 'up_acme', 1, 'identity', 'acme', true))).toBe(DEFAULT_IDLE_MS);
    // A tenant cannot pin its sandbox's memory by asking never to be released.
    expect(idleOf(await load(r, 'up_pinned', 1, 'identity', 'acme', true, { idle_timeout_ms: '0' }))).toBe(DEFAULT_IDLE_MS);
    expect((r.getBackend().engine as unknown as { idleMs: number }).idleMs).toBe(DEFAULT_IDLE_MS);
  });

  it.each([
    ['0 (never release)', '0', DEFAULT_IDLE_MS],
    ['longer than the default', String(10 * DEFAULT_IDLE_MS), DEFAULT_IDLE_MS],
    ['shorter than the default', '1000', 1000],
  ])("an upload's idle_timeout_ms of %s: it may be released sooner, never later nor never", (_what, asked, got) => {
    const defaults = { repository: 0, upload: DEFAULT_IDLE_MS };
    const upload = { kind: 'upload', tenant: 'acme' } as const;
    expect(idlePolicy(Number(asked), upload, defaults)).toBe(got);
    // The operator's models keep what they ask for; a server that never releases uploads lets them choose.
    expect(idlePolicy(Number(asked), { kind: 'repository', repository: '/r' }, defaults)).toBe(Number(asked));
    expect(idlePolicy(Number(asked), upload, { repository: 0, upload: 0 })).toBe(Number(asked));
  });

  it('the idle policy releases a sandbox and its memory; the next request starts it again', async () => {
    const r = resolver(64 * MiB, undefined, 30);
    const m = await load(r, 'idle_rel');
    const inst = await m.createInstance(h.instanceSpec('idle_rel', 0));
    await until(() => r.memoryBudget.usedBytes === 0 && m.engine.liveSandboxes() === 0, { within: 5_000, every: 10 });
    const rec = await h.infer(inst, h.request('idle_rel', [h.tensor('INPUT0', 'FP32', [1], Float32Array.of(5))], ['OUTPUT0']));
    expect(rec.errors).toEqual([]);
    expect(h.f32(rec.responses[0]!.outputs[0]!)[0]).toBe(5);
    const idle = (inst as unknown as { idle: { releases: number; coldStarts: number } }).idle;
    expect(idle.releases).toBeGreaterThanOrEqual(1);
    expect(idle.coldStarts).toBe(1);
    expect(inst.isReady()).toBe(true);
    await m.finalize();
    expect(r.memoryBudget.usedBytes).toBe(0);
  });

  it("a tenant's budget (memoryBudgetFor) bounds its models inside the server's budget", async () => {
    let tenant: MemoryBudget | undefined;
    const r = resolver(100 * MiB, ({ key }) =>
      key.namespace === 'acme' ? (tenant ??= r.memoryBudget.child("tenant 'acme''s sandbox memory quota", 20 * MiB)) : undefined,
    );
    const mine = await load(r, 'acme_m', 1, 'identity', 'acme');
    await mine.createInstance(h.instanceSpec('acme_m', 0));
    const e = await rejection(mine.createInstance(h.instanceSpec('acme_m', 1)));
    expect(e.code).toBe('UNAVAILABLE');
    expect(e.message).toMatch(/but tenant 'acme''s sandbox memory quota has only 4194304 of 20971520 bytes free$/);
    // another namespace uses the server's budget, unaffected by acme's quota
    const theirs = await load(r, 'other_m', 2);
    await theirs.createInstance(h.instanceSpec('other_m', 0));
    await theirs.createInstance(h.instanceSpec('other_m', 1));
    expect([tenant!.usedBytes, r.memoryBudget.usedBytes]).toEqual([16 * MiB, 48 * MiB]);
    let tiny: MemoryBudget | undefined;
    const r3 = resolver(100 * MiB, () => (tiny ??= r3.memoryBudget.child("tenant 'tiny''s sandbox memory quota", 8 * MiB)));
    const tooBig = await rejection(load(r3, 'tiny_big', 1, 'identity', 'tiny'));
    expect(tooBig.message).toMatch(/more than tenant 'tiny''s sandbox memory quota allows: 8388608 bytes/);
    await mine.finalize();
    await theirs.finalize();
    expect([tenant!.usedBytes, r.memoryBudget.usedBytes]).toEqual([0, 0]);
    // a budget from outside the server's is a wiring error
    const stray = new MemoryBudget('stray', 1 << 30);
    const r2 = resolver(100 * MiB, () => stray);
    expect((await rejection(load(r2, 'stray_m'))).code).toBe('INTERNAL');
  });

  it('a component that instantiates a memory-defining core module twice is refused at start-up', async () => {
    const r = resolver(64 * MiB);
    if (engine === 'wasmtime') {
      // the fixture exports no backend resources: wasmtime's linker refuses it at load already
      // (its store would also refuse a second memory: StoreLimits.memories = the memories counted)
      const e = await rejection(load(r, 'twice', 1, 'instantiate_twice'));
      expect(e.code).toBe('INVALID_ARG');
      expect(e.message).toMatch(/does not have export `\[static\]model\.create`/);
      expect(r.memoryBudget.usedBytes).toBe(0);
      return;
    }
    const m = await load(r, 'twice', 1, 'instantiate_twice');
    expect(m.instanceMemoryBytes).toBe(16 * MiB);
    const e = await rejection(m.createInstance(h.instanceSpec('twice', 0)));
    expect(e.code).toBe('INTERNAL');
    expect(e.message).toMatch(/creates more than the 1 linear memories its core modules define/);
    expect(r.memoryBudget.usedBytes).toBe(0);
    await m.finalize();
  });
});

describe.each(h.ENGINES.flatMap((e) => [[e, false] as const, [e, true] as const]))('%s engine: over HTTP, idle policy %s', (engine, idle) => {
  let resolver: WasmBackendResolver;
  const server = h.wasmServer('warden-budget-http-', (repo) => {
    const identity = readFileSync(join(BUILD, 'identity.wasm'));
    const config = (name: string, count: number) =>
      `name: "${name}"\nbackend: "wasm"\ninput [{ name: "INPUT0" data_type: TYPE_FP32 dims: [-1] }]\noutput [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [-1] }]\n` +
      `instance_group [{ kind: KIND_CPU count: ${count} }]\nparameters { key: "memory_limit_bytes" value: { string_value: "${16 * MiB}" } }\n`;
    for (const [name, count] of [
      ['small', 2],
      ['big', 2],
    ] as const) {
      mkdirSync(join(repo, name, '1'), { recursive: true });
      writeFileSync(join(repo, name, '1', 'model.wasm'), identity);
      writeFileSync(join(repo, name, 'config.pbtxt'), config(name, count));
    }
    resolver = new WasmBackendResolver({
      cacheDir: mkdtempSync(join(tmpdir(), 'warden-budget-http-cache-')),
      limits: { maxMemoryBytes: 64 * MiB, maxExecuteMs: 5000, maxLogBytes: 4096, maxTotalMemoryBytes: 48 * MiB },
      logger: h.silentLogger,
      engine,
      idleMs: idle ? 30_000 : 0, // a server idle policy applies to the repository's models too
    });
    return { modelControlMode: 'explicit', backendResolvers: [resolver] };
  });

  const post = (path: string, body: unknown = {}) =>
    fetch(server.httpUrl + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const infer = async (model: string) => {
    const r = await post(`/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', shape: [2], datatype: 'FP32', data: [1, 2] }] });
    return { status: r.status, body: (await r.json()) as { outputs?: { data: number[] }[]; error?: string } };
  };

  it.runIf(!idle)('a load that does not fit fails cleanly, the loaded model keeps serving, and unloading frees the budget', async () => {
    expect((await post('/v2/repository/models/small/load')).status).toBe(200);
    expect(resolver.memoryBudget.usedBytes).toBe(32 * MiB);
    const failed = await post('/v2/repository/models/big/load');
    expect(failed.status).toBeGreaterThanOrEqual(400);
    const err = ((await failed.json()) as { error: string }).error;
    expect(err).toMatch(/sandbox memory budget/);
    expect(err).toContain('--wasm-max-total-memory-bytes');
    // the one instance of 'big' that did start was finalized with the failed load: its memory is back
    expect(resolver.memoryBudget.usedBytes).toBe(32 * MiB);
    expect((await fetch(`${server.httpUrl}/v2/models/big/ready`)).status).not.toBe(200);
    const ok = await infer('small');
    expect(ok.status).toBe(200);
    expect(ok.body.outputs![0]!.data).toEqual([1, 2]);
    expect((await post('/v2/repository/models/small/unload')).status).toBe(200);
    await until(() => resolver.memoryBudget.usedBytes === 0, { within: 2_000, every: 20 });
    expect(resolver.memoryBudget.usedBytes).toBe(0);
    expect((await post('/v2/repository/models/big/load')).status).toBe(200);
    expect(resolver.memoryBudget.usedBytes).toBe(32 * MiB);
    expect((await infer('big')).body.outputs![0]!.data).toEqual([1, 2]);
  });

  it.runIf(idle)('with an idle policy, a load takes the room of idle sandboxes, and theirs is taken back on their next request', async () => {
    expect((await post('/v2/repository/models/small/load')).status).toBe(200);
    expect((await post('/v2/repository/models/big/load')).status).toBe(200);
    expect(resolver.memoryBudget.usedBytes).toBe(48 * MiB); // 3 of the 4 sandboxes: one of small's was released
    for (const model of ['small', 'big', 'small', 'small', 'big']) {
      const ok = await infer(model);
      expect(ok.status).toBe(200);
      expect(ok.body.outputs![0]!.data).toEqual([1, 2]);
      expect(resolver.memoryBudget.usedBytes).toBeLessThanOrEqual(48 * MiB);
    }
    expect((await post('/v2/repository/models/small/unload')).status).toBe(200);
    expect((await post('/v2/repository/models/big/unload')).status).toBe(200);
    await until(() => resolver.memoryBudget.usedBytes === 0, { within: 5_000, every: 20 });
  });
});
