/**
 * The `warden` command line: tritonserver's flags, bad flags, and graceful shutdown on SIGTERM
 * (in-flight requests finish, then the process exits 0).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../../host/src/cli-options.js';
import { freePort, PROJECT_ROOT, simpleRequest, tempRepo } from '../helpers/repo.js';


describe('flags', () => {
  it('parses tritonserver flags', () => {
    const o = parseCli([
      '--model-repository=/a', '--model-store', '/b', '--http-port=9000', '--metrics-port=9002', '--model-control-mode=explicit',
      '--load-model=x', '--load-model=y', '--strict-readiness=false', '--disable-auto-complete-config', '--exit-on-error=false',
      '--log-verbose=1', '--http-max-input-size=1024', '--backend-config=python,shm-default-byte-size=1024', '--backend-config=default-max-batch-size=8',
    ]);
    expect(o).toMatchObject({
      modelRepositories: ['/a', '/b'], httpPort: 9000, metricsPort: 9002, modelControlMode: 'explicit', loadModels: ['x', 'y'],
      strictReadiness: false, autoCompleteConfig: false, exitOnError: false, logVerbose: 1, maxInputSize: 1024,
      backendConfig: { python: { 'shm-default-byte-size': '1024' }, '': { 'default-max-batch-size': '8' } },
    });
  });
  it('--native-execute-timeout-ms: the native execute limit (default 0 = none), a non-negative integer', () => {
    expect(parseCli(['--model-repository=/a']).nativeExecuteTimeoutMs).toBe(0);
    expect(parseCli(['--model-repository=/a', '--native-execute-timeout-ms=2500']).nativeExecuteTimeoutMs).toBe(2500);
    expect(() => parseCli(['--model-repository=/a', '--native-execute-timeout-ms=soon'])).toThrow(/--native-execute-timeout-ms expects an integer >= 0/);
  });
  it('--wake-affinity: thread hand-off placement, on by default, a boolean', () => {
    expect(parseCli(['--model-repository=/a']).wakeAffinity).toBe(true);
    expect(parseCli(['--model-repository=/a', '--wake-affinity=false']).wakeAffinity).toBe(false);
    expect(() => parseCli(['--model-repository=/a', '--wake-affinity=maybe'])).toThrow(/--wake-affinity/);
  });
  it('rejects bad flags clearly', () => {
    expect(() => parseCli([])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/a', '--model-control-mode=sometimes'])).toThrow(/none, poll or explicit/);
    expect(() => parseCli(['--model-repository=/a', '--load-model=x'])).toThrow(/explicit/);
    expect(() => parseCli(['--model-repository=/a', '--http-port=-1'])).toThrow(/integer/);
    expect(() => parseCli(['--model-repository=/a', '--strict-readiness=maybe'])).toThrow(/true or false/);
    expect(() => parseCli(['--model-repository=/a', '--no-such-flag'])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/a', '--model-control-mode=explicit', '--load-model=*', '--load-model=x'])).toThrow(/only/);
  });
});

describe('process', () => {
  it('serves, then stops gracefully on SIGTERM with requests in flight', async () => {
    const repo = tempRepo(['simple']);
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'host/src/cli.ts'), `--model-repository=${repo.path}`, `--http-port=${port}`, '--allow-metrics=false', '--allow-grpc=false'], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const base = `http://127.0.0.1:${port}`;
      for (let i = 0; i < 100 && !out.includes('Warden started'); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain('Warden started');
      expect((await fetch(`${base}/v2/health/ready`)).status).toBe(200);
      const body = JSON.stringify(simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)));
      const inflight = Array.from({ length: 20 }, () => fetch(`${base}/v2/models/simple/infer`, { method: 'POST', body }).then((r) => r.status));
      // SIGTERM once the server has answered one of them (so requests surely reached it), while the
      // rest may still be in flight.
      await Promise.race(inflight);
      child.kill('SIGTERM');
      const statuses = await Promise.all(inflight.map((p) => p.catch(() => -1)));
      // Every request that reached the server got its answer; none failed half-way.
      expect(statuses.filter((s) => s !== 200 && s !== -1 && s !== 503)).toEqual([]);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
      expect(await exited).toBe(0);
      expect(out).toContain('Warden stopped');
    } finally {
      child.kill('SIGKILL');
      repo.cleanup();
    }
  }, 30_000);

  it('exits 1 with the usage on bad flags', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'host/src/cli.ts'), '--bogus'], { cwd: PROJECT_ROOT });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(1);
    expect(err).toMatch(/Usage: warden/);
  });

  it("--version prints Warden's own version and the Triton protocol it serves", async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'host/src/cli.ts'), '--version'], { cwd: PROJECT_ROOT });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(out).toBe(`warden ${pkg.version} (Triton protocol 2.73.0)\n`);
  });
});
