/**
 * tritonserver's command-line flags (spec §5.8) → ServerOptions. Boolean flags take
 * `--flag=true|false` (or bare `--flag` = true) as tritonserver does.
 */
import { DEFAULT_ENSEMBLE_LIMITS } from './ensemble/budget.js';
import { MAX_HTTP_THREADS } from './frontend/http/threads/limits.js';
import { parseArgs } from 'node:util';
import { checkEngineName, DEFAULT_ENGINE, ENGINE_NAMES } from './backends/wasm/engines.js';
import { DEFAULT_IDLE_MS, DEFAULT_WASM_LIMITS } from './backends/wasm/limits.js';
import { DEFAULT_CACHE_LIMITS } from './backends/wasm/v8/transpile.js';
import { DEFAULT_SERVER_CAPS } from './lifecycle/admission.js';
import { DEFAULT_HTTP_LIMITS } from './frontend/http/limits.js';
import { parseRestrictedFeatures } from './frontend/restricted.js';
import { consolePathProblem, DEFAULT_CONSOLE_PATH } from './frontend/console/path.js';
import { DEFAULT_MAX_INPUT_SIZE, DEFAULT_MAX_UPLOAD_BYTES, type ServerOptions } from './server.js';
import { DEFAULT_REPOSITORY_CACHE_BYTES } from './repository/open-repositories.js';
import { readFileSync } from 'node:fs';
import { parseRedisCacheConfig } from './cache/redis-config.js';
import { TritonError } from './contract/errors.js';
import { type MetricsConfig, parseMetricsConfig } from './metrics/config.js';

