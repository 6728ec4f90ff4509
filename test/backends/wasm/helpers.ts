/**
 * Test helpers for the sandboxed backend: the engines to run the sandbox suites on, normalised
 * configs, requests, recording senders, loading a component through WasmBackendResolver.
 */
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { RunningServer, ServerOptions } from '../../../host/src/server.js';
import type { ModelConfig, ModelInput, ModelOutput } from '../../../host/src/contract/model-config.js';
import { backendResolveRequest, modelLoadContext } from '../../../host/src/contract/load-context.js';
import type { TritonError } from '../../../host/src/contract/errors.js';
import type { InferenceRequest, InferenceResponse, ResponseSender, Tensor } from '../../../host/src/contract/types.js';
import type { DataType } from '../../../host/src/contract/datatypes.js';
import { toConfigDataType } from '../../../host/src/contract/datatypes.js';
import { ENGINE_NAMES, WasmBackendResolver, type EngineName, type WasmLimits } from '../../../host/src/backends/wasm/index.js';
import type { WasmModel } from '../../../host/src/backends/wasm/backend.js';
import type { SandboxedInstance } from '../../../host/src/backends/wasm/engine.js';

/**
 * The sandbox engines the engine-parametrised suites run on (`describe.each(ENGINES)`): every
 * engine this build has. A new engine joins the suites by joining ENGINE_NAMES.
 */
export const ENGINES: readonly EngineName[] = ENGINE_NAMES;

export { request, tensor } from '../../helpers/backend-request.js';
export const ROOT = join(import.meta.dirname, '..', '..', '..');
export const REPO = join(ROOT, 'model_repository');
export const FIXTURES = join(ROOT, 'test', 'fixtures', 'wasm');

export type IO = [name: string, dt: DataType, dims: number[]];

/**
 * Builds the sample components (and hostile fixtures) with scripts/build-wasm.mjs if any is
 * missing — `npm install` normally has; this covers a checkout where only the tests are run.
 */
export async function ensureBuilt(): Promise<void> {
  const { existsSync } = await import('node:fs');
  const samples = ['identity_wasm', 'add_sub_wasm', 'repeat_wasm', 'preprocess_wasm'].map((m) => join(REPO, m, '1', 'model.wasm'));
  const fixtures = [
    'identity',
    'loop_execute',
    'send_after',
    'js_with_stdio',
    'import_error_constructor',
    'import_host_to_string',
    'instantiate_twice',
    'echo_meta',
    'sequence_params',
    'log_lines',
    'toy_llm',
  ].map((f) => join(FIXTURES, 'build', `${f}.wasm`));
  if ([...samples, ...fixtures].every((f) => existsSync(f))) return;
  const build = await import('../../../scripts/build-wasm.mjs');
  await build.buildAll();
}

/** A normalised ModelConfig (the fields Triton's /config prints) for a wasm model. */
export function wasmConfig(name: string, inputs: IO[], outputs: IO[], extra: Partial<ModelConfig> & { params?: Record<string, string> } = {}): ModelConfig {
  const { params, ...rest } = extra;
  const input: ModelInput[] = inputs.map(([n, dt, dims]) => ({
    name: n,
    data_type: toConfigDataType(dt) as ModelInput['data_type'],
    format: 'FORMAT_NONE',
    dims,
    is_shape_tensor: false,
    allow_ragged_batch: false,
    optional: false,
    is_non_linear_format_io: false,
  }));
  const output: ModelOutput[] = outputs.map(([n, dt, dims]) => ({
    name: n,
    data_type: toConfigDataType(dt) as ModelOutput['data_type'],
    dims,
    label_filename: '',
    is_shape_tensor: false,
    is_non_linear_format_io: false,
  }));
  return {
    name,
    platform: '',
    backend: 'wasm',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: 0,
    input,
    output,
    batch_input: [],
    batch_output: [],
    optimization: {} as ModelConfig['optimization'],
    instance_group: [{ name, kind: 'KIND_CPU', count: 1, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '' }],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: Object.fromEntries(Object.entries(params ?? {}).map(([k, v]) => [k, { string_value: v }])),
    model_warmup: [],
    ...rest,
  };
}

export function f32(t: Tensor): Float32Array {
  return new Float32Array(t.data.slice().buffer);
}

/** What a ResponseSender received. */
export interface Recorded {
  responses: (InferenceResponse | null)[];
  errors: TritonError[];
  finals: number;
  times: number[];
  done: Promise<void>;
}

export function recorder(): { sender: ResponseSender; rec: Recorded } {
  let resolve!: () => void;
  const rec: Recorded = { responses: [], errors: [], finals: 0, times: [], done: new Promise<void>((r) => (resolve = r)) };
  const sender: ResponseSender = {
    send(response, final) {
      rec.responses.push(response);
      rec.times.push(performance.now());
      if (final) {
        rec.finals++;
        resolve();
      }
    },
    sendError(error, final) {
      rec.errors.push(error);
      if (final) {
        rec.finals++;
        resolve();
      }
    },
  };
  return { sender, rec };
}

export const silentLogger = pino({ level: 'silent' });

/**
 * The wasmtime engine's compile cache folder shared by the suites of one machine: compiling the
 * componentize-js samples with Cranelift takes seconds each, so suites reuse each other's `.cwasm`
 * (checked on every read; test/backends/wasm/wasmtime-engine.test.ts tests the cache itself on fresh folders).
 */
export const SHARED_WASMTIME_CACHE = join(tmpdir(), 'warden-test-wasmtime-cache');

