/**
 * Unauthenticated floods (DESIGN "Multi-tenancy"): failed authentications are counted per client
 * address (tenancy/unauthenticated.ts). Past the address's failure rate the 401 is held back by the
 * tarpit, and the audit log gets at most `burst + 1` lines per address per interval (the rest
 * aggregated into one line with a count) instead of one line per failure — over HTTP end to end,
 * and the same rule for gRPC peers.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { peerAddress } from '../../host/src/frontend/grpc/auth.js';
import { startTestServer } from '../helpers/servers.js';
import { hashToken } from '../../host/src/tenancy/token.js';
import { FailedAuthentications } from '../../host/src/tenancy/unauthenticated.js';
import { PROJECT_ROOT } from '../helpers/repo.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(c, _e, cb) {
        for (const l of String(c).split('\n')) if (l) lines.push(JSON.parse(l));
        cb();
      },
    }),
  );
  const audit = () => lines.filter((l) => l.audit === true && l.event === 'auth_failure');
  return { logger, audit };
}

describe('FailedAuthentications', () => {
  it('answers `burst` failures per window at once, holds the rest; audit: burst lines, then one aggregate per interval', () => {
    let t = 1_000_000;
    const { logger, audit } = capture();
    const f = new FailedAuthentications(logger, 'http', { burst: 5, windowMs: 1000, auditIntervalMs: 10_000 }, () => t);
    const delays = Array.from({ length: 1000 }, () => f.failed('10.0.0.1', 'unknown'));
    expect(delays.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(delays.slice(5).every((d) => d === 250)).toBe(true);
    expect(audit()).toHaveLength(5);
    // another address is not held back by the first one's flood
    expect(f.failed('10.0.0.2', 'missing')).toBe(0);
    // the window ends: answered at once again; the interval ends: one line counts the rest
    t += 1000;
    expect(f.failed('10.0.0.1', 'missing')).toBe(0);
    t += 10_000;
    f.sweep();
    const lines = audit();
    expect(lines).toHaveLength(7);
    const aggregate = lines[6]!;
    expect(aggregate).toMatchObject({ remote: '10.0.0.1', count: 996, protocol: 'http', outcome: 'error', tenant: null });
    expect(aggregate.reason).toBe('unknown x995, missing x1');
    const total = lines.filter((l) => l.remote === '10.0.0.1').reduce((n, l) => n + Number(l.count), 0);
    expect(total).toBe(1001);
    // an address with nothing pending is forgotten after its interval
    t += 20_000;
    f.sweep();
    f.sweep();
    expect(f.tracked).toBe(0);
    f.close();
  });

  it('tracks at most maxAddresses addresses; the rest share one entry', () => {
    const { logger, audit } = capture();
    const f = new FailedAuthentications(logger, 'grpc', { burst: 1, maxAddresses: 3 }, () => 0);
    for (let i = 0; i < 100; i++) f.failed(`10.0.1.${i}`, 'missing');
    expect(f.tracked).toBe(4);
    f.close();
    const other = audit().filter((l) => l.remote === '(other addresses)');
    expect(other.reduce((n, l) => n + Number(l.count), 0)).toBe(97);
  });

  it('gRPC peers are counted by address, not by port', () => {
    expect(peerAddress('ipv4:127.0.0.1:50123')).toBe('127.0.0.1');
    expect(peerAddress('ipv6:[::1]:50123')).toBe('::1');
    expect(peerAddress('unix:/tmp/x')).toBe('unix:/tmp/x');
  });
});

describe('an unauthenticated HTTP flood', () => {
  it('every request gets 401; the audit log gets at most burst + 1 lines per address; the counts add up; the excess is tarpitted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-unauth-'));
    dirs.push(dir);
    writeFileSync(
      join(dir, 'tenants.json'),
      JSON.stringify({ tenants: [{ id: 'acme', role: 'tenant', tokens: [hashToken('acme-token-0123456789abcdefghijkl')] }] }),
    );
    const { logger, audit } = capture();
    const s = await startTestServer(`${PROJECT_ROOT}/model_repository`, { tenantsFile: join(dir, 'tenants.json'), logger });
    const port = Number(new URL(s.httpUrl).port);
    const agent = new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 8 });
    const one = (auth?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            port,
            host: '127.0.0.1',
            path: '/v2/models/simple/infer',
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
    try {
      const t0 = Date.now();
      const statuses = await Promise.all(Array.from({ length: 60 }, (_, i) => one(i % 2 ? 'Bearer wrong-token-0123456789abcdefghijklmn' : undefined)));
      const took = Date.now() - t0;
      expect(new Set(statuses)).toEqual(new Set([401]));
      expect(audit().length).toBeLessThanOrEqual(11);
      // past the first 10 failures of the window, answers are held back (a lower bound only)
      expect(took).toBeGreaterThanOrEqual(250);
    } finally {
      agent.destroy();
      await s.stop();
    }
    const lines = audit();
    expect(lines.length).toBeLessThanOrEqual(11);
    expect(lines.reduce((n, l) => n + Number(l.count ?? 1), 0)).toBe(60);
  });
});
