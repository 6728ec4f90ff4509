/**
 * The standard gRPC health service `grpc.health.v1.Health`, which tritonserver registers next to
 * its own service (server src/grpc/grpc_server.cc CommonHandler::RegisterHealthCheck) and which
 * Kubernetes `grpc:` probes and grpc-health-probe call. Triton answers `Check` from
 * TRITONSERVER_ServerIsReady whatever service is named: SERVING when ready, NOT_SERVING when not.
 * `Watch` (which Triton does not serve) streams the same status: SERVING, then NOT_SERVING when
 * the server starts draining, before the stream ends. Driven with a grpc-js client built on the
 * `grpc-health-check` package's service definition (grpc-health-probe: test/compat/grpc-health-probe.test.ts).
 */
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../../host/src/server.js';
import { healthCheck, healthClient, healthWatch } from '../../helpers/grpc-health.js';
import { getJson, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { startTenantServer, startTestServer } from '../../helpers/servers.js';
import { until } from '../../helpers/wait.js';

describe('grpc.health.v1.Health on a ready server', () => {
  let repo: TempRepo;
  let server: RunningServer;
  beforeAll(async () => {
    repo = tempRepo(['simple']);
    server = await startTestServer(repo, { loadModels: ['simple'], grpcPort: 0 });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it('Check answers SERVING for the server ("") and for any service name, as Triton', async () => {
    for (const name of ['', 'inference.GRPCInferenceService', 'grpc.health.v1.Health', 'anything.Else']) {
      const r = await healthCheck(server.grpcUrl!, name);
      expect([r.err, r.res?.status], name).toEqual([undefined, 'SERVING']);
    }
  });

  it('List is not served (UNIMPLEMENTED), as Triton', async () => {
    const client = healthClient(server.grpcUrl!) as unknown as { List(req: object, cb: (err: { code: number } | null) => void): void; close(): void };
    const err = await new Promise<{ code: number } | null>((resolve) => client.List({}, (e) => resolve(e)));
    client.close();
    expect(err?.code).toBe(status.UNIMPLEMENTED);
  });
});

describe('grpc.health.v1.Health when the server is not ready, and while it drains', () => {
  it('NOT_SERVING when a model failed to load (strict readiness), as /v2/health/ready says 400', async () => {
    const repo = tempRepo(['simple']);
    repo.addModel('broken', 'name: "broken"\nbackend: "onnxruntime"\nmax_batch_size: 0\n');
    const server = await startTestServer(repo, { modelControlMode: 'none', exitOnError: false, grpcPort: 0 });
    try {
      expect((await getJson(`${server.httpUrl}/v2/health/ready`)).status).toBe(400);
      expect((await healthCheck(server.grpcUrl!, '')).res?.status).toBe('NOT_SERVING');
    } finally {
      await server.stop();
      repo.cleanup();
    }
  });

  it('Watch streams SERVING, then NOT_SERVING as soon as stop() begins, then ends', async () => {
    const repo = tempRepo(['simple']);
    const server = await startTestServer(repo, { loadModels: ['simple'], grpcPort: 0 });
    const client = healthClient(server.grpcUrl!);
    try {
      const w = healthWatch(client, '');
      await until(() => w.statuses.length > 0, { every: 10 }).catch(() => undefined);
      expect(w.statuses).toEqual(['SERVING']);
      const named = healthWatch(client, 'inference.GRPCInferenceService');
      await until(() => named.statuses.length > 0, { every: 10 }).catch(() => undefined);
      expect(named.statuses).toEqual(['SERVING']);
      const stopped = server.stop();
      const end = await w.ended;
      expect(w.statuses).toEqual(['SERVING', 'NOT_SERVING']);
      // the stream ends with the server (cancelled by its shutdown, or UNAVAILABLE)
      expect(end === undefined || [status.CANCELLED, status.UNAVAILABLE, status.INTERNAL].includes(end.code), String(end?.code)).toBe(true);
      await named.ended;
      expect(named.statuses).toEqual(['SERVING', 'NOT_SERVING']);
      await stopped;
    } finally {
      client.close();
      await server.stop();
      repo.cleanup();
    }
  });

  it('in multi-tenant mode Check needs no token, like ServerLive', async () => {
    const repo = tempRepo(['simple']);
    const { server, stop } = await startTenantServer(repo, [{ id: 'acme', token: 'acme-token-0123456789abcdefghijklmn' }], {
      loadModels: ['simple'],
      grpcPort: 0,
    });
    try {
      expect((await healthCheck(server.grpcUrl!, '')).res?.status).toBe('SERVING');
    } finally {
      await stop();
      repo.cleanup();
    }
  });
});
