/**
 * Loading and typing of Warden's native addon (`native/build/Release/warden_native.node`, built by
 * scripts/build-native.mjs), which links Warden's `libtritonserver.so` — the Triton backend C API
 * host (spec §6). Everything here is a thin typed view of native/src/addon.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, TritonError } from '../contract/errors.js';
import { PROJECT_ROOT } from '../project.js';
import type { DataType } from '../contract/datatypes.js';
import { addonNotBuilt } from './platform.errors.js';

/** A tensor as the addon reads (requests) and produces (responses): see core `Tensor`. */
export interface AddonTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
}

/** The backend-visible scalar fields of a request, as the addon and the isolation ring carry them. */
export interface BackendRequestFields {
  /** Echoed in this request's events. */
  token: number;
  id: string;
  /** number/bigint = TRITONBACKEND_RequestCorrelationId, string = ...CorrelationIdString. */
  correlationId: number | bigint | string;
  flags: number;
  timeoutUs: number;
  priority: number;
  cancelled: boolean;
}

/** One request for `InstanceHandle.execute`. Input `data` is borrowed until the release event. */
export interface AddonRequest extends BackendRequestFields {
  inputs: readonly AddonTensor[];
  outputs: readonly string[];
  /** Flattened parameters: [key0, value0, key1, value1, ...]. */
  params: (string | number | boolean | bigint)[];
  /**
   * The scheduler can run the request again (`ResponseSender.reschedule`): the backend may
   * release it with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE. Not carried by the isolation ring
   * (an isolated backend's RESCHEDULE is refused with Triton's INVALID_ARG).
   */
  reschedulable?: boolean;
}

/** Timestamps a backend reported, ns of CLOCK_MONOTONIC (= process.hrtime.bigint()). */
export interface AddonTimestamps {
  execStartNs: bigint;
  computeStartNs: bigint;
  computeEndNs: bigint;
  execEndNs: bigint;
}

/** TRITONBACKEND_ModelInstanceReportBatchStatistics of one execution. */
export interface AddonExecStats extends AddonTimestamps {
  /** The backend called TRITONBACKEND_ModelInstanceReportBatchStatistics (else the timestamps are 0). */
  reported: boolean;
  batchSize: number;
  /** CLOCK_MONOTONIC ns when TRITONBACKEND_ModelInstanceExecute returned (always set). */
  returnedNs: bigint;
}

/** A response (`t: 0`) or a release (`t: 1`) of a request, in the order the backend made them. */
export type AddonEvent =
  | {
      t: 0;
      token: number;
      final: boolean;
      error?: { code: number; message: string };
      /** Absent for a flags-only response (TRITONBACKEND_ResponseFactorySendFlags). */
      outputs?: AddonTensor[];
      parameters?: Record<string, string | number | boolean | bigint>;
      /**
       * Instead of a FINAL (never with one, never with a response): a request released with
       * RESCHEDULE sends nothing more (WARDEN_RESPONSE_CLOSED).
       */
      closed?: boolean;
    }
  | {
      t: 1;
      token: number;
      stats?: AddonTimestamps & { success: boolean };
      /** Released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE: the request is to run again. */
      rescheduled?: boolean;
    };

export interface AddonInstanceSpec {
  name: string;
  /** TRITONSERVER_InstanceGroupKind: 1 CPU, 2 GPU, 3 MODEL. */
  kind: number;
  deviceId: number;
  hostPolicy: string;
  passive: boolean;
  profiles: string[];
  secondaryDevices: { kind: string; deviceId: number }[];
}

export interface InstanceHandle {
  /** TRITONBACKEND_ModelInstanceInitialize on the instance's native thread. */
  initialize(): Promise<void>;
  /** One TRITONBACKEND_ModelInstanceExecute; resolves after it returned and its events were delivered. */
  execute(requests: AddonRequest[]): Promise<AddonExecStats | undefined>;
  /** TRITONBACKEND_ModelInstanceFinalize, then the thread is stopped and the instance freed. */
  finalize(): Promise<void>;
  /** TRITONBACKEND_ModelInstanceReady on the JS thread (true if the backend does not implement it). */
  isReady(): boolean;
  /**
   * TRITONBACKEND_ModelInstanceReady on a thread of its own: resolves when ready, rejects with the
   * backend's error. The instance must not be finalized while it runs.
   */
  checkReady(): Promise<void>;
  /** Requests not yet both final-responded and released. */
  outstanding(): number;
  /**
   * Give up on an instance whose native thread is stuck in the backend: pending jobs never settle,
   * later events are dropped, the native instance and its thread are left allocated on purpose.
   */
  abandon(): void;
}

