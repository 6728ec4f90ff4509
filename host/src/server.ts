/**
 * Warden's server object: the repository manager, the backends, the HTTP and gRPC frontends and the
 * metrics endpoint, started and stopped together. `startServer` is what the CLI and the tests use.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import { OnnxRuntimeResolver } from './backends/onnxruntime/index.js';
import type { BackendResolver, ModelKey } from './contract/types.js';
import { ALL_UPLOAD_BACKENDS, DEFAULT_SERVER_CAPS, ServerAdmission, WASM_UPLOADS, type ServerCaps } from './lifecycle/admission.js';
import { sandboxMemoryOf, TenantAdmission } from './tenancy/admission.js';
import type { JwtOptions } from './tenancy/jwt.js';
import { TenantRegistry } from './tenancy/registry.js';
import { DEFAULT_TENANT_QUOTAS } from './tenancy/types.js';
import type { MemoryBudget } from './backends/wasm/memory-budget.js';
import type { CacheLimits } from './backends/wasm/v8/transpile.js';
import type { EngineName } from './backends/wasm/engines.js';
import { LogSettingsStore, type LogSettings } from './dataplane/log-settings.js';
import { TraceManager, type TraceOptions } from './trace/trace-manager.js';
import { PathScrubber } from './contract/public-errors.js';
import { ModelRepositoryManager, type ModelControlMode } from './lifecycle/repository-manager.js';
import type { ModelVersion } from './lifecycle/model-version.js';
import { MODEL_TABLE_KEY, modelTable } from './lifecycle/model-table.js';
import { ServerApi } from './dataplane/server-api.js';
import { DEFAULT_WASM_LIMITS, type WasmLimits } from './backends/wasm/limits.js';
import { type HttpFrontend, buildHttpFrontend } from './frontend/http/app.js';
import { DEFAULT_CONSOLE_PATH } from './frontend/console/path.js';
import { NativeDataPath } from './frontend/http/data-path/native-data-path.js';
import * as httpErrors from './frontend/http/http.errors.js';
import { FrontendThreads, MAX_HTTP_THREADS } from './frontend/http/threads/pool.js';
import { ConnectionBudget } from './frontend/http/connection-budget.js';
import { NativeListener } from './frontend/http/native-accept.js';
import { OFFLOAD_BYTES } from './frontend/http/codec/pool.js';
import type { NativeAddon } from './platform/addon.js';
import type { GrpcFrontend, GrpcKeepalive } from './frontend/grpc/server.js';
import type { RestrictedFeatures } from './frontend/restricted.js';
import { SystemSharedMemory } from './dataplane/shared-memory.js';
import { ResponseCache } from './cache/response-cache.js';
import type { ResponseCacheStore } from './cache/response-cache-store.js';
import { RedisResponseCache } from './cache/redis-cache.js';
import type { RedisCacheConfig } from './cache/redis-config.js';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from './frontend/http/limits.js';
import { DEFAULT_ENSEMBLE_LIMITS, type EnsembleLimits } from './ensemble/budget.js';
import { TenantExecutionArbiter } from './scheduler/tenant-arbiter.js';
import type { MetricsConfig } from './metrics/config.js';
import { ServerMetrics } from './metrics/prometheus.js';
import { buildMetricsApp, type MetricsAccess } from './metrics/server.js';

import { PROJECT_ROOT, WARDEN_VERSION } from './project.js';
import { DEFAULT_REPOSITORY_CACHE_BYTES, openRepositories } from './repository/open-repositories.js';
import { isObjectStoreUrl } from './repository/object-store/s3-location.js';
import { openSharedUploads } from './repository/open-repositories.js';
import type { SharedUploads } from './repository/object-store/shared-uploads.js';

export { PROJECT_ROOT };

/** Name of the default upload directory inside the first model repository. */
export const DEFAULT_UPLOAD_DIRECTORY = '.warden-uploads';

/** `--http-max-input-size` default: 64 MiB, as Triton. */
export const DEFAULT_MAX_INPUT_SIZE = 64 * 1024 * 1024;
/** `--max-upload-bytes` default: 64 MiB of decoded files per load request. */
export const DEFAULT_MAX_UPLOAD_BYTES = 64 * 1024 * 1024;

