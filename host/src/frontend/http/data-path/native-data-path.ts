/**
 * The native data path on the TypeScript side (DESIGN "The native data path";
 * `--http-data-path=native`): the public HTTP port is served by the addon's native threads
 * (native/rust/data-path). For each model whose serving version {@link routeOf} accepts, a route is
 * published, and its `/infer` requests are decoded, executed on the backend's instance and answered
 * there, never touching the JavaScript thread. Every other request (other routes, other models, a
 * body the data path does not decode, tracing on) is forwarded to the internal listener, whose
 * request listener is the public server's: one semantics, and every error text is the
 * TypeScript data plane's.
 *
 * The control plane keeps the rest: routes follow the lifecycle (published at a swap, withdrawn
 * before a version retires, after their in-flight requests drained), statistics are taken from
 * the routes into each version's statistics before they are read, and tracing pauses the data path.
 */
import type { RequestListener, Server } from 'node:http';
import type { Logger } from 'pino';
import type { CancellationSignal, ModelKey } from '../../../contract/types.js';
import type { ModelVersion } from '../../../lifecycle/model-version.js';
import type { ServerMetrics } from '../../../metrics/prometheus.js';
import type { AbsorbedStats } from '../../../metrics/stats.js';
import type { DataPathBinding, DataPathCounters, DataPathOptions, DataPathRoute, DataPathServer } from '../../../platform/addon.js';
import { type InternalServerSettings, type NativeErrorRenderer, type NativeGrpcErrorRenderer, InternalListener } from '../internal-listener.js';
import { ManualSignal } from '../../cancellation.js';
import { AdoptedSockets } from '../adopted-sockets.js';
import { answerHeaders } from '../claim.js';
import type { HttpAnswer } from '../routing.js';
import type { RingRequest } from '../threads/messages.js';
import { ortRouteOf, routeOf, wasmRouteOf } from './route-spec.js';

/** How often a withdrawn route's in-flight count is read while it drains (ms). */
const DRAIN_POLL_MS = 2;

/** A published route and the version it serves. */
interface Published {
  route: DataPathRoute;
  version: ModelVersion;
  withdrawn: boolean;
  /** The instance handles it was published with (a wasmtime route is published again when they change). */
  handles?: readonly object[];
  /** Resolves once the withdrawn route's requests drained and its statistics were taken. */
  drained?: Promise<void>;
}

/** Fields of WdRouteStats, and of each WdBatchStats row after them (warden/data_path.h). */
const ROUTE_STATS_FIELDS = 16;
const BATCH_STATS_FIELDS = 5;

/** WdRouteStats and its WdBatchStats rows (warden/data_path.h) as {@link AbsorbedStats}. */
function absorbed(f: Float64Array): AbsorbedStats {
  const batches = [{ batchSize: 1, count: f[11]!, inputNs: f[12]!, inferNs: f[13]!, outputNs: f[14]! }];
  for (let i = ROUTE_STATS_FIELDS; i + BATCH_STATS_FIELDS <= f.length; i += BATCH_STATS_FIELDS)
    batches.push({ batchSize: f[i]!, count: f[i + 1]!, inputNs: f[i + 2]!, inferNs: f[i + 3]!, outputNs: f[i + 4]! });
  return {
    successCount: f[0]!,
    successNs: f[1]!,
    failCount: f[2]!,
    failNs: f[3]!,
    timedCount: f[4]!,
    queueNs: f[5]!,
    computeInputNs: f[6]!,
    computeInferNs: f[7]!,
    computeOutputNs: f[8]!,
    inferenceCount: f[9]!,
    executionCount: f[10]!,
    batches,
    lastInferenceMs: f[15]!,
  };
}

export class NativeDataPath {
  private readonly published = new Map<string, Published>();
  /** The version each model's route should serve now (an ONNX Runtime route publishes after an await). */
  private readonly latest = new Map<string, ModelVersion>();
  /** Every route published for a version and not yet drained (a wasmtime version's may be several). */
  private readonly routesOf = new Map<ModelVersion, Set<Published>>();
  /** The wasmtime versions whose instances' thread changes are followed. */
  private readonly followed = new WeakSet<ModelVersion>();
  private closed = false;
  /** The connections moved to the public `node:http` server ({@link handOver}'s `moveTo`). */
  private moved: AdoptedSockets | undefined;

