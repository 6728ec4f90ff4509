/**
 * The Redis response cache (Triton's `redis` cache, `--cache-config redis,host=...,port=...`):
 * the same keys as the local cache ({@link ResponseCache.key}), kept in a Redis that every
 * replica shares, so a response computed on one replica is a hit on the others.
 *
 * Layout, per namespace `<ns>` (`op` for the operator's namespace `''`, `t.<tenant>` for a tenant;
 * `{...}` is a Redis Cluster hash tag, so a namespace's keys share a slot):
 *
 *   warden:rc:{<ns>}:e:<key>   an entry ({@link encodeEntry}'s bytes)
 *   warden:rc:{<ns>}:lru       sorted set of the namespace's keys by last use (tenants only)
 *   warden:rc:{<ns>}:sizes     hash key → entry bytes (tenants only)
 *   warden:rc:{<ns>}:bytes     the sum of those sizes (tenants only)
 *   warden:rc:{<ns>}:seq       the use counter that orders the sorted set (tenants only)
 *
 * Capacity (DESIGN "Multi-tenancy": no tenant can evict another's entries): a tenant holds at
 * most its share (its `max_cache_bytes` quota), enforced by one Lua script per insertion that
 * evicts the tenant's own least recently used entries, and one per lookup that refreshes the
 * entry's use (one EVALSHA each). The operator's namespace is bounded only by Redis itself, as in
 * Triton (no TTL; Redis's `maxmemory` policy evicts) — the operator sizes `maxmemory` at least the
 * sum of the tenants' shares plus what the operator's models need, or Redis's policy may evict a
 * tenant's entry under another's pressure (docs/tenancy.md "Response cache").
 *
 * Failure (never an error to a client, never a hang): commands are not queued while
 * disconnected (they fail at once), every command fails after `socket_timeout`, a failed lookup
 * is a miss and a failed insertion is dropped; each failure is counted ({@link RedisCacheOptions.onError})
 * and logged at most every {@link ERROR_LOG_INTERVAL_MS}. The client reconnects on its own.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConnectionOptions } from 'node:tls';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { InferenceResponse } from '../contract/types.js';
import * as cacheErrors from './cache.errors.js';
import { decodeEntry, encodeEntry } from './entry-codec.js';
import type { RedisCacheConfig } from './redis-config.js';
import type { ResponseCacheStore } from './response-cache-store.js';

/** The largest entry kept or read back (bytes): a value beyond it is neither stored nor decoded. */
export const MAX_REDIS_ENTRY_BYTES = 64 * 1024 * 1024;
/** Failures are logged at most this often (the count of the others goes in the next line). */
export const ERROR_LOG_INTERVAL_MS = 10_000;

const PREFIX = 'warden:rc:';

/**
 * Lookup. KEYS: entry, lru, sizes, bytes, seq. ARGV: key, the largest value to return. An entry
 * whose value is gone (Redis evicted it) has its bookkeeping removed; an entry over the bound is
 * not returned.
 */
const GET_SCRIPT = `
local n = redis.call('STRLEN', KEYS[1])
if n == 0 then
  local s = redis.call('HGET', KEYS[3], ARGV[1])
  if s then
    redis.call('HDEL', KEYS[3], ARGV[1])
    redis.call('ZREM', KEYS[2], ARGV[1])
    redis.call('DECRBY', KEYS[4], s)
  end
  return false
end
if n > tonumber(ARGV[2]) then return false end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], 'XX', redis.call('INCR', KEYS[5]), ARGV[1])
end
return redis.call('GET', KEYS[1])
`;

/**
 * Insertion. KEYS: entry, lru, sizes, bytes, seq. ARGV: key, value, share (bytes; negative = not
 * accounted: the operator's namespace), the entry key prefix. Evicts the namespace's least
 * recently used entries until the value fits its share; a value larger than the share is not kept.
 */
const SET_SCRIPT = `
local size = string.len(ARGV[2])
local share = tonumber(ARGV[3])
if share < 0 then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
if size > share then return 0 end
local used = tonumber(redis.call('GET', KEYS[4]) or '0')
local old = redis.call('HGET', KEYS[3], ARGV[1])
if old then
  used = used - tonumber(old)
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
while used + size > share do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #oldest == 0 then
    used = 0
    redis.call('DEL', KEYS[3])
    break
  end
  local s = tonumber(redis.call('HGET', KEYS[3], oldest[1]) or '0')
  redis.call('UNLINK', ARGV[4] .. oldest[1])
  redis.call('ZREM', KEYS[2], oldest[1])
  redis.call('HDEL', KEYS[3], oldest[1])
  used = used - s
end
if used < 0 then used = 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], size)
redis.call('SET', KEYS[4], used + size)
return 1
`;