export interface ModelHandle {
  /** JSON a backend passed to TRITONBACKEND_ModelSetConfig inside ModelInitialize, or null. */
  setConfigJson(): string | null;
  updateConfig(configJson: string, outputs: string[], decoupled: boolean): void;
  createInstance(spec: AddonInstanceSpec, onEvents: (events: AddonEvent[]) => void): InstanceHandle;
  /** Responses neither sent nor deleted, and response factories not deleted, of this model now. */
  liveObjects(): { responses: number; factories: number };
  /** TRITONBACKEND_ModelFinalize (all instances must be finalized). */
  unload(): Promise<void>;
}

export interface BackendHandle {
  attributes(): { parallelInstanceLoading: boolean; executionPolicy: 'BLOCKING' | 'DEVICE_BLOCKING'; preferredInstanceGroupsJson: string };
  /** TRITONBACKEND_ModelInitialize off the JS thread. */
  loadModel(opts: {
    name: string;
    version: number;
    repositoryPath: string;
    configJson: string;
    autoCompleteConfig: boolean;
    outputs: string[];
    decoupled: boolean;
    /** NativeServerBridge owner id the model's TRITONSERVER_Server reports (0 = none). */
    serverOwner?: number;
  }): Promise<ModelHandle>;
  /** TRITONBACKEND_Finalize and dlclose (all models must be unloaded). */
  unload(): Promise<void>;
}