export const USAGE = `Usage: warden --model-repository=<path> [options]

  --model-repository=<path>       model repository (repeatable); alias --model-store. A local path, or
                                  s3://[http://|https://][host:port/]bucket/path (credentials and region from
                                  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_DEFAULT_REGION
                                  or the AWS_PROFILE of the shared config files, as Triton reads them);
                                  gs://bucket/path (GOOGLE_APPLICATION_CREDENTIALS; STORAGE_EMULATOR_HOST for an
                                  emulator); as://account/container/path (AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY;
                                  AZURE_STORAGE_CONNECTION_STRING for another endpoint such as Azurite)
  --repository-cache-directory=<path> where models of object-store repositories are copied (default .cache/repository)
  --repository-cache-bytes=<n>    bytes of all those copies together (default ${DEFAULT_REPOSITORY_CACHE_BYTES})
  --http-port=<port>              HTTP port (default 8000)
  --http-address=<addr>           HTTP bind address (default 0.0.0.0)
  --metrics-port=<port>           Prometheus metrics port (default 8002)
  --allow-metrics=<bool>          serve metrics (default true)
  --model-control-mode=<mode>     none | poll | explicit (default none)
  --load-model=<name>             model to load at start in explicit mode (repeatable; * = all)
  --repository-poll-secs=<n>      poll interval in poll mode (default 15)
  --strict-readiness=<bool>       ready only when every model is ready (default true)
  --disable-auto-complete-config  do not auto-complete model configurations
  --strict-model-config=<bool>    deprecated alias of --disable-auto-complete-config
  --exit-on-error=<bool>          exit if a model fails to load at start (default true)
  --log-verbose=<n>               verbose logging level (default 0)
  --log-style=auto|pretty|json    how log lines look (Warden's; --log-format keeps Triton's timestamp meaning):
                                  pretty = readable lines, json = one JSON object a line; auto (default) =
                                  pretty when stdout is a terminal and there is no --log-file, else json
  --http-max-input-size=<bytes>   largest accepted request body (default ${DEFAULT_MAX_INPUT_SIZE})
  --backend-directory=<path>      where native backends live (default <warden>/build/backends)
  --backend-config=<b>,<k>=<v>    per-backend setting (repeatable)
  --native-execute-timeout-ms=<n> native backends: fail requests and mark the model UNAVAILABLE when
                                  an execute runs longer (default 0 = no limit; per model:
                                  parameter warden.execute_timeout_ms)
  --wake-affinity=<bool>          native and wasmtime instance threads woken while the server is
                                  otherwise idle start on the waking thread's CPU (default true;
                                  saves two cross-CPU wake-ups per request on VMs, docs/benchmarks.md)
  --model-config-name=<name>      use configs/<name>.pbtxt when present
  --wasm-max-memory-bytes=<n>     cap on a sandboxed instance's linear memory (default ${DEFAULT_WASM_LIMITS.maxMemoryBytes})
  --wasm-max-execute-ms=<n>       cap on a sandboxed execute deadline (default ${DEFAULT_WASM_LIMITS.maxExecuteMs})
  --wasm-max-total-memory-bytes=<n> cap on all sandboxes' memory together (default ${DEFAULT_WASM_LIMITS.maxTotalMemoryBytes})
  --wasm-engine=<name>            sandbox engine of wasm models: ${ENGINE_NAMES.join(' | ')} (default ${DEFAULT_ENGINE});
                                  a model may pick its own with parameters { key: "engine" }
  --wasm-idle-timeout-ms=<n>      release an idle instance's sandbox (and its memory) after n ms, 0 = never (default:
                                  ${DEFAULT_IDLE_MS} for uploaded models, never for the repositories' models);
                                  a model may set its own with parameters { key: "idle_timeout_ms" }
  --wasm-cache-directory=<path>   the sandbox engines' compile caches (default .cache/wasm; writable)
  --wasm-cache-max-entries=<n>    transpiled-component cache entries (default ${DEFAULT_CACHE_LIMITS.maxEntries})
  --wasm-cache-max-bytes=<n>      transpiled-component cache size (default ${DEFAULT_CACHE_LIMITS.maxBytes})
  --max-upload-bytes=<n>          decoded files of one load request (default ${DEFAULT_MAX_UPLOAD_BYTES})
  --sandbox-execution-slots=<n>   multi-tenant: sandbox executions running at once, all tenants (default: cores)
  --ensemble-max-inferences=<n>   composing inferences of one ensemble request (multi-tenant default
                                  ${DEFAULT_ENSEMBLE_LIMITS.maxInferences}; single-user: none unless an --ensemble-max-* flag is set)
  --ensemble-max-depth=<n>        ensembles nested in one request (default ${DEFAULT_ENSEMBLE_LIMITS.maxDepth})
  --ensemble-max-fanout=<n>       composing inferences of one ensemble request in flight (default ${DEFAULT_ENSEMBLE_LIMITS.maxFanout})
  --max-instances-per-model=<n>   cap on one model's instance count (default ${DEFAULT_SERVER_CAPS.maxInstancesPerModel})
  --max-priority-levels=<n>       cap on dynamic_batching.priority_levels, every model (default ${DEFAULT_SERVER_CAPS.maxPriorityLevels})
  --max-sequence-slots=<n>        cap on sequence slots per instance: max_candidate_sequences, or
                                  max_batch_size with the direct strategy (default ${DEFAULT_SERVER_CAPS.maxSequenceSlots})
  --max-preferred-batch-sizes=<n> cap on a preferred_batch_size list's entries (default ${DEFAULT_SERVER_CAPS.maxPreferredBatchSizes})
  --max-state-bytes=<n>           cap on one implicit sequence state's bytes (default ${DEFAULT_SERVER_CAPS.maxStateBytes})
  --http-header-timeout-ms=<n>    time a client has to send the request headers (default ${DEFAULT_HTTP_LIMITS.headerTimeoutMs})
  --http-request-timeout-ms=<n>   time a client has to send the whole request (default ${DEFAULT_HTTP_LIMITS.requestTimeoutMs})
  --http-max-connections=<n>      open HTTP connections accepted at once, all listeners
                                  together (default ${DEFAULT_HTTP_LIMITS.maxConnections})
  --http-max-connections-per-address=<n> open HTTP connections one client address may hold, checked
                                  before authentication; IPv6 by /64; 0 = no cap (default ${DEFAULT_HTTP_LIMITS.maxConnectionsPerAddress})
  --http-max-json-output-bytes=<n> largest JSON inference response; bigger ones get 400 and a pointer to
                                  the binary data extension (default ${DEFAULT_HTTP_LIMITS.maxJsonOutputBytes})
  --console=<bool>                serve the web console on the HTTP port (default false; docs/console.md)
  --console-path=<path>           where the console is served (default ${DEFAULT_CONSOLE_PATH})
  --http-fast-path=<bool>         serve plain /infer requests ahead of Fastify's router (default true;
                                  same answers, less CPU per request)
  --http-threads=<n>              front-end threads, 0..64 (default 0: HTTP on the main thread only); each
                                  listens on the HTTP port too, reads plain /infer requests and hands them
                                  to the main thread, which keeps the models (docs/architecture.md)
  --http-main-listener=<bool>     with --http-threads: the main thread accepts HTTP connections too
                                  (default true); false leaves the port to the threads
  --http-data-path=js|native      native: the HTTP port is served on native threads, and /infer of models
                                  on in-process Triton C-API backends, the ONNX Runtime engine and wasmtime
                                  never reaches the JavaScript thread (single-tenant mode, no
                                  --http-threads; default native where the addon has it, else js;
                                  docs/architecture.md)
  --http-data-path-threads=<n>    the native data path's threads (default: the machine's cores)
  --upload-directory=<path>       where uploads are stored (default <first repository>/.warden-uploads)
  --upload-store=s3://...         tenants' uploads kept in this object store, shared by every replica
                                  (the upload directory is then each replica's working copy)
  --upload-store-poll-secs=<n>    how often a replica follows the shared upload store (default 5)
  --wasm-cache-key-file=<path>    the fleet's wasmtime compile-cache key (32 bytes, or 64 hex digits; e.g. a
                                  Secret): with --upload-store, replicas share compiled components
  --tenants=<path>                tenants file (YAML / JSON): multi-tenant mode, bearer tokens required
  --jwt-jwks-file=<path>          also accept JWTs signed by these keys (multi-tenant mode)
  --jwt-jwks-url=<url>            ... or by the keys at this JWKS URL
  --jwt-issuer=<iss>              required JWT issuer (with --jwt-jwks-*)
  --jwt-audience=<aud>            required JWT audience (with --jwt-jwks-*)
  --jwt-tenant-claim=<claim>      JWT claim naming the tenant (default sub)
  --metrics-auth=<bool>           multi-tenant mode: GET /metrics needs an administrator's bearer
                                  token (default true; false: the port answers anyone)
  --metrics-tenant-labels=<bool>  multi-tenant mode: per-model series carry a tenant label (default false)

  warden tenants add|rotate|remove|list --tenants=<path> ...   edit the tenants file (--help there)
  --help                          this text
  --version                       Warden's version and the Triton protocol version it serves

tritonserver flags Warden honours as Triton does:
  --id=<name>                     server identifier (the 'name' of GET /v2; default triton, as tritonserver)
  --allow-http=<bool>             serve HTTP (default true)
  --http-thread-count=<n>         accepted; Node serves HTTP on one event loop (no thread pool)
  --metrics-address=<addr>        metrics bind address (default: --http-address)
  --metrics-interval-ms=<ms>      refresh period of the interval (CPU) metrics (default 2000)
  --allow-cpu-metrics=<bool>      nv_cpu_utilization, nv_cpu_memory_{total,used}_bytes (default true)
  --allow-gpu-metrics=<bool>      accepted (Warden runs no GPU models: no GPU metrics)
  --metrics-config=<setting>=<value>  repeatable: counter_latencies=<bool> (default true), summary_latencies=<bool>
                                  (nv_inference_*_summary_us, default false), summary_quantiles=<q>:<err>,...
  --exit-timeout-secs=<n>         bound on draining in-flight requests at exit / unload (default 30)
  --model-load-thread-count=<n>   models loaded concurrently at start (default 4)
  --log-info / --log-warning / --log-error=<bool>   enable each severity (default true)
  --log-format=default|ISO8601    timestamp format of log lines (JSON lines either way)
  --log-file=<path>               write the log to this file instead of stdout
  --trace-config=[<mode>,]<k>=<v> trace settings (file, level, rate, count, log-frequency, mode);
                                  mode=opentelemetry exports spans over OTLP/HTTP: opentelemetry,url=
                                  (default http://localhost:4318/v1/traces), resource=<k>=<v>,
                                  bsp_max_queue_size, bsp_schedule_delay, bsp_max_export_batch_size
  --trace-file / --trace-level / --trace-rate / --trace-count / --trace-log-frequency   (deprecated forms)
  --allow-client-shm=<bool>       system shared memory over HTTP and gRPC (default false; CUDA shm: UNSUPPORTED)
  --http-restricted-api=<apis>:<key>=<value>
                                  answer these HTTP API groups only to requests with header <key>: <value>
                                  (repeatable; groups: health, metadata, inference, shared-memory, model-config,
                                  model-repository, statistics, trace, logging); others get 403
  --grpc-restricted-protocol=<protocols>:<key>=<value>
                                  the same for gRPC, metadata triton-grpc-protocol-<key>: <value>; others get UNAVAILABLE
  --cache-config=local,size=<n>   response cache of n bytes (models opt in: response_cache { enable: true })
  --response-cache-byte-size=<n>  deprecated form of the same
  --cache-config=redis,<key>=<v>  response cache in Redis, shared by replicas (repeatable; keys: host, port (both
                                  required), user, password, db, connect_timeout, socket_timeout (ms, default 100),
                                  pool_size, wait_timeout; TLS: cert, key, cacert, cacert_dir, sni)
  --allow-grpc=<bool>             serve gRPC (inference.GRPCInferenceService; default true)
  --grpc-port=<port>              gRPC port (default 8001)
  --grpc-address=<addr>           gRPC bind address (default: --http-address)
  --grpc-keepalive-time / --grpc-keepalive-timeout=<ms>   keepalive pings (grpc-js)
  --grpc-max-connection-age / --grpc-max-connection-age-grace=<ms>
  --grpc-keepalive-permit-without-calls, --grpc-http2-max-pings-without-data,
  --grpc-http2-min-recv-ping-interval-without-data, --grpc-http2-max-ping-strikes
                                  accepted: grpc-js servers accept client pings without limit
Every other tritonserver 2.x flag (gRPC TLS, SageMaker, Vertex AI, caches, rate limiter, CUDA and pinned
memory pools, ...) is accepted so launch scripts work; one warning names those Warden ignores.
`;