  private constructor(
    private readonly binding: DataPathBinding,
    private readonly server: DataPathServer,
    private readonly internal: InternalListener,
    private readonly logger: Logger,
  ) {}

  /**
   * Serves the listening socket `fd` (owned from here on) natively; other requests reach
   * `listener` through a new internal listener.
   * @throws Error when the internal listener or the native runtime cannot start (`fd` is closed)
   */
  static async start(
    binding: DataPathBinding,
    fd: number,
    listener: RequestListener,
    settings: InternalServerSettings,
    options: DataPathOptions,
    nativeErrors: NativeErrorRenderer,
    logger: Logger,
  ): Promise<NativeDataPath> {
    const internal = await InternalListener.start(listener, settings, 'data-path.sock', nativeErrors);
    let server: DataPathServer;
    try {
      server = binding.start(fd, internal.socketPath, options);
    } catch (e) {
      await internal.close();
      throw e;
    }
    return new NativeDataPath(binding, server, internal, logger);
  }

  /**
   * Serves the gRPC port too (`fd`, a listening socket, owned from here on): `ModelInfer` calls of
   * the published routes natively, every other call forwarded to the gRPC server on the unix
   * socket `grpcSocketPath`; `errors` renders the backend errors met on native calls.
   * @throws Error when the socket cannot be served (`fd` is closed)
   */
  listenGrpc(fd: number, grpcSocketPath: string, errors: NativeGrpcErrorRenderer): void {
    this.internal.grpcErrors = errors;
    this.binding.listenGrpc(this.server, fd, grpcSocketPath);
  }

  /** Requests served natively, forwarded, handed back after reading (replayed); connections. */
  counters(): DataPathCounters {
    return this.binding.counters(this.server);
  }

  /** Names of the models with a published route (for tests and diagnostics). */
  get routes(): string[] {
    return [...this.published.keys()];
  }

  /**
   * Answers the plain `/infer` requests of models without a route in this process (DESIGN "The
   * native data path"): the data path reads them and hands them to `serve` — the entry point of the
   * front-end threads' claimed requests (app.ts `serveRing`: the TypeScript decode, data plane,
   * encode and error answers) — and writes its answer; what `serve` declines (undefined) goes to
   * the internal listener. A client that goes away cancels its request. With `moveTo`, the
   * keep-alive connection such a request came on then moves to `moveTo.server` (the public
   * `node:http` server, never listened on), which serves the requests that follow on it as the
   * default path does (DESIGN "The native data path").
   * @param maxBodyBytes only bodies shorter than this are handed over (the fast path's bound)
   */
  handOver(
    serve: (r: RingRequest, signal: CancellationSignal) => Promise<HttpAnswer | undefined>,
    maxBodyBytes: number,
    moveTo?: { server: Server; closeFd: (fd: number) => void },
  ): void {
    const signals = new Map<number, ManualSignal>();
    const binding = this.binding;
    binding.setJsInfer(
      this.server,
      maxBodyBytes,
      (request, token, model, version, body, headerLength, authorization) => {
        const signal = new ManualSignal();
        signals.set(token, signal);
        const done = (a: HttpAnswer | undefined): void => {
          signals.delete(token);
          try {
            if (!a) binding.declineJs(request);
            else {
              const headers = answerHeaders(a);
              binding.answerJs(request, a.status, Object.entries(headers).flat(), a.body);
            }
          } catch (e) {
            this.logger.error({ err: e }, 'native data path: a handed-over request could not be answered');
          }
        };
        serve({ id: token, model, version, body, headerLength, authorization, clientAddress: '' }, signal).then(done, (e: unknown) => {
          this.logger.error({ err: e }, 'native data path: a handed-over request failed');
          done(undefined);
        });
      },
      (token) => signals.get(token)?.abort(),
      moveTo && ((fd, token) => this.moved!.adopt(fd, token)),
    );
    if (moveTo) this.moved = new AdoptedSockets(moveTo.server, (token) => binding.releaseConnection(this.server, token), moveTo.closeFd);
  }