export interface ServerOptions {
  /** Local directories and object-store locations (`s3://...`), in order (spec §5.1). */
  modelRepositories: string[];
  /** Where models of object-store repositories are copied (default `<project>/.cache/repository`). */
  repositoryCacheDirectory?: string;
  /** Bytes of all copies together (default {@link DEFAULT_REPOSITORY_CACHE_BYTES}). */
  repositoryCacheBytes?: number;
  /**
   * `--upload-store=s3://...`: tenants' uploads kept in an object store that every replica shares
   * (repository/object-store/shared-uploads.ts); the local upload directory is their working copy.
   */
  uploadStore?: string;
  /** `--upload-store-poll-secs`: how often a replica follows the shared store (default 5). */
  uploadStorePollSecs?: number;
  /**
   * `--wasm-cache-key-file`: the fleet's key of the wasmtime compile cache's MACs (32 bytes); with
   * {@link uploadStore}, compiled components are shared by every replica through the store.
   */
  wasmCacheKey?: Buffer;
  /** 0 = ephemeral port. Default 8000. */
  httpPort?: number;
  httpAddress?: string;
  /** 0 = ephemeral; -1 = no metrics endpoint. Default 8002. */
  metricsPort?: number;
  modelControlMode?: ModelControlMode;
  /** `--load-model` names (explicit mode); `*` = all. */
  loadModels?: string[];
  /** `--repository-poll-secs` (poll mode). Default 15. */
  repositoryPollSecs?: number;
  strictReadiness?: boolean;
  autoCompleteConfig?: boolean;
  /** `--exit-on-error`: fail start-up if any model fails to load. Default false here (the CLI defaults true). */
  exitOnError?: boolean;
  /** `--http-max-input-size` in bytes. Default 64 MiB. */
  maxInputSize?: number;
  /** `--backend-directory` for native backends. */
  backendDirectory?: string;
  /**
   * `--native-execute-timeout-ms`: how long a native backend's TRITONBACKEND_ModelInstanceExecute
   * may run before its requests fail and the model becomes UNAVAILABLE (0 = no limit, the default;
   * a model's `warden.execute_timeout_ms` parameter overrides it).
   */
  nativeExecuteTimeoutMs?: number;
  /**
   * `--wake-affinity` (default true): native and wasmtime instance threads woken while the process
   * is otherwise idle start on the waking thread's CPU (native/src/core/wake.cc). Process-wide.
   */
  wakeAffinity?: boolean;
  /** `--backend-config=<backend>,<k>=<v>` settings, by backend ('' = global). */
  backendConfig?: Record<string, Record<string, string>>;
  /** `--model-config-name`. */
  modelConfigName?: string;
  /** Sandbox caps for wasm backends. */
  wasmLimits?: WasmLimits;
  /** Server-wide caps on models (instances per model). */
  caps?: ServerCaps;
  /** HTTP connection limits (header / request timeouts, connection cap). */
  httpLimits?: HttpLimits;
  /**
   * `--sandbox-execution-slots`: sandbox (wasm) executions running at once, all tenants together,
   * in multi-tenant mode (scheduler/tenant-arbiter.ts). Default: the machine's cores.
   */
  sandboxExecutionSlots?: number;
  /**
   * Server-wide caps of one ensemble request (`--ensemble-max-inferences`, `--ensemble-max-depth`,
   * `--ensemble-max-fanout`; ensemble/budget.ts); a tenant's quotas may lower them. Defaults
   * {@link DEFAULT_ENSEMBLE_LIMITS} in multi-tenant mode; none in single-user mode unless set.
   */
  ensembleLimits?: Partial<EnsembleLimits>;
  /** `--http-fast-path`: plain `/infer` requests are served ahead of Fastify (frontend/http/fast-path.ts). Default true. */
  httpFastPath?: boolean;
  /** `--console`: serve the web console on the HTTP port under `consolePath` (docs/console.md). Default off. */
  console?: boolean;
  /** `--console-path`: where the console is served (default `/console`; frontend/console/path.ts). */
  consolePath?: string;
  /**
   * `--tenants`: the tenants file (YAML or JSON; host/src/tenancy). Set = multi-tenant mode: every
   * request but the health probes needs `Authorization: Bearer <token>`.
   */
  tenantsFile?: string;
  /** JWT bearer tokens verified against a JWKS (multi-tenant mode), besides the file's tokens. */
  jwt?: JwtOptions;
  /**
   * `--upload-directory`: where the load API's file overrides are stored (tenants' uploads durably).
   * Default `<first model repository>/.warden-uploads` (the repository scan skips dot-names).
   */
  uploadDirectory?: string;
  /** `--max-upload-bytes`: decoded files of one load request (default 64 MiB). */
  maxUploadBytes?: number;
  /** Bounds of the transpiled-component cache (default 256 entries, 2 GiB). */
  wasmCacheLimits?: Partial<CacheLimits>;
  /** `--wasm-engine`: the sandbox engine of `backend: "wasm"` models (default `DEFAULT_ENGINE`); a model's `engine` parameter overrides it. */
  wasmEngine?: EngineName;
  /** `--wasm-idle-timeout-ms`: both engines' default idle policy (ms; 0 = never release; default `DEFAULT_IDLE_MS`). */
  wasmIdleMs?: number;
  /** Directory for caches (transpiled components). */
  cacheDir?: string;
  logLevel?: 'silent' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  /** Log verbosity (`--log-verbose`). */
  logVerbose?: number;
  /**
   * Extra backend resolvers, tried before the built-in ones (embedding Warden with an in-process
   * backend kind; the tests use it for scheduler and protocol tests).
   */
  backendResolvers?: BackendResolver[];
  /** Use this logger instead of creating one. */
  logger?: Logger;
  /** `--id`: the server's name in `GET /v2` (default `warden`). */
  serverId?: string;
  /** `--allow-http` (default true): false = no HTTP endpoint (gRPC and metrics still serve). */
  allowHttp?: boolean;
  /**
   * `--http-threads`: front-end threads that each listen on the HTTP port (SO_REUSEPORT) and hand
   * plain `/infer` requests to this thread over a shared-memory ring (frontend/http/threads/).
   * 0..64, default 0 (HTTP on the main thread only). Needs the native addon.
   */
  httpThreads?: number;
  /**
   * `--http-main-listener` (default true): with front-end threads, the main thread's Fastify also
   * accepts connections on the HTTP port (one more listener of the SO_REUSEPORT group). False:
   * only the threads accept; the main thread serves their rings and proxied requests alone.
   */
  httpMainListener?: boolean;
  /**
   * `--http-data-path`: `native` serves the HTTP port on native threads (frontend/http/data-path/):
   * `/infer` requests of models the data path runs (in-process Triton C-API backends, the
   * in-process ONNX Runtime engine, wasmtime sandboxes) are answered there without the JavaScript
   * thread; other `/infer` requests are handed to the TypeScript path in-process, everything else
   * forwarded to it. Single-tenant mode without front-end threads. Default: `native` where the
   * addon carries the data path and the mode allows it, else `js` (Node's listener, or the native
   * acceptor); `native` asked for without the addon is an error.
   */
  httpDataPath?: 'js' | 'native';
  /** `--http-data-path-threads`: the native data path's threads (default: the machine's cores). */
  httpDataPathThreads?: number;
  /** `--http-thread-count`: accepted; Node serves HTTP on one event loop, so it changes nothing. */
  httpThreadCount?: number;
  /** `--metrics-address` (default: the HTTP address). */
  metricsAddress?: string;
  /** `--metrics-interval-ms`: refresh of the interval (CPU) metrics. Default 2000. */
  metricsIntervalMs?: number;
  /** `--allow-cpu-metrics` (default true): nv_cpu_* metrics. */
  allowCpuMetrics?: boolean;
  /**
   * `--metrics-auth` (multi-tenant mode; default true): `GET /metrics` needs an administrator's
   * bearer token (metrics/server.ts). False: the port answers anyone, as in single-user mode.
   */
  metricsAuth?: boolean;
  /** `--metrics-tenant-labels` (multi-tenant mode; default false): per-model series carry a `tenant` label. */
  metricsTenantLabels?: boolean;
  /** `--metrics-config` (metrics/config.ts): latency counters (default on) and Triton's latency summaries (default off). */
  metricsConfig?: MetricsConfig;
  /**
   * `--exit-timeout-secs` (default 30, as Triton): how long stop() waits for in-flight requests
   * (and an unload for its version's requests) before failing them and finishing anyway.
   */
  exitTimeoutSecs?: number;
  /** `--model-load-thread-count`: concurrent model loads at start (default 4). */
  modelLoadThreadCount?: number;
  /** Start-up log settings (`--log-info`, `--log-warning`, `--log-error`, `--log-format`, `--log-file`). */
  logSettings?: Partial<Omit<LogSettings, 'log_verbose_level'>>;
  /** Start-up trace settings (`--trace-config`, `--trace-*`, spec §3.5). */
  trace?: TraceOptions;
  /** `--grpc-port` (0 = ephemeral). Undefined = no gRPC frontend (the CLI gives 8001 unless `--allow-grpc=false`). */
  grpcPort?: number;
  /** `--grpc-address` (default: the HTTP address). */
  grpcAddress?: string;
  /** tritonserver's gRPC keepalive / HTTP/2 flags. */
  grpcKeepalive?: GrpcKeepalive;
  /** `--allow-client-shm`: system shared memory over HTTP and gRPC (default false). */
  allowClientShm?: boolean;
  /** `--http-restricted-api`: HTTP API groups answered only with their header (frontend/restricted.ts; absent = all open). */
  httpRestrictedApis?: RestrictedFeatures;
  /** `--grpc-restricted-protocol`: gRPC groups answered only with their metadata (frontend/restricted.ts; absent = all open). */
  grpcRestrictedProtocols?: RestrictedFeatures;
  /** `--cache-config local,size=N`: the response cache's size in bytes (absent = no cache). */
  responseCacheBytes?: number;
  /**
   * `--cache-config redis,...`: the response cache in Redis, shared by every replica (cache/redis-cache.ts);
   * instead of the local one. Start-up fails when Redis cannot be reached.
   */
  redisCache?: RedisCacheConfig;
}