/** A resolver on `engine` with a fresh cache folder (wasmtime: the shared one) and test caps (overridable by `limits`). */
export function newResolver(engine: EngineName, limits: Partial<WasmLimits> = {}, logger = silentLogger): WasmBackendResolver {
  return new WasmBackendResolver({
    cacheDir: engine === 'wasmtime' ? SHARED_WASMTIME_CACHE : mkdtempSync(join(tmpdir(), 'warden-wasm-cache-')),
    limits: { maxMemoryBytes: 256 * 1024 * 1024, maxExecuteMs: 5_000, maxLogBytes: 16 * 1024, ...limits },
    logger,
    engine,
  });
}

/** Loads a model version from `modelPath/1` through the resolver. */
export async function loadModel(resolver: WasmBackendResolver, config: ModelConfig, modelPath: string, logger = silentLogger): Promise<WasmModel> {
  const request = backendResolveRequest(config, modelPath, 1);
  const backend = await resolver.resolve(request);
  if (!backend) throw new Error('not a wasm model');
  return (await backend.loadModel(modelLoadContext(request, 1, { logger }))) as WasmModel;
}

export function instanceSpec(name: string, k = 0) {
  return { name: `${name}_${k}`, groupName: name, kind: 'KIND_CPU' as const, deviceId: 0, hostPolicy: '', passive: false };
}

/** Runs one request on an instance; resolves when its final response arrived. */
export async function infer(inst: SandboxedInstance, req: InferenceRequest): Promise<Recorded> {
  const { sender, rec } = recorder();
  await inst.execute([req], [sender]);
  await rec.done;
  return rec;
}

/** A scratch folder and the resolvers a file (or describe block) loads models with. */
export interface WasmWorkspace {
  /** The folder (set in `beforeAll`). */
  readonly dir: string;
  /** Finalize `r` in `afterAll`; returns it. */
  keep<R extends { finalizeAll(): Promise<void> }>(r: R): R;
}

/**
 * {@link WasmWorkspace} of the enclosing file or describe block: `beforeAll` builds the fixtures
 * ({@link ensureBuilt}) and makes a temporary folder named `<prefix>…`; `afterAll` finalizes every
 * resolver kept, one after another, then removes the folder.
 */
export function wasmWorkspace(prefix: string): WasmWorkspace {
  let dir: string | undefined;
  const kept: { finalizeAll(): Promise<void> }[] = [];
  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    for (const r of kept) await r.finalizeAll();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get dir() {
      if (dir === undefined) throw new Error('the workspace is made in beforeAll');
      return dir;
    },
    keep(r) {
      kept.push(r);
      return r;
    },
  };
}

/** The server of {@link wasmServer} (set in `beforeAll`). */
export interface WasmServer {
  readonly httpUrl: string;
}

/**
 * Warden over HTTP for the enclosing describe block: `beforeAll` builds the fixtures, makes a
 * temporary repository (`<prefix>…`) and a server cache folder, lets `fill` write models into
 * the repository and return the server's options (a sandbox engine's resolver in
 * `backendResolvers`, the model control mode …), and starts the server with the test defaults and
 * a metrics port; `afterAll` stops it and removes both folders. The server module is imported
 * only then, so that files without a server do not load it.
 */
export function wasmServer(prefix: string, fill: (repo: string) => Partial<ServerOptions>): WasmServer {
  let server: RunningServer | undefined;
  const dirs: string[] = [];
  beforeAll(async () => {
    await ensureBuilt();
    const repo = mkdtempSync(join(tmpdir(), prefix));
    const cacheDir = mkdtempSync(join(tmpdir(), `${prefix}cache-`));
    dirs.push(repo, cacheDir);
    const opts = fill(repo);
    const { startTestServer } = await import('../../helpers/servers.js');
    server = await startTestServer(repo, { metricsPort: 0, cacheDir, ...opts });
  });
  afterAll(async () => {
    await server?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    get httpUrl() {
      if (!server) throw new Error('the server starts in beforeAll');
      return server.httpUrl;
    },
  };
}

/**
 * The wasmtime models of the native data path's conformance suites (HTTP and gRPC): the
 * hostile.c fixture each runs, its config's extra lines and max_batch_size.
 */
export const DATA_PATH_GUESTS: Record<string, { fixture: string; extra?: string; batch?: number }> = {
  identity_c: { fixture: 'identity' },
  identity_c_batched: { fixture: 'identity', batch: 8 },
  trap_c: { fixture: 'trap_execute' },
  loop_c: { fixture: 'loop_execute', extra: 'parameters { key: "execute_timeout_ms" value { string_value: "40" } }' },
  wrong_dtype_c: { fixture: 'wrong_dtype' },
  wrong_name_c: { fixture: 'wrong_name' },
  send_after_c: { fixture: 'send_after' },
  echo_meta_c: { fixture: 'echo_meta' },
  wait_cancel_c: { fixture: 'wait_cancel', extra: 'parameters { key: "execute_timeout_ms" value { string_value: "20000" } }' },
};

/** Writes {@link DATA_PATH_GUESTS} and the add_sub_wasm sample into `repo` (FP32 [-1] in and out). */
export function writeDataPathWasmModels(repo: string): void {
  for (const [name, g] of Object.entries(DATA_PATH_GUESTS)) {
    mkdirSync(join(repo, name, '1'), { recursive: true });
    copyFileSync(join(FIXTURES, 'build', `${g.fixture}.wasm`), join(repo, name, '1', 'model.wasm'));
    writeFileSync(
      join(repo, name, 'config.pbtxt'),
      `name: "${name}"\nbackend: "wasm"\nmax_batch_size: ${g.batch ?? 0}\n` +
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n' +
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n' +
        `instance_group [ { kind: KIND_CPU count: 1 } ]\n${g.extra ?? ''}\n`,
    );
  }
  cpSync(join(REPO, 'add_sub_wasm'), join(repo, 'add_sub_wasm'), { recursive: true });
}