  /** While tracing is on, every request goes through the TypeScript path (it traces). */
  setPaused(paused: boolean): void {
    if (!this.closed) this.binding.setPaused(this.server, paused);
  }

  /** Hooks the data path to the lifecycle and the metrics render. */
  attach(onServing: (l: (key: ModelKey, serving: readonly ModelVersion[]) => void) => void, metrics: ServerMetrics): void {
    onServing((key, serving) => this.servingChanged(key, serving));
    metrics.onRender(() => this.pullAll());
    metrics.addTextSource(() => this.metricsText());
  }

  /**
   * `warden_data_path_requests_total{handled=...}`: requests on the data path's port by how they
   * were handled — `native` (answered without the JavaScript thread), `handed_over` (read here,
   * answered by the TypeScript data plane in-process: models without a route), `replayed` (read,
   * then answered by the TypeScript path: a request the data path does not decode) and `forwarded`
   * (never read: other routes and request kinds) — the visible count of fallbacks; and
   * `warden_data_path_refused_connections_total`, connections closed over the caps.
   */
  private metricsText(): string {
    if (this.closed) return '';
    const c = this.counters();
    return [
      '# HELP warden_data_path_requests_total Requests on the native data path, by how they were handled (native, handed_over, replayed, forwarded)',
      '# TYPE warden_data_path_requests_total counter',
      `warden_data_path_requests_total{handled="native"} ${c.served}`,
      `warden_data_path_requests_total{handled="replayed"} ${c.replayed}`,
      `warden_data_path_requests_total{handled="forwarded"} ${c.forwarded}`,
      `warden_data_path_requests_total{handled="handed_over"} ${c.handedOver}`,
      '# HELP warden_data_path_moved_connections_total Connections the native data path moved to the JavaScript thread after a handed-over request',
      '# TYPE warden_data_path_moved_connections_total counter',
      `warden_data_path_moved_connections_total ${c.movedConnections}`,
      '# HELP warden_data_path_refused_connections_total Connections the native data path closed over the connection caps',
      '# TYPE warden_data_path_refused_connections_total counter',
      `warden_data_path_refused_connections_total ${c.refusedConnections}`,
      '',
    ].join('\n');
  }

  /** A model's serving versions changed: publish the highest one's route when it qualifies. */
  servingChanged(key: ModelKey, serving: readonly ModelVersion[]): void {
    if (this.closed || key.namespace !== '') return;
    const top = serving.reduce<ModelVersion | undefined>((a, v) => (a === undefined || v.version > a.version ? v : a), undefined);
    if (!top) this.latest.delete(key.name);
    if (!top || !top.isReady()) return;
    this.latest.set(top.name, top);
    const r = routeOf(top);
    if ('refusal' in r) {
      if (top.backendInstances.some((i) => i.ortSession)) {
        void this.publishOrt(top);
        return;
      }
      if (top.backendInstances.some((i) => i.wasmtimeThread)) {
        this.followWasm(top);
        return;
      }
      this.logger.debug({ model: top.name, version: top.version, reason: r.refusal }, 'served by the TypeScript data path');
      return;
    }
    this.publish(top, () => this.binding.publish(this.server, JSON.stringify(r.spec), r.handles));
  }

  /**
   * Publishes `top`'s ONNX Runtime route once its instances' engine sessions are open, if it is
   * still the version to serve and ready then (a retire in between stops it taking requests first).
   */
  private async publishOrt(top: ModelVersion): Promise<void> {
    let r: Awaited<ReturnType<typeof ortRouteOf>>;
    try {
      r = await ortRouteOf(top);
    } catch (e) {
      this.logger.warn({ err: e, model: top.name }, 'native data path: route not published');
      return;
    }
    if (this.closed || this.latest.get(top.name) !== top || !top.isReady()) return;
    if ('refusal' in r) {
      this.logger.debug({ model: top.name, version: top.version, reason: r.refusal }, 'served by the TypeScript data path');
      return;
    }
    this.publish(top, () => this.binding.publishOrt(this.server, JSON.stringify(r.spec), r.sessions));
  }

