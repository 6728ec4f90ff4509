/**
 * Unload under load, on every sandbox engine: a sandboxed model unloaded (explicit model control)
 * while clients keep sending requests. Every request gets an answer (200 before the unload, an
 * error after), nothing hangs, the engine's sandboxes are all gone after the unload, and the
 * model loads and serves again.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WasmBackendResolver } from '../../../host/src/backends/wasm/index.js';
import { ensureBuilt, ENGINES, newResolver, REPO } from './helpers.js';

type Running = { httpUrl: string; stop(): Promise<void> };

describe.each(ENGINES)('%s engine: unload under load', (engine) => {
  let server: Running;
  let repo: string;
  let resolver: WasmBackendResolver;

  beforeAll(async () => {
    await ensureBuilt();
    repo = mkdtempSync(join(tmpdir(), 'warden-wasm-unload-'));
    cpSync(join(REPO, 'identity_wasm'), join(repo, 'identity_wasm'), { recursive: true });
    const { startServer } = (await import('../../../host/src/server.js')) as unknown as { startServer(o: Record<string, unknown>): Promise<Running> };
    resolver = newResolver(engine);
    server = await startServer({
      modelRepositories: [repo],
      httpPort: 0,
      metricsPort: 0,
      modelControlMode: 'explicit',
      loadModels: ['identity_wasm'],
      logLevel: 'silent',
      backendResolvers: [resolver],
    });
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(repo, { recursive: true, force: true });
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
      for (let i = 0; i < 500 && statuses.filter((s) => s === 200).length < 20; i++) await new Promise((r) => setTimeout(r, 20));
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(20);
      const unload = await post('/v2/repository/models/identity_wasm/unload');
      expect(unload.status).toBe(200);
      unloaded = true;
      // The requests in flight at the unload drain (answered 200, however slowly: sandboxes run at
      // background priority); the ones sent afterwards are refused.
      for (let i = 0; i < 500 && afterUnload.length < 16; i++) await new Promise((r) => setTimeout(r, 20));
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
    for (let i = 0; i < 100 && engineOf.liveSandboxes() > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(engineOf.liveSandboxes()).toBe(0);
    expect(resolver.memoryBudget.usedBytes).toBe(0);
    expect((await post('/v2/repository/models/identity_wasm/load')).status).toBe(200);
    const again = await post('/v2/models/identity_wasm/infer', { inputs: [{ name: 'INPUT0', shape: [1], datatype: 'FP32', data: [9] }] });
    expect(again.status).toBe(200);
    expect((await again.json()).outputs[0].data).toEqual([9]);
  });
});
