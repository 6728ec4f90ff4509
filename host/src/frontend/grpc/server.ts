/**
 * The gRPC frontend: `inference.GRPCInferenceService` (KServe v2 gRPC with Triton's extensions)
 * and the standard `grpc.health.v1.Health` (health.ts), with tritonserver's
 * `--grpc-restricted-protocol` groups (restricted.ts),
 * on @grpc/grpc-js, a thin converter over the data plane (dataplane/server-api.ts) like the HTTP
 * frontend; it never touches the model manager.
 *
 * Keepalive / HTTP/2 settings follow tritonserver's flags (spec §5.8) where grpc-js has the option:
 * `--grpc-keepalive-time` / `--grpc-keepalive-timeout` (ms), `--grpc-max-connection-age` /
 * `--grpc-max-connection-age-grace` (ms). grpc-js servers accept client pings without limit, so
 * `--grpc-keepalive-permit-without-calls`, `--grpc-http2-max-pings-without-data`,
 * `--grpc-http2-min-recv-ping-interval-without-data` and `--grpc-http2-max-ping-strikes` are
 * accepted and need nothing (grpc-js already behaves as the most permissive setting).
 * A request message is bounded by the server's input limit (`--http-max-input-size`, default
 * 64 MiB; grpc-js refuses a longer one with RESOURCE_EXHAUSTED before buffering it); responses are
 * unbounded, as in Triton.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, ServerCredentials, type ChannelOptions } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { ServerApi } from '../../dataplane/server-api.js';
import type { SystemSharedMemory } from '../../dataplane/shared-memory.js';
import type { TenantRegistry } from '../../tenancy/registry.js';
import { Admission } from '../admission.js';
import { loadTritonService } from './proto.js';
import { CallCount, grpcHandlers } from './service.js';
import { GrpcHealth } from './health.js';
import { GrpcRestrictions } from './restricted.js';
import type { RestrictedFeatures } from '../restricted.js';
import { ClientShm } from './shm.js';

/** tritonserver's gRPC keepalive flags (ms; undefined = grpc-js / Triton default). */
export interface GrpcKeepalive {
  /** `--grpc-keepalive-time` (Triton default 7200000). */
  timeMs?: number;
  /** `--grpc-keepalive-timeout` (Triton default 20000). */
  timeoutMs?: number;
  /** `--grpc-keepalive-permit-without-calls`: accepted, grpc-js servers always permit. */
  permitWithoutCalls?: boolean;
  /** `--grpc-http2-max-pings-without-data`: accepted (a client-side setting in gRPC core). */
  maxPingsWithoutData?: number;
  /** `--grpc-http2-min-recv-ping-interval-without-data`: accepted, grpc-js does not police pings. */
  minRecvPingIntervalWithoutDataMs?: number;
  /** `--grpc-http2-max-ping-strikes`: accepted, grpc-js does not police pings. */
  maxPingStrikes?: number;
  /** `--grpc-max-connection-age` / `--grpc-max-connection-age-grace` (ms). */
  maxConnectionAgeMs?: number;
  maxConnectionAgeGraceMs?: number;
}

export interface GrpcFrontendOptions {
  api: ServerApi;
  tenants?: TenantRegistry;
  shm: SystemSharedMemory;
  /** The FileDescriptorSet of Triton's service (third_party/triton-grpc-protos). */
  protosetPath: string;
  /** Largest request message, bytes. */
  maxReceiveBytes: number;
  keepalive?: GrpcKeepalive;
  logger: Logger;
  /** `--grpc-restricted-protocol` (restricted.ts); absent = every group open. */
  restricted?: RestrictedFeatures;
  /**
   * Listen on a unix socket in a new private (0700) directory instead of `host:port`: the native
   * data path serves the port and forwards here what it does not serve itself (DESIGN "The native
   * data path"). Only this process can reach the socket.
   */
  internalSocket?: boolean;
}

/** The grpc-js server options for the flags (exported for tests). */
export function grpcServerOptions(opts: Pick<GrpcFrontendOptions, 'maxReceiveBytes' | 'keepalive'>): ChannelOptions {
  const k = opts.keepalive ?? {};
  const o: ChannelOptions = { 'grpc.max_receive_message_length': opts.maxReceiveBytes, 'grpc.max_send_message_length': -1 };
  if (k.timeMs !== undefined) o['grpc.keepalive_time_ms'] = k.timeMs;
  if (k.timeoutMs !== undefined) o['grpc.keepalive_timeout_ms'] = k.timeoutMs;
  if (k.maxConnectionAgeMs !== undefined) o['grpc.max_connection_age_ms'] = k.maxConnectionAgeMs;
  if (k.maxConnectionAgeGraceMs !== undefined) o['grpc.max_connection_age_grace_ms'] = k.maxConnectionAgeGraceMs;
  return o;
}

export interface GrpcFrontend {
  /** Bound port (0 with {@link GrpcFrontendOptions.internalSocket}). */
  port: number;
  /** The unix socket it listens on ({@link GrpcFrontendOptions.internalSocket}); removed at stop. */
  socketPath?: string;
  /** Stop accepting; wait for calls in flight (at most `graceMs`, then cancel them). */
  stop(graceMs: number): Promise<void>;
}

/**
 * Start the gRPC frontend on `host:port` (0 = ephemeral), or on a private unix socket
 * ({@link GrpcFrontendOptions.internalSocket}).
 * @throws Error when the port or socket cannot be bound or the descriptor set cannot be loaded
 */
export async function startGrpcFrontend(opts: GrpcFrontendOptions, host: string, port: number): Promise<GrpcFrontend> {
  const server = new Server(grpcServerOptions(opts));
  const logger = opts.logger.child({ component: 'grpc' });
  const calls = new CallCount();
  // The admission every call takes, counting each tenant's requests in the data plane's one request
  // rate, which HTTP shares: a tenant using both protocols gets its requests_per_second once.
  const admission = new Admission({ tenants: opts.tenants, rate: opts.api.requestRate, logger: opts.logger.child({ component: 'auth' }), protocol: 'grpc' });
  const restricted = new GrpcRestrictions(opts.restricted);
  server.addService(loadTritonService(opts.protosetPath), grpcHandlers({ api: opts.api, admission, logger, shm: new ClientShm(opts.shm), calls, restricted }));
  // grpc.health.v1.Health, as Triton registers it (health.ts)
  const health = new GrpcHealth(() => opts.api.isReady(), restricted);
  server.addService(health.service, health.handlers());
  const dir = opts.internalSocket ? mkdtempSync(join(tmpdir(), 'warden-grpc-')) : undefined;
  const socketPath = dir !== undefined ? join(dir, 'grpc.sock') : undefined;
  if (dir !== undefined) chmodSync(dir, 0o700);
  const bound = await new Promise<number>((resolve, reject) => {
    const addr = socketPath !== undefined ? `unix:${socketPath}` : host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    server.bindAsync(addr, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  }).catch((e: unknown) => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  return {
    port: socketPath !== undefined ? 0 : bound,
    socketPath,
    // New calls are refused at once; unary calls and stream requests being handled get up to
    // graceMs; then every transport is closed (grpc-js's own graceful wait would also wait for
    // open but idle streams).
    async stop(graceMs) {
      // Open health watches get NOT_SERVING and end before the transports close.
      await health.drain(Math.min(graceMs, 1000));
      server.tryShutdown(() => undefined);
      const deadline = Date.now() + graceMs;
      while (calls.active > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      server.forceShutdown();
      admission.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}
