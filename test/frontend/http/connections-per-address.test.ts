/**
 * `--http-max-connections-per-address` (DESIGN "Multi-tenancy": connections are budgeted before
 * authentication): one client address holding idle connections is refused past its cap, while
 * another address still connects and is served — on the single loop and with front-end threads
 * (the count is shared by every listener). Loopback aliases (127.0.0.2) stand for a second client.
 */
import { Server as HttpServer } from 'node:http';
import { type Socket, connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { UsageError, parseCli } from '../../../host/src/cli-options.js';
import { ConnectionBudget, addressKey } from '../../../host/src/frontend/http/connection-budget.js';
import type { RunningServer } from '../../../host/src/server.js';
import { startTestServer } from '../../helpers/servers.js';
import { PROJECT_ROOT } from '../../helpers/repo.js';
import { sleep } from '../../helpers/wait.js';

const running: RunningServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const c of sockets.splice(0)) c.destroy();
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

async function serve(threads: number, perAddress: number): Promise<number> {
  const s = await startTestServer(`${PROJECT_ROOT}/model_repository`, {
    httpThreads: threads,
    httpDataPath: 'js', // the native acceptor and the front-end threads; the data path's caps: data-path.test.ts
    httpLimits: { headerTimeoutMs: 10_000, requestTimeoutMs: 10_000, maxConnections: 100, maxConnectionsPerAddress: perAddress },
  });
  running.push(s);
  return Number(new URL(s.httpUrl).port);
}

const connectFrom = (port: number, localAddress: string) =>
  new Promise<Socket>((resolve, reject) => {
    const c = connect({ port, host: '127.0.0.1', localAddress }, () => resolve(c));
    c.once('error', reject);
    c.on('error', () => undefined);
    sockets.push(c);
  });

/** Whether the server closed `c` within `ms` (a refused connection is destroyed at accept). */
const closedWithin = (c: Socket, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (c.destroyed) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    c.on('data', () => undefined);
    c.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });

const live = (c: Socket) =>
  new Promise<string>((resolve) => {
    let text = '';
    c.on('data', (d) => (text += d.toString()));
    c.once('close', () => resolve(text));
    c.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  });

describe('connections capped per client address', () => {
  for (const threads of [0, 2]) {
    it(`threads=${threads}: the address's N+1th connection is refused; another address still connects and is served`, async () => {
      const port = await serve(threads, 3);
      const held: Socket[] = [];
      for (let i = 0; i < 6; i++) {
        // A refused connection is reset at accept: its connect may already fail.
        const c = await connectFrom(port, '127.0.0.1').catch(() => undefined);
        if (c) held.push(c);
        await sleep(20);
      }
      const closed = await Promise.all(held.map((c) => closedWithin(c, 1000)));
      expect(closed.filter((x) => !x)).toHaveLength(3); // exactly the cap stays open
      const other = await connectFrom(port, '127.0.0.2');
      expect(await live(other)).toMatch(/^HTTP\/1.1 200/);
      // the held ones are served too, and closing them makes room for the first address again
      const kept = held.filter((_, i) => !closed[i]);
      for (const t of await Promise.all(kept.map(live))) expect(t).toMatch(/^HTTP\/1.1 200/);
      await sleep(100);
      expect(await live(await connectFrom(port, '127.0.0.1'))).toMatch(/^HTTP\/1.1 200/);
    });
  }
});

describe('connections refused before the event loop sees them (native acceptor)', () => {
  it('a flood of connections over the cap makes no HTTP connection: only the admitted ones reach node:http', async () => {
    // Every connection node:http is given is one 'connection' event of an http.Server; a listener
    // that refuses in JS (Node's own accept, then a check) emits one per connection attempt.
    const emit = HttpServer.prototype.emit;
    let connections = 0;
    HttpServer.prototype.emit = function (this: HttpServer, event: string | symbol, ...rest: unknown[]) {
      if (event === 'connection') connections++;
      return (emit as (e: string | symbol, ...a: unknown[]) => boolean).call(this, event, ...rest);
    } as typeof emit;
    try {
      const port = await serve(0, 3);
      const attempts = await Promise.all(Array.from({ length: 60 }, () => connectFrom(port, '127.0.0.1').catch(() => undefined)));
      const closed = await Promise.all(attempts.map((c) => (c ? closedWithin(c, 1000) : true)));
      expect(closed.filter((x) => !x)).toHaveLength(3);
      expect(connections).toBe(3);
      // A second address is still admitted and served; the count follows.
      expect(await live(await connectFrom(port, '127.0.0.2'))).toMatch(/^HTTP\/1.1 200/);
      expect(connections).toBe(4);
    } finally {
      HttpServer.prototype.emit = emit;
    }
  });

  it('the server stops with adopted connections open (one answered and quiet, one that never sent a byte): it closes both, stops accepting and resolves', async () => {
    const port = await serve(0, 3);
    const silent = await connectFrom(port, '127.0.0.1');
    const used = await connectFrom(port, '127.0.0.1');
    // A keep-alive connection that has been answered once, then goes quiet.
    const first = new Promise<string>((resolve) => used.once('data', (d) => resolve(d.toString())));
    used.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await first).toMatch(/^HTTP\/1.1 200/);
    // Well inside the 30 s exit timeout: a connection with no request does not hold the stop
    // (without that, stop() waits the whole exit timeout).
    const stopped = running.splice(0)[0]!.stop();
    await Promise.race([stopped, new Promise((_, reject) => setTimeout(() => reject(new Error('stop() still waiting after 10 s')), 10_000))]);
    expect(await closedWithin(used, 1000)).toBe(true);
    expect(await closedWithin(silent, 1000)).toBe(true);
    await expect(connectFrom(port, '127.0.0.1')).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('the per-address count', () => {
  it('keys IPv4-mapped addresses as IPv4 and IPv6 by /64', () => {
    expect(addressKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(addressKey('10.0.0.1')).toBe('10.0.0.1');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:bbbb:0:0:7')).toBe('2001:db8:1:2::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey(undefined)).toBeUndefined();
  });

  it('is shared by budgets on the same memory (threads) and given back on release', () => {
    const mem = ConnectionBudget.memory(1, 2);
    const a = new ConnectionBudget(mem, 100);
    const b = new ConnectionBudget(mem, 100);
    expect(a.admitAddress('10.0.0.1')).toBe(true);
    expect(b.admitAddress('10.0.0.1')).toBe(true);
    expect(a.admitAddress('10.0.0.1')).toBe(false);
    expect(b.admitAddress('10.0.0.2')).toBe(true);
    b.releaseAddress('10.0.0.1');
    expect(a.admitAddress('10.0.0.1')).toBe(true);
  });

  it('--http-max-connections-per-address parses (0 = no cap) and refuses junk', () => {
    expect(parseCli(['--model-repository=/m']).httpLimits?.maxConnectionsPerAddress).toBe(128);
    expect(parseCli(['--model-repository=/m', '--http-max-connections-per-address=0']).httpLimits?.maxConnectionsPerAddress).toBe(0);
    expect(() => parseCli(['--model-repository=/m', '--http-max-connections-per-address=-1'])).toThrow(UsageError);
  });
});
