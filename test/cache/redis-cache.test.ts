/**
 * The Redis response cache (`--cache-config redis,...`, cache/redis-cache.ts) against a real
 * `redis-server`: Triton's settings on the command line, the entry format (what comes back from
 * Redis is checked and bounded before it is decoded), per-tenant shares kept by the Lua scripts,
 * and failures that are misses, never errors.
 */
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeEntry, encodeEntry } from '../../host/src/cache/entry-codec.js';
import { RedisResponseCache } from '../../host/src/cache/redis-cache.js';
import { parseRedisCacheConfig, type RedisCacheConfig } from '../../host/src/cache/redis-config.js';
import { parseCli } from '../../host/src/cli-options.js';
import type { InferenceResponse } from '../../host/src/contract/types.js';
import { redisServerMissing, startRedis, type RedisTestServer } from '../helpers/redis-server.js';

const ADDRESS_MISSING =
  "Failed to initialize RedisCache, didn't specify address. Must at a minimum specify 'host' and 'port' in the configuration - e.g. tritonserver --cache-config redis,host=redis --cache-config redis,port=6379 --model-repository=/models ...";

const cli = (...settings: string[]) => parseCli(['--model-repository=/m', ...settings.map((s) => `--cache-config=redis,${s}`)]);

describe('--cache-config redis,<key>=<value> (Triton redis_cache src/redis_cache.cc)', () => {
  it('reads every key Triton reads', () => {
    const opts = cli(
      'host=redis.internal',
      'port=6380',
      'user=warden',
      'password=p=a,ss',
      'db=3',
      'connect_timeout=500',
      'socket_timeout=250',
      'pool_size=4',
      'wait_timeout=50',
      'cert=/tls/client.crt',
      'key=/tls/client.key',
      'cacert=/tls/ca.crt',
      'cacert_dir=/tls/cas',
      'sni=redis.example',
    );
    expect(opts.redisCache).toEqual({
      host: 'redis.internal',
      port: 6380,
      user: 'warden',
      password: 'p=a,ss',
      db: 3,
      connectTimeoutMs: 500,
      socketTimeoutMs: 250,
      poolSize: 4,
      waitTimeoutMs: 50,
      tls: { cert: '/tls/client.crt', key: '/tls/client.key', cacert: '/tls/ca.crt', cacertDir: '/tls/cas', sni: 'redis.example' },
    });
    expect(opts.responseCacheBytes).toBeUndefined();
    expect(opts.notes.ignoredFlags).toEqual([]);
  });

  it('defaults: db 0, pool of 1, 1000 ms to connect, 100 ms per command (also for socket_timeout=0: never wait for ever), no TLS', () => {
    expect(cli('host=h', 'port=1').redisCache).toEqual({
      host: 'h',
      port: 1,
      user: undefined,
      password: undefined,
      db: 0,
      connectTimeoutMs: 1000,
      socketTimeoutMs: 100,
      poolSize: 1,
      waitTimeoutMs: 100,
      tls: undefined,
    });
    expect(cli('host=h', 'port=1', 'socket_timeout=0').redisCache?.socketTimeoutMs).toBe(100);
    // any TLS key turns TLS on
    expect(cli('host=h', 'port=1', 'sni=x').redisCache?.tls).toEqual({ sni: 'x', cert: undefined, key: undefined, cacert: undefined, cacertDir: undefined });
  });

  it("refuses a missing host or port with Triton's text, bad numbers, and a second cache; warns of keys Triton does not read", () => {
    expect(() => cli('host=h')).toThrow(ADDRESS_MISSING);
    expect(() => cli('port=6379')).toThrow(ADDRESS_MISSING);
    expect(() => cli('host=', 'port=6379')).toThrow(ADDRESS_MISSING);
    expect(() => cli('host=h', 'port=0')).toThrow("--cache-config=redis,port=0: 'port' expects an integer from 1 to 65535");
    expect(() => cli('host=h', 'port=1', 'socket_timeout=-5')).toThrow(/'socket_timeout' expects an integer/);
    expect(() => cli('host=h', 'port=1', 'pool_size=0')).toThrow(/'pool_size' expects an integer from 1/);
    expect(() => parseCli(['--model-repository=/m', '--cache-config=redis,host=h', '--cache-config=local,size=1'])).toThrow(
      'found multiple cache configurations, but only a single cache is currently supported',
    );
    expect(cli('host=h', 'port=1', 'ttl=5').notes.ignoredFlags).toEqual(['--cache-config=redis,ttl=5']);
  });
});