/** Drop a namespace. KEYS: lru, sizes, bytes, seq. ARGV: the entry key prefix. */
const DROP_SCRIPT = `
local keys = redis.call('ZRANGE', KEYS[1], 0, -1)
for i = 1, #keys do redis.call('UNLINK', ARGV[1] .. keys[i]) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return #keys
`;

/** The scripts as ioredis defines them (EVALSHA, EVAL once when Redis lacks the script). */
interface CacheCommands {
  wardenCacheGetBuffer(entry: string, lru: string, sizes: string, bytes: string, seq: string, key: string, max: number): Promise<Buffer | null>;
  wardenCacheSet(
    entry: string,
    lru: string,
    sizes: string,
    bytes: string,
    seq: string,
    key: string,
    value: Buffer,
    share: number,
    prefix: string,
  ): Promise<number>;
  wardenCacheDrop(lru: string, sizes: string, bytes: string, seq: string, prefix: string): Promise<number>;
}

type Client = Redis & CacheCommands;

/** What the server gives the Redis cache besides its settings. */
export interface RedisCacheOptions {
  /**
   * A tenant's share, bytes (its `max_cache_bytes` quota; not a positive number = caches nothing).
   * Read at each insertion and lookup. Absent (single-user mode): namespaces are not accounted.
   */
  shareOf?: (tenant: string) => number;
  logger: Logger;
  /** Called once per failed command (`lookup`, `insert`, `drop`): the server's error counter. */
  onError?: (operation: 'lookup' | 'insert' | 'drop') => void;
}

/** The keys of one namespace. */
function namespaceKeys(tenant: string): { entry: string; lru: string; sizes: string; bytes: string; seq: string } {
  const ns = `${PREFIX}{${tenant === '' ? 'op' : `t.${tenant}`}}:`;
  return { entry: `${ns}e:`, lru: `${ns}lru`, sizes: `${ns}sizes`, bytes: `${ns}bytes`, seq: `${ns}seq` };
}

/** ioredis's TLS options from Triton's keys (files read now). @throws Error when a file cannot be read */
async function tlsOptions(config: RedisCacheConfig): Promise<ConnectionOptions | undefined> {
  const tls = config.tls;
  if (!tls) return undefined;
  const ca: Buffer[] = [];
  if (tls.cacert) ca.push(await readFile(tls.cacert));
  if (tls.cacertDir) {
    for (const name of (await readdir(tls.cacertDir)).sort()) {
      if (/\.(pem|crt)$/i.test(name)) ca.push(await readFile(join(tls.cacertDir, name)));
    }
  }
  return {
    cert: tls.cert ? await readFile(tls.cert) : undefined,
    key: tls.key ? await readFile(tls.key) : undefined,
    ca: ca.length > 0 ? ca : undefined,
    servername: tls.sni ?? config.host,
  };
}

export class RedisResponseCache implements ResponseCacheStore {
  readonly shared = true;
  private next = 0;
  private failures = 0;
  private lastLogMs = -Infinity;
  private closed = false;
  /** A command failed since the last (re)connection. */
  private degraded = false;

  private constructor(
    private readonly clients: Client[],
    private readonly opts: RedisCacheOptions,
  ) {
    for (const c of clients) {
      // A listener keeps ioredis from reporting an unhandled 'error' event; commands fail on their own.
      c.on('error', (e: Error) => this.failed('connection', e));
      c.on('ready', () => {
        if (!this.degraded) return;
        this.degraded = false;
        this.opts.logger.info({ failures: this.failures }, 'response cache: Redis reachable again');
      });
    }
  }

