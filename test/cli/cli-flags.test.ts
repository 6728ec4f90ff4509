/**
 * tritonserver's whole command line (spec §5.8): flags Warden honours, and flags for features it
 * lacks accepted with one warning, so an existing launch script (KServe ModelMesh's) starts Warden.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IGNORED_TRITON_FLAGS, parseCli, UsageError } from '../../host/src/cli-options.js';
import { startTestServer } from '../helpers/servers.js';
import { grpcServerOptions } from '../../host/src/frontend/grpc/server.js';
import { freePort, getJson, postJson, simpleRequest, tempRepo } from '../helpers/repo.js';
import { MODELMESH_FLAGS, spawnCli } from '../helpers/cli.js';
import { sleep } from '../helpers/wait.js';

describe('parsing', () => {
  it("accepts ModelMesh's launch line exactly: gRPC on 8001 with its keepalive flags honoured, nothing ignored", () => {
    const o = parseCli(['--model-repository=/m', ...MODELMESH_FLAGS]);
    expect(o).toMatchObject({ modelControlMode: 'explicit', strictReadiness: false, autoCompleteConfig: true, allowHttp: true, grpcPort: 8001 });
    expect(o.grpcKeepalive).toEqual({
      timeMs: 60000,
      timeoutMs: 10000,
      permitWithoutCalls: true,
      maxPingsWithoutData: 0,
      minRecvPingIntervalWithoutDataMs: 10000,
      maxPingStrikes: 0,
      maxConnectionAgeMs: undefined,
      maxConnectionAgeGraceMs: undefined,
    });
    expect(o.notes.ignoredFlags).toEqual([]);
    // what grpc-js is given for them
    expect(grpcServerOptions({ maxReceiveBytes: 1024, keepalive: o.grpcKeepalive })).toEqual({
      'grpc.max_receive_message_length': 1024,
      'grpc.max_send_message_length': -1,
      'grpc.keepalive_time_ms': 60000,
      'grpc.keepalive_timeout_ms': 10000,
    });
    expect(parseCli(['--model-repository=/m', '--allow-grpc=false', '--grpc-port=9']).grpcPort).toBeUndefined();
    expect(parseCli(['--model-repository=/m', '--grpc-port=9001', '--grpc-address=127.0.0.1', '--grpc-max-connection-age=5'])).toMatchObject({
      grpcPort: 9001,
      grpcAddress: '127.0.0.1',
      grpcKeepalive: { maxConnectionAgeMs: 5 },
    });
    expect(() => parseCli(['--model-repository=/m', '--grpc-keepalive-time=soon'])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/m', '--grpc-keepalive-permit-without-calls=maybe'])).toThrow(UsageError);
  });

  it('accepts every tritonserver flag of a feature Warden lacks, in both value forms', () => {
    for (const f of IGNORED_TRITON_FLAGS) {
      expect(parseCli(['--model-repository=/m', `--${f}=1`]).notes.ignoredFlags, f).toEqual([`--${f}`]);
      expect(() => parseCli(['--model-repository=/m', `--${f}`, 'x'])).not.toThrow();
    }
    const o = parseCli([
      '--model-repository=/m',
      '--cuda-memory-pool-byte-size=0:1024',
      '--cuda-memory-pool-byte-size=1:1024',
      '--allow-grpc=false',
      '--allow-vertex-ai=0',
    ]);
    expect(o.notes.ignoredFlags).toEqual(['--cuda-memory-pool-byte-size']);
  });

  it('parses the honoured flags', () => {
    const o = parseCli([
      '--model-repository=/m',
      '--id=inference-a',
      '--exit-timeout-secs=5',
      '--model-load-thread-count=2',
      '--metrics-interval-ms=500',
      '--allow-cpu-metrics=false',
      '--allow-gpu-metrics=false',
      '--http-thread-count=16',
      '--metrics-address=127.0.0.1',
      '--log-info=false',
      '--log-warning=true',
      '--log-error=true',
      '--log-format=ISO8601',
      '--log-file=/tmp/w.log',
      '--trace-config=triton,file=/tmp/t.json',
      '--trace-config=level=TIMESTAMPS',
      '--trace-config=rate=10',
      '--trace-config=count=5',
      '--trace-config=triton,log-frequency=50',
      '--allow-client-shm=false',
    ]);
    expect(o).toMatchObject({
      serverId: 'inference-a',
      exitTimeoutSecs: 5,
      modelLoadThreadCount: 2,
      metricsIntervalMs: 500,
      allowCpuMetrics: false,
      httpThreadCount: 16,
      metricsAddress: '127.0.0.1',
      logSettings: { log_info: false, log_warning: true, log_error: true, log_format: 'ISO8601', log_file: '/tmp/w.log' },
      trace: { file: '/tmp/t.json', level: ['TIMESTAMPS'], rate: 10, count: 5, logFrequency: 50 },
      notes: { ignoredFlags: [] },
    });
    // deprecated trace flags, and defaults
    expect(
      parseCli(['--model-repository=/m', '--trace-file=/x', '--trace-level=TIMESTAMPS', '--trace-level=TENSORS', '--trace-rate=1', '--trace-log-frequency=3'])
        .trace,
    ).toEqual({ file: '/x', level: ['TIMESTAMPS', 'TENSORS'], rate: 1, logFrequency: 3 });
    expect(parseCli(['--model-repository=/m'])).toMatchObject({
      exitTimeoutSecs: 30,
      modelLoadThreadCount: 4,
      allowHttp: true,
      allowCpuMetrics: true,
      metricsIntervalMs: 2000,
    });
    // opentelemetry mode is honoured (trace.test.ts); client shm is honoured
    const shm = parseCli([
      '--model-repository=/m',
      '--trace-config=mode=opentelemetry',
      '--trace-config=opentelemetry,url=http://x',
      '--allow-client-shm=true',
    ]);
    expect(shm.notes.ignoredFlags).toEqual([]);
    expect(shm.allowClientShm).toBe(true);
  });

  it('still refuses what is wrong, and flags no tritonserver has', () => {
    expect(() => parseCli(['--model-repository=/m', '--log-format=xml'])).toThrow(/--log-format/);
    expect(() => parseCli(['--model-repository=/m', '--exit-timeout-secs=-1'])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/m', '--trace-config=level=LOUD'])).toThrow(/trace level/);
    expect(() => parseCli(['--model-repository=/m', '--trace-config=count=-5'])).toThrow(/trace count/);
    expect(() => parseCli(['--model-repository=/m', '--grpc-port-typo=1'])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/m', '--wasm-engine=spidermonkey'])).toThrow(
      /--wasm-engine: unknown sandbox engine 'spidermonkey' \(available: v8, wasmtime\)/,
    );
    expect(() => parseCli(['--model-repository=/m', '--wasm-idle-timeout-ms=-1'])).toThrow(UsageError);
  });

  it('--wasm-engine picks the sandbox engine; --wasm-idle-timeout-ms the idle policy', () => {
    // No flag: the resolver's default (uploads released after DEFAULT_IDLE_MS, the repositories' models never).
    expect(parseCli(['--model-repository=/m'])).toMatchObject({ wasmEngine: 'v8', wasmIdleMs: undefined });
    expect(parseCli(['--model-repository=/m', '--wasm-idle-timeout-ms=30000'])).toMatchObject({ wasmIdleMs: 30000 });
    expect(parseCli(['--model-repository=/m', '--wasm-engine=wasmtime', '--wasm-idle-timeout-ms=0'])).toMatchObject({
      wasmEngine: 'wasmtime',
      wasmIdleMs: 0,
    });
  });
});

describe('honoured flags in a running server', () => {
  it('--id names the server; CPU metrics are served; --allow-http=false serves no HTTP', async () => {
    const repo = tempRepo([]);
    try {
      const s = await startTestServer(repo, {
        modelControlMode: 'none',
        metricsPort: 0,
        serverId: 'inference-a',
        metricsIntervalMs: 50,
      });
      try {
        expect((await getJson(`${s.httpUrl}/v2`)).json.name).toBe('inference-a');
        await sleep(120);
        const text = await (await fetch(`${s.metricsUrl}/metrics`)).text();
        const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
        expect(value('nv_cpu_utilization')).toBeGreaterThanOrEqual(0);
        expect(value('nv_cpu_utilization')).toBeLessThanOrEqual(1);
        expect(value('nv_cpu_memory_total_bytes')).toBeGreaterThan(0);
        expect(value('nv_cpu_memory_used_bytes')).toBeGreaterThan(0);
        expect(value('nv_cpu_memory_used_bytes')).toBeLessThanOrEqual(value('nv_cpu_memory_total_bytes'));
        // Warden's own identity stays visible where Triton's is not expected
        expect(text).toMatch(/^warden_build_info\{version="\d+\.\d+\.\d+[^"]*",triton_protocol="2\.73\.0"\} 1$/m);
      } finally {
        await s.stop();
      }
      const off = await startTestServer(repo, {
        modelControlMode: 'none',
        metricsPort: 0,
        allowCpuMetrics: false,
        allowHttp: false,
      });
      try {
        expect(off.httpUrl).toBe('');
        expect(await (await fetch(`${off.metricsUrl}/metrics`)).text()).not.toContain('nv_cpu_utilization');
      } finally {
        await off.stop();
      }
    } finally {
      repo.cleanup();
    }
  });

  it('--model-load-thread-count bounds concurrent loads at start', async () => {
    const repo = tempRepo([]);
    let loading = 0;
    let most = 0;
    const resolver = {
      async resolve({ config }: { config: { backend: string } }) {
        if (config.backend !== 'slowload') return undefined;
        return {
          name: 'slowload',
          async loadModel() {
            most = Math.max(most, ++loading);
            await sleep(30);
            loading--;
            return { createInstance: async () => ({ execute: async () => undefined, finalize: async () => undefined }), finalize: async () => undefined };
          },
          finalize: async () => undefined,
        };
      },
      finalizeAll: async () => undefined,
    };
    for (let i = 0; i < 6; i++) {
      repo.addModel(
        `m${i}`,
        'backend: "slowload"\nmax_batch_size: 0\ninput [ { name: "I" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "O" data_type: TYPE_INT32 dims: [ 1 ] } ]\n',
      );
    }
    try {
      const s = await startTestServer(repo, {
        modelControlMode: 'none',
        modelLoadThreadCount: 2,
        backendResolvers: [resolver as any],
      });
      await s.stop();
      expect(most).toBe(2);
    } finally {
      repo.cleanup();
    }
  });
});

describe('process', () => {
  it("serves with ModelMesh's tritonserver launch line and warns once about the flags it ignores; --log-file gets the log", async () => {
    const repo = tempRepo(['simple']);
    const dir = mkdtempSync(join(tmpdir(), 'warden-log-'));
    const logFile = join(dir, 'sub', 'warden.log');
    const port = await freePort();
    const grpcPort = await freePort();
    const cli = spawnCli([
      `--model-repository=${repo.path}`,
      `--http-port=${port}`,
      `--grpc-port=${grpcPort}`,
      '--allow-metrics=false',
      '--load-model=simple',
      '--pinned-memory-pool-byte-size=0',
      ...MODELMESH_FLAGS,
    ]);
    try {
      await cli.started();
      expect(cli.output).toContain('Warden started');
      const base = `http://127.0.0.1:${port}`;
      const r = await postJson(`${base}/v2/models/simple/infer`, simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)));
      expect(r.status).toBe(200);
      const warnings = cli.output.split('\n').filter((l) => l.includes('ignoring tritonserver flags'));
      expect(warnings).toHaveLength(1);
      const w = JSON.parse(warnings[0]!);
      expect(w.level).toBe(40);
      expect(w.flags).toEqual(['--pinned-memory-pool-byte-size']);
      expect(cli.output).toContain(`"grpc":"127.0.0.1:${grpcPort}"`);
      cli.child.kill('SIGTERM');
      expect((await cli.exited).code).toBe(0);
    } finally {
      cli.child.kill('SIGKILL');
    }
    // --log-file: the log goes to the file (directories created), ISO timestamps with --log-format
    const port2 = await freePort();
    const cli2 = spawnCli([
      `--model-repository=${repo.path}`,
      `--http-port=${port2}`,
      '--allow-metrics=false',
      '--allow-grpc=false',
      `--log-file=${logFile}`,
      '--log-format=ISO8601',
      '--exit-timeout-secs=5',
    ]);
    try {
      await cli2.started(() => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''));
      const started = readFileSync(logFile, 'utf8')
        .split('\n')
        .find((l) => l.includes('Warden started'))!;
      expect(JSON.parse(started).time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
      expect(cli2.stdout).not.toContain('Warden started');
      expect((await getJson(`http://127.0.0.1:${port2}/v2/logging`)).json.log_file).toBe(logFile);
      cli2.child.kill('SIGTERM');
      expect((await cli2.exited).code).toBe(0);
      expect(readFileSync(logFile, 'utf8')).toContain('Warden stopped');
    } finally {
      cli2.child.kill('SIGKILL');
      repo.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
