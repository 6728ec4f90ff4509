/**
 * Warden servers sharing one Redis response cache (`--cache-config redis,...`), against a real
 * `redis-server`: a response computed by one replica is a hit on another (Triton's statistics and
 * metrics show it); a reload with changed files misses; tenants never see each other's entries
 * and stay within their shares; password, ACL user and TLS settings; a Redis outage degrades to
 * misses and hits resume when it returns.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseRedisCacheConfig, type RedisCacheConfig } from '../../host/src/cache/redis-config.js';
import type { RunningServer, ServerOptions } from '../../host/src/server.js';
import { redisServerMissing, startRedis, type RedisServerOptions, type RedisTestServer } from '../helpers/redis-server.js';
import { fetchAs, simpleRequest, tempRepo, type TempRepo } from '../helpers/repo.js';
import { startTenantServer, startTestServer, type TenantServer } from '../helpers/servers.js';
import { until } from '../helpers/wait.js';

const missing = redisServerMissing();
const A = Array.from({ length: 16 }, (_, i) => i);
const MODEL = 'simple_cached';

/** `--cache-config redis,<key>=<value>` for `redis`, `settings` over the address. */
const redisSettings = (redis: RedisTestServer, settings: Record<string, string> = {}): RedisCacheConfig =>
  parseRedisCacheConfig(new Map(Object.entries({ host: redis.host, port: String(redis.port), socket_timeout: '2000', ...settings })));