/** Thrown for bad flags; the CLI prints the message and the usage, and exits 1. */
export class UsageError extends Error {}

function bool(name: string, v: string | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  const s = v.toLowerCase();
  if (['', 'true', '1', 'on', 'yes'].includes(s)) return true;
  if (['false', '0', 'off', 'no'].includes(s)) return false;
  throw new UsageError(`--${name} expects true or false, got '${v}'`);
}

function engineOption(v: string | undefined): ServerOptions['wasmEngine'] {
  if (v === undefined) return DEFAULT_ENGINE;
  try {
    return checkEngineName(v);
  } catch (e) {
    throw new UsageError(`--wasm-engine: ${(e as Error).message}`);
  }
}

/** `--http-data-path`: `js` or `native` (absent: the server's default, native where it can). @throws UsageError otherwise */
function httpDataPath(v: string | undefined): 'js' | 'native' | undefined {
  if (v === undefined || v === 'js' || v === 'native') return v;
  throw new UsageError(`--http-data-path must be js or native, got '${v}'`);
}

/** `--http-threads`: 0..MAX_HTTP_THREADS (default 0). @throws UsageError otherwise */
function httpThreads(v: string | undefined): number {
  const n = int('http-threads', v, 0, 0);
  if (n > MAX_HTTP_THREADS || (v !== undefined && !/^[0-9]+$/.test(v)))
    throw new UsageError(`--http-threads expects 0 (HTTP on the main thread only) to ${MAX_HTTP_THREADS}, got '${v}'`);
  return n;
}

/**
 * `--wasm-cache-key-file`: 32 bytes, or 64 hex digits (a trailing newline allowed).
 * @throws UsageError when the file cannot be read or holds anything else
 */