export interface NativeAddon {
  /** dlopen(RTLD_NOW) + TRITONBACKEND_Initialize + TRITONBACKEND_GetBackendAttribute, off-thread. */
  loadBackend(opts: { name: string; libraryPath: string; artifactsDir: string; configJson: string }): Promise<BackendHandle>;
  /** Route TRITONSERVER_LogMessage to `fn` (level: 0 INFO, 1 WARN, 2 ERROR, 3 VERBOSE). */
  setLogger(
    fn: (level: number, file: string, line: number, message: string) => void,
    levels: { info: boolean; warn: boolean; error: boolean; verbose: boolean },
  ): void;
  /** Prometheus text of the metric families backends created (TRITONSERVER_MetricFamilyNew). */
  customMetricsText(): string;
  /**
   * Route backends' in-process calls (TRITONSERVER_ServerInferAsync, model queries, load/unload)
   * to `fn` on the JS thread: kind 0 infer, 1 cancel, 2.. WARDEN_ServerQuery + 2. `fn` returns
   * the result JSON (or undefined), a promise of it, or throws an Error with `tritonCode`.
   */
  setServerHandler(fn: (kind: number, owner: number, payload: unknown) => string | undefined | Promise<string | undefined>): void;
  /** Detach: later calls fail with UNAVAILABLE, backend threads still waiting are answered so. */
  closeServerBridge(): void;
  /** A response for in-flight in-process request `token`; false if it is unknown (already final). */
  serverRespond(token: number, response: object | null, final: boolean): boolean;
  /** In-process requests submitted by backends and not yet answered FINAL (native count). */
  inflightInferenceRequests(): number;
  /** A new POSIX shared memory region of `bytes` (mode 0600), mapped; name "/warden-…". */
  shmCreate(bytes: number): { name: string; buffer: ArrayBuffer };
  /** Map a region shmCreate made (the size must match). @throws for any other name */
  shmOpen(name: string, bytes: number): ArrayBuffer;
  /** Remove a region's name (mappings stay valid). */
  shmUnlink(name: string): void;
  /**
   * A listening TCP socket for `host:port` with SO_REUSEPORT and SO_REUSEADDR, non-blocking and
   * close-on-exec (native/src/addon/net.cc), for `server.listen({ fd })`: several listeners of one
   * port form a group the kernel spreads new connections over. Port 0 picks a free port; bind the
   * others of the group to the port returned.
   * @param backlog the listen queue length, 1..65535
   * @param reusePort false: a plain listener (SO_REUSEADDR only) of a port no other socket may share
   * @returns the descriptor and the bound port
   * @throws Error with `tritonCode` INVALID_ARG (bad host, port or backlog; a host that does not
   *   resolve) or UNAVAILABLE (bind / listen failed, e.g. the port is held by a socket without SO_REUSEPORT)
   */
  reusePortListen(host: string, port: number, backlog: number, reusePort?: boolean): { fd: number; port: number };
  /** Close a descriptor from reusePortListen that no server took over. */
  closeFd(fd: number): void;
  /**
   * The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns; undefined if the clock fails
   * (native/src/addon/thread_clock.cc).
   */
  threadCpuNs(): number | undefined;
  /** Reported API versions, e.g. { backend: '1.19', server: '1.34' }. */
  apiVersion(): { backend: string; server: string };
  /**
   * Thread hand-off placement (native/src/core/wake.cc): when on (the default), a native instance
   * thread or wasmtime instance thread woken while the process is otherwise idle is first moved
   * onto the waking thread's CPU, which saves two cross-vCPU wake-ups (~40 µs each on VMs whose
   * idle vCPUs halt) per request. `--wake-affinity=false` turns it off.
   */
  setWakeAffinity(on: boolean): void;
  /**
   * Before waking thread `tid` (of this process or a backend-host child) that sleeps waiting for
   * work: moves it onto the calling thread's CPU when placement is on and no native work runs in
   * this process. @returns whether it was moved.
   */
  wakeAffinityPlace(tid: number): boolean;
  /** The answer of placed work is back on this thread: it leaves the CPU placement pinned it to. */
  wakeAffinityUnpinSelf(): void;
  /** How many times placement has moved a thread in this process. */
  wakeAffinityPlacements(): number;
  /**
   * In a backend-host process: serve the isolation ring (isolation/ring.ts) natively — a thread
   * reads Execute records from `fromParent` when doorbell socket `fd` rings, and responses,
   * releases and completions go back through `toParent`.
   */
  IsoServer: new (fd: number, fromParent: ArrayBuffer, toParent: ArrayBuffer) => IsoServer;
  /**
   * Connection admission on a native thread (native/src/addon/acceptor.cc): owns the listening
   * socket `fd`, accepts, closes at once a connection over `maxOpen` open connections or over
   * `maxPerAddress` from its client address (IPv4; IPv6 by /64; 0 = no per-address cap), and hands
   * the admitted descriptors to `onConnections` on the JS thread as `[fd, id, fd, id, …]`.
   * @throws Error with `tritonCode` INVALID_ARG when `fd` is not a listening socket or a cap is out of range
   */
  Acceptor: new (fd: number, maxOpen: number, maxPerAddress: number, onConnections: (batch: number[]) => void) => NativeAcceptorHandle;
  /** Warden's in-process ONNX Runtime engine (native/rust/ort-engine; host/src/backends/onnxruntime/native-engine.ts). */
  ort?: OrtEngineBinding;
  /** The native data path (native/rust/data-path; host/src/frontend/http/data-path/). */
  dataPath?: DataPathBinding;
}

/** A running native data path server (opaque). */
export type DataPathServer = { readonly __dataPathServer: unique symbol };
/** A route published on it (opaque). */
export type DataPathRoute = { readonly __dataPathRoute: unique symbol };

/** Options of {@link DataPathBinding.start} (warden/data_path.h WdServerOptions). */
export interface DataPathOptions {
  threads: number;
  maxConnections: number;
  /** 0 = no per-address cap. */
  maxConnectionsPerAddress: number;
  /** Bodies the data path reads itself (bytes); longer ones stream to the control plane. */
  maxBodyBytes: number;
  headerTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Bound of the JSON text of a response's tensors (`--http-max-json-output-bytes`). */
  maxJsonOutputBytes: number;
  /** `--http-restricted-api`'s `inference` restriction: requests without it are left to the control plane. */
  inferRestriction?: { header: string; value: string };
}

/** The data path's counters (requests since start; connections now). */
export interface DataPathCounters {
  served: number;
  forwarded: number;
  replayed: number;
  refusedConnections: number;
  openConnections: number;
  /** gRPC `ModelInfer` calls served natively. */
  grpcServed: number;
  /** gRPC calls forwarded to the control plane's gRPC server. */
  grpcForwarded: number;
  /** `/infer` requests read natively and answered by the control plane in-process ({@link DataPathBinding.setJsInfer}). */
  handedOver: number;
  /** Connections moved to the control plane's HTTP server after a handed-over request ({@link DataPathBinding.setJsInfer}'s `onConnection`). */
  movedConnections: number;
}

