/**
 * `--grpc-restricted-protocol=<protocols>:<key>=<value>` as tritonserver has it (server
 * src/command_line_parser.cc, src/grpc/grpc_server.h kRestrictedProtocolHeaderTemplate,
 * src/grpc/grpc_server.cc CommonCallData::ExecutePrecondition, src/grpc/stream_infer_handler.cc):
 * an RPC of a restricted group is answered only when the call's metadata holds
 * `triton-grpc-protocol-<key>: <value>`; any other call gets UNAVAILABLE "This protocol is
 * restricted, expecting header 'triton-grpc-protocol-<key>'" and changes nothing. The attack: a
 * client without the metadata that unloads a model, runs one (unary and streaming), or reads
 * health; in single-user mode and on top of tenant tokens.
 */
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../../../host/src/cli-options.js';
import { startServer, type RunningServer } from '../../../host/src/server.js';
import { int32s, simpleInfer, tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../../helpers/grpc.js';
import { tempRepo, type TempRepo } from '../../helpers/repo.js';
import { healthCheck } from '../../helpers/grpc-health.js';
import { writeTenantsFile } from '../../helpers/servers.js';

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array(16).fill(2);
const INFER = "This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'";
const ADMIN = "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'";
const KEY = { 'triton-grpc-protocol-infer-key': 'abc' };

/** One ModelStreamInfer call writing `requests`: what it read, and how it ended. */
async function stream(client: TritonGrpcClient, md: Record<string, string>, requests: unknown[]): Promise<{ got: any[]; err?: ServiceError }> {
  const m = new Metadata();
  for (const [k, v] of Object.entries(md)) m.set(k, v);
  const s = (client as unknown as { ModelStreamInfer(md: Metadata): NodeJS.EventEmitter & { write(m: unknown): void; end(): void } }).ModelStreamInfer(m);
  const got: any[] = [];
  s.on('data', (x) => got.push(x));
  const done = new Promise<ServiceError | undefined>((resolve) => {
    s.on('error', (e: ServiceError) => resolve(e));
    s.on('end', () => resolve(undefined));
  });
  for (const r of requests) s.write(r);
  s.end();
  const err = await done;
  return { got, err };
}

describe('--grpc-restricted-protocol: parsing', () => {
  it('adds the triton-grpc-protocol- prefix to the key; refuses what tritonserver refuses', () => {
    const o = parseCli(['--model-repository=/m', '--grpc-restricted-protocol=inference,health:infer-key=abc']);
    expect(o.notes.ignoredFlags).toEqual([]);
    expect(o.grpcRestrictedProtocols).toEqual({
      inference: { header: 'triton-grpc-protocol-infer-key', value: 'abc' },
      health: { header: 'triton-grpc-protocol-infer-key', value: 'abc' },
    });
    expect(() => parseCli(['--model-repository=/m', '--grpc-restricted-protocol=infer:k=v'])).toThrow("unknown restricted protocol 'infer'");
    expect(() => parseCli(['--model-repository=/m', '--grpc-restricted-protocol=health:k'])).toThrow(UsageError);
    expect(() => parseCli(['--model-repository=/m', '--grpc-restricted-protocol=health:k'])).toThrow(
      "--grpc-restricted-protocol option format is '<config name>:<setting>=<value>'. Got health:k",
    );
    expect(() => parseCli(['--model-repository=/m', '--grpc-restricted-protocol=trace:a=1', '--grpc-restricted-protocol=trace:b=2'])).toThrow(
      "restricted protocol 'trace' can not be specified in multiple config groups",
    );
    // HTTP and gRPC restrictions are separate settings: the same group in both is fine
    expect(() => parseCli(['--model-repository=/m', '--grpc-restricted-protocol=trace:a=1', '--http-restricted-api=trace:b=2'])).not.toThrow();
  });
});

/**
 * For the enclosing describe: Warden on a temporary repository holding `simple`, started from the
 * command line `--model-control-mode=explicit --load-model=* <flags(dir)>` (ephemeral ports,
 * silent), where `dir` is a temporary folder for the files the flags name; and a gRPC client of it.
 */
function useFlagsServer(flags: (dir: string) => string[]): { server: RunningServer; client: TritonGrpcClient } {
  const s = {} as { server: RunningServer; client: TritonGrpcClient };
  let repo: TempRepo | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    repo = tempRepo(['simple']);
    dir = mkdtempSync(join(tmpdir(), 'warden-grpc-restricted-'));
    const cli = parseCli([`--model-repository=${repo.path}`, '--model-control-mode=explicit', '--load-model=*', ...flags(dir)]);
    s.server = await startServer({ ...cli, httpPort: 0, metricsPort: -1, grpcPort: 0, logLevel: 'silent' });
    s.client = tritonGrpcClient(s.server.grpcUrl!);
  });
  afterAll(async () => {
    s.client?.close();
    await s.server?.stop();
    repo?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return s;
}

describe('--grpc-restricted-protocol: a client without the metadata (single-user)', () => {
  const srv = useFlagsServer(() => [
    '--grpc-restricted-protocol=inference,health:infer-key=abc',
    '--grpc-restricted-protocol=model-repository:admin-key=s3cret',
  ]);

  it("cannot unload a model: UNAVAILABLE with Triton's text, and the model stays ready", async () => {
    for (const md of [{}, { 'triton-grpc-protocol-admin-key': 'wrong' }, { 'admin-key': 's3cret' }, KEY] as Record<string, string>[]) {
      const r = await unaryCall(srv.client, 'RepositoryModelUnload', { model_name: 'simple' }, undefined, md);
      expect([r.err?.code, r.err?.details], JSON.stringify(md)).toEqual([status.UNAVAILABLE, ADMIN]);
    }
    expect((await unaryCall(srv.client, 'RepositoryIndex', {})).err?.code).toBe(status.UNAVAILABLE);
    expect((await unaryCall(srv.client, 'RepositoryModelLoad', { model_name: 'simple' })).err?.details).toBe(ADMIN);
    expect((await unaryCall(srv.client, 'ModelReady', { name: 'simple' }, undefined, KEY)).res.ready).toBe(true);
  });

  it('cannot run a model, unary or streaming, nor read health (Check of grpc.health.v1 included)', async () => {
    const r = await unaryCall(srv.client, 'ModelInfer', simpleInfer(A, B));
    expect([r.err?.code, r.err?.details]).toEqual([status.UNAVAILABLE, INFER]);
    const s = await stream(srv.client, {}, [simpleInfer(A, B, { id: 's1' })]);
    expect(s.got).toEqual([]);
    expect([s.err?.code, s.err?.details]).toEqual([status.UNAVAILABLE, INFER]);
    for (const rpc of ['ServerLive', 'ServerReady', 'ModelReady']) expect((await unaryCall(srv.client, rpc, { name: 'simple' })).err?.details, rpc).toBe(INFER);
    const h = await healthCheck(srv.server.grpcUrl!, '');
    expect([h.err?.code, h.err?.details]).toEqual([status.UNAVAILABLE, INFER]);
  });

  it('with the metadata the same calls are served; unrestricted groups need none', async () => {
    const r = await unaryCall(srv.client, 'ModelInfer', simpleInfer(A, B), undefined, KEY);
    expect(int32s(r.res.raw_output_contents[0])).toEqual(A.map((x, i) => x + B[i]));
    const s = await stream(srv.client, KEY, [simpleInfer(A, B, { id: 's1' })]);
    expect([s.err, s.got.map((m) => m.infer_response?.id)]).toEqual([undefined, ['s1']]);
    expect((await unaryCall(srv.client, 'ServerLive', {}, undefined, KEY)).res.live).toBe(true);
    expect((await healthCheck(srv.server.grpcUrl!, '', KEY)).res?.status).toBe('SERVING');
    expect((await unaryCall(srv.client, 'ServerMetadata', {})).err).toBeUndefined();
    expect((await unaryCall(srv.client, 'ModelConfig', { name: 'simple' })).err).toBeUndefined();
    expect((await unaryCall(srv.client, 'RepositoryIndex', {}, undefined, { 'triton-grpc-protocol-admin-key': 's3cret' })).err).toBeUndefined();
  });
});

describe('--grpc-restricted-protocol on top of tenant tokens', () => {
  const TOKEN = 'acme-token-0123456789abcdefghijklmn';
  const srv = useFlagsServer((dir) => {
    writeTenantsFile(join(dir, 'tenants.json'), [{ id: 'acme', token: TOKEN, shared_models: ['simple'] }]);
    return ['--grpc-restricted-protocol=inference:infer-key=abc', `--tenants=${join(dir, 'tenants.json')}`];
  });

  it('a token without the metadata is refused; the metadata without a token is UNAUTHENTICATED; both together infer', async () => {
    const noKey = await unaryCall(srv.client, 'ModelInfer', simpleInfer(A, B), TOKEN);
    expect([noKey.err?.code, noKey.err?.details]).toEqual([status.UNAVAILABLE, INFER]);
    const s = await stream(srv.client, { authorization: `Bearer ${TOKEN}` }, [simpleInfer(A, B)]);
    expect(s.err?.code).toBe(status.UNAVAILABLE);
    expect((await unaryCall(srv.client, 'ModelInfer', simpleInfer(A, B), undefined, KEY)).err?.code).toBe(status.UNAUTHENTICATED);
    expect((await stream(srv.client, KEY, [simpleInfer(A, B)])).err?.code).toBe(status.UNAUTHENTICATED);
    expect((await unaryCall(srv.client, 'ModelInfer', simpleInfer(A, B), TOKEN, KEY)).err).toBeUndefined();
    const both = await stream(srv.client, { ...KEY, authorization: `Bearer ${TOKEN}` }, [simpleInfer(A, B, { id: 'ok' })]);
    expect([both.err, both.got.map((m) => m.infer_response?.id)]).toEqual([undefined, ['ok']]);
  });
});