function readCacheKey(path: string): Buffer {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch (e) {
    throw new UsageError(`--wasm-cache-key-file: cannot read the file (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (raw.length === 32) return raw;
  const text = raw.toString('latin1').trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  throw new UsageError('--wasm-cache-key-file: expected 32 bytes or 64 hex digits');
}

function int(name: string, v: string | undefined, dflt: number, min = 0): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} expects an integer >= ${min}, got '${v}'`);
  return n;
}

/**
 * tritonserver 2.x flags for features Warden does not have: accepted (so an existing launch line
 * starts Warden) and named in one warning. `allow-*` flags set to false ask for nothing and are
 * not warned about.
 */
export const IGNORED_TRITON_FLAGS: readonly string[] = [
  'reuse-grpc-port',
  'grpc-header-forward-pattern',
  'grpc-infer-allocation-pool-size',
  'grpc-max-response-pool-size',
  'grpc-infer-thread-count',
  'grpc-use-ssl',
  'grpc-use-ssl-mutual',
  'grpc-server-cert',
  'grpc-server-key',
  'grpc-root-cert',
  'grpc-infer-response-compression-level',
  'allow-sagemaker',
  'sagemaker-port',
  'sagemaker-safe-port-range',
  'sagemaker-thread-count',
  'allow-vertex-ai',
  'vertex-ai-port',
  'vertex-ai-thread-count',
  'vertex-ai-default-model',
  'reuse-http-port',
  'http-header-forward-pattern',
  'cache-directory',
  'rate-limit',
  'rate-limit-resource',
  'pinned-memory-pool-byte-size',
  'cuda-memory-pool-byte-size',
  'cuda-virtual-address-size',
  'min-supported-compute-capability',
  'repoagent-directory',
  'buffer-manager-thread-count',
  'host-policy',
  'model-load-gpu-limit',
  'model-load-retry-count',
  'model-namespacing',
  'enable-peer-access',
];

/**
 * How the CLI writes log lines (`--log-style`): `pretty` (pino-pretty's readable lines), `json`
 * (pino's JSON lines), `auto` = pretty when stdout is a terminal and no `--log-file` is given.
 */
export type LogStyle = 'auto' | 'pretty' | 'json';

function isLogStyle(s: string): s is LogStyle {
  return s === 'auto' || s === 'pretty' || s === 'json';
}

/** What the CLI tells the operator once, after parsing (the caller logs it). */
export interface CliNotes {
  /** tritonserver flags given whose feature Warden lacks (see {@link IGNORED_TRITON_FLAGS}). */
  ignoredFlags: string[];
}

/** Trace settings from `--trace-config` and the deprecated `--trace-*` flags (spec §3.5). */
function traceOptions(v: Record<string, string | string[] | boolean | undefined>): NonNullable<ServerOptions['trace']> {
  const t: NonNullable<ServerOptions['trace']> = {};
  const set = (key: string, value: string, flag: string): void => {
    switch (key) {
      case 'file':
        t.file = value;
        return;
      case 'level': {
        const l = value.toUpperCase();
        if (l !== 'OFF' && l !== 'TIMESTAMPS' && l !== 'TENSORS')
          throw new UsageError(`${flag}: trace level must be OFF, TIMESTAMPS or TENSORS, got '${value}'`);
        t.level = l === 'OFF' ? [] : [...new Set([...(t.level ?? []), l as 'TIMESTAMPS' | 'TENSORS'])];
        return;
      }
      case 'rate':
        t.rate = int(flag.slice(2), value, 1000, 0);
        return;
      case 'count': {
        const n = Number(value);
        if (!Number.isSafeInteger(n) || n < -1) throw new UsageError(`${flag}: trace count must be an integer >= -1, got '${value}'`);
        t.count = n;
        return;
      }
      case 'log-frequency':
        t.logFrequency = int(flag.slice(2), value, 0, 0);
        return;
      case 'mode':
        if (value !== 'triton' && value !== 'opentelemetry') throw new UsageError(`${flag}: trace mode must be triton or opentelemetry, got '${value}'`);
        t.mode = value;
        return;
      default:
        (t.ignored ??= []).push(`${flag}=${key}`);
    }
  };
  const one = (name: string, key: string) => {
    const x = v[name];
    for (const s of Array.isArray(x) ? x : x === undefined ? [] : [String(x)]) set(key, s, `--${name}`);
  };
  one('trace-file', 'file');
  one('trace-level', 'level');
  one('trace-rate', 'rate');
  one('trace-count', 'count');
  one('trace-log-frequency', 'log-frequency');
  for (const c of (v['trace-config'] as string[] | undefined) ?? []) {
    const m = /^(?:(triton|opentelemetry),)?([^,=]+)=(.*)$/.exec(c);
    if (!m) throw new UsageError(`--trace-config expects [<mode>,]<setting>=<value>, got '${c}'`);
    if (m[1] === 'opentelemetry') {
      openTelemetrySetting(t, m[2]!, m[3]!, c);
      continue;
    }
    set(m[2]!, m[3]!, '--trace-config');
  }
  return t;
}

/**
 * One `--trace-config opentelemetry,<setting>=<value>` (Triton's names): `url`, `resource`
 * (`key=value`, repeatable), `bsp_max_queue_size`, `bsp_schedule_delay` (ms),
 * `bsp_max_export_batch_size`; others are reported as ignored.
 * @throws UsageError for a bad value
 */
function openTelemetrySetting(t: NonNullable<ServerOptions['trace']>, key: string, value: string, given: string): void {
  const o = (t.opentelemetry ??= {});
  const count = (min: number) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min)
      throw new UsageError(`--trace-config opentelemetry,${key}: expects an integer >= ${min}, got '${value}'`);
    return n;
  };
  switch (key) {
    case 'url':
      o.url = value;
      return;
    case 'resource': {
      const eq = value.indexOf('=');
      if (eq <= 0) throw new UsageError(`--trace-config opentelemetry,resource expects <key>=<value>, got '${value}'`);
      (o.resource ??= {})[value.slice(0, eq)] = value.slice(eq + 1);
      return;
    }
    case 'bsp_max_queue_size':
      o.bspMaxQueueSize = count(1);
      return;
    case 'bsp_schedule_delay':
      o.bspScheduleDelayMs = count(0);
      return;
    case 'bsp_max_export_batch_size':
      o.bspMaxExportBatchSize = count(1);
      return;
    default:
      (t.ignored ??= []).push(`--trace-config=${given}`);
  }
}