/** A request handed over by the data path (opaque; answer or decline it once). */
export type DataPathRequest = { readonly __dataPathRequest: unique symbol };

/** The addon's binding of the native data path (native/src/addon/data_path/binding.cc). */
export interface DataPathBinding {
  /**
   * Serves the listening socket `fd` (owned from here on) on native threads; what it does not
   * serve goes to the HTTP listener on the unix socket `socketPath`.
   * @throws Error (INTERNAL) when the runtime cannot start
   */
  start(fd: number, socketPath: string, options: DataPathOptions): DataPathServer;
  /**
   * Serves the gRPC port too: the listening socket `fd` (owned from here on); `ModelInfer` calls of
   * published routes are served natively, every other call goes to the gRPC server listening on
   * the unix socket `grpcSocketPath`.
   * @throws Error (INTERNAL) when the socket cannot be served, or the gRPC port is served already
   */
  listenGrpc(server: DataPathServer, fd: number, grpcSocketPath: string): void;
  /**
   * Publishes a route (JSON spec: name, version, max_batch_size, inputs [{name, datatype, dims}],
   * outputs [names]) over instance handles, lent until it is unpublished and drained.
   * @throws Error (INVALID_ARG) for a malformed spec or a finalized instance
   */
  publish(server: DataPathServer, spec: string, instances: object[]): DataPathRoute;
  /**
   * Publishes a route served by sessions of Warden's ONNX Runtime engine (the `ort` binding's
   * session externals; every output of the spec names its `datatype`), run on the data path's own
   * threads one at a time per session, lent until the route is unpublished and drained.
   * @throws Error (INVALID_ARG) for a malformed spec or a tensor a session lacks; Error for a closed session
   */
  publishOrt(server: DataPathServer, spec: string, sessions: object[]): DataPathRoute;
  /**
   * Publishes a route served by wasmtime sandboxes: the data path queues each request on one of
   * `instances`' threads (the `wasmtime` binding's instance externals) itself; `executeMs` is
   * their execute deadline (for its error text).
   * @throws Error (INVALID_ARG) for a malformed spec
   */
  publishWasm(server: DataPathServer, spec: string, instances: object[], executeMs: number): DataPathRoute;
  unpublish(server: DataPathServer, route: DataPathRoute): void;
  /** Requests of the route submitted and not yet answered and released. */
  inflight(route: DataPathRoute): number;
  /** Reads and resets the route's statistics (WdRouteStats field order, then WdBatchStats rows of 5). */
  takeStats(route: DataPathRoute): Float64Array;
  /** The latest end-to-end durations of successful requests (`queue` false) or queue times (µs) since the last take, oldest first (at most 512). */
  takeRecent(route: DataPathRoute, queue: boolean): Uint32Array;
  counters(server: DataPathServer): DataPathCounters;
  setPaused(server: DataPathServer, paused: boolean): void;
  /**
   * Hands the plain `/infer` requests of models without a route (bodies shorter than
   * `maxBodyBytes`) to `onRequest` on the JS thread instead of forwarding them; `onCancel` hears
   * of a request whose client went away. Each request is answered ({@link answerJs}) or declined
   * ({@link declineJs}, then forwarded to the internal listener) once. With `onConnection`, the
   * keep-alive connection such a request came on moves to JS once it is answered: `fd` is its
   * socket (owned by the callee), and {@link releaseConnection} with `token` frees its slot under
   * the connection caps once it is closed.
   * @throws Error when set already
   */
  setJsInfer(
    server: DataPathServer,
    maxBodyBytes: number,
    onRequest: (
      request: DataPathRequest,
      token: number,
      model: string,
      version: number,
      body: Buffer,
      headerLength: string | undefined,
      authorization: string | undefined,
    ) => void,
    onCancel: (token: number) => void,
    onConnection?: (fd: number, token: number) => void,
  ): void;
  /** A moved connection ({@link setJsInfer}'s `onConnection`) closed; nothing once the server is closed. */
  releaseConnection(server: DataPathServer, token: number): void;
  /** Answers a handed-over request: status, headers as `[name, value, name, value, ...]`, body. @throws Error when answered already */
  answerJs(request: DataPathRequest, status: number, headers: string[], body: Buffer | string): void;
  /** Declines a handed-over request: the data path forwards it to the internal listener. @throws Error when answered already */
  declineJs(request: DataPathRequest): void;
  beginClose(server: DataPathServer): void;
  /** Stops its threads and frees it. */
  close(server: DataPathServer): void;
}

