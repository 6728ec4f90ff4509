/**
 * The `warden` command line: tritonserver's flags, bad flags, and graceful shutdown on SIGTERM
 * (in-flight requests finish, then the process exits 0).
 */
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../../host/src/cli-options.js';
import { freePort, PROJECT_ROOT, tempRepo } from '../helpers/repo.js';
import { spawnCli } from '../helpers/cli.js';
import { until } from '../helpers/wait.js';

describe('flags', () => {
  it('parses tritonserver flags', () => {
    const o = parseCli([
      '--model-repository=/a',
      '--model-store',
      '/b',
      '--http-port=9000',
      '--metrics-port=9002',
      '--model-control-mode=explicit',
      '--load-model=x',
      '--load-model=y',
      '--strict-readiness=false',
      '--disable-auto-complete-config',
      '--exit-on-error=false',
      '--log-verbose=1',
      '--http-max-input-size=1024',
      '--backend-config=python,shm-default-byte-size=1024',
      '--backend-config=default-max-batch-size=8',
    ]);
    expect(o).toMatchObject({
      modelRepositories: ['/a', '/b'],
      httpPort: 9000,
      metricsPort: 9002,
      modelControlMode: 'explicit',
      loadModels: ['x', 'y'],
      strictReadiness: false,
      autoCompleteConfig: false,
      exitOnError: false,
      logVerbose: 1,
      maxInputSize: 1024,
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
  // A signal while requests are in flight: each of them completes with its answer, the listener
  // refuses new connections at once, and the process exits 0 within --exit-timeout-secs. The
  // model takes 1.5 s per request (identity_native's execute_delay_ms) on 4 instances, so the 4
  // requests are surely in the backend when the signal comes (pending_count, Warden's statistic).
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'serves, then stops gracefully on %s with requests in flight',
    async (signal) => {
      const repo = tempRepo([]);
      repo.addModel(
        'slow',
        readFileSync(join(PROJECT_ROOT, 'model_repository/identity_native/config.pbtxt'), 'utf8')
          .replace('name: "identity_native"', 'name: "slow"')
          .replace('count: 1', 'count: 4')
          .replace('string_value: "0"', 'string_value: "1500"'),
      );
      const port = await freePort();
      const exitTimeoutSecs = 20;
      const cli = spawnCli([
        `--model-repository=${repo.path}`,
        `--backend-directory=${join(PROJECT_ROOT, 'build/backends')}`,
        `--http-port=${port}`,
        '--allow-metrics=false',
        '--allow-grpc=false',
        `--exit-timeout-secs=${exitTimeoutSecs}`,
      ]);
      const { child, exited } = cli;
      try {
        const base = `http://127.0.0.1:${port}`;
        await cli.started();
        expect(cli.output).toContain('Warden started');
        const data = [
          [1, 2],
          [3, 4],
          [5, 6],
          [7, 8],
        ];
        // One connection each (no pooling: a refused new connection must not be a reused one).
        const inflight = data.map((d) =>
          fetch(`${base}/v2/models/slow/infer`, {
            method: 'POST',
            headers: { connection: 'close' },
            body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: d }] }),
          }).then(
            async (r) => ({ status: r.status, json: (await r.json()) as unknown }),
            (e: unknown) => ({ status: -1, json: String(e) as unknown }), // dropped half-way
          ),
        );
        const pending = async () =>
          ((await (await fetch(`${base}/v2/models/slow/stats`, { headers: { connection: 'close' } })).json()) as { model_stats: { pending_count: number }[] })
            .model_stats[0]!.pending_count;
        await expect.poll(pending, { timeout: 10_000, interval: 50 }).toBe(4);
        const signalledAt = Date.now();
        child.kill(signal);
        // The listener closes at the signal: a new connection is refused while the 4 still run.
        await until(() => cli.output.includes('shutting down gracefully'), { within: 2000, what: 'the graceful shutdown line' });
        expect(cli.output).toContain('shutting down gracefully');
        const refused = await new Promise<string>((resolve) => {
          const sock = connect(port, '127.0.0.1');
          sock.once('connect', () => {
            sock.destroy();
            resolve('connected');
          });
          sock.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? String(e)));
        });
        expect(refused).toBe('ECONNREFUSED');
        expect(child.exitCode).toBeNull(); // still draining the requests
        // Every request in flight at the signal got its full answer.
        const answers = await Promise.all(inflight);
        expect(answers).toEqual(data.map((d) => ({ status: 200, json: expect.objectContaining({ outputs: [expect.objectContaining({ data: d })] }) })));
        const { code, at } = await exited;
        expect(code).toBe(0);
        expect(at - signalledAt).toBeLessThan(exitTimeoutSecs * 1000); // generous: the drain takes ~1.5 s
        expect(cli.output).toContain('Warden stopped');
      } finally {
        child.kill('SIGKILL');
        repo.cleanup();
      }
    },
    60_000,
  );

  it('exits 1 with the usage on bad flags', async () => {
    const cli = spawnCli(['--bogus']);
    expect((await cli.exited).code).toBe(1);
    expect(cli.stderr).toMatch(/Usage: warden/);
  });

  it("--version prints Warden's own version and the Triton protocol it serves", async () => {
    const cli = spawnCli(['--version']);
    expect((await cli.exited).code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(cli.stdout).toBe(`warden ${pkg.version} (Triton protocol 2.73.0)\n`);
  });
});
