/**
 * grpc-health-probe (github.com/grpc-ecosystem/grpc-health-probe, the probe Kubernetes users run
 * against gRPC servers) for the compatibility suite: built once with the machine's Go toolchain
 * (`go install`, the pinned module version from the Go module proxy) into `.cache/go-bin/`
 * (gitignored). The suite may skip only when there is no Go toolchain or the module proxy cannot
 * be reached; any other failure is thrown.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './venv.js';

/** The pinned probe (newest release at the time of writing). */
export const HEALTH_PROBE_MODULE = 'github.com/grpc-ecosystem/grpc-health-probe@v0.4.62';
const GOBIN = join(PROJECT_ROOT, '.cache', 'go-bin');
const PROBE = join(GOBIN, 'grpc-health-probe');

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({
        code: err ? (typeof err.code === 'number' ? err.code : -1) : 0,
        out: `${stdout}${stderr}${err && typeof err.code !== 'number' ? String(err) : ''}`,
      }),
    );
  });
}

/** A Go toolchain: `go` on PATH, or the usual install location. */
function goBinary(): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/local/go/bin']) if (dir && existsSync(join(dir, 'go'))) return join(dir, 'go');
  return undefined;
}

/**
 * The probe's path, built when missing (~1 min on 2 cores the first time).
 * @returns `{ path }`, or `{ skip }` with the reason when it cannot be had here
 * @throws Error when `go install` fails while the module proxy answers
 */
export async function ensureHealthProbe(): Promise<{ path: string; skip?: undefined } | { path?: undefined; skip: string }> {
  if (existsSync(PROBE)) return { path: PROBE };
  const go = goBinary();
  if (!go) return { skip: 'no Go toolchain on this machine to build grpc-health-probe' };
  const r = await run(go, ['install', HEALTH_PROBE_MODULE], { GOBIN, GOFLAGS: '-mod=mod' }, 600_000);
  if (r.code === 0 && existsSync(PROBE)) return { path: PROBE };
  if (/dial tcp|no such host|i\/o timeout|connection refused|network is unreachable|TLS handshake timeout/.test(r.out))
    return { skip: `the Go module proxy cannot be reached: ${r.out.slice(0, 300)}` };
  throw new Error(`go install ${HEALTH_PROBE_MODULE} failed (exit ${r.code}): ${r.out.slice(0, 2000)}`);
}

/** Run the probe against `addr` (host:port). @returns its exit code (0 SERVING, 4 NOT_SERVING, 2 connection, 3 RPC failure) and output */
export function healthProbe(path: string, addr: string, args: string[] = []): Promise<{ code: number; out: string }> {
  return run(path, [`-addr=${addr}`, '-connect-timeout=5s', '-rpc-timeout=5s', ...args], {}, 30_000);
}