/** An input or output of an engine session: its name and ONNX element type (0: not passed by the engine). */
export interface OrtEngineOutlet {
  name: string;
  type: number;
}

/** The addon's binding of the in-process ONNX Runtime engine (native/src/addon/ort/binding.cc). */
export interface OrtEngineBinding {
  /** Loads ONNX Runtime from `libPath` (once per process). @throws Error if it cannot be loaded */
  init(libPath: string): void;
  /** Opens a model file off the JS thread. Rejects with ONNX Runtime's message. */
  open(path: string, intraOpThreads: number, interOpThreads: number): Promise<{ session: object; inputs: OrtEngineOutlet[]; outputs: OrtEngineOutlet[] }>;
  /** Releases a session off the JS thread; later runs of it throw at once. */
  close(session: object): Promise<void>;
  /**
   * Runs a session on the calling thread.
   * @param spec `[nIn, nOut, per input (index, elemType, rank, dims…), per output (index)]`
   * @param data the inputs' bytes, one Uint8Array per input (borrowed for the call)
   * @param shapes filled per output with `(elemType, rank, dims…)`, rows of `2 + maxRank`
   * @returns the outputs' bytes
   * @throws Error with ONNX Runtime's message; RangeError / TypeError for a malformed call
   */
  run(session: object, spec: Float64Array, data: Uint8Array[], shapes: Float64Array): Uint8Array[];
  /** Most dimensions a tensor may have. */
  readonly maxRank: number;
}

/** The native server of a backend-host process's request path (native/src/addon/iso_server.cc). */
/** The native acceptor of one listening socket (see {@link NativeAddon.Acceptor}). */
export interface NativeAcceptorHandle {
  /** Gives back connection `id`'s admission when its socket has closed (once; unknown ids ignored). */
  release(id: number): void;
  /** Stops accepting and closes the listening socket (idempotent); admitted sockets stay open. */
  close(): void;
}

export interface IsoServer {
  /** Execute records for instance `id` go to `handle`. */
  addInstance(id: number, handle: InstanceHandle): void;
  /** Stop routing to `id`; returns the requests it still holds unreleased. */
  removeInstance(id: number): number;
  /** Requests submitted to instance `id` and not yet released. */
  outstanding(id: number): number;
  /** Stop the reader thread (late responses still go out). */
  close(): void;
  /** The kernel thread id of the thread that waits for doorbells (the parent places it before ringing). */
  readonly readerTid: number;
}

/** Where the addon is looked for (first hit): $WARDEN_NATIVE_ADDON, then `<project>/native/build/Release`. */
export function addonPath(): string {
  if (process.env.WARDEN_NATIVE_ADDON) return resolve(process.env.WARDEN_NATIVE_ADDON);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'native', 'build', 'Release', 'warden_native.node');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return join(PROJECT_ROOT, 'native', 'build', 'Release', 'warden_native.node');
}

let cached: NativeAddon | undefined;

/**
 * The addon, loaded once. Loading it also loads `libtritonserver.so` (its DT_NEEDED, found through
 * RUNPATH $ORIGIN); the host makes that library's symbols global before the first backend dlopen.
 * @throws TritonError UNAVAILABLE if the addon was not built.
 */
export function nativeAddon(): NativeAddon {
  if (cached) return cached;
  const path = addonPath();
  if (!existsSync(path)) {
    throw addonNotBuilt(path);
  }
  const require = createRequire(import.meta.url);
  cached = require(path) as NativeAddon;
  return cached;
}

/** An error thrown or rejected by the addon, as a TritonError (`tritonCode` carries the code). */
export function fromAddonError(e: unknown): TritonError {
  if (e instanceof TritonError) return e;
  const code = (e as { tritonCode?: unknown })?.tritonCode;
  const message = e instanceof Error ? e.message : String(e);
  if (typeof code === 'number' && ERROR_CODES[code]) return new TritonError(ERROR_CODES[code]!, message);
  return new TritonError(e instanceof TypeError || e instanceof RangeError ? 'INVALID_ARG' : 'INTERNAL', message);
}

/** TRITONSERVER_Error_Code number → TritonError. */
export function tritonErrorOf(code: number, message: string): TritonError {
  return new TritonError(ERROR_CODES[code] ?? 'UNKNOWN', message);
}
