/**
 * The Redis response cache's settings as tritonserver takes them (`--cache-config redis,<key>=<value>`,
 * redis_cache `src/redis_cache.cc`): `host` and `port` (both required), `user`, `password`, `db`,
 * `connect_timeout`, `socket_timeout`, `pool_size`, `wait_timeout` (milliseconds), and TLS, on when
 * any of `cert`, `key`, `cacert`, `cacert_dir`, `sni` is set.
 */
import * as cacheErrors from './cache.errors.js';

/** TLS towards Redis: file paths as given (read at start-up), and the server name to present. */
export interface RedisTlsConfig {
  /** `cert`: the client certificate (PEM), for servers that require one. */
  cert?: string;
  /** `key`: the client certificate's private key (PEM). */
  key?: string;
  /** `cacert`: the CA bundle (PEM) the server's certificate must chain to. */
  cacert?: string;
  /** `cacert_dir`: a directory of CA certificates (every `*.pem` / `*.crt` file in it). */
  cacertDir?: string;
  /** `sni`: the server name sent and verified (default: `host`). */
  sni?: string;
}

/** `--cache-config redis,...` parsed. */
export interface RedisCacheConfig {
  host: string;
  port: number;
  /** `user`: an ACL user (Redis 6+); with `password` only, the `default` user. */
  user?: string;
  password?: string;
  /** `db`: the logical database (default 0). */
  db: number;
  /** `connect_timeout`, ms: a connection attempt fails after it (default {@link DEFAULT_REDIS_CONNECT_TIMEOUT_MS}). */
  connectTimeoutMs: number;
  /**
   * `socket_timeout`, ms: a command (a lookup or an insertion) unanswered after it counts as a
   * failure — a miss. Default {@link DEFAULT_REDIS_SOCKET_TIMEOUT_MS}; Triton's 0 (wait forever)
   * would let a hung Redis hang every request, so 0 here also means the default.
   */
  socketTimeoutMs: number;
  /** `pool_size`: connections (commands are pipelined on each; default 1). */
  poolSize: number;
  /**
   * `wait_timeout`, ms (Triton: how long a command waits for a free pooled connection; default 100).
   * Accepted for compatibility; commands never wait for a connection here (they are pipelined).
   */
  waitTimeoutMs: number;
  /** Present when any TLS key is set. */
  tls?: RedisTlsConfig;
}

/** Default `connect_timeout`, ms. */
export const DEFAULT_REDIS_CONNECT_TIMEOUT_MS = 1000;
/**
 * Default `socket_timeout`, ms: the most a Redis that stopped answering adds to a request (then a
 * miss). A lookup on a healthy Redis takes well under a millisecond on a local network.
 */
export const DEFAULT_REDIS_SOCKET_TIMEOUT_MS = 100;

const MAX_MS = 3_600_000;
const TLS_KEYS = ['cert', 'key', 'cacert', 'cacert_dir', 'sni'];

/**
 * The redis settings of `--cache-config` (`key` → `value`, later ones winning as in tritonserver).
 * @param ignore called with each key Triton's redis cache does not read (the caller warns)
 * @throws TritonError INVALID_ARG {@link cacheErrors.redisAddressMissing} without host or port,
 *   {@link cacheErrors.redisSettingNotInteger} for a number out of range
 */
export function parseRedisCacheConfig(settings: ReadonlyMap<string, string>, ignore: (key: string) => void = () => undefined): RedisCacheConfig {
  const int = (key: string, min: number, max: number, dflt: number): number => {
    const v = settings.get(key);
    if (v === undefined) return dflt;
    const n = /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw cacheErrors.redisSettingNotInteger(key, v, min, max);
    return n;
  };
  const known = new Set(['host', 'port', 'user', 'password', 'db', 'connect_timeout', 'socket_timeout', 'pool_size', 'wait_timeout', ...TLS_KEYS]);
  for (const k of settings.keys()) if (!known.has(k)) ignore(k);
  const host = settings.get('host');
  if (!host || !settings.has('port')) throw cacheErrors.redisAddressMissing();
  const tls: RedisTlsConfig = {
    cert: settings.get('cert'),
    key: settings.get('key'),
    cacert: settings.get('cacert'),
    cacertDir: settings.get('cacert_dir'),
    sni: settings.get('sni'),
  };
  return {
    host,
    port: int('port', 1, 65535, 0),
    user: settings.get('user') || undefined,
    password: settings.get('password') || undefined,
    db: int('db', 0, 1 << 20, 0),
    connectTimeoutMs: int('connect_timeout', 0, MAX_MS, 0) || DEFAULT_REDIS_CONNECT_TIMEOUT_MS,
    socketTimeoutMs: int('socket_timeout', 0, MAX_MS, 0) || DEFAULT_REDIS_SOCKET_TIMEOUT_MS,
    poolSize: int('pool_size', 1, 256, 1),
    waitTimeoutMs: int('wait_timeout', 0, MAX_MS, 100),
    tls: TLS_KEYS.some((k) => settings.get(k)) ? tls : undefined,
  };
}
