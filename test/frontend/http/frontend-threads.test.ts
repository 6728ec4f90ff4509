/**
 * Front-end threads (`--http-threads`, frontend/http/threads/): a server with
 * two threads answers the fast-path matrix (test/helpers/http-matrix.ts) byte for byte as the
 * single-loop server does, whichever listener of the SO_REUSEPORT group the kernel gives each
 * connection; routes the threads do not claim reach Fastify through the internal proxy; tenancy
 * (401, 429 after the tarpit) is the same; a client address header sent from outside is ignored;
 * bad `--http-threads` values are refused; a thread that dies is started again; stop() leaves no
 * thread, listener or socket directory behind.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { type Socket, createServer as createNetServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError, parseCli } from '../../../host/src/cli-options.js';
import { fastPathCounters } from '../../../host/src/frontend/http/fast-path.js';
import { type RunningServer } from '../../../host/src/server.js';
import {
  exchange,
  JSON_TYPE,
  LIMITED_TOKEN,
  matrix,
  portOf,
  raw,
  simpleJson,
  startMatrixServer,
  tenancyAnswers,
  useMatrixRepository,
  writeLimitedTenants,
} from '../../helpers/http-matrix.js';
import { executed } from '../../helpers/js-backend.js';
import { sleep, until } from '../../helpers/wait.js';

const repoPath = useMatrixRepository();

// the JavaScript listener and its threads (the native data path has its own suite, data-path.test.ts)
const start = (threads: number, extra: object = {}) => startMatrixServer(repoPath(), { httpThreads: threads, httpDataPath: 'js', ...extra });

describe('--http-threads', () => {
  it('defaults to 0; 0..64 accepted; anything else refused with a clear error', () => {
    expect(parseCli(['--model-repository=/m']).httpThreads).toBe(0);
    expect(parseCli(['--model-repository=/m', '--http-threads=2']).httpThreads).toBe(2);
    expect(parseCli(['--model-repository=/m', '--http-threads=64']).httpThreads).toBe(64);
    for (const bad of ['-1', '65', 'two', '1.5', '']) {
      expect(() => parseCli(['--model-repository=/m', `--http-threads=${bad}`]), bad).toThrow(UsageError);
    }
    expect(() => parseCli(['--model-repository=/m', '--http-threads=65'])).toThrow(/--http-threads expects 0 .* to 64, got '65'/);
  });

  it('a port held by a socket without SO_REUSEPORT: startServer fails with a clear error', async () => {
    const holder = createNetServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as { port: number }).port;
    try {
      await expect(start(2, { httpPort: port, httpAddress: '127.0.0.1' })).rejects.toThrow(/cannot listen on 127\.0\.0\.1:\d+: address already in use/);
    } finally {
      holder.close();
    }
  });

  it('a host that does not resolve: startServer fails with a clear error', async () => {
    await expect(start(1, { httpAddress: 'no-such-host.invalid' })).rejects.toThrow(/cannot listen on no-such-host\.invalid:0: cannot resolve the host/);
  });
});

describe('two front-end threads answer as the single loop does', () => {
  let threaded: RunningServer;
  let single: RunningServer;
  beforeAll(async () => {
    // Explicit model control, all models loaded: the repository routes work on both.
    const extra = { modelControlMode: 'explicit', loadModels: ['*'] };
    [threaded, single] = await Promise.all([start(2, extra), start(0, extra)]);
  });
  afterAll(async () => {
    await Promise.all([threaded?.stop(), single?.stop()]);
  });

  for (const c of matrix()) {
    it(`${c.name}: identical answer`, async () => {
      const before = fastPathCounters.claimed;
      const a = await exchange(portOf(threaded), c.bytes, c.count ?? 1, c.heads);
      const claimed = fastPathCounters.claimed - before;
      const b = await exchange(portOf(single), c.bytes, c.count ?? 1, c.heads);
      // Claimed by a thread (then counted on the main thread when served from the ring) or by the
      // main thread's own fast path, when the kernel gave the connection to the main listener.
      // Two exceptions, where the proxy re-frames the body (hop-by-hop): undici sends a body-less
      // POST with `Content-Length: 0`, and a chunked body that has fully arrived with a
      // `Content-Length`; the main thread's fast path may then claim it (the same answer: both
      // paths call one implementation, which the byte comparison below checks).
      if (c.name === 'no Content-Length, no body' || c.name === 'chunked body') expect(claimed).toBeLessThanOrEqual(1);
      else expect(claimed).toBe(c.fast ? (c.count ?? 1) : 0);
      expect(a.map((r) => Number(r.head.split(' ')[1]))).toEqual(c.status);
      expect(a.map((r) => r.head)).toEqual(b.map((r) => r.head));
      expect(a.map((r) => r.body.toString('base64'))).toEqual(b.map((r) => r.body.toString('base64')));
    });
  }

  it('the kernel spreads new connections over the group: both threads serve from their rings, the rest goes through the proxy', async () => {
    const pool = threaded.httpThreads!;
    const served0 = [...pool.served];
    const threadedBefore = fastPathCounters.threaded;
    const proxiedBefore = pool.proxied;
    const answers = await Promise.all(
      Array.from({ length: 60 }, () => exchange(portOf(threaded), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE))),
    );
    for (const [r] of answers) expect(r!.head).toMatch(/^HTTP\/1.1 200/);
    const perThread = pool.served.map((n, i) => n - (served0[i] ?? 0));
    expect(perThread.length).toBe(2);
    for (const n of perThread) expect(n).toBeGreaterThan(0);
    expect(fastPathCounters.threaded - threadedBefore).toBe(perThread[0]! + perThread[1]!);
    expect(pool.proxied - proxiedBefore, 'plain /infer requests are never proxied').toBe(0);
    // Non-claimed routes on fresh connections: the ones a thread accepted went through the proxy.
    const routes = [
      raw('GET', '/v2/health/live'),
      raw('GET', '/v2/health/ready'),
      raw('GET', '/v2'),
      raw('GET', '/v2/models/simple'),
      raw('GET', '/v2/models/simple/config'),
      raw('GET', '/v2/models/simple/ready'),
      raw('POST', '/v2/repository/index', '{}', JSON_TYPE),
      raw('POST', '/v2/models/echo/generate', '{"INPUT0":[1,2,3,4]}', JSON_TYPE),
      raw('GET', '/nowhere'),
    ];
    for (let round = 0; round < 4; round++) {
      for (const bytes of routes) {
        const [a] = await exchange(portOf(threaded), bytes);
        const [b] = await exchange(portOf(single), bytes);
        expect(a!.head).toEqual(b!.head);
        expect(a!.body.toString()).toEqual(b!.body.toString());
      }
    }
    expect(pool.proxied - proxiedBefore).toBeGreaterThan(0);
  });

  it('model control through the proxy: unload and load again, then infer', async () => {
    const post = async (path: string) => {
      const out = [];
      for (const s of [threaded, single]) {
        const [r] = await exchange(portOf(s), raw('POST', path, '{}', JSON_TYPE));
        out.push(r!);
      }
      expect(out[0]!.head).toEqual(out[1]!.head);
      expect(out[0]!.body.toString()).toEqual(out[1]!.body.toString());
      return out[0]!;
    };
    expect((await post('/v2/repository/models/echo/unload')).head).toMatch(/^HTTP\/1.1 200/);
    expect((await post('/v2/models/echo/infer')).head).toMatch(/^HTTP\/1.1 (400|404)/);
    expect((await post('/v2/repository/models/echo/load')).head).toMatch(/^HTTP\/1.1 200/);
    const body = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}';
    const [r] = await exchange(portOf(threaded), raw('POST', '/v2/models/echo/infer', body, JSON_TYPE));
    expect(r!.head).toMatch(/^HTTP\/1.1 200/);
  });

  it('a client that goes away while its request is queued: cancelled over the thread port, never executed', async () => {
    const slowBody = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}';
    const runs = () => executed.filter((e) => e.model === 'slow').length;
    const pool = threaded.httpThreads!;
    const before = runs();
    const first = exchange(portOf(threaded), raw('POST', '/v2/models/slow/infer', slowBody, JSON_TYPE));
    await until(() => runs() > before); // the first holds the only instance for 600 ms
    // Several clients that leave: the kernel gives some of them to a thread (their cancel crosses the port).
    const servedBefore = pool.served.reduce((a, b) => a + b, 0);
    // 8 of them: the chance that none lands on a thread is (1/3)^8.
    await Promise.all(
      Array.from(
        { length: 8 },
        () =>
          new Promise<void>((resolve) => {
            const sock = connect(portOf(threaded), '127.0.0.1', () =>
              sock.write(raw('POST', '/v2/models/slow/infer', slowBody, JSON_TYPE), () => setTimeout(() => (sock.destroy(), resolve()), 100)),
            );
            sock.on('error', () => undefined);
          }),
      ),
    );
    const [r] = await first;
    expect(r!.head).toMatch(/^HTTP\/1.1 200/);
    await sleep(800); // long enough for another run, had one not been cancelled
    expect(runs() - before).toBe(1);
    expect(pool.served.reduce((a, b) => a + b, 0) - servedBefore, 'some went through a thread').toBeGreaterThan(0);
  });

  it('model unload under load: every request is answered (200 or an error), none hangs; then all 200 again', async () => {
    const body = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}';
    let stop = false;
    const statuses: string[] = [];
    const client = async () => {
      while (!stop) {
        const [r] = await exchange(portOf(threaded), raw('POST', '/v2/models/echo/infer', body, JSON_TYPE));
        statuses.push(r!.head.split(' ')[1]!);
      }
    };
    const clients = Array.from({ length: 4 }, client);
    await sleep(100);
    const [u] = await exchange(portOf(threaded), raw('POST', '/v2/repository/models/echo/unload', '{}', JSON_TYPE));
    expect(u!.head).toMatch(/^HTTP\/1.1 200/);
    await sleep(100);
    const [l] = await exchange(portOf(threaded), raw('POST', '/v2/repository/models/echo/load', '{}', JSON_TYPE));
    expect(l!.head).toMatch(/^HTTP\/1.1 200/);
    await sleep(100);
    stop = true;
    await Promise.all(clients);
    expect(statuses.length).toBeGreaterThan(8);
    expect(
      statuses.every((x) => ['200', '400', '404', '503'].includes(x)),
      statuses.join(' '),
    ).toBe(true);
    const after = await Promise.all(Array.from({ length: 10 }, () => exchange(portOf(threaded), raw('POST', '/v2/models/echo/infer', body, JSON_TYPE))));
    for (const [r] of after) expect(r!.head).toMatch(/^HTTP\/1.1 200/);
  });

  it('statistics count each request once', async () => {
    const countOf = async () =>
      (await (await fetch(`${threaded.httpUrl}/v2/models/simple/stats`)).json()).model_stats[0].inference_stats.success.count as number;
    const before = await countOf();
    await Promise.all(Array.from({ length: 20 }, () => exchange(portOf(threaded), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE))));
    expect((await countOf()) - before).toBe(20);
  });

  it('a front-end thread that dies is started again; requests go on', async () => {
    const pool = threaded.httpThreads!;
    const restarts = pool.restarts;
    pool.crash(0);
    await until(() => pool.restarts === restarts + 1 && pool.running === 2);
    const served0 = pool.served[0] ?? 0;
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => exchange(portOf(threaded), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE))),
    );
    for (const [r] of answers) expect(r!.head).toMatch(/^HTTP\/1.1 200/);
    expect((pool.served[0] ?? 0) - served0, 'the new thread 0 serves').toBeGreaterThan(0);
  });

  it('stop() drains, then leaves no thread, listener or socket directory behind', async () => {
    const pool = threaded.httpThreads!;
    const dir = pool.internalSocket;
    const port = portOf(threaded);
    // One request in flight (600 ms in its backend) while the server stops: it is answered.
    const running = executed.filter((e) => e.model === 'slow').length;
    const slow = exchange(
      port,
      raw('POST', '/v2/models/slow/infer', '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,3,4]}]}', JSON_TYPE),
    );
    // stop only once it executes (a fixed wait lost the race on a loaded CI machine: the request then arrived while closing, 503)
    await until(() => executed.filter((e) => e.model === 'slow').length > running);
    await threaded.stop();
    const [r] = await slow;
    expect(r!.head).toMatch(/^HTTP\/1.1 200/);
    expect(pool.running).toBe(0);
    expect(existsSync(dir)).toBe(false);
    const refused = await new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1', () => (s.destroy(), resolve('connected')));
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});

describe('--http-max-connections with front-end threads', () => {
  it('holds for all listeners together (not per thread); the connections inside it are served; closing one makes room', async () => {
    const s = await start(2, { httpLimits: { headerTimeoutMs: 10_000, requestTimeoutMs: 10_000, maxConnections: 4 } });
    const open: Socket[] = [];
    try {
      const port = portOf(s);
      const connectOne = () =>
        new Promise<Socket>((resolve, reject) => {
          const c = connect(port, '127.0.0.1', () => resolve(c));
          c.once('error', reject);
        });
      const stillOpen = (c: Socket) => !c.destroyed && !c.readableEnded;
      // 12 connections, one after another: the kernel spreads them over the 3 listeners
      for (let i = 0; i < 12; i++) {
        const c = await connectOne();
        c.on('error', () => undefined);
        c.on('end', () => c.destroy());
        open.push(c);
        await sleep(20);
      }
      await until(() => open.filter(stillOpen).length <= 4, { within: 5_000 });
      await sleep(200);
      const kept = open.filter(stillOpen);
      expect(kept).toHaveLength(4);
      const served = await Promise.all(
        kept.map(
          (c) =>
            new Promise<string>((resolve) => {
              let text = '';
              c.on('data', (d) => (text += d.toString()));
              c.once('close', () => resolve(text));
              c.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
            }),
        ),
      );
      for (const t of served) expect(t).toMatch(/^HTTP\/1.1 200/);
      // the four closed: new connections are accepted and served again
      await sleep(100);
      const answers = await Promise.all(Array.from({ length: 4 }, () => exchange(portOf(s), raw('GET', '/v2/health/live'))));
      for (const [r] of answers) expect(r!.head).toMatch(/^HTTP\/1.1 200/);
    } finally {
      for (const c of open) c.destroy();
      await s.stop();
    }
  });
});

describe('--http-main-listener=false: only the threads accept', () => {
  it('parses; every plain /infer crosses a ring, other routes the proxy; stop() leaves nothing behind', async () => {
    expect(parseCli(['--model-repository=/m']).httpMainListener).toBe(true);
    expect(parseCli(['--model-repository=/m', '--http-threads=2', '--http-main-listener=false']).httpMainListener).toBe(false);
    const s = await start(2, { httpMainListener: false });
    try {
      const pool = s.httpThreads!;
      const claimed = fastPathCounters.claimed;
      const threadedBefore = fastPathCounters.threaded;
      const answers = await Promise.all(Array.from({ length: 30 }, () => exchange(portOf(s), raw('POST', '/v2/models/simple/infer', simpleJson(), JSON_TYPE))));
      for (const [r] of answers) expect(r!.head).toMatch(/^HTTP\/1.1 200/);
      expect(fastPathCounters.threaded - threadedBefore).toBe(30);
      expect(fastPathCounters.claimed - claimed).toBe(30);
      const proxied = pool.proxied;
      const [h] = await exchange(portOf(s), raw('GET', '/v2/health/ready'));
      expect(h!.head).toMatch(/^HTTP\/1.1 200/);
      expect(pool.proxied - proxied).toBe(1);
    } finally {
      await s.stop();
    }
    expect(s.httpThreads!.running).toBe(0);
    expect(existsSync(s.httpThreads!.internalSocket)).toBe(false);
  });
});

describe('multi-tenant with front-end threads', () => {
  let dir: string;
  let threaded: RunningServer;
  let single: RunningServer;
  const logLines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'warden-threads-tenants-'));
    const extra = { tenantsFile: writeLimitedTenants(dir), modelControlMode: 'explicit', loadModels: ['simple'] };
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
        cb();
      },
    });
    [threaded, single] = await Promise.all([start(2, { ...extra, logger: pino({ level: 'info' }, sink) }), start(0, extra)]);
  });
  afterAll(async () => {
    await Promise.all([threaded?.stop(), single?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('200, 200, then 429 with Retry-After after the tarpit; 401 without or with a wrong token', async () => {
    const { statuses } = await tenancyAnswers(LIMITED_TOKEN, portOf(threaded), portOf(single));
    expect(statuses).toEqual(['200', '200', '429', '401', '401', '429']);
  });

  it('a client address header sent from outside is ignored: the audit names the real peer', async () => {
    const pool = threaded.httpThreads!;
    const proxiedBefore = pool.proxied;
    logLines.length = 0;
    const spoof = { ...JSON_TYPE, Authorization: 'Bearer not-a-token-0123456789abcdefghij', 'X-Warden-Client-Address': '6.6.6.6' };
    for (let i = 0; i < 12; i++) {
      const [a] = await exchange(portOf(threaded), raw('POST', '/v2/models/simple/infer', simpleJson(), spoof));
      expect(a!.head).toMatch(/^HTTP\/1.1 401/);
    }
    // One address's failures are aggregated (tenancy/unauthenticated.ts): its first line at once, the rest later in one line.
    const audit = logLines.filter((l) => l.audit && l.event === 'auth_failure');
    expect(audit.length).toBeGreaterThanOrEqual(1);
    expect(audit.length).toBeLessThan(12);
    for (const l of audit) expect(String(l.remote)).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    // Some went through a thread and the proxy (the kernel spreads connections over 3 listeners).
    expect(pool.proxied - proxiedBefore).toBeGreaterThan(0);
  });
});