  /**
   * Connect `config.poolSize` clients and PING (Triton pings at start-up).
   * @throws TritonError INTERNAL {@link cacheErrors.redisInitFailed} when a TLS file cannot be
   *   read, or Redis cannot be reached, refuses the credentials or does not answer the PING
   */
  static async connect(config: RedisCacheConfig, opts: RedisCacheOptions): Promise<RedisResponseCache> {
    let tls: ConnectionOptions | undefined;
    try {
      tls = await tlsOptions(config);
    } catch (e) {
      throw cacheErrors.redisInitFailed((e as Error).message);
    }
    const options: RedisOptions = {
      host: config.host,
      port: config.port,
      username: config.user,
      password: config.password,
      db: config.db,
      tls,
      connectTimeout: config.connectTimeoutMs,
      commandTimeout: config.socketTimeoutMs,
      // Fail at once while disconnected, and never resend after a reconnect: a miss now beats a late answer.
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      // Reconnect for ever, backing off to one attempt a second.
      retryStrategy: (attempt: number) => Math.min(50 * attempt, 1000),
      lazyConnect: true,
    };
    const clients: Client[] = [];
    try {
      for (let i = 0; i < config.poolSize; i++) {
        const c = new Redis(options) as Client;
        clients.push(c);
        c.defineCommand('wardenCacheGet', { numberOfKeys: 5, lua: GET_SCRIPT });
        c.defineCommand('wardenCacheSet', { numberOfKeys: 5, lua: SET_SCRIPT });
        c.defineCommand('wardenCacheDrop', { numberOfKeys: 4, lua: DROP_SCRIPT });
        // ioredis keeps retrying after a failed first connect: the first failure decides start-up.
        const failed = new Promise<never>((_, reject) => c.once('error', reject));
        await Promise.race([c.connect(), failed]);
        await c.ping();
      }
    } catch (e) {
      for (const c of clients) c.disconnect();
      throw cacheErrors.redisInitFailed((e as Error).message);
    }
    return new RedisResponseCache(clients, opts);
  }

  /** The next pooled client (round robin). */
  private client(): Client {
    const c = this.clients[this.next]!;
    this.next = (this.next + 1) % this.clients.length;
    return c;
  }

  /** The most bytes `tenant` may hold (−1: not accounted) and read back. */
  private bounds(tenant: string): { share: number; max: number } {
    if (tenant === '' || !this.opts.shareOf) return { share: -1, max: MAX_REDIS_ENTRY_BYTES };
    const s = this.opts.shareOf(tenant);
    const share = Number.isFinite(s) && s > 0 ? Math.floor(s) : 0;
    return { share, max: Math.min(share, MAX_REDIS_ENTRY_BYTES) };
  }

  async get(tenant: string, key: string): Promise<InferenceResponse | undefined> {
    const { max } = this.bounds(tenant);
    if (max <= 0) return undefined;
    const k = namespaceKeys(tenant);
    try {
      const buf = await this.client().wardenCacheGetBuffer(k.entry + key, k.lru, k.sizes, k.bytes, k.seq, key, max);
      return buf ? decodeEntry(buf, max) : undefined;
    } catch (e) {
      this.failed('lookup', e as Error);
      return undefined;
    }
  }

  set(tenant: string, key: string, response: InferenceResponse): void {
    const { share, max } = this.bounds(tenant);
    if (max <= 0 || response.outputs.reduce((n, t) => n + t.data.length, 0) > max) return;
    const value = encodeEntry(response);
    if (value.length > max) return;
    const k = namespaceKeys(tenant);
    this.client()
      .wardenCacheSet(k.entry + key, k.lru, k.sizes, k.bytes, k.seq, key, value, share, k.entry)
      .catch((e: Error) => this.failed('insert', e));
  }

  dropTenant(tenant: string): void {
    const k = namespaceKeys(tenant);
    this.client()
      .wardenCacheDrop(k.lru, k.sizes, k.bytes, k.seq, k.entry)
      .catch((e: Error) => this.failed('drop', e));
  }

  /** Close every connection (pending commands fail: misses). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.clients.map((c) => c.quit().catch(() => c.disconnect())));
  }

  /** Count a failed command and log, at most every {@link ERROR_LOG_INTERVAL_MS}. */
  private failed(operation: 'lookup' | 'insert' | 'drop' | 'connection', e: Error): void {
    if (this.closed) return;
    if (operation !== 'connection') this.opts.onError?.(operation);
    this.failures++;
    this.degraded = true;
    const now = Date.now();
    if (now - this.lastLogMs < ERROR_LOG_INTERVAL_MS) return;
    this.lastLogMs = now;
    this.opts.logger.warn({ operation, failures: this.failures, err: e.message }, 'response cache: Redis failed (lookups miss, insertions are dropped)');
  }
}