export interface RunningServer {
  httpUrl: string;
  /** `host:port` of the gRPC frontend (absent without one). */
  grpcUrl?: string;
  metricsUrl?: string;
  /** The data plane (what the frontends call; in-process callers use it too). */
  api: ServerApi;
  manager: ModelRepositoryManager;
  metrics: ServerMetrics;
  logger: Logger;
  /** Request tracing (trace extension). */
  trace: TraceManager;
  /** The native data path (`--http-data-path=native`), for tests and diagnostics. */
  dataPath?: NativeDataPath;
  /** The HTTP front-end threads (`--http-threads` > 0), for tests and diagnostics. */
  httpThreads?: FrontendThreads;
  /** Graceful stop: refuse new connections, finish in-flight requests, unload models. */
  stop(): Promise<void>;
}

const cacheDirOf = (opts: ServerOptions): string => opts.cacheDir ?? join(PROJECT_ROOT, '.cache', 'wasm');
const backendDirectoryOf = (opts: ServerOptions): string => opts.backendDirectory ?? join(PROJECT_ROOT, 'build', 'backends');

/** The backend resolvers in resolution order: wasm, onnxruntime, (python), native. */
/**
 * Serves `http` on `host:port` through the native acceptor (frontend/http/native-accept.ts): the
 * caps on open connections, all together and per client address, are applied by a native thread
 * before the event loop sees a connection. Undefined when the addon is not built (the caller
 * listens with Node's own listener).
 * @throws Error (UNAVAILABLE) when the port cannot be bound
 */