/** A response of one UINT8 output of `n` bytes. */
const out = (n: number, fill = n % 256): InferenceResponse => ({ outputs: [{ name: 'O', datatype: 'UINT8', shape: [n], data: new Uint8Array(n).fill(fill) }] });

describe('entry format', () => {
  it('round-trips outputs and parameters (bigints included)', () => {
    const r: InferenceResponse = {
      outputs: [
        { name: 'A', datatype: 'INT32', shape: [1, 2], data: new Uint8Array([1, 0, 0, 0, 2, 0, 0, 0]) },
        { name: 'B', datatype: 'BYTES', shape: [0], data: new Uint8Array() },
      ],
      parameters: { s: 'x', n: 1.5, b: true, big: 2n ** 63n - 1n },
    };
    const buf = encodeEntry(r);
    expect(decodeEntry(buf, buf.length)).toEqual(r);
  });

  it('is not decoded when larger than the bound, truncated, padded or malformed', () => {
    const buf = encodeEntry(out(10));
    expect(decodeEntry(buf, buf.length - 1)).toBeUndefined();
    expect(decodeEntry(buf.subarray(0, buf.length - 1), 1e6)).toBeUndefined();
    expect(decodeEntry(Buffer.concat([buf, Buffer.from([0])]), 1e6)).toBeUndefined();
    expect(decodeEntry(Buffer.from('WRC1\x00\x00\x00\x02{}'), 1e6)).toBeUndefined();
    expect(decodeEntry(Buffer.from('WRC1\x00\x00\x01\x00{}'), 1e6)).toBeUndefined();
    expect(decodeEntry(Buffer.from('not an entry at all'), 1e6)).toBeUndefined();
    const badType = Buffer.from(buf.toString('latin1').replace('"UINT8"', '"UINT9"'), 'latin1');
    expect(decodeEntry(badType, 1e6)).toBeUndefined();
  });
});

const missing = redisServerMissing();