/** tritonserver's gRPC flags Warden honours (spec §5.8; frontend/grpc/server.ts says how). */
const GRPC_FLAG_OPTIONS = Object.fromEntries(
  [
    'allow-grpc',
    'grpc-port',
    'grpc-address',
    'grpc-keepalive-time',
    'grpc-keepalive-timeout',
    'grpc-keepalive-permit-without-calls',
    'grpc-http2-max-pings-without-data',
    'grpc-http2-min-recv-ping-interval-without-data',
    'grpc-http2-max-ping-strikes',
    'grpc-max-connection-age',
    'grpc-max-connection-age-grace',
  ].map((f) => [f, { type: 'string' } as const]),
);

/** `--allow-grpc`, `--grpc-port` (default 8001, as Triton), `--grpc-address` and the keepalive flags. @throws UsageError */
/**
 * `--http-restricted-api` / `--grpc-restricted-protocol` (repeatable, tritonserver's syntax
 * `<groups>:<key>=<value>`; frontend/restricted.ts).
 * @throws UsageError with tritonserver's text for an invalid configuration
 */
function restrictedOptions(v: Record<string, unknown>): Pick<ServerOptions, 'httpRestrictedApis' | 'grpcRestrictedProtocols'> {
  const one = (option: 'http-restricted-api' | 'grpc-restricted-protocol') => {
    try {
      return parseRestrictedFeatures(option, (v[option] as string[] | undefined) ?? []);
    } catch (e) {
      throw new UsageError(`Bad option: "--${option}". ${(e as Error).message}`);
    }
  };
  return { httpRestrictedApis: one('http-restricted-api'), grpcRestrictedProtocols: one('grpc-restricted-protocol') };
}

function grpcOptions(str1: (k: string) => string | undefined): Pick<ServerOptions, 'grpcPort' | 'grpcAddress' | 'grpcKeepalive'> {
  const allow = bool('allow-grpc', str1('allow-grpc'), true);
  const opt = (k: string) => (str1(k) === undefined ? undefined : int(k, str1(k), 0, 0));
  const permit = str1('grpc-keepalive-permit-without-calls');
  return {
    grpcPort: allow ? int('grpc-port', str1('grpc-port'), 8001) : undefined,
    grpcAddress: str1('grpc-address'),
    grpcKeepalive: {
      timeMs: opt('grpc-keepalive-time'),
      timeoutMs: opt('grpc-keepalive-timeout'),
      permitWithoutCalls: permit === undefined ? undefined : bool('grpc-keepalive-permit-without-calls', permit, false),
      maxPingsWithoutData: opt('grpc-http2-max-pings-without-data'),
      minRecvPingIntervalWithoutDataMs: opt('grpc-http2-min-recv-ping-interval-without-data'),
      maxPingStrikes: opt('grpc-http2-max-ping-strikes'),
      maxConnectionAgeMs: opt('grpc-max-connection-age'),
      maxConnectionAgeGraceMs: opt('grpc-max-connection-age-grace'),
    },
  };
}

/**
 * `--cache-config local,size=N` / `--cache-config redis,<key>=<value>` (repeatable) and the deprecated
 * `--response-cache-byte-size=N`: the local response cache's size in bytes, or the Redis cache's
 * settings (cache/redis-config.ts). Refused as tritonserver refuses them (server
 * `command_line_parser.cc`, core `server.cc`): both flags together, and settings for more than one
 * cache. Any other cache is a start-up error, never a silently missing cache.
 * @throws UsageError for a malformed setting or size, a refused combination or a Redis cache
 *   without host or port (Triton's texts)
 */
function cacheOptions(v: Record<string, unknown>, ignored: string[]): Pick<ServerOptions, 'responseCacheBytes' | 'redisCache'> {
  let size: number | undefined;
  const legacy = v['response-cache-byte-size'] as string | undefined;
  const configs = (v['cache-config'] as string[] | undefined) ?? [];
  if (legacy !== undefined && configs.length > 0) {
    throw new UsageError('Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. Please provide one or the other.');
  }
  if (legacy !== undefined) size = int('response-cache-byte-size', legacy, 0, 0);
  const parsed = configs.map((c) => {
    const m = /^([^,=]+),([^,=]+)=(.*)$/.exec(c);
    if (!m) throw new UsageError(`--cache-config expects <cache>,<setting>=<value>, got '${c}'`);
    return { text: c, cache: m[1]!, key: m[2]!, value: m[3]! };
  });
  if (new Set(parsed.map((p) => p.cache)).size > 1) {
    throw new UsageError('found multiple cache configurations, but only a single cache is currently supported');
  }
  if (parsed[0]?.cache === 'redis') {
    const settings = new Map(parsed.map((p) => [p.key, p.value]));
    try {
      return { redisCache: parseRedisCacheConfig(settings, (key) => ignored.push(`--cache-config=redis,${key}=${settings.get(key)}`)) };
    } catch (e) {
      if (e instanceof TritonError) throw new UsageError(e.message);
      throw e;
    }
  }
  for (const p of parsed) {
    if (p.cache !== 'local') {
      throw new UsageError(`--cache-config=${p.text}: the ${p.cache} cache is not available in Warden (only the local and redis caches are built)`);
    }
    if (p.key === 'size') size = int('cache-config', p.value, 0, 0);
    else ignored.push(`--cache-config=${p.text}`);
  }
  return { responseCacheBytes: size };
}

