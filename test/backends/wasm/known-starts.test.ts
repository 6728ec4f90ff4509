/**
 * The known-start memo (host/src/backends/wasm/start-memo.ts): an upload whose component, files,
 * engine, config (but its name) and limits already started an instance in this process and
 * namespace loads on the V8 engine without starting a sandbox (its instance comes up released, as
 * after an idle release) and answers its first request through a cold start; anything not in the
 * memo — a component never started, another config or memory limit, another tenant's identical
 * upload, an operator's model — starts at load as before, so a new component's `create` error
 * still fails the load.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backendResolveRequest, modelLoadContext } from '../../../host/src/contract/load-context.js';
import type { TritonError } from '../../../host/src/contract/errors.js';
import type { ModelOrigin } from '../../../host/src/contract/types.js';
import type { WasmBackend, WasmModel } from '../../../host/src/backends/wasm/backend.js';
import type { SandboxedInstance } from '../../../host/src/backends/wasm/engine.js';
import { KnownStarts } from '../../../host/src/backends/wasm/start-memo.js';
import * as h from './helpers.js';

const BUILD = join(h.FIXTURES, 'build');
const MiB = 1024 * 1024;
const io = { inputs: [['INPUT0', 'FP32', [-1]]] as h.IO[], outputs: [['OUTPUT0', 'FP32', [-1]]] as h.IO[] };

describe('KnownStarts', () => {
  it("keeps a bounded set per namespace: one namespace's entries never evict another's", () => {
    const memo = new KnownStarts(2);
    memo.add('a', 'k1');
    memo.add('b', 'k1');
    expect([memo.has('a', 'k1'), memo.has('b', 'k1'), memo.has('c', 'k1')]).toEqual([true, true, false]);
    memo.add('a', 'k2');
    memo.has('a', 'k1'); // used: k2 is now the least recently used
    memo.add('a', 'k3');
    expect([memo.has('a', 'k1'), memo.has('a', 'k2'), memo.has('a', 'k3'), memo.has('b', 'k1')]).toEqual([true, false, true, true]);
    expect([memo.size('a'), memo.size('b')]).toEqual([2, 1]);
    memo.forget('b', 'k1');
    expect(memo.has('b', 'k1')).toBe(false);
    expect(() => new KnownStarts(0)).toThrow(RangeError);
  });
});

describe('v8 engine: an upload of a known component starts no sandbox at load', () => {
  const ws = h.wasmWorkspace('warden-known-starts-');
  const resolver = () => ws.keep(h.newResolver('v8', { maxMemoryBytes: 16 * MiB }));

  /** Loads `fixture` as `name` version 1, uploaded by `namespace` (its files known by digest) unless `namespace` is undefined (an operator's model). */
  async function load(r: ReturnType<typeof resolver>, name: string, namespace: string | undefined, fixture = 'identity', params: Record<string, string> = {}) {
    const dir = join(ws.dir, namespace ?? 'operator', name);
    mkdirSync(join(dir, '1'), { recursive: true });
    copyFileSync(join(BUILD, `${fixture}.wasm`), join(dir, '1', 'model.wasm'));
    const digest = createHash('sha256')
      .update(readFileSync(join(dir, '1', 'model.wasm')))
      .digest('hex');
    const cfg = h.wasmConfig(name, io.inputs, io.outputs, { params });
    const origin: ModelOrigin | undefined =
      namespace === undefined ? undefined : { kind: 'upload', tenant: namespace, digests: new Map([['1/model.wasm', digest]]) };
    const request = backendResolveRequest(cfg, dir, 1, origin, { namespace: namespace ?? '', name });
    const backend = (await r.resolve(request)) as WasmBackend;
    const model = (await backend.loadModel(modelLoadContext(request, 1, { logger: h.silentLogger }))) as WasmModel;
    return { model, backend };
  }
  const coldStarts = (i: SandboxedInstance) => (i as unknown as { idle: { coldStarts: number } }).idle.coldStarts;
  const rejection = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error('expected a rejection');
      },
      (e: unknown) => e as TritonError,
    );
  async function answers(inst: SandboxedInstance, name: string, x: number): Promise<void> {
    const rec = await h.infer(inst, h.request(name, [h.tensor('INPUT0', 'FP32', [2], Float32Array.of(x, x + 1))], ['OUTPUT0']));
    expect(rec.errors).toEqual([]);
    expect(Array.from(h.f32(rec.responses[0]!.outputs[0]!))).toEqual([x, x + 1]);
  }

  it('a second upload of the same component and config under another name loads released; its first request cold-starts it and answers', async () => {
    const r = resolver();
    const { model: first, backend } = await load(r, 'first', 'acme');
    const engine = first.engine;
    const a = await first.createInstance(h.instanceSpec('first', 0));
    expect(a.stats.starts).toBe(1);
    expect(engine.liveSandboxes()).toBe(1);
    expect(backend.knownStarts.size('acme')).toBe(1);
    const used = r.memoryBudget.usedBytes;

    const { model: second } = await load(r, 'second', 'acme');
    const b = await second.createInstance(h.instanceSpec('second', 0));
    // no worker started, no memory reserved: released, as after an idle release
    expect(b.stats.starts).toBe(0);
    expect(engine.liveSandboxes()).toBe(1);
    expect(r.memoryBudget.usedBytes).toBe(used);
    expect(b.isReady()).toBe(true);
    expect(b.usage?.()).toMatchObject({ sandboxMemoryBytes: 0 });

    await answers(b, 'second', 7);
    expect([b.stats.starts, coldStarts(b)]).toEqual([1, 1]);
    expect(engine.liveSandboxes()).toBe(2);
    expect(r.memoryBudget.usedBytes).toBe(used + second.instanceMemoryBytes);
    await answers(b, 'second', 9); // the sandbox now serves: no further start
    expect(b.stats.starts).toBe(1);
    await answers(a, 'first', 1);

    // finalizing an instance that never started a sandbox is clean too
    const { model: third } = await load(r, 'third', 'acme');
    const c = await third.createInstance(h.instanceSpec('third', 0));
    expect(c.stats.starts).toBe(0);
    await third.finalize();
    await Promise.all([first.finalize(), second.finalize()]);
    expect(engine.liveSandboxes()).toBe(0);
    expect(r.memoryBudget.usedBytes).toBe(0);
  });

  it('a component that never started still fails at load with its create error, every time; nothing is recorded', async () => {
    const r = resolver();
    for (const name of ['refuses', 'refuses_again']) {
      const { model, backend } = await load(r, name, 'acme', 'error_create');
      const e = await rejection(model.createInstance(h.instanceSpec(name, 0)));
      expect(e.code).toBe('INVALID_ARG');
      expect(e.message).toBe('hostile fixture refuses to load: ERROR_CREATE');
      expect(backend.knownStarts.size('acme')).toBe(0);
      await model.finalize();
    }
  });

  it("a known start whose cold start fails: the first request gets the cold start's error and the memo forgets the inputs", async () => {
    const r = resolver();
    // a guest whose create is not deterministic, as seen from the memo: it vouches for a component that refuses
    const { backend } = await load(r, 'probe', 'acme');
    const forgot: string[] = [];
    const memo = backend.knownStarts;
    const { has, forget } = memo;
    memo.has = () => true;
    memo.forget = (ns, key) => (forgot.push(ns), forget.call(memo, ns, key));
    try {
      const { model } = await load(r, 'flaky', 'acme', 'error_create');
      const inst = await model.createInstance(h.instanceSpec('flaky', 0));
      expect(inst.stats.starts).toBe(0);
      const { sender } = h.recorder();
      const e = await rejection(inst.execute([h.request('flaky', [h.tensor('INPUT0', 'FP32', [1], Float32Array.of(1))], ['OUTPUT0'])], [sender]));
      expect(e.code).toBe('UNAVAILABLE');
      expect(e.message).toBe("sandboxed backend of model 'flaky' is unavailable: hostile fixture refuses to load: ERROR_CREATE");
      expect(forgot).toEqual(['acme']);
      await model.finalize();
    } finally {
      memo.has = has;
      memo.forget = forget;
    }
  });

  it("another config, another memory limit, another tenant's identical upload and an operator's model start at load", async () => {
    const r = resolver();
    const { model: known } = await load(r, 'known', 'acme');
    await known.createInstance(h.instanceSpec('known', 0));
    const cases: [string, string | undefined, Record<string, string>][] = [
      ['other_params', 'acme', { greeting: 'hello' }],
      ['other_memory', 'acme', { memory_limit_bytes: String(8 * MiB) }],
      ['other_tenant', 'globex', {}],
      ['operator', undefined, {}],
    ];
    for (const [name, namespace, params] of cases) {
      const { model } = await load(r, name, namespace, 'identity', params);
      const inst = await model.createInstance(h.instanceSpec(name, 0));
      expect({ name, starts: inst.stats.starts }).toEqual({ name, starts: 1 });
      await answers(inst, name, 3);
    }
    // a second instance of a known model is another placement: started at load once, then known
    const { model: two } = await load(r, 'two', 'acme');
    const i0 = await two.createInstance(h.instanceSpec('two', 0));
    const i1 = await two.createInstance(h.instanceSpec('two', 1));
    expect([i0.stats.starts, i1.stats.starts]).toEqual([0, 1]);
    const { model: twoAgain } = await load(r, 'two_again', 'acme');
    const j1 = await twoAgain.createInstance(h.instanceSpec('two_again', 1));
    expect(j1.stats.starts).toBe(0);
    // the other tenant's upload is now known to that tenant only
    const { model: globex } = await load(r, 'globex_again', 'globex');
    expect((await globex.createInstance(h.instanceSpec('globex_again', 0))).stats.starts).toBe(0);
  });
});
