/**
 * tritonclient.grpc (PyPI `tritonclient[grpc]`) against Warden's gRPC frontend: every RPC of
 * `inference.GRPCInferenceService`, streaming from a decoupled model, the service definition
 * re-derived from the pinned package (it must match what is committed), and KServe ModelMesh's
 * adapter call sequence against a server started with ModelMesh's tritonserver launch line.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCli } from '../../host/src/cli-options.js';
import { startServer, type RunningServer } from '../../host/src/server.js';
import { expectAllPassed, hostPort, MODEL_REPOSITORY, runScript, useCompatServer } from './harness.js';
import { ensureCompatVenv, PROJECT_ROOT } from './venv.js';
import { tempRepo } from '../helpers/repo.js';
import { MODELMESH_FLAGS } from '../helpers/cli.js';

describe('tritonclient.grpc against Warden (explicit mode)', () => {
  const c = useCompatServer({ modelControlMode: 'explicit', loadModels: ['simple', 'simple_string', 'repeat_wasm'], grpc: true });

  it("the committed service definition is what tritonclient[grpc]'s generated modules hold", async (ctx) => {
    c.skipIfNoClient(ctx);
    const out = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const p = spawn(c.python, [join(PROJECT_ROOT, 'scripts', 'export-triton-protos.py'), '--check'], { cwd: PROJECT_ROOT });
      let text = '';
      p.stdout.on('data', (d) => (text += d));
      p.stderr.on('data', (d) => (text += d));
      p.on('close', (code) => resolve({ code, text }));
    });
    expect(out.text.trim()).toBe('{"match": true, "differs": []}');
    expect(out.code).toBe(0);
  });

  it('every RPC: health, metadata, config, infer, errors, statistics, repository, logging, trace, streaming', async (ctx) => {
    const r = await c.expectScript(
      ctx,
      'grpc_client.py',
      ['--grpc-url', c.grpcUrl, '--repo', MODEL_REPOSITORY],
      [
        'health',
        'server metadata',
        'model metadata',
        'model config as protobuf ModelConfig',
        'infer simple (raw contents, id echoed)',
        'infer batch 8, requested output subset',
        'infer simple_string (BYTES)',
        'async_infer x8',
        "errors with Triton's gRPC status codes",
        'statistics',
        'repository index / load / unload / config and file overrides',
        'log settings',
        'trace settings',
        'stream: decoupled model with triton_final_response',
        'stream: ordinary model and errors',
        'CUDA shared memory UNSUPPORTED, system shared memory off',
      ],
    );
    // The same data plane as HTTP: the gRPC ModelMetadata equals HTTP's (shapes as int64 strings).
    const http = await (await fetch(`http://${c.url}/v2/models/simple`)).json();
    expect(r.observed['model_metadata:simple']).toEqual({
      ...http,
      inputs: http.inputs.map((t: { shape: number[] }) => ({ ...t, shape: t.shape.map(String) })),
      outputs: http.outputs.map((t: { shape: number[] }) => ({ ...t, shape: t.shape.map(String) })),
    });
  });
});

describe("system shared memory through tritonclient's utilities (--allow-client-shm); the response cache", () => {
  // simple under another name, with response_cache { enable: true }
  const cached = tempRepo();
  const dir = cached.addExample('simple', 'simple_cached');
  writeFileSync(
    join(dir, 'config.pbtxt'),
    `${readFileSync(join(dir, 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "simple_cached"')}\nresponse_cache { enable: true }\n`,
  );
  afterAll(() => cached.cleanup());
  const c = useCompatServer({
    modelControlMode: 'explicit',
    loadModels: ['simple', 'simple_cached'],
    extraRepositories: [cached.path],
    grpc: true,
    allowClientShm: true,
    responseCacheBytes: 1 << 20,
  });

  it('cache hits are visible in the statistics tritonclient.grpc reads', async (ctx) => {
    await c.expectScript(ctx, 'cache.py', ['--grpc-url', c.grpcUrl, '--models', 'simple_cached'], ['cache hits visible in statistics']);
  });

  it('register, status, inputs and outputs in regions (with offsets), errors, unregister — HTTP and gRPC', async (ctx) => {
    const r = await c.expectScript(ctx, 'shm.py', ['--grpc-url', c.grpcUrl], ['system shared memory over HTTP', 'system shared memory over gRPC']);
    expect((r.observed['status:http'] as { name: string; offset: number; byte_size: number }[]).map((x) => [x.name, x.offset, x.byte_size])).toEqual([
      ['input_data', 0, 128],
      ['output_data', 8, 128],
    ]);
  });
});

describe("KServe ModelMesh's Triton adapter sequence over gRPC", () => {
  let server: RunningServer | undefined;
  let python = '';
  let skip: string | undefined;
  beforeAll(async () => {
    const venv = await ensureCompatVenv();
    if (!venv.ok) {
      skip = venv.reason;
      return;
    }
    python = venv.python;
    // The launch line as ModelMesh gives it; only the ports are made ephemeral for the test.
    const opts = parseCli([`--model-store=${MODEL_REPOSITORY}`, ...MODELMESH_FLAGS, '--http-port=0', '--grpc-port=0', '--metrics-port=0']);
    expect(opts.notes.ignoredFlags).toEqual([]);
    server = await startServer({ ...opts, logLevel: 'silent', uploadDirectory: undefined });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('load, ready, metadata, infer, unload — twice', async (ctx) => {
    if (skip !== undefined) ctx.skip(`tritonclient unavailable: ${skip}`);
    const run = await runScript(python, 'modelmesh.py', ['--url', hostPort(server!.httpUrl), '--grpc-url', server!.grpcUrl!, '--models', 'simple']);
    expectAllPassed(run, ['server live and ready (strict readiness off)', 'load, ready, metadata, infer, unload', 'again: reload after unload']);
  });
});
