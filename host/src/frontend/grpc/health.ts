/**
 * The standard gRPC health service `grpc.health.v1.Health`, which tritonserver registers next to
 * its own service (server src/grpc/grpc_server.cc CommonHandler::RegisterHealthCheck) and which
 * Kubernetes `grpc:` probes and grpc-health-probe call. The service definition (health.proto) is
 * the grpc-node maintainers' `grpc-health-check` package's; the handlers are Warden's, because
 * Triton's semantics differ from that package's status map:
 * - `Check` answers the server's readiness (`ServerApi.isReady`, as `GET /v2/health/ready`)
 *   whatever service is named: SERVING or NOT_SERVING. No credentials are needed (as ServerLive).
 * - `Watch` (Triton registers no handler for it) streams the same status: the current one at once,
 *   then every change (readiness is looked at every {@link WATCH_POLL_MS} ms while a watch is
 *   open), and NOT_SERVING as soon as the server starts draining, after which the stream ends.
 * - `List` is not served (UNIMPLEMENTED), as in Triton.
 * Both are in the `health` group of `--grpc-restricted-protocol` (restricted.ts).
 */
import type { sendUnaryData, ServerUnaryCall, ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import type { GrpcRestrictions } from './restricted.js';
import { toServiceError } from './status.js';

/** How often open `Watch` streams look at the server's readiness, ms. */
export const WATCH_POLL_MS = 1000;

/** `grpc.health.v1.HealthCheckResponse.ServingStatus` as Warden reports it. */
type ServingStatus = 'SERVING' | 'NOT_SERVING';

type CheckCall = ServerUnaryCall<{ service: string }, { status: ServingStatus }>;
type WatchCall = ServerWritableStream<{ service: string }, { status: ServingStatus }>;

/** The health service: its definition, its handlers, and the drain signal. */
export class GrpcHealth {
  /** The `grpc.health.v1.Health` service definition, for `server.addService`. */
  readonly service = healthService as never;
  private readonly watchers = new Set<{ call: WatchCall; push: () => void }>();
  private timer: NodeJS.Timeout | undefined;
  private draining = false;

  /**
   * @param isReady the server's readiness (ServerApi.isReady)
   * @param restricted `--grpc-restricted-protocol` (the `health` group)
   */
  constructor(
    private readonly isReady: () => boolean,
    private readonly restricted: GrpcRestrictions,
  ) {}

  private status(): ServingStatus {
    return !this.draining && this.isReady() ? 'SERVING' : 'NOT_SERVING';
  }

  /** The handlers for `server.addService(this.service, ...)`. */
  handlers(): UntypedServiceImplementation {
    return {
      Check: (call: CheckCall, done: sendUnaryData<{ status: ServingStatus }>) => {
        const refusal = this.restricted.refusal('Check', call.metadata);
        if (refusal) return done(toServiceError(refusal) as never, null);
        done(null, { status: this.status() });
      },
      Watch: (call: WatchCall) => this.watch(call),
    };
  }

  private watch(call: WatchCall): void {
    const refusal = this.restricted.refusal('Watch', call.metadata);
    if (refusal) return void call.emit('error', Object.assign(new Error(refusal.message), toServiceError(refusal)));
    let last: ServingStatus | undefined;
    const watcher = {
      call,
      push: () => {
        const s = this.status();
        if (s === last || call.cancelled || call.writableEnded) return;
        last = s;
        call.write({ status: s });
      },
    };
    call.on('error', () => undefined);
    call.once('cancelled', () => this.remove(watcher));
    call.once('close', () => this.remove(watcher));
    watcher.push();
    if (this.draining) return void call.end();
    this.watchers.add(watcher);
    this.timer ??= setInterval(() => {
      for (const w of this.watchers) w.push();
    }, WATCH_POLL_MS).unref();
  }

  private remove(w: { call: WatchCall; push: () => void }): void {
    this.watchers.delete(w);
    if (this.watchers.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * The server starts draining: every open `Watch` gets NOT_SERVING and is ended (status OK).
   * @returns when each has ended, or after `waitMs` at most
   */
  async drain(waitMs: number): Promise<void> {
    this.draining = true;
    const ended: Promise<unknown>[] = [];
    for (const w of [...this.watchers]) {
      w.push();
      if (!w.call.writableEnded) {
        ended.push(new Promise((r) => w.call.once('finish', r)));
        w.call.end();
      }
      this.remove(w);
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(ended), new Promise((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }
}
