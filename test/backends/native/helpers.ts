/** Shared helpers for the native backend host tests (test/native). */
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { loadModelConfig, parseModelConfigPbtxt, normalizeModelConfig } from '../../../host/src/config/index.js';
import type { ModelConfig } from '../../../host/src/contract/model-config.js';
import { backendResolveRequest, modelLoadContext } from '../../../host/src/contract/load-context.js';
import { instanceSpecs } from '../../../host/src/lifecycle/repository-manager.js';
import type { TritonError } from '../../../host/src/contract/errors.js';
import type {
  Backend,
  BackendModel,
  BackendModelInstance,
  InferenceRequest,
  InferenceResponse,
  ResponseSender,
  Tensor,
} from '../../../host/src/contract/types.js';
import { NativeBackendResolver, installNativeLogger } from '../../../host/src/backends/native/index.js';
import { nativeAddon } from '../../../host/src/platform/addon.js';
import type { RunningServer, ServerOptions } from '../../../host/src/server.js';
import { serverPerSuite, startTestServer } from '../../helpers/servers.js';
import { PROJECT_ROOT, tempRepo, type TempRepo } from '../../helpers/repo.js';

export { request, tensor } from '../../helpers/backend-request.js';
export { PROJECT_ROOT };
export const BACKEND_DIR = join(PROJECT_ROOT, 'build', 'backends');
export const TEST_BACKEND_DIR = join(PROJECT_ROOT, 'native', 'build', 'test-backends');
export const NATIVE_BUILD = join(PROJECT_ROOT, 'native', 'build');
export const LIBTRITONSERVER = join(NATIVE_BUILD, 'Release', 'libtritonserver.so');
export const MODEL_REPOSITORY = join(PROJECT_ROOT, 'model_repository');

/** Fail loudly (not skip) when the native build is missing: npm install builds it. */
export function requireNativeBuild(): void {
  for (const p of [LIBTRITONSERVER, join(NATIVE_BUILD, 'Release', 'warden_native.node'), join(BACKEND_DIR, 'warden_identity')]) {
    if (!existsSync(p)) throw new Error(`${p} is missing: run 'node scripts/build-native.mjs' (npm install does)`);
  }
}

export const silent: Logger = pino({ level: 'silent' });

/** Start a server over one repository with every model loaded (explicit mode, ephemeral ports, BACKEND_DIR). */
export function startNativeServer(repoPath: string, extra: Partial<ServerOptions> = {}): Promise<RunningServer> {
  return startTestServer(repoPath, nativeServerOptions(extra));
}

/** {@link startNativeServer}'s options: `extra` over every model loaded, the metrics port, BACKEND_DIR, readiness not strict; always silent. */
function nativeServerOptions(extra: Partial<ServerOptions>): Partial<ServerOptions> {
  return { metricsPort: 0, loadModels: ['*'], backendDirectory: BACKEND_DIR, strictReadiness: false, ...extra, logLevel: 'silent' };
}

/** A file's native server: its repository, the running server and its HTTP URL (set in `beforeAll`). */
export interface NativeFileServer {
  readonly repo: TempRepo;
  readonly server: RunningServer;
  readonly url: string;
}

/**
 * One native server for the whole file: `beforeAll` checks the native build, makes a temporary
 * repository (holding `examples`), lets `fill` write models into it and starts
 * {@link startNativeServer} with `server` options; `afterAll` stops it and removes the repository
 * ({@link serverPerSuite}).
 * @param timeoutMs the `beforeAll` hook's limit (ms).
 */
export function nativeServerPerFile(
  fill: (repo: TempRepo) => void,
  { examples = [], server: serverOpts = {}, timeoutMs = 60_000 }: { examples?: string[]; server?: Partial<ServerOptions>; timeoutMs?: number } = {},
): NativeFileServer {
  const suite = serverPerSuite(async () => {
    requireNativeBuild();
    const repo = tempRepo(examples);
    fill(repo);
    return { repo, opts: nativeServerOptions(serverOpts) };
  }, timeoutMs);
  return {
    get repo() {
      return suite.repo;
    },
    get server() {
      return suite.server;
    },
    get url() {
      return suite.server.httpUrl;
    },
  };
}

/** Copy a model from model_repository into `repo`, with an empty version directory. */
export function copyRepoModel(repo: TempRepo, name: string): void {
  cpSync(join(MODEL_REPOSITORY, name), join(repo.path, name), { recursive: true });
  mkdirSync(join(repo.path, name, '1'), { recursive: true });
}

/** A warden_test_cpp_faults model (INT32 INPUT0 -> OUTPUT0) with its library in the model directory. */
export function faultsModel(repo: TempRepo, name: string, params: Record<string, string>, count = 1): void {
  const p = Object.entries(params).map(([k, v]) => `parameters { key: "${k}" value { string_value: "${v}" } }`);
  repo.write(
    `${name}/config.pbtxt`,
    `backend: "warden_test_cpp_faults"\nmax_batch_size: 0\ninput { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }\noutput { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }\ninstance_group { kind: KIND_CPU count: ${count} }\n${p.join('\n')}`,
  );
  mkdirSync(join(repo.path, name, '1'), { recursive: true });
  cpSync(join(TEST_BACKEND_DIR, 'warden_test_cpp_faults', 'libtriton_warden_test_cpp_faults.so'), join(repo.path, name, 'libtriton_warden_test_cpp_faults.so'));
}

/** Route the native host's log (TRITONSERVER_LogMessage) into `lines`, parsed, at pino `level`. */
export function captureNativeLog<T>(lines: T[], level: string): void {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      cb();
    },
  });
  installNativeLogger(nativeAddon(), pino({ level }, sink));
}