async function listenNatively(
  http: FastifyInstance,
  host: string,
  port: number,
  perAddress: number,
  logger: Logger,
): Promise<{ listener: NativeListener; port: number } | undefined> {
  const addon = await builtAddon(logger, "the HTTP port uses Node's listener");
  if (!addon) return undefined;
  const bound = addon.reusePortListen(host, port, 511, false);
  try {
    await http.ready();
    return {
      listener: new NativeListener(http.server, addon.Acceptor, bound.fd, http.server.maxConnections, perAddress, (fd) => addon.closeFd(fd)),
      port: bound.port,
    };
  } catch (e) {
    addon.closeFd(bound.fd);
    throw e;
  }
}

/** The native addon, or undefined (logged at debug with what that means, `without`) when it was not built. */
async function builtAddon(logger: Logger, without: string): Promise<NativeAddon | undefined> {
  try {
    const { nativeAddon } = await import('./platform/addon.js');
    return nativeAddon();
  } catch (e) {
    logger.debug({ err: e }, `native addon unavailable: ${without}`);
    return undefined;
  }
}

/**
 * Serves the HTTP port through the native data path (frontend/http/data-path/): a listening
 * socket handed to the addon's threads, and the internal listener they forward to.
 * @throws Error (UNAVAILABLE) without the addon or its data path, or when the port cannot be bound
 */
async function startDataPath(
  http: FastifyInstance,
  frontend: HttpFrontend,
  host: string,
  opts: ServerOptions,
  perAddress: number,
  maxInputSize: number,
  logger: Logger,
): Promise<{ dataPath: NativeDataPath; port: number }> {
  const { nativeAddon } = await import('./platform/addon.js');
  const addon = nativeAddon();
  if (!addon.dataPath) throw httpErrors.dataPathUnavailable();
  const bound = addon.reusePortListen(host, opts.httpPort ?? 8000, 511, false);
  await http.ready();
  const settings = frontend.serverSettings();
  const dataPath = await NativeDataPath.start(
    addon.dataPath,
    bound.fd,
    frontend.listener(),
    settings,
    {
      threads: opts.httpDataPathThreads ?? availableParallelism(),
      maxConnections: http.server.maxConnections,
      maxConnectionsPerAddress: perAddress,
      maxBodyBytes: maxInputSize,
      headerTimeoutMs: settings.headersTimeout,
      bodyTimeoutMs: settings.requestTimeout,
      maxJsonOutputBytes: (opts.httpLimits ?? DEFAULT_HTTP_LIMITS).maxJsonOutputBytes ?? DEFAULT_HTTP_LIMITS.maxJsonOutputBytes,
      // /infer requests without the restriction's header reach the TypeScript path, which refuses them
      inferRestriction: frontend.claimRestriction,
    },
    frontend.nativeErrorAnswer,
    logger.child({ component: 'data-path' }),
  );
  // plain /infer requests of models without a route: read natively, answered in this process as
  // the fast path answers them (not with an `inference` restriction, which the listener checks)
  // (a body over --http-max-input-size is left to the listener, which refuses it with its own text)
  // and the keep-alive connections they came on move to this thread after the answer (DESIGN "The
  // native data path"): what follows on them is served as the default path serves it
  if (frontend.claims && frontend.claimRestriction === undefined)
    dataPath.handOver(frontend.serveRing, Math.min(OFFLOAD_BYTES, maxInputSize + 1), { server: http.server, closeFd: (fd) => addon.closeFd(fd) });
  return { dataPath, port: bound.port };
}

/**
 * Hands the gRPC port to the native data path (frontend/grpc over the data path: `ModelInfer`
 * calls of its routes served natively, the rest forwarded to `grpc`'s unix socket).
 * @returns the bound port
 * @throws Error (UNAVAILABLE) when the port cannot be bound (the gRPC frontend is stopped)
 */
async function listenGrpcNatively(dataPath: NativeDataPath, grpc: GrpcFrontend, api: ServerApi, host: string, port: number): Promise<number> {
  const { nativeAddon } = await import('./platform/addon.js');
  const { nativeErrorStatus } = await import('./frontend/grpc/status.js');
  try {
    const bound = nativeAddon().reusePortListen(host, port, 511, false);
    dataPath.listenGrpc(bound.fd, grpc.socketPath!, (code, message) => nativeErrorStatus(code, message, (e) => api.publicError(e)));
    return bound.port;
  } catch (e) {
    await grpc.stop(0);
    throw e;
  }
}

