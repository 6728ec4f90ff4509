/**
 * tritonserver's command-line flags (spec §5.8) → ServerOptions. Boolean flags take
 * `--flag=true|false` (or bare `--flag` = true) as tritonserver does.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_WASM_LIMITS } from './backends/wasm/limits.js';
import { DEFAULT_CACHE_LIMITS } from './backends/wasm/v8/transpile.js';
import { DEFAULT_SERVER_CAPS } from './core/admission.js';
import { DEFAULT_HTTP_LIMITS } from './frontend/http/limits.js';
import { DEFAULT_MAX_INPUT_SIZE, DEFAULT_MAX_UPLOAD_BYTES, type ServerOptions } from './server.js';

export const USAGE = `Usage: warden --model-repository=<path> [options]

  --model-repository=<path>       model repository (repeatable); alias --model-store
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
  --http-max-input-size=<bytes>   largest accepted request body (default ${DEFAULT_MAX_INPUT_SIZE})
  --backend-directory=<path>      where native backends live (default <warden>/build/backends)
  --backend-config=<b>,<k>=<v>    per-backend setting (repeatable)
  --model-config-name=<name>      use configs/<name>.pbtxt when present
  --wasm-max-memory-bytes=<n>     cap on a sandboxed instance's linear memory (default ${DEFAULT_WASM_LIMITS.maxMemoryBytes})
  --wasm-max-execute-ms=<n>       cap on a sandboxed execute deadline (default ${DEFAULT_WASM_LIMITS.maxExecuteMs})
  --wasm-max-total-memory-bytes=<n> cap on all sandboxes' memory together (default ${DEFAULT_WASM_LIMITS.maxTotalMemoryBytes})
  --wasm-cache-max-entries=<n>    transpiled-component cache entries (default ${DEFAULT_CACHE_LIMITS.maxEntries})
  --wasm-cache-max-bytes=<n>      transpiled-component cache size (default ${DEFAULT_CACHE_LIMITS.maxBytes})
  --max-upload-bytes=<n>          decoded files of one load request (default ${DEFAULT_MAX_UPLOAD_BYTES})
  --max-instances-per-model=<n>   cap on one model's instance count (default ${DEFAULT_SERVER_CAPS.maxInstancesPerModel})
  --http-header-timeout-ms=<n>    time a client has to send the request headers (default ${DEFAULT_HTTP_LIMITS.headerTimeoutMs})
  --http-request-timeout-ms=<n>   time a client has to send the whole request (default ${DEFAULT_HTTP_LIMITS.requestTimeoutMs})
  --http-max-connections=<n>      open HTTP connections accepted at once (default ${DEFAULT_HTTP_LIMITS.maxConnections})
  --upload-directory=<path>       where uploads are stored (default <first repository>/.warden-uploads)
  --tenants=<path>                tenants file (YAML / JSON): multi-tenant mode, bearer tokens required
  --jwt-jwks-file=<path>          also accept JWTs signed by these keys (multi-tenant mode)
  --jwt-jwks-url=<url>            ... or by the keys at this JWKS URL
  --jwt-issuer=<iss>              required JWT issuer (with --jwt-jwks-*)
  --jwt-audience=<aud>            required JWT audience (with --jwt-jwks-*)
  --jwt-tenant-claim=<claim>      JWT claim naming the tenant (default sub)

  warden tenants add|rotate|remove|list --tenants=<path> ...   edit the tenants file (--help there)
  --help                          this text
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

function int(name: string, v: string | undefined, dflt: number, min = 0): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} expects an integer >= ${min}, got '${v}'`);
  return n;
}

/** Parse argv (without node and script). @throws UsageError */
export function parseCli(argv: string[]): ServerOptions & { help?: boolean } {
  const str = { type: 'string' } as const;
  const multi = { type: 'string', multiple: true } as const;
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
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
        'model-config-name': str,
        'wasm-max-memory-bytes': str,
        'wasm-max-execute-ms': str,
        'max-instances-per-model': str,
        'max-upload-bytes': str,
        'wasm-max-total-memory-bytes': str,
        'wasm-cache-max-entries': str,
        'wasm-cache-max-bytes': str,
        'http-header-timeout-ms': str,
        'http-request-timeout-ms': str,
        'http-max-connections': str,
        tenants: str,
        'upload-directory': str,
        'jwt-jwks-file': str,
        'jwt-jwks-url': str,
        'jwt-issuer': str,
        'jwt-audience': str,
        'jwt-tenant-claim': str,
        help: { type: 'boolean' },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values;
  if (v.help) return { modelRepositories: [], help: true };
  const repos = [...(v['model-repository'] ?? []), ...(v['model-store'] ?? [])];
  if (repos.length === 0) throw new UsageError('--model-repository must be given');
  const mode = v['model-control-mode'] ?? 'none';
  if (mode !== 'none' && mode !== 'poll' && mode !== 'explicit') throw new UsageError(`--model-control-mode must be none, poll or explicit, got '${mode}'`);
  const loadModels = v['load-model'] ?? [];
  if (loadModels.length > 0 && mode !== 'explicit') throw new UsageError('--load-model requires --model-control-mode=explicit');
  if (loadModels.includes('*') && loadModels.length > 1) throw new UsageError("--load-model=* must be the only --load-model");
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
  return {
    modelRepositories: repos,
    tenantsFile: v.tenants,
    uploadDirectory: v['upload-directory'],
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
    backendConfig,
    modelConfigName: v['model-config-name'],
    wasmLimits: {
      maxMemoryBytes: int('wasm-max-memory-bytes', v['wasm-max-memory-bytes'], DEFAULT_WASM_LIMITS.maxMemoryBytes, 65536),
      maxExecuteMs: int('wasm-max-execute-ms', v['wasm-max-execute-ms'], DEFAULT_WASM_LIMITS.maxExecuteMs, 1),
      maxLogBytes: DEFAULT_WASM_LIMITS.maxLogBytes,
      maxLogMessages: DEFAULT_WASM_LIMITS.maxLogMessages,
      maxTotalMemoryBytes: int('wasm-max-total-memory-bytes', v['wasm-max-total-memory-bytes'], DEFAULT_WASM_LIMITS.maxTotalMemoryBytes, 65536),
    },
    wasmCacheLimits: {
      maxEntries: int('wasm-cache-max-entries', v['wasm-cache-max-entries'], DEFAULT_CACHE_LIMITS.maxEntries, 1),
      maxBytes: int('wasm-cache-max-bytes', v['wasm-cache-max-bytes'], DEFAULT_CACHE_LIMITS.maxBytes, 1),
    },
    maxUploadBytes: int('max-upload-bytes', v['max-upload-bytes'], DEFAULT_MAX_UPLOAD_BYTES, 1),
    caps: { maxInstancesPerModel: int('max-instances-per-model', v['max-instances-per-model'], DEFAULT_SERVER_CAPS.maxInstancesPerModel, 1) },
    httpLimits: {
      headerTimeoutMs: int('http-header-timeout-ms', v['http-header-timeout-ms'], DEFAULT_HTTP_LIMITS.headerTimeoutMs, 1),
      requestTimeoutMs: int('http-request-timeout-ms', v['http-request-timeout-ms'], DEFAULT_HTTP_LIMITS.requestTimeoutMs, 1),
      maxConnections: int('http-max-connections', v['http-max-connections'], DEFAULT_HTTP_LIMITS.maxConnections, 1),
    },
  };
}