export function resolver(
  opts: { backendDirectory?: string; autoCompleteConfig?: boolean; backendConfig?: Record<string, Record<string, string>> } = {},
): NativeBackendResolver {
  return new NativeBackendResolver({
    backendDirectory: opts.backendDirectory ?? BACKEND_DIR,
    autoCompleteConfig: opts.autoCompleteConfig ?? true,
    backendConfig: opts.backendConfig,
    logger: silent,
  });
}

/** The normalised config of a model directory (as the repository manager would load it). */
export function repoConfig(modelPath: string, name: string): Promise<ModelConfig> {
  return loadModelConfig(modelPath, { modelName: name, autoComplete: true, versions: [1] });
}

/** Load `model_repository/<name>` (its config read and auto-completed) with `r`. */
export async function loadRepoModel(r: NativeBackendResolver, name: string): Promise<Loaded> {
  const modelPath = join(MODEL_REPOSITORY, name);
  return loadNative(r, await repoConfig(modelPath, name), modelPath);
}

/** A normalised config from pbtxt text. */
export function pbtxtConfig(name: string, text: string): ModelConfig {
  return normalizeModelConfig(parseModelConfigPbtxt(text), { modelName: name, gpuCount: 0 });
}

/** A loaded model with its instances, as the repository manager builds it. */
export interface Loaded {
  backend: Backend;
  model: BackendModel;
  config: ModelConfig;
  instances: BackendModelInstance[];
  unload(): Promise<void>;
}

export async function loadNative(
  r: NativeBackendResolver,
  config: ModelConfig,
  modelPath: string,
  opts: { autoCompleteConfig?: boolean } = {},
): Promise<Loaded> {
  const request = backendResolveRequest(config, modelPath, 1);
  const backend = await r.resolve(request);
  if (!backend) throw new Error('resolver declined the model');
  const model = await backend.loadModel(modelLoadContext(request, 1, { logger: silent, autoCompleteConfig: opts.autoCompleteConfig ?? true }));
  const effective = model.config ? normalizeModelConfig(model.config, { modelName: config.name, gpuCount: 0 }) : config;
  const instances: BackendModelInstance[] = [];
  try {
    for (const s of instanceSpecs(effective)) instances.push(await model.createInstance(s));
  } catch (e) {
    for (const i of instances) await i.finalize();
    await model.finalize();
    throw e;
  }
  return {
    backend,
    model,
    config: effective,
    instances,
    async unload() {
      for (const i of instances) await i.finalize();
      await model.finalize();
    },
  };
}

/** What a request received: every response in order, with arrival times (ms, monotonic). */
export interface Collected {
  sender: ResponseSender;
  responses: { response: InferenceResponse | null; error?: TritonError; final: boolean; atMs: number }[];
  /** Resolves at the final response (or error). */
  done: Promise<void>;
}

export function collector(): Collected {
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const c: Collected = {
    responses: [],
    done,
    sender: {
      send(response, final) {
        c.responses.push({ response, final, atMs: performance.now() });
        if (final) resolveDone();
      },
      sendError(error, final) {
        c.responses.push({ response: null, error, final, atMs: performance.now() });
        if (final) resolveDone();
      },
    },
  };
  return c;
}

/** Run one batch on an instance and wait for every final response. */
export async function run(
  instance: BackendModelInstance,
  requests: InferenceRequest[],
): Promise<{ collected: Collected[]; timings: unknown; error?: unknown }> {
  const collected = requests.map(() => collector());
  let timings: unknown;
  let error: unknown;
  try {
    timings = await instance.execute(
      requests,
      collected.map((c) => c.sender),
    );
  } catch (e) {
    error = e;
  }
  await Promise.all(collected.map((c) => c.done));
  return { collected, timings, error };
}

export const f32 = (...v: number[]) => new Float32Array(v);
export const asF32 = (t: Tensor) => Array.from(new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength)));

/** Threads of this process whose name (15 chars max, /proc/self/task/<tid>/comm) starts with `prefix`. */
export function threadsNamed(prefix: string): number {
  let n = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').startsWith(prefix)) n++;
    } catch {
      /* thread exited meanwhile */
    }
  }
  return n;
}

/**
 * The native models the native data path's conformance suites serve (test/frontend/{http,grpc}/
 * data-path.test.ts), written into the repository at `path`: the identity and add_sub samples, and
 * two warden_test_errors models whose Execute fails (`execute_fails`) or answers an error
 * (`error_response`).
 */
export function writeDataPathModels(path: string): void {
  for (const m of ['identity_native', 'add_sub_native']) {
    mkdirSync(join(path, m, '1'), { recursive: true });
    copyFileSync(join(MODEL_REPOSITORY, m, 'config.pbtxt'), join(path, m, 'config.pbtxt'));
  }
  const io = 'input { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }\noutput { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }';
  for (const [name, mode] of [
    ['execute_fails', 'execute'],
    ['error_response', 'error_response'],
  ] as const) {
    mkdirSync(join(path, name, '1'), { recursive: true });
    copyFileSync(join(TEST_BACKEND_DIR, 'warden_test_errors', 'libtriton_warden_test_errors.so'), join(path, name, 'libtriton_warden_test_errors.so'));
    writeFileSync(
      join(path, name, 'config.pbtxt'),
      `backend: "warden_test_errors"\nmax_batch_size: 0\n${io}\nparameters { key: "mode" value: { string_value: "${mode}" } }\n`,
    );
  }
}