/**
 * `--metrics-config=<setting>=<value>` (repeatable; metrics/config.ts): settings Warden does not
 * act on are added to `ignored`. @throws UsageError for a malformed argument or value
 */
function metricsConfigOptions(given: string[] | undefined, ignored: string[]): MetricsConfig | undefined {
  if (given === undefined) return undefined;
  try {
    const parsed = parseMetricsConfig(given);
    ignored.push(...parsed.ignored);
    return parsed.config;
  } catch (e) {
    if (e instanceof TritonError) throw new UsageError(e.message);
    throw e;
  }
}

/** Parse argv (without node and script). @throws UsageError */
export function parseCli(argv: string[]): ServerOptions & { help?: boolean; version?: boolean; logStyle?: LogStyle; notes: CliNotes } {
  const str = { type: 'string' } as const;
  const multi = { type: 'string', multiple: true } as const;
  let parsed;
  try {
    parsed = parseArgs({
      // A bare `--console` (no value) means true, as README's command writes it.
      args: argv.map((a) => (a === '--console' ? '--console=true' : a)),
      strict: true,
      allowPositionals: false,
      options: {
        'model-repository': multi,
        'model-store': multi,
        'http-port': str,
        'http-address': str,
        'metrics-port': str,
        'allow-metrics': str,
        'model-control-mode': str,
        'load-model': multi,
        'repository-poll-secs': str,
        'strict-readiness': str,
        'disable-auto-complete-config': { type: 'boolean' },
        'strict-model-config': str,
        'exit-on-error': str,
        'log-verbose': str,
        'http-max-input-size': str,
        'backend-directory': str,
        'backend-config': multi,
        'native-execute-timeout-ms': str,
        'wake-affinity': str,
        'model-config-name': str,
        'wasm-max-memory-bytes': str,
        'wasm-max-execute-ms': str,
        'max-instances-per-model': str,
        'max-priority-levels': str,
        'max-sequence-slots': str,
        'max-preferred-batch-sizes': str,
        'max-state-bytes': str,
        'max-upload-bytes': str,
        'sandbox-execution-slots': str,
        'ensemble-max-inferences': str,
        'ensemble-max-depth': str,
        'ensemble-max-fanout': str,
        'wasm-max-total-memory-bytes': str,
        'wasm-cache-max-entries': str,
        'wasm-engine': str,
        'wasm-idle-timeout-ms': str,
        'wasm-cache-max-bytes': str,
        'http-header-timeout-ms': str,
        'http-request-timeout-ms': str,
        'http-max-connections': str,
        'http-max-connections-per-address': str,
        'http-max-json-output-bytes': str,
        'http-fast-path': str,
        console: str,
        'console-path': str,
        'http-data-path': str,
        'http-data-path-threads': str,
        'http-threads': str,
        'http-main-listener': str,
        tenants: str,
        'upload-directory': str,
        'repository-cache-directory': str,
        'upload-store': str,
        'upload-store-poll-secs': str,
        'wasm-cache-key-file': str,
        'wasm-cache-directory': str,
        'repository-cache-bytes': str,
        'jwt-jwks-file': str,
        'jwt-jwks-url': str,
        'jwt-issuer': str,
        'jwt-audience': str,
        'jwt-tenant-claim': str,
        'metrics-auth': str,
        'metrics-tenant-labels': str,
        help: { type: 'boolean' },
        version: { type: 'boolean' },
        // tritonserver flags honoured (spec §5.8)
        id: str,
        'allow-http': str,
        'http-thread-count': str,
        'metrics-address': str,
        'metrics-interval-ms': str,
        'allow-cpu-metrics': str,
        'allow-gpu-metrics': str,
        'metrics-config': multi,
        'exit-timeout-secs': str,
        'model-load-thread-count': str,
        'log-info': str,
        'log-warning': str,
        'log-error': str,
        'log-format': str,
        'log-style': str,
        'log-file': str,
        'allow-client-shm': str,
        'http-restricted-api': multi,
        'grpc-restricted-protocol': multi,
        ...GRPC_FLAG_OPTIONS,
        'cache-config': multi,
        'response-cache-byte-size': str,
        'trace-config': multi,
        'trace-file': str,
        'trace-level': multi,
        'trace-rate': str,
        'trace-count': str,
        'trace-log-frequency': str,
        // tritonserver flags for features Warden lacks: accepted, warned about once
        ...Object.fromEntries(IGNORED_TRITON_FLAGS.map((f) => [f, multi])),
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values as Record<string, string | string[] | boolean | undefined> & typeof parsed.values;
  if (v.help) return { modelRepositories: [], help: true, notes: { ignoredFlags: [] } };
  if (v.version) return { modelRepositories: [], version: true, notes: { ignoredFlags: [] } };
  const ignoredFlags: string[] = [];
  for (const f of IGNORED_TRITON_FLAGS) {
    const given = v[f] as string[] | undefined;
    if (given === undefined) continue;
    // `--allow-grpc=false` and the like ask for nothing Warden lacks.
    if (f.startsWith('allow-') && given.every((x) => ['false', '0', 'off', 'no'].includes(x.toLowerCase()))) continue;
    ignoredFlags.push(`--${f}`);
  }
  const allowClientShm = bool('allow-client-shm', v['allow-client-shm'] as string | undefined, false);
  const httpFastPath = bool('http-fast-path', v['http-fast-path'] as string | undefined, true);
  const consolePath = (v['console-path'] as string | undefined) ?? DEFAULT_CONSOLE_PATH;
  const consoleProblem = consolePathProblem(consolePath);
  if (consoleProblem) throw new UsageError(`--console-path ${consoleProblem}, got '${consolePath}'`);
  const allowGpuMetrics = bool('allow-gpu-metrics', v['allow-gpu-metrics'] as string | undefined, true);
  void allowGpuMetrics; // no GPU models: there are no GPU metrics to report either way
  const trace = traceOptions(v);
  ignoredFlags.push(...(trace.ignored ?? []));
  delete trace.ignored;
  const logFormat = (v['log-format'] as string | undefined) ?? 'default';
  if (logFormat !== 'default' && logFormat !== 'ISO8601') throw new UsageError(`invalid argument for --log-format, got: ${logFormat}`);
  const logStyle = (v['log-style'] as string | undefined) ?? 'auto';
  if (!isLogStyle(logStyle)) throw new UsageError(`--log-style must be auto, pretty or json, got '${logStyle}'`);
  const metricsConfig = metricsConfigOptions(v['metrics-config'] as string[] | undefined, ignoredFlags);
  const metricsIntervalMs = Number(v['metrics-interval-ms'] ?? 2000);
  if (!Number.isFinite(metricsIntervalMs) || metricsIntervalMs <= 0)
    throw new UsageError(`--metrics-interval-ms expects a positive number, got '${String(v['metrics-interval-ms'])}'`);
  const repos = [...(v['model-repository'] ?? []), ...(v['model-store'] ?? [])];
  if (repos.length === 0) throw new UsageError('--model-repository must be given');
  const mode = v['model-control-mode'] ?? 'none';
  if (mode !== 'none' && mode !== 'poll' && mode !== 'explicit') throw new UsageError(`--model-control-mode must be none, poll or explicit, got '${mode}'`);
  const loadModels = v['load-model'] ?? [];
  if (loadModels.length > 0 && mode !== 'explicit') throw new UsageError('--load-model requires --model-control-mode=explicit');
  if (loadModels.includes('*') && loadModels.length > 1) throw new UsageError('--load-model=* must be the only --load-model');
  const backendConfig: Record<string, Record<string, string>> = {};
  for (const bc of v['backend-config'] ?? []) {
    const m = /^(?:([^,=]*),)?([^,=]+)=(.*)$/.exec(bc);
    if (!m) throw new UsageError(`--backend-config expects <backend>,<setting>=<value>, got '${bc}'`);
    const backend = m[1] ?? '';
    (backendConfig[backend] ??= {})[m[2]!] = m[3]!;
  }
  const strictModelConfig = v['strict-model-config'] !== undefined && bool('strict-model-config', v['strict-model-config'], false);
  const allowMetrics = bool('allow-metrics', v['allow-metrics'], true);
  const jwksFile = v['jwt-jwks-file'];
  const jwksUrl = v['jwt-jwks-url'];
  let jwt: ServerOptions['jwt'];
  if (jwksFile !== undefined || jwksUrl !== undefined) {
    if (v.tenants === undefined) throw new UsageError('--jwt-jwks-file / --jwt-jwks-url need --tenants (the tenant a JWT names must be in it)');
    if (!v['jwt-issuer'] || !v['jwt-audience']) throw new UsageError('--jwt-jwks-* need --jwt-issuer and --jwt-audience');
    jwt = { jwksFile, jwksUrl, issuer: v['jwt-issuer'], audience: v['jwt-audience'], tenantClaim: v['jwt-tenant-claim'] };
  }
  const str1 = (k: string) => v[k] as string | undefined;
  return {
    notes: { ignoredFlags },
    logStyle,
    ...restrictedOptions(v),
    ...grpcOptions(str1),
    allowClientShm,
    httpFastPath,
    console: bool('console', v.console as string | undefined, false),
    consolePath,
    httpThreads: httpThreads(str1('http-threads')),
    httpMainListener: bool('http-main-listener', str1('http-main-listener'), true),
    httpDataPath: httpDataPath(str1('http-data-path')),
    httpDataPathThreads: str1('http-data-path-threads') === undefined ? undefined : int('http-data-path-threads', str1('http-data-path-threads'), 1, 1),
    ...cacheOptions(v, ignoredFlags),
    serverId: str1('id'),
    allowHttp: bool('allow-http', str1('allow-http'), true),
    httpThreadCount: int('http-thread-count', str1('http-thread-count'), 8, 1),
    metricsAddress: str1('metrics-address'),
    metricsIntervalMs,
    metricsConfig,
    allowCpuMetrics: bool('allow-cpu-metrics', str1('allow-cpu-metrics'), true),
    metricsAuth: bool('metrics-auth', str1('metrics-auth'), true),
    metricsTenantLabels: bool('metrics-tenant-labels', str1('metrics-tenant-labels'), false),
    exitTimeoutSecs: int('exit-timeout-secs', str1('exit-timeout-secs'), 30, 0),
    modelLoadThreadCount: int('model-load-thread-count', str1('model-load-thread-count'), 4, 1),
    logSettings: {
      log_info: bool('log-info', str1('log-info'), true),
      log_warning: bool('log-warning', str1('log-warning'), true),
      log_error: bool('log-error', str1('log-error'), true),
      log_format: logFormat,
      log_file: str1('log-file') ?? '',
    },
    trace,
    modelRepositories: repos,
    tenantsFile: v.tenants,
    uploadDirectory: v['upload-directory'],
    repositoryCacheDirectory: v['repository-cache-directory'],
    uploadStore: v['upload-store'],
    uploadStorePollSecs: int('upload-store-poll-secs', v['upload-store-poll-secs'], 5, 1),
    cacheDir: v['wasm-cache-directory'],
    wasmCacheKey: v['wasm-cache-key-file'] === undefined ? undefined : readCacheKey(v['wasm-cache-key-file']),
    repositoryCacheBytes: int('repository-cache-bytes', v['repository-cache-bytes'], DEFAULT_REPOSITORY_CACHE_BYTES, 1),
    jwt,
    httpPort: int('http-port', v['http-port'], 8000),
    httpAddress: v['http-address'],
    metricsPort: allowMetrics ? int('metrics-port', v['metrics-port'], 8002) : -1,
    modelControlMode: mode,
    loadModels,
    repositoryPollSecs: int('repository-poll-secs', v['repository-poll-secs'], 15, 1),
    strictReadiness: bool('strict-readiness', v['strict-readiness'], true),
    autoCompleteConfig: !(v['disable-auto-complete-config'] || strictModelConfig),
    exitOnError: bool('exit-on-error', v['exit-on-error'], true),
    logVerbose: int('log-verbose', v['log-verbose'], 0),
    maxInputSize: int('http-max-input-size', v['http-max-input-size'], DEFAULT_MAX_INPUT_SIZE, 1),
    backendDirectory: v['backend-directory'],
    nativeExecuteTimeoutMs: int('native-execute-timeout-ms', v['native-execute-timeout-ms'], 0, 0),
    wakeAffinity: bool('wake-affinity', v['wake-affinity'], true),
    backendConfig,
    modelConfigName: v['model-config-name'],
    wasmLimits: {
      maxMemoryBytes: int('wasm-max-memory-bytes', v['wasm-max-memory-bytes'], DEFAULT_WASM_LIMITS.maxMemoryBytes, 65536),
      maxExecuteMs: int('wasm-max-execute-ms', v['wasm-max-execute-ms'], DEFAULT_WASM_LIMITS.maxExecuteMs, 1),
      maxLogBytes: DEFAULT_WASM_LIMITS.maxLogBytes,
      maxLogMessages: DEFAULT_WASM_LIMITS.maxLogMessages,
      maxTotalMemoryBytes: int('wasm-max-total-memory-bytes', v['wasm-max-total-memory-bytes'], DEFAULT_WASM_LIMITS.maxTotalMemoryBytes, 65536),
    },
    wasmEngine: engineOption(v['wasm-engine']),
    wasmIdleMs: v['wasm-idle-timeout-ms'] === undefined ? undefined : int('wasm-idle-timeout-ms', v['wasm-idle-timeout-ms'], DEFAULT_IDLE_MS, 0),
    wasmCacheLimits: {
      maxEntries: int('wasm-cache-max-entries', v['wasm-cache-max-entries'], DEFAULT_CACHE_LIMITS.maxEntries, 1),
      maxBytes: int('wasm-cache-max-bytes', v['wasm-cache-max-bytes'], DEFAULT_CACHE_LIMITS.maxBytes, 1),
    },
    maxUploadBytes: int('max-upload-bytes', v['max-upload-bytes'], DEFAULT_MAX_UPLOAD_BYTES, 1),
    sandboxExecutionSlots: v['sandbox-execution-slots'] === undefined ? undefined : int('sandbox-execution-slots', v['sandbox-execution-slots'], 1, 1),
    ensembleLimits:
      v['ensemble-max-inferences'] === undefined && v['ensemble-max-depth'] === undefined && v['ensemble-max-fanout'] === undefined
        ? undefined
        : {
            maxInferences: int('ensemble-max-inferences', v['ensemble-max-inferences'], DEFAULT_ENSEMBLE_LIMITS.maxInferences, 1),
            maxDepth: int('ensemble-max-depth', v['ensemble-max-depth'], DEFAULT_ENSEMBLE_LIMITS.maxDepth, 1),
            maxFanout: int('ensemble-max-fanout', v['ensemble-max-fanout'], DEFAULT_ENSEMBLE_LIMITS.maxFanout, 1),
          },
    caps: {
      maxInstancesPerModel: int('max-instances-per-model', v['max-instances-per-model'], DEFAULT_SERVER_CAPS.maxInstancesPerModel, 1),
      maxPriorityLevels: int('max-priority-levels', v['max-priority-levels'], DEFAULT_SERVER_CAPS.maxPriorityLevels, 1),
      maxSequenceSlots: int('max-sequence-slots', v['max-sequence-slots'], DEFAULT_SERVER_CAPS.maxSequenceSlots, 1),
      maxPreferredBatchSizes: int('max-preferred-batch-sizes', v['max-preferred-batch-sizes'], DEFAULT_SERVER_CAPS.maxPreferredBatchSizes, 1),
      maxStateBytes: int('max-state-bytes', v['max-state-bytes'], DEFAULT_SERVER_CAPS.maxStateBytes, 1),
    },
    httpLimits: {
      headerTimeoutMs: int('http-header-timeout-ms', v['http-header-timeout-ms'], DEFAULT_HTTP_LIMITS.headerTimeoutMs, 1),
      requestTimeoutMs: int('http-request-timeout-ms', v['http-request-timeout-ms'], DEFAULT_HTTP_LIMITS.requestTimeoutMs, 1),
      maxConnections: int('http-max-connections', v['http-max-connections'], DEFAULT_HTTP_LIMITS.maxConnections, 1),
      maxConnectionsPerAddress: int('http-max-connections-per-address', v['http-max-connections-per-address'], DEFAULT_HTTP_LIMITS.maxConnectionsPerAddress, 0),
      maxJsonOutputBytes: int('http-max-json-output-bytes', v['http-max-json-output-bytes'], DEFAULT_HTTP_LIMITS.maxJsonOutputBytes, 1),
    },
  };
}