  /**
   * Serves `top` on its wasmtime sandbox threads while every instance has one serving steadily, and
   * follows them: a thread that changes (a fresh one after a failed respawn) publishes the route
   * again over the new threads; while any instance has none (restarting), the route is withdrawn
   * and the TypeScript path answers, with its own errors.
   */
  private followWasm(top: ModelVersion): void {
    if (!this.followed.has(top)) {
      this.followed.add(top);
      for (const i of top.backendInstances) i.onWasmtimeThreadChange?.(() => this.refreshWasm(top));
    }
    this.refreshWasm(top);
  }

  private refreshWasm(top: ModelVersion): void {
    if (this.closed || this.latest.get(top.name) !== top) return;
    const current = this.published.get(top.name);
    const mine = current?.version === top ? current : undefined;
    const r = top.isReady() ? wasmRouteOf(top) : { refusal: 'not ready' };
    if ('refusal' in r) {
      if (mine) void this.withdraw(mine);
      this.logger.debug({ model: top.name, version: top.version, reason: r.refusal }, 'served by the TypeScript data path');
      return;
    }
    if (mine && mine.handles?.length === r.threads.length && mine.handles.every((h, k) => h === r.threads[k])) return;
    this.publish(top, () => this.binding.publishWasm(this.server, JSON.stringify(r.spec), r.threads, r.executeMs), r.threads);
    if (mine) void this.withdraw(mine);
  }

  /** Publishes `top`'s route with `publish` and ties it to the version's statistics and retire. */
  private publish(top: ModelVersion, publish: () => DataPathRoute, handles?: readonly object[]): void {
    let route: DataPathRoute;
    try {
      route = publish();
    } catch (e) {
      this.logger.warn({ err: e, model: top.name }, 'native data path: route not published');
      return;
    }
    const p: Published = { route, version: top, withdrawn: false, handles };
    this.published.set(top.name, p);
    top.stats.pull = () => this.pull(p);
    let all = this.routesOf.get(top);
    if (!all) {
      this.routesOf.set(top, (all = new Set()));
      // before the version retires, every route it had stops and drains
      top.onRetire(() => Promise.all([...(this.routesOf.get(top) ?? [])].map((q) => this.withdraw(q))).then(() => undefined));
    }
    all.add(p);
    this.logger.debug({ model: top.name, version: top.version }, 'served by the native data path');
  }

  private pull(p: Published): void {
    const s = absorbed(this.binding.takeStats(p.route));
    s.recentRequestUs = this.binding.takeRecent(p.route, false);
    s.recentQueueUs = this.binding.takeRecent(p.route, true);
    p.version.stats.absorb(s);
  }

  private pullAll(): void {
    for (const p of this.published.values()) this.pull(p);
  }

  /** Unpublishes `p` and resolves once its requests in flight are answered and released. */
  private async withdraw(p: Published): Promise<void> {
    if (p.withdrawn) return p.drained;
    p.withdrawn = true;
    if (this.published.get(p.version.name) === p) this.published.delete(p.version.name);
    if (!this.closed) this.binding.unpublish(this.server, p.route);
    p.drained = (async () => {
      while (this.binding.inflight(p.route) > 0) await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      this.pull(p);
      this.routesOf.get(p.version)?.delete(p);
      // a route published again for the version (wasmtime) now carries its statistics
      const next = this.published.get(p.version.name);
      if (next?.version !== p.version) p.version.stats.pull = undefined;
    })();
    return p.drained;
  }

  /** Stops accepting; connections close after their request in flight. */
  beginClose(): void {
    if (!this.closed) this.binding.beginClose(this.server);
  }

  /** {@link beginClose}, resolving once every public connection has closed. */
  async drain(): Promise<void> {
    this.beginClose();
    void this.moved?.close();
    while (!this.closed && this.binding.counters(this.server).openConnections > 0) await new Promise((r) => setTimeout(r, 10));
  }

  /** Stops the native threads (after the models drained) and closes the internal listener. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.beginClose();
    this.pullAll();
    this.closed = true;
    this.binding.close(this.server);
    await this.internal.close();
  }
}
