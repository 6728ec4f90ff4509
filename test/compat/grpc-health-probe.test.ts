/**
 * grpc-health-probe against Warden's `grpc.health.v1.Health` (frontend/grpc/health.ts), as a
 * Kubernetes user runs it against tritonserver: SERVING (exit 0) when the server is ready, for the
 * server ("") and a named service; NOT_SERVING (exit 4) when a model failed to load under strict
 * readiness; and, with `--grpc-restricted-protocol=health:...`, refused without the metadata and
 * SERVING with it (`-rpc-header`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCli } from '../../host/src/cli-options.js';
import { startServer, type RunningServer } from '../../host/src/server.js';
import { tempRepo, type TempRepo } from '../helpers/repo.js';
import { ensureHealthProbe, healthProbe } from './health-probe.js';

describe('grpc-health-probe against Warden', () => {
  let probe: Awaited<ReturnType<typeof ensureHealthProbe>>;
  let repo: TempRepo;
  let ready: RunningServer;
  let restricted: RunningServer;
  beforeAll(async () => {
    probe = await ensureHealthProbe();
    repo = tempRepo(['simple']);
    const base = {
      modelRepositories: [repo.path],
      modelControlMode: 'explicit' as const,
      loadModels: ['simple'],
      httpPort: 0,
      metricsPort: -1,
      grpcPort: 0,
      logLevel: 'silent' as const,
    };
    ready = await startServer(base);
    const cli = parseCli([`--model-repository=${repo.path}`, '--grpc-restricted-protocol=health:probe-key=k1']);
    restricted = await startServer({ ...base, grpcRestrictedProtocols: cli.grpcRestrictedProtocols });
  }, 660_000);
  afterAll(async () => {
    await ready?.stop();
    await restricted?.stop();
    repo?.cleanup();
  });

  it('SERVING for "" and a named service (exit 0)', async (ctx) => {
    if (probe.skip) return ctx.skip(probe.skip);
    for (const args of [[], ['-service=inference.GRPCInferenceService']]) {
      const r = await healthProbe(probe.path!, ready.grpcUrl!, args);
      expect(r.code, r.out).toBe(0);
      expect(r.out).toContain('status: SERVING');
    }
  });

  it('NOT_SERVING (exit 4) when a model failed to load under strict readiness', async (ctx) => {
    if (probe.skip) return ctx.skip(probe.skip);
    const bad = tempRepo(['simple']);
    bad.addModel('broken', 'name: "broken"\nbackend: "onnxruntime"\nmax_batch_size: 0\n');
    const s = await startServer({ modelRepositories: [bad.path], exitOnError: false, httpPort: 0, metricsPort: -1, grpcPort: 0, logLevel: 'silent' });
    try {
      const r = await healthProbe(probe.path!, s.grpcUrl!);
      expect(r.code, r.out).toBe(4);
      expect(r.out).toContain('NOT_SERVING');
    } finally {
      await s.stop();
      bad.cleanup();
    }
  });

  it('with --grpc-restricted-protocol=health: refused without the metadata, SERVING with it', async (ctx) => {
    if (probe.skip) return ctx.skip(probe.skip);
    const without = await healthProbe(probe.path!, restricted.grpcUrl!);
    expect(without.code, without.out).not.toBe(0);
    expect(without.out).toContain("This protocol is restricted, expecting header 'triton-grpc-protocol-probe-key'");
    const withKey = await healthProbe(probe.path!, restricted.grpcUrl!, ['-rpc-header=triton-grpc-protocol-probe-key: k1']);
    expect(withKey.code, withKey.out).toBe(0);
  });
});