describe.skipIf(missing !== undefined)(`replicas sharing a Redis response cache${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let repo: TempRepo;
  const cleanups: (() => Promise<void> | void)[] = [];
  const later = (f: () => Promise<void> | void) => cleanups.push(f);
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  beforeAll(() => {
    repo = tempRepo();
    const dir = repo.addExample('simple', MODEL);
    const cfg = readFileSync(join(dir, 'config.pbtxt'), 'utf8').replace('name: "simple"', `name: "${MODEL}"`);
    writeFileSync(join(dir, 'config.pbtxt'), `${cfg}\nresponse_cache { enable: true }\n`);
  });
  afterAll(() => repo?.cleanup());

  const redisServer = async (opts: RedisServerOptions = {}) => {
    const r = await startRedis(opts);
    later(() => r.stop());
    return r;
  };
  const warden = async (redisCache: RedisCacheConfig, opts: Partial<ServerOptions> = {}) => {
    const s = await startTestServer(repo, { loadModels: [MODEL], metricsPort: 0, redisCache, ...opts });
    later(() => s.stop());
    return s;
  };
  const infer = async (s: RunningServer, a = A, token?: string) => {
    const r = await fetchAs(token, 'POST', `${s.httpUrl}/v2/models/${MODEL}/infer`, simpleRequest('INT32', a, Array(16).fill(1)));
    expect(r.status, r.text).toBe(200);
    expect(r.json.outputs.find((o: { name: string }) => o.name === 'OUTPUT0').data).toEqual(a.map((x) => x + 1));
  };
  /** The model's cache statistics and executions on `s`. */
  const stats = async (s: RunningServer, token?: string) => {
    const m = (await fetchAs(token, 'GET', `${s.httpUrl}/v2/models/${MODEL}/stats`)).json.model_stats[0];
    return { hits: m.inference_stats.cache_hit.count as number, misses: m.inference_stats.cache_miss.count as number, executions: m.execution_count as number };
  };

  it('a response computed by replica A is a hit on replica B: no execution on B, counted in its statistics and metrics', async () => {
    const redis = await redisServer();
    const a = await warden(redisSettings(redis));
    const b = await warden(redisSettings(redis));
    await infer(a);
    expect(await stats(a)).toEqual({ hits: 0, misses: 1, executions: 1 });
    const inspect = new Redis({ host: redis.host, port: redis.port });
    later(() => void inspect.disconnect());
    await until(async () => (await inspect.keys('warden:rc:{op}:e:*')).length === 1, { what: 'the insertion' });
    await infer(b);
    await infer(b);
    expect(await stats(b)).toEqual({ hits: 2, misses: 0, executions: 0 });
    const metrics = await (await fetch(`${b.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`nv_cache_num_hits_per_model\\{model="${MODEL}",version="1"\\} 2`));
    expect(metrics).toMatch(new RegExp(`nv_cache_hit_duration_per_model\\{model="${MODEL}",version="1"\\} \\d`));
    expect(metrics).not.toMatch(/warden_response_cache_errors_total\{/);
    // another request is B's own miss, then A's hit
    const other = A.map((x) => x * 3);
    await infer(b, other);
    await until(async () => {
      await infer(a, other);
      return (await stats(a)).hits === 1;
    });
  });

  it('a reload with the same files keeps hitting; a reload with changed files misses', async () => {
    const redis = await redisServer();
    const a = await warden(redisSettings(redis));
    const reload = async () => {
      const r = await fetchAs(undefined, 'POST', `${a.httpUrl}/v2/repository/models/${MODEL}/load`, {});
      expect(r.status, r.text).toBe(200);
    };
    await infer(a);
    await reload();
    await until(async () => {
      await infer(a);
      return (await stats(a)).hits > 0;
    });
    expect((await stats(a)).executions).toBe(0);
    appendFileSync(join(repo.path, MODEL, 'config.pbtxt'), '\n# changed\n');
    await reload();
    await infer(a);
    expect(await stats(a)).toEqual({ hits: 0, misses: 1, executions: 1 });
  });

  it("tenants never see each other's entries on any replica, and one filling its share evicts only its own", async () => {
    const redis = await redisServer();
    const share = 1500;
    const tenants = [
      { id: 'small', token: 'tok-small', shared_models: [MODEL], quotas: { max_cache_bytes: share } },
      { id: 'other', token: 'tok-other', shared_models: [MODEL] },
      { id: 'ops', token: 'tok-ops', role: 'admin' as const },
    ];
    const opts = { loadModels: [MODEL], metricsPort: 0, redisCache: redisSettings(redis) };
    const servers: TenantServer[] = [];
    for (let i = 0; i < 2; i++) {
      const t = await startTenantServer(repo, tenants, opts);
      later(() => t.stop());
      servers.push(t);
    }
    const [a, b] = servers.map((t) => t.server) as [RunningServer, RunningServer];
    const inspect = new Redis({ host: redis.host, port: redis.port });
    later(() => void inspect.disconnect());
    await infer(a, A, 'tok-other');
    await until(async () => (await inspect.keys('warden:rc:{t.other}:e:*')).length === 1, { what: "other's entry" });
    // the same request by another tenant, on either replica: a miss, executed
    await infer(b, A, 'tok-small');
    expect(await stats(b, 'tok-ops')).toEqual({ hits: 0, misses: 1, executions: 1 });
    // `small` fills far more than its share
    for (let i = 1; i <= 20; i++)
      await infer(
        a,
        A.map((x) => x + i * 100),
        'tok-small',
      );
    await until(async () => Number(await inspect.get('warden:rc:{t.small}:seq')) >= 21, { what: "small's insertions" });
    const keys = await inspect.keys('warden:rc:{t.small}:e:*');
    let bytes = 0;
    for (const k of keys) bytes += await inspect.strlen(k);
    expect(keys.length).toBeGreaterThan(1);
    expect(bytes).toBeLessThanOrEqual(share);
    expect(Number(await inspect.get('warden:rc:{t.small}:bytes'))).toBe(bytes);
    // other's entry survived: a hit on B
    const before = await stats(b, 'tok-ops');
    await infer(b, A, 'tok-other');
    expect(await stats(b, 'tok-ops')).toEqual({ ...before, hits: before.hits + 1 });
  });

  it('password (default user) and an ACL user; a wrong password fails start-up as Triton does', async () => {
    const redis = await redisServer({ password: 'pw-default', aclUser: { name: 'warden', password: 'pw-acl' } });
    for (const settings of [{ password: 'pw-default' }, { user: 'warden', password: 'pw-acl' }] as Record<string, string>[]) {
      const s = await warden(redisSettings(redis, settings));
      await infer(s);
      await until(async () => {
        await infer(s);
        return (await stats(s)).hits > 0;
      });
    }
    await expect(warden(redisSettings(redis, { user: 'warden', password: 'wrong' }))).rejects.toThrow(/^Failed to initialize RedisCache: WRONGPASS/);
    await expect(warden(redisSettings(redis))).rejects.toThrow(/^Failed to initialize RedisCache: NOAUTH/);
  });

  it('TLS with a client certificate (cacert or cacert_dir, sni); without the certificate start-up fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-redis-tls-'));
    later(() => rmSync(dir, { recursive: true, force: true }));
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    // One self-signed certificate: the server's, the client's and the CA that signs both.
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
      ],
      {
        stdio: 'ignore',
      },
    );
    mkdirSync(join(dir, 'cas'));
    writeFileSync(join(dir, 'cas', 'ca.crt'), readFileSync(cert));
    const redis = await redisServer({ tls: { cert, key, ca: cert, authClients: true } });
    for (const ca of [{ cacert: cert }, { cacert_dir: join(dir, 'cas') }] as Record<string, string>[]) {
      const s = await warden(redisSettings(redis, { ...ca, cert, key, sni: 'localhost' }));
      await infer(s);
      await until(async () => {
        await infer(s);
        return (await stats(s)).hits > 0;
      });
    }
    await expect(warden(redisSettings(redis, { cacert: cert, sni: 'localhost' }))).rejects.toThrow(/^Failed to initialize RedisCache: /);
  });

  it('Redis killed mid-traffic: every request is still answered (misses, counted as errors); hits resume when it is back', async () => {
    const redis = await redisServer();
    const s = await warden(redisSettings(redis, { socket_timeout: '300' }));
    await infer(s);
    await until(async () => {
      await infer(s);
      return (await stats(s)).hits > 0;
    });
    const traffic = (async () => {
      for (let i = 0; i < 30; i++)
        await infer(
          s,
          A.map((x) => x + (i % 3)),
        );
    })();
    await redis.kill();
    await traffic;
    for (let i = 0; i < 5; i++) await infer(s);
    const during = await stats(s);
    expect(during.misses).toBeGreaterThan(1);
    const metrics = await (await fetch(`${s.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/warden_response_cache_errors_total\{operation="lookup"\} [1-9]/);
    // a hung Redis (SIGSTOP) costs socket_timeout, then a miss
    await redis.restart();
    redis.pause();
    await infer(s, [7, ...A.slice(1)]);
    redis.resume();
    // back (empty: no persistence): the first request refills, the next ones hit
    await until(
      async () => {
        await infer(s);
        return (await stats(s)).hits > during.hits;
      },
      { within: 15_000, what: 'hits after Redis restarted' },
    );
  });
});