describe.skipIf(missing !== undefined)(`against redis-server${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let redis: RedisTestServer;
  let inspect: Redis;
  const silent = pino({ level: 'silent' });
  const config = (over: Partial<RedisCacheConfig> = {}): RedisCacheConfig => ({
    ...parseRedisCacheConfig(
      new Map([
        ['host', redis.host],
        ['port', String(redis.port)],
        ['socket_timeout', '2000'],
      ]),
    ),
    ...over,
  });
  /** Bytes held in Redis by `tenant`'s entries (every value under its namespace's entry prefix). */
  const held = async (tenant: string): Promise<{ entries: number; bytes: number }> => {
    const keys = await inspect.keys(`warden:rc:{t.${tenant}}:e:*`);
    let bytes = 0;
    for (const k of keys) bytes += await inspect.strlen(k);
    return { entries: keys.length, bytes };
  };

  beforeAll(async () => {
    redis = await startRedis();
    inspect = new Redis({ host: redis.host, port: redis.port, lazyConnect: true });
    await inspect.connect();
  });
  afterAll(async () => {
    inspect?.disconnect();
    await redis?.stop();
  });
  const opened: RedisResponseCache[] = [];
  afterEach(async () => {
    while (opened.length) await opened.pop()!.close();
  });
  /** A cache on the test's Redis (closed after the test). */
  const open = async (...args: Parameters<typeof RedisResponseCache.connect>) => {
    const c = await RedisResponseCache.connect(...args);
    opened.push(c);
    return c;
  };

  it("a tenant filling its share evicts only its own least recently used entries, never another tenant's or the operator's", async () => {
    await inspect.flushall();
    const entry = encodeEntry(out(100)).length;
    const cache = await open(config(), { shareOf: (t) => (t === 'attacker' ? 4 * entry : 100 * entry), logger: silent });
    cache.set('victim', 'v', out(100));
    cache.set('', 'op', out(100));
    for (let i = 0; i < 50; i++) cache.set('attacker', `k${i}`, out(100, i));
    expect(await cache.get('attacker', 'k49')).toEqual(out(100, 49)); // commands are ordered: every insertion ran
    expect(await cache.get('victim', 'v')).toEqual(out(100));
    expect(await cache.get('', 'op')).toEqual(out(100));
    expect(await held('attacker')).toEqual({ entries: 4, bytes: 4 * entry });
    expect(Number(await inspect.get('warden:rc:{t.attacker}:bytes'))).toBe(4 * entry);
    expect(await cache.get('attacker', 'k45')).toBeUndefined();
    // a lookup refreshes: k46 survives the next insertion, k47 (now least recent) goes
    expect(await cache.get('attacker', 'k46')).toBeDefined();
    cache.set('attacker', 'k50', out(100));
    expect(await cache.get('attacker', 'k46')).toBeDefined();
    expect(await cache.get('attacker', 'k47')).toBeUndefined();
    // the same key is another namespace's miss
    expect(await cache.get('victim', 'k49')).toBeUndefined();
    expect(await cache.get('attacker', 'v')).toBeUndefined();
    // larger than the share: not kept; a share of 0 caches nothing
    cache.set('attacker', 'huge', out(5 * entry));
    expect(await cache.get('attacker', 'huge')).toBeUndefined();
    expect(await held('attacker')).toEqual({ entries: 4, bytes: 4 * entry });
  });

  it('what Redis holds is bounded and checked before it is decoded: malformed or oversized entries are misses', async () => {
    await inspect.flushall();
    const entry = encodeEntry(out(100)).length;
    const cache = await open(config(), { shareOf: () => 2 * entry, logger: silent });
    cache.set('t', 'good', out(100));
    expect(await cache.get('t', 'good')).toEqual(out(100));
    // someone with access to Redis writes garbage, and a value larger than the tenant's share
    await inspect.set('warden:rc:{t.t}:e:good', 'garbage');
    expect(await cache.get('t', 'good')).toBeUndefined();
    await inspect.set('warden:rc:{t.t}:e:big', encodeEntry(out(3 * entry)));
    expect(await cache.get('t', 'big')).toBeUndefined();
  });

  it("a value Redis evicted on its own (maxmemory) leaves no stale accounting; a dropped tenant's entries are gone", async () => {
    await inspect.flushall();
    const entry = encodeEntry(out(100)).length;
    const cache = await open(config(), { shareOf: () => 2 * entry, logger: silent });
    cache.set('t', 'a', out(100));
    cache.set('t', 'b', out(100));
    expect(await cache.get('t', 'b')).toBeDefined();
    await inspect.del('warden:rc:{t.t}:e:a'); // as an allkeys-lru eviction would
    expect(await cache.get('t', 'a')).toBeUndefined();
    expect(Number(await inspect.get('warden:rc:{t.t}:bytes'))).toBe(entry);
    cache.set('t', 'c', out(100)); // fits beside b: the evicted value no longer counts
    expect(await cache.get('t', 'b')).toBeDefined();
    expect(await cache.get('t', 'c')).toBeDefined();
    cache.set('u', 'x', out(100));
    cache.dropTenant('t');
    expect(await cache.get('u', 'x')).toBeDefined();
    expect(await inspect.keys('warden:rc:{t.t}:*')).toEqual([]);
  });

  it('start-up fails as Triton does when Redis cannot be reached', async () => {
    const { freePort } = await import('../helpers/repo.js');
    const port = await freePort();
    await expect(RedisResponseCache.connect(config({ port, connectTimeoutMs: 500 }), { logger: silent })).rejects.toThrow(
      /^Failed to initialize RedisCache: .*ECONNREFUSED/,
    );
  });

  it('a hung Redis costs each lookup at most socket_timeout, then a miss; failures are counted; it answers again after', async () => {
    await inspect.flushall();
    const errors: string[] = [];
    const cache = await open(config({ socketTimeoutMs: 200 }), { logger: silent, onError: (op) => errors.push(op) });
    cache.set('', 'k', out(10));
    expect(await cache.get('', 'k')).toEqual(out(10));
    redis.pause();
    try {
      expect(await cache.get('', 'k')).toBeUndefined();
      cache.set('', 'k2', out(10));
      expect(await cache.get('', 'k')).toBeUndefined();
    } finally {
      redis.resume();
    }
    expect(errors).toEqual(['lookup', 'insert', 'lookup']);
    expect(await cache.get('', 'k')).toEqual(out(10));
  });
});