async function createResolvers(
  opts: ServerOptions,
  logger: Logger,
  metrics: ServerMetrics,
  tenants: TenantRegistry | undefined,
  sharedUploads: SharedUploads | undefined,
): Promise<BackendResolver[]> {
  const resolvers: BackendResolver[] = [...(opts.backendResolvers ?? [])];
  const autoCompleteConfig = opts.autoCompleteConfig ?? true;
  if (opts.wakeAffinity !== undefined) {
    try {
      const { nativeAddon } = await import('./platform/addon.js');
      nativeAddon().setWakeAffinity(opts.wakeAffinity);
    } catch (e) {
      logger.warn({ err: e }, 'native addon unavailable: --wake-affinity has no effect');
    }
  }
  // Optional backend kinds are loaded lazily so a missing build artefact disables only that kind.
  try {
    const { WasmBackendResolver } = await import('./backends/wasm/index.js');
    // Each tenant's sandboxes share a budget of its max_memory_total_bytes, inside the server's.
    const tenantBudgets = new Map<string, MemoryBudget>();
    const wasm: InstanceType<typeof WasmBackendResolver> = new WasmBackendResolver({
      cacheDir: cacheDirOf(opts),
      limits: opts.wasmLimits ?? DEFAULT_WASM_LIMITS,
      cacheLimits: opts.wasmCacheLimits,
      engine: opts.wasmEngine,
      idleMs: opts.wasmIdleMs,
      // The fleet's compile cache: its key from --wasm-cache-key-file, its shared tier in the upload store's bucket.
      sharedCompileCache: opts.wasmCacheKey
        ? { key: opts.wasmCacheKey, remote: sharedUploads?.compileCache(logger.child({ component: 'compile-cache' })) }
        : undefined,
      memoryBudgetFor: tenants
        ? ({ key }) => {
            const t = key.namespace === '' ? undefined : tenants.get(key.namespace);
            if (!t) return undefined;
            let b = tenantBudgets.get(t.id);
            if (!b)
              tenantBudgets.set(
                t.id,
                (b = wasm.memoryBudget.child(`tenant '${t.id}''s sandbox memory quota (max_memory_total_bytes)`, t.quotas.max_memory_total_bytes)),
              );
            return b;
          }
        : undefined,
      logger: logger.child({ backend: 'wasm' }),
    });
    resolvers.push(wasm);
  } catch (e) {
    logger.warn({ err: e }, 'wasm backend unavailable');
  }
  resolvers.push(new OnnxRuntimeResolver());
  {
    const { PythonBackendResolver } = await import('./backends/python/index.js');
    const python = new PythonBackendResolver({
      backendDirectory: backendDirectoryOf(opts),
      cacheDir: opts.cacheDir ?? join(PROJECT_ROOT, '.cache'),
      logger: logger.child({ backend: 'python' }),
    });
    resolvers.push(python);
    metrics.addTextSource(() => python.metrics.text());
  }
  try {
    const { NativeBackendResolver } = await import('./backends/native/index.js');
    const native = new NativeBackendResolver({
      backendDirectory: backendDirectoryOf(opts),
      backendConfig: opts.backendConfig,
      autoCompleteConfig,
      logger: logger.child({ backend: 'native' }),
      executeTimeoutMs: opts.nativeExecuteTimeoutMs ?? 0,
    });
    resolvers.push(native);
    metrics.addTextSource(() => native.customMetricsText());
  } catch (e) {
    logger.warn({ err: e }, 'native backend host unavailable');
  }
  return resolvers;
}

