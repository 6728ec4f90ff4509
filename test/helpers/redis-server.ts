/**
 * A real Redis for tests: Debian's `redis-server` (CI installs it, .ci/run) started on a free local
 * port in a temporary directory, without persistence (`--save '' --appendonly no`), optionally
 * with a password, an ACL user and TLS. Tests skip only when the binary is absent
 * ({@link redisServerMissing}); any other failure is thrown.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './repo.js';
import { until } from './wait.js';

/** Why the Redis tests cannot run here (no `redis-server` on PATH), or undefined when they can. */
export function redisServerMissing(): string | undefined {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'redis-server is not installed (apt-get install -y redis-server)';
  }
}

/** What {@link startRedis} starts. */
export interface RedisServerOptions {
  /** `requirepass`: the default user's password. */
  password?: string;
  /** An ACL user with every permission: `user <name> on ><password> ~* &* +@all`. */
  aclUser?: { name: string; password: string };
  /** TLS only (no plain port): the server's certificate and key, and the CA clients must present certificates of. */
  tls?: { cert: string; key: string; ca: string; authClients: boolean };
}

export interface RedisTestServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** Kill with SIGKILL (everything it held is lost: no persistence). */
  kill(): Promise<void>;
  /** Start again on the same port, empty. */
  restart(): Promise<void>;
  /** Stop answering (SIGSTOP) / answer again (SIGCONT): a hung Redis. */
  pause(): void;
  resume(): void;
  /** Stop it and remove its directory. */
  stop(): Promise<void>;
}

/** Resolves when `port` accepts a TCP connection. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Start `redis-server` (after {@link redisServerMissing} said undefined). The caller stops it. */
export async function startRedis(opts: RedisServerOptions = {}): Promise<RedisTestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'warden-redis-'));
  const port = await freePort();
  const args = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  if (opts.tls) {
    args.push('--port', '0', '--tls-port', String(port), '--tls-cert-file', opts.tls.cert, '--tls-key-file', opts.tls.key);
    args.push('--tls-ca-cert-file', opts.tls.ca, '--tls-auth-clients', opts.tls.authClients ? 'yes' : 'no');
  } else args.push('--port', String(port));
  if (opts.password !== undefined) args.push('--requirepass', opts.password);
  if (opts.aclUser) args.push('--user', opts.aclUser.name, 'on', `>${opts.aclUser.password}`, '~*', '&*', '+@all');
  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    const c = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    const keep = (d: Buffer) => (log = (log + d.toString()).slice(-4000));
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    await until(
      async () => {
        if (c.exitCode !== null) throw new Error(`redis-server exited (${c.exitCode}):\n${log}`);
        return accepting(port);
      },
      { within: 15_000, every: 50, what: 'redis-server accepting connections' },
    );
  };
  const end = async (signal: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGCONT');
    c.kill(signal);
    await exited;
  };
  await start();
  return {
    host: '127.0.0.1',
    port,
    kill: () => end('SIGKILL'),
    restart: start,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    async stop() {
      await end('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
