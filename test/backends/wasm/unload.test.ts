/**
 * Unload under load, on every sandbox engine: a sandboxed model unloaded (explicit model control)
 * while clients keep sending requests. Every request gets an answer (200 before the unload, an
 * error after), nothing hangs, the engine's sandboxes are all gone after the unload, and the
 * model loads and serves again.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { WasmBackendResolver } from '../../../host/src/backends/wasm/index.js';
import { ENGINES, newResolver, REPO, wasmServer } from './helpers.js';
import { until } from '../../helpers/wait.js';

describe.each(ENGINES)('%s engine: unload under load', (engine) => {
  let resolver: WasmBackendResolver;
  const server = wasmServer('warden-wasm-unload-', (repo) => {
    cpSync(join(REPO, 'identity_wasm'), join(repo, 'identity_wasm'), { recursive: true });
    resolver = newResolver(engine);
    return { modelControlMode: 'explicit', loadModels: ['identity_wasm'], backendResolvers: [resolver] };
  });

  const post = (path: string, body?: unknown) =>
    fetch(server.httpUrl + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('every request is answered, the sandboxes go away, and the model serves again after a reload', async () => {
    const statuses: number[] = [];
    /** Answers to requests sent after the unload had returned. */
    const afterUnload: number[] = [];
    const wrong: string[] = [];
    let stop = false;
    let unloaded = false;
    const client = async () => {
      while (!stop) {
        const sentAfter = unloaded;
        const r = await post('/v2/models/identity_wasm/infer', { inputs: [{ name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] }] });
        const body = await r.json();
        if (r.status === 200 && JSON.stringify(body.outputs?.[0]?.data) !== '[1,2,3,4]') wrong.push(JSON.stringify(body));
        statuses.push(r.status);
        if (sentAfter) afterUnload.push(r.status);
      }
    };
    const clients = Array.from({ length: 8 }, client);
    try {
      // under load: wait for the clients to be served (at least 20 answers)
      await until(() => statuses.filter((s) => s === 200).length >= 20, { within: 10_000, every: 20 });
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(20);
      const unload = await post('/v2/repository/models/identity_wasm/unload');
      expect(unload.status).toBe(200);
      unloaded = true;
      // The requests in flight at the unload drain (answered 200, however slowly: sandboxes run at
      // background priority); the ones sent afterwards are refused.
      await until(() => afterUnload.length >= 16, { within: 10_000, every: 20 });
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    expect(wrong).toEqual([]);
    // sent after the unload: errors (not found / unavailable), never a hang or a 500
    expect(afterUnload.length).toBeGreaterThanOrEqual(16);
    expect(afterUnload.every((s) => s === 400 || s === 404 || s === 503)).toBe(true);
    expect(statuses.every((s) => s !== 500)).toBe(true);
    const engineOf = resolver.getBackend().engine;
    await until(() => engineOf.liveSandboxes() === 0, { within: 2_000, every: 20 });
    expect(engineOf.liveSandboxes()).toBe(0);
    expect(resolver.memoryBudget.usedBytes).toBe(0);
    expect((await post('/v2/repository/models/identity_wasm/load')).status).toBe(200);
    const again = await post('/v2/models/identity_wasm/infer', { inputs: [{ name: 'INPUT0', shape: [1], datatype: 'FP32', data: [9] }] });
    expect(again.status).toBe(200);
    expect((await again.json()).outputs[0].data).toEqual([9]);
  });
});