/**
 * Start Warden.
 * @throws Error if a port cannot be bound, a repository cannot be read, or (exitOnError) a model
 *   fails to load.
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const logger = opts.logger ?? pino({ level: opts.logLevel ?? 'info', base: { service: 'warden' } });
  // DESIGN "Multi-tenancy": tenant ids reach the series only when the operator asks for them.
  const metrics = new ServerMetrics({ tenantLabel: opts.tenantsFile !== undefined && opts.metricsTenantLabels === true, config: opts.metricsConfig });
  const tenants = opts.tenantsFile ? await TenantRegistry.open(opts.tenantsFile, { logger: logger.child({ component: 'tenants' }), jwt: opts.jwt }) : undefined;
  const wasmLimits = opts.wasmLimits ?? DEFAULT_WASM_LIMITS;
  const serverAdmission = new ServerAdmission(opts.caps ?? DEFAULT_SERVER_CAPS, (origin) =>
    origin.tenant === '' || tenants?.get(origin.tenant)?.allow_onnx ? ALL_UPLOAD_BACKENDS : WASM_UPLOADS,
  );
  // eslint-disable-next-line prefer-const
  let manager: ModelRepositoryManager;
  const admission = tenants
    ? new TenantAdmission({
        server: serverAdmission,
        tenants,
        usage: (namespace, exclude) => manager.usageOf(namespace, exclude, (c) => sandboxMemoryOf(c, wasmLimits)),
        wasmCaps: wasmLimits,
      })
    : serverAdmission;
  const exitTimeoutMs = (opts.exitTimeoutSecs ?? 30) * 1000;
  // Uploads default to the first repository on local disk (an object store has no such directory).
  const localRepositories = opts.modelRepositories.filter((r) => !isObjectStoreUrl(r));
  const sharedUploads = opts.uploadStore !== undefined ? await openSharedUploads(opts.uploadStore, process.env) : undefined;
  const uploadDirectory =
    opts.uploadDirectory ??
    (localRepositories[0] !== undefined
      ? join(localRepositories[0], DEFAULT_UPLOAD_DIRECTORY)
      : sharedUploads
        ? join(PROJECT_ROOT, '.cache', 'uploads')
        : undefined);
  const repositoryCacheDirectory = opts.repositoryCacheDirectory ?? join(PROJECT_ROOT, '.cache', 'repository');
  const repositories = await openRepositories(
    opts.modelRepositories,
    { directory: repositoryCacheDirectory, maxBytes: opts.repositoryCacheBytes ?? DEFAULT_REPOSITORY_CACHE_BYTES },
    logger.child({ component: 'repository' }),
  );
  const trace = new TraceManager(opts.trace ?? {}, logger.child({ component: 'trace' }));
  // Each tenant caches within its own share (its `max_cache_bytes` quota, read live so a reload
  // applies); a tenant no longer in the file caches nothing (DESIGN "Multi-tenancy").
  const shareOf = tenants ? (t: string) => tenants.get(t)?.quotas.max_cache_bytes ?? 0 : undefined;
  const redisCache = opts.redisCache
    ? await RedisResponseCache.connect(opts.redisCache, {
        shareOf,
        logger: logger.child({ component: 'response-cache' }),
        onError: (operation) => metrics.recordResponseCacheError(operation),
      })
    : undefined;
  const responseCache: ResponseCacheStore | undefined =
    redisCache ?? (opts.responseCacheBytes !== undefined && opts.responseCacheBytes > 0 ? new ResponseCache(opts.responseCacheBytes, { shareOf }) : undefined);
  manager = new ModelRepositoryManager({
    loadThreadCount: opts.modelLoadThreadCount,
    drainTimeoutMs: exitTimeoutMs,
    tracer: trace,
    responseCache,
    // Tenants' namespaces (id → creation identity): uploads of a tenant no longer listed are moved
    // aside at start-up and on reload (DESIGN "Multi-tenancy").
    tenants: tenants
      ? () =>
          new Map(
            tenants
              .list()
              .filter((t) => t.role === 'tenant')
              .map((t) => [t.id, t.uid]),
          )
      : undefined,
    repositories,
    controlMode: opts.modelControlMode ?? 'none',
    resolvers: await createResolvers(opts, logger, metrics, tenants, sharedUploads),
    autoCompleteConfig: opts.autoCompleteConfig ?? true,
    configName: opts.modelConfigName,
    uploadDirectory,
    sharedUploads,
    maxUploadBytes: opts.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES,
    logger,
    metrics,
    admission,
    // Tenants sharing a model are served by deficit round robin with the file's weights (read
    // live, so a reload applies).
    fairness: tenants ? { weightOf: (t) => tenants.get(t)?.weight ?? 1 } : undefined,
    // CPU across models: each tenant's concurrent sandbox executions are capped, and freed slots go
    // to the tenant with the least recent execute time (scheduler/tenant-arbiter.ts).
    arbiter: tenants
      ? new TenantExecutionArbiter({
          slots: opts.sandboxExecutionSlots ?? availableParallelism(),
          maxConcurrentOf: (t) => tenants.get(t)?.quotas.max_concurrent_executions ?? DEFAULT_TENANT_QUOTAS.max_concurrent_executions,
          weightOf: (t) => tenants.get(t)?.weight ?? 1,
        })
      : undefined,
  });
  let accepting = true;
  const api = new ServerApi(manager, {
    strictReadiness: opts.strictReadiness ?? true,
    accepting: () => accepting,
    logSettings: new LogSettingsStore(logger, opts.logVerbose ?? 0, opts.logSettings),
    serverId: opts.serverId,
    clientShm: opts.allowClientShm === true,
    trace,
    scrubber: new PathScrubber([
      ...localRepositories.map((path) => ({ path, label: '' })),
      { path: repositoryCacheDirectory, label: '<repository-cache>' },
      ...(uploadDirectory !== undefined ? [{ path: uploadDirectory, label: '<uploads>' }] : []),
      { path: cacheDirOf(opts), label: '<cache>' },
      { path: backendDirectoryOf(opts), label: '<backend-directory>' },
      { path: PROJECT_ROOT, label: '<warden>' },
    ]),
    tenants,
    logger: logger.child({ component: 'audit' }),
    maxUploadBytes: opts.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES,
    // Ensemble caps: always in multi-tenant mode; in single-user mode only when asked for.
    ensembleLimits: tenants || opts.ensembleLimits ? { ...DEFAULT_ENSEMBLE_LIMITS, ...opts.ensembleLimits } : undefined,
  });
  manager.attachServer(api);
  const maxInputSize = opts.maxInputSize ?? DEFAULT_MAX_INPUT_SIZE;
  const shm = new SystemSharedMemory({ enabled: opts.allowClientShm === true, multiTenant: tenants !== undefined, maxReadBytes: maxInputSize });
  // A tenant removed from the tenants file (or listed again under a new uid) loses its regions,
  // cache entries, models and uploads: a tenant created later with the same id starts empty.
  tenants?.onReload(() => {
    void manager.reconcileTenants((id) => {
      if (shm.enabled) shm.unregister({ namespace: id, role: 'tenant' }, '');
      responseCache?.dropTenant(id);
    });
  });
  const frontend = await buildHttpFrontend({
    api,
    tenants,
    maxInputSize,
    shm,
    limits: opts.httpLimits ?? DEFAULT_HTTP_LIMITS,
    logger,
    fastPath: opts.httpFastPath,
    restricted: opts.httpRestrictedApis,
    console: opts.console ? { path: opts.consolePath ?? DEFAULT_CONSOLE_PATH } : undefined,
    onTokenUsage: (principal, model, prompt, completion) => metrics.recordTokenUsage(principal.namespace, model, prompt, completion),
  });
  const http = frontend.app;
  const threadCount = opts.httpThreads ?? 0;
  if (!Number.isInteger(threadCount) || threadCount < 0 || threadCount > MAX_HTTP_THREADS)
    throw new RangeError(`httpThreads must be an integer 0..${MAX_HTTP_THREADS}, got ${threadCount}`);
  // In multi-tenant mode the scrape is the operator's: an administrator's token (unless --metrics-auth=false).
  const metricsAccess: MetricsAccess | undefined =
    tenants && opts.metricsAuth !== false
      ? {
          authenticate: async (h) => {
            const r = await tenants.authenticate(h);
            return r.ok ? r.principal : undefined;
          },
        }
      : undefined;
  const metricsApp = (opts.metricsPort ?? 8002) >= 0 ? buildMetricsApp(metrics, logger, metricsAccess) : undefined;

  const failures = await manager.startup(opts.loadModels ?? []);
  for (const f of failures) logger.error({ model: f.name, reason: f.error.message }, 'model failed to load');
  // tritonserver's start-up table of models and states, before an exit on a failed load as there.
  // (the lifecycle's states, without asking instances: a start-up that waits on no model's health check)
  const table = modelTable(await manager.index(false, '', false));
  logger.info({ [MODEL_TABLE_KEY]: table.rows }, `models\n${table.text}`);
  if (opts.exitOnError && failures.length > 0) {
    await manager.shutdown();
    throw new Error(`failed to load ${failures.map((f) => `'${f.name}'`).join(', ')}: ${failures[0]!.error.message}`);
  }
  if ((opts.modelControlMode ?? 'none') === 'poll') manager.startPolling(opts.repositoryPollSecs ?? 15);
  manager.startUploadSync(opts.uploadStorePollSecs ?? 5);

  const host = opts.httpAddress ?? '0.0.0.0';
  const allowHttp = opts.allowHttp ?? true;
  let httpPort = -1;
  let threads: FrontendThreads | undefined;
  let nativeListener: NativeListener | undefined;
  let dataPath: NativeDataPath | undefined;
  const perAddressConnections = (opts.httpLimits ?? DEFAULT_HTTP_LIMITS).maxConnectionsPerAddress ?? DEFAULT_HTTP_LIMITS.maxConnectionsPerAddress;
  if (allowHttp && threadCount > 0) {
    // Every listener of the port (this thread's and each front-end thread's) is an SO_REUSEPORT
    // socket of one group; the kernel spreads new connections over them.
    const { nativeAddon } = await import('./platform/addon.js');
    let addon: ReturnType<typeof nativeAddon> | undefined;
    let first: { fd: number; port: number } | undefined;
    let fdTaken = false; // the main server owns it (closes it), or it was closed
    try {
      const a = nativeAddon(); // UNAVAILABLE when the addon was not built
      addon = a;
      first = a.reusePortListen(host, opts.httpPort ?? 8000, 511);
      // --http-max-connections holds for all listeners together (slot 0: this thread's)
      const connections = new ConnectionBudget(ConnectionBudget.memory(threadCount, perAddressConnections), http.server.maxConnections);
      connections.attach(http.server, ConnectionBudget.MAIN_SLOT);
      // Fastify passes its listen options to net.Server#listen, which takes a listening `fd`
      // (its typings do not declare it); `host` only keeps Fastify from binding 'localhost' twice.
      if (opts.httpMainListener === false) await http.ready();
      else {
        await http.listen({ fd: first.fd, host: '0.0.0.0' } as unknown as { host: string });
        fdTaken = true;
      }
      httpPort = first.port;
      threads = await FrontendThreads.start({
        count: threadCount,
        host,
        port: httpPort,
        listen: (h, p) => a.reusePortListen(h, p, 511).fd,
        closeFd: (fd) => a.closeFd(fd),
        serve: frontend.serveRing,
        listener: frontend.listener(),
        maxInputSize,
        claim: frontend.claims,
        claimRestriction: frontend.claimRestriction,
        server: frontend.serverSettings(),
        connections,
        logger: logger.child({ component: 'http-threads' }),
      });
      // Without the main listener, the first socket only held the port until the threads bound it.
      if (!fdTaken) {
        fdTaken = true;
        a.closeFd(first.fd);
      }
    } catch (e) {
      // Nothing half-started is left behind: the socket, the app, the loaded models.
      if (first && !fdTaken) addon?.closeFd(first.fd);
      await http.close().catch(() => undefined);
      await manager.shutdown();
      throw e;
    }
  } else if (
    allowHttp &&
    !tenants &&
    (opts.httpDataPath === 'native' ||
      (opts.httpDataPath === undefined && (await builtAddon(logger, 'the HTTP port is served by JavaScript'))?.dataPath !== undefined))
  ) {
    const started = await startDataPath(http, frontend, host, opts, perAddressConnections, maxInputSize, logger).catch(async (e: unknown) => {
      await http.close().catch(() => undefined);
      await manager.shutdown();
      throw e;
    });
    dataPath = started.dataPath;
    httpPort = started.port;
    dataPath.attach((l) => manager.onServing(l), metrics);
    const serving = new Map<string, { key: ModelKey; versions: ModelVersion[] }>();
    for (const { key, version } of manager.serving()) {
      const id = `${key.namespace}/${key.name}`;
      const e = serving.get(id) ?? { key, versions: [] };
      e.versions.push(version);
      serving.set(id, e);
    }
    for (const { key, versions } of serving.values()) dataPath.servingChanged(key, versions);
    // Traces and Triton's latency summaries need each request on the TypeScript path (the data
    // path hands over sums and the latest durations only).
    const summaries = opts.metricsConfig?.summaryLatencies === true;
    dataPath.setPaused(trace.active || summaries);
    trace.onActiveChange((on) => dataPath?.setPaused(on || summaries));
  } else if (allowHttp) {
    const listener = await listenNatively(http, host, opts.httpPort ?? 8000, perAddressConnections, logger);
    if (listener) {
      nativeListener = listener.listener;
      httpPort = listener.port;
    } else {
      // Without the addon: Node's listener, the per-address cap checked as each socket is made
      // (Node's maxConnections caps the total).
      if (perAddressConnections > 0)
        new ConnectionBudget(ConnectionBudget.memory(0, perAddressConnections), http.server.maxConnections).attach(http.server, ConnectionBudget.MAIN_SLOT);
      await http.listen({ port: opts.httpPort ?? 8000, host });
      httpPort = (http.server.address() as { port: number }).port;
    }
  } else {
    logger.warn('--allow-http=false: no HTTP endpoint');
  }
  let grpc: GrpcFrontend | undefined;
  if (opts.grpcPort !== undefined && opts.grpcPort >= 0) {
    const grpcProtoset = join(PROJECT_ROOT, 'third_party', 'triton-grpc-protos', 'grpc_service.protoset');
    // Loaded only when served: grpc-js and protobufjs add to every start-up otherwise.
    const { startGrpcFrontend } = await import('./frontend/grpc/server.js');
    // With the native data path, it serves the gRPC port too and forwards what it does not serve
    // to grpc-js on a private unix socket; not when a --grpc-restricted-protocol applies (those
    // checks are grpc-js's).
    const nativeGrpc = dataPath !== undefined && Object.keys(opts.grpcRestrictedProtocols ?? {}).length === 0;
    grpc = await startGrpcFrontend(
      {
        api,
        tenants,
        shm,
        protosetPath: grpcProtoset,
        maxReceiveBytes: maxInputSize,
        keepalive: opts.grpcKeepalive,
        logger,
        restricted: opts.grpcRestrictedProtocols,
        internalSocket: nativeGrpc,
      },
      opts.grpcAddress ?? host,
      opts.grpcPort,
    );
    if (dataPath && grpc.socketPath !== undefined) {
      grpc.port = await listenGrpcNatively(dataPath, grpc, api, opts.grpcAddress ?? host, opts.grpcPort);
    }
  }
  let metricsUrl: string | undefined;
  let stopCpuMetrics: (() => void) | undefined;
  if (metricsApp) {
    const metricsHost = opts.metricsAddress ?? host;
    await metricsApp.listen({ port: opts.metricsPort ?? 8002, host: metricsHost });
    metricsUrl = `http://${metricsHost === '0.0.0.0' ? '127.0.0.1' : metricsHost}:${(metricsApp.server.address() as { port: number }).port}`;
    if (opts.allowCpuMetrics ?? true) stopCpuMetrics = metrics.startCpuMetrics(opts.metricsIntervalMs ?? 2000);
  }
  const display = host === '0.0.0.0' ? '127.0.0.1' : host;
  const grpcHost = (opts.grpcAddress ?? host) === '0.0.0.0' ? '127.0.0.1' : (opts.grpcAddress ?? host);
  const grpcUrl = grpc ? `${grpcHost}:${grpc.port}` : undefined;
  logger.info({ version: WARDEN_VERSION, http: allowHttp ? `${display}:${httpPort}` : undefined, grpc: grpcUrl, metrics: metricsUrl }, 'Warden started');

  let stopping: Promise<void> | undefined;
  return {
    httpUrl: allowHttp ? `http://${display}:${httpPort}` : '',
    httpThreads: threads,
    dataPath,
    grpcUrl,
    metricsUrl,
    api,
    manager,
    metrics,
    logger,
    trace,
    stop() {
      stopping ??= (async () => {
        accepting = false;
        const deadline = Date.now() + exitTimeoutMs;
        // close() stops accepting and waits for in-flight requests to be answered; keep-alive
        // connections that go idle after their last answer are closed as they do, rather than
        // after the keep-alive timeout.
        const sweeper = setInterval(() => http.server.closeIdleConnections(), 50);
        try {
          // Front-end threads stop accepting and answer what they hold (this thread still serves
          // their rings and their proxied requests) while Fastify closes its own listener.
          const closed = Promise.all([
            threads?.drain(),
            allowHttp ? http.close() : undefined,
            nativeListener?.close(),
            dataPath?.drain(),
            grpc?.stop(exitTimeoutMs),
          ]);
          // At most --exit-timeout-secs for in-flight requests: then the models are unloaded with
          // what is left of it, requests still unanswered get an error, and the connections close.
          let timer: NodeJS.Timeout | undefined;
          const inTime = await Promise.race([closed.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), exitTimeoutMs)))]);
          clearTimeout(timer);
          if (!inTime) logger.warn({ exitTimeoutSecs: exitTimeoutMs / 1000 }, 'in-flight requests did not finish within the exit timeout');
          await manager.shutdown(Math.max(0, deadline - Date.now()));
          if (!inTime) {
            // Answers to failed requests are on their way; then no connection may hold the exit.
            await Promise.race([closed, new Promise((r) => setTimeout(r, 1000).unref())]);
            http.server.closeAllConnections();
            await closed;
          }
        } finally {
          clearInterval(sweeper);
          await threads?.close();
          await dataPath?.close();
        }
        stopCpuMetrics?.();
        shm.close();
        await redisCache?.close();
        await metricsApp?.close();
        tenants?.close();
        await new Promise((r) => setImmediate(r)); // traces completing now reach the manager first
        await trace.shutdown();
        logger.info('Warden stopped');
      })();
      return stopping;
    },
  };
}
