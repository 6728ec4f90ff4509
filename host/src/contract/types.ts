/**
 * The backend contract: what every backend kind (onnxruntime, wasm, native Triton ABI, python)
 * implements, and the request / response objects that flow through the scheduler.
 * Mirrors Triton's object model (Backend → Model → ModelInstance, spec §6.2) so that each
 * backend adapter is a thin mapping.
 *
 * Backends never see HTTP; frontends never see backends (DESIGN "One request, end to end").
 */
import type { Logger } from 'pino';
import type { BlsChain } from './bls.js';
import type { ModelConfig } from './model-config.js';
import type { DataType } from './datatypes.js';
import type { TritonError } from './errors.js';
import type { ModelLogWriter } from './model-log.js';

/**
 * A tensor in host (CPU) memory.
 * - `shape`: dims, batch dim first when the model batches (`max_batch_size > 0`).
 * - `data`: row-major, little-endian, no padding. BYTES elements are `[u32 LE length][bytes]`
 *   concatenated (spec §1.10). BOOL is one byte per element (0 / 1).
 */
export interface Tensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
  /**
   * Set when `data` views memory the host does not own (a shared-memory region, a backend's
   * buffer): released exactly once when the tensor is no longer needed — request inputs by the
   * data plane after the request's final response, response outputs by whoever consumed the
   * response (a frontend after encoding it). Absent = ordinary GC-managed memory.
   */
  owner?: TensorMemoryOwner;
}

/** Owner of memory a {@link Tensor} views without owning it. */
export interface TensorMemoryOwner {
  /** Give the memory back; called once, after which the tensor's `data` must not be read. */
  release(): void;
}

/**
 * A request or response parameter (spec §1.11, §3.8). Numbers that are integers are Triton INT
 * (int64) parameters; other numbers are DOUBLE; a bigint is an INT beyond ±(2^53−1), within int64.
 */
export type ParameterValue = string | number | boolean | bigint;

/**
 * The budget one top-level request's ensemble runs share, nested ensembles included
 * (ensemble/budget.ts `EnsembleBudget` implements it; DESIGN "Multi-tenancy": ensemble steps are
 * charged to the caller).
 */
export interface EnsembleRequestBudget {
  /** @throws AccessError `forbidden` when the least cost of a run is over the caps, before any step runs */
  afford(cost: { readonly inferences: number; readonly depth: number }): void;
  /** A run at nesting `depth` starts. @throws AccessError `forbidden` past the depth cap */
  enter(depth: number): void;
  /** One composing request is about to be sent. @throws AccessError `forbidden` past the inference or fan-out cap */
  take(): void;
  /** A composing request counted by {@link take} ended. */
  done(): void;
}

/** `TRITONSERVER_RequestFlag` bits. */
export const REQUEST_FLAG_SEQUENCE_START = 1;
export const REQUEST_FLAG_SEQUENCE_END = 2;

/**
 * A client's W3C trace context (the `traceparent` and `tracestate` header or metadata values, as
 * sent; validated where they are used: trace/context.ts). Triton's OpenTelemetry context propagation.
 */
export interface TraceContextCarrier {
  traceparent: string;
  tracestate?: string;
}

/**
 * A traced request's trace (trace/trace-manager.ts `RequestTrace`), as a request made on its behalf
 * refers to it: Triton's parent of a child trace (core `InferenceTrace::SpawnChildTrace`).
 */
export interface TraceRef {
  /** The trace's id: Triton's `id` in the trace file, the child's `parent_id`. */
  readonly id: number;
}

/**
 * One inference request as a backend sees it, after validation against the model config.
 * Inputs carry the shapes the backend expects (after `reshape`).
 */
export interface InferenceRequest {
  /** Client request id ('' if none). */
  id: string;
  /**
   * The client's trace context, if it sent one: in `--trace-config mode=opentelemetry` the request is
   * traced whatever the rate and count, and its spans continue the client's trace.
   */
  traceContext?: TraceContextCarrier;
  /**
   * Set by the model version when it samples the request for tracing (spec §3.5): its trace, the
   * parent of the traces of requests made on its behalf. Never set by a client or a caller.
   */
  trace?: TraceRef;
  /**
   * Set on a request made on behalf of another (an ensemble step, a backend's BLS call) when that
   * one is traced: its trace. The request is then traced too, whatever the trace rate and count,
   * as its child (Triton's `parent_id`; in OpenTelemetry mode, spans under the parent's). Never
   * set by a client.
   */
  parentTrace?: TraceRef;
  /** Resolved model name and version. */
  model: string;
  version: number;
  /**
   * Namespace of the principal that sent the request ('' = the operator / single-user mode). Set
   * by the data plane, never by a client; schedulers queue fairly by it.
   */
  tenant: string;
  inputs: Tensor[];
  /**
   * Output names the backend should produce: the client's list, or every config output when the
   * client listed none (spec §1.12).
   */
  requestedOutputs: string[];
  /** Client parameters with reserved keys removed (spec §1.11). */
  parameters: Record<string, ParameterValue>;
  /** Sequence correlation id: 0 or '' = none; bigint for ids above 2^53. */
  correlationId: number | bigint | string;
  /** `TRITONSERVER_RequestFlag` bits. */
  flags: number;
  /** 0 = model default. */
  priority: number;
  /** Request timeout in µs; 0 = none. */
  timeoutUs: number;
  /** Batch size this request contributes (first dim when batching, else 1). */
  batchSize: number;
  /**
   * Set by the host when the caller went away (the data plane's AbortSignal). A request still
   * queued is then dropped with CANCELLED before it reaches a backend; one already executing may
   * be stopped by its backend, which checks this flag (`TRITONBACKEND_RequestIsCancelled`).
   */
  cancelled: boolean;
  /**
   * Set by an in-process caller that aggregates the request's queue and compute durations (ns) —
   * an ensemble, for its own statistics (spec §3.2). Called once per execution the request was
   * part of, after the model recorded them.
   */
  onTimes?: (queueNs: bigint, inputNs: bigint, inferNs: bigint, outputNs: bigint) => void;
  /**
   * Set on a request for an ensemble, and on each composing request of an ensemble run: the
   * budget of the top-level ensemble request (shared by its nested ensembles) and the nesting depth
   * of the ensemble that sent it (0 = none, the request came from a client). Set by the data plane
   * and ensemble runs, never by a client (ensemble/budget.ts).
   */
  ensemble?: { readonly budget: EnsembleRequestBudget; readonly depth: number };
  /**
   * Set on a request a backend makes from its execute (BLS, contract/bls.ts) and on the steps of an
   * ensemble such a request runs: the models (key ids) whose executes wait on it, outermost first.
   * A backend's calls extend it; depth and recursion are checked against it. Never set by a client.
   */
  blsChain?: BlsChain;
}

/** One response (spec §1.13). Outputs are in the order the backend produced them. */
export interface InferenceResponse {
  outputs: Tensor[];
  parameters?: Record<string, ParameterValue>;
}

/**
 * Delivers the responses of one request to whoever is waiting (HTTP, BLS, ...).
 * Non-decoupled models send exactly one response with `final = true`. Decoupled models send
 * any number of responses, and exactly one `final` (possibly flags-only: `send(null, true)`).
 * Calls after the final one are ignored (and logged by the host).
 */
export interface ResponseSender {
  /** Send a response (or `null` for a flags-only final). */
  send(response: InferenceResponse | null, final: boolean): void;
  /** Send an error as this request's response. */
  sendError(error: TritonError, final: boolean): void;
  /**
   * The backend released the request with `TRITONSERVER_REQUEST_RELEASE_RESCHEDULE` (spec §6.7
   * item 6): run it again. Offered only by the sequence batcher of a model with
   * `sequence_batching { iterative_sequence: true }`, for requests without END (Triton core's
   * IterativeSequencer); absent elsewhere, where a backend refuses the release with Triton's
   * INVALID_ARG "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the
   * model is not configured to handle such a flag.". The request must not have had its FINAL
   * response; responses of the run that rescheduled it may still follow. If it cannot run again
   * (its sequence was released for being idle, the model is unloading), its sender gets that error
   * as the FINAL response. Never throws.
   */
  reschedule?(): void;
}

/**
 * Optional timing a backend reports for one execution, in ns of the monotonic clock
 * (`process.hrtime.bigint()` / CLOCK_MONOTONIC): `computeStartNs` after inputs are staged,
 * `computeEndNs` when inference finished and outputs are about to be produced.
 * `execEndNs` when the backend's execute returned, on the backend's own thread: a backend whose
 * completion reaches the JS thread later (native: a thread hop and response delivery first) sets
 * it so compute_output does not count that hop (it may already be after the final response).
 * Absent fields fall back to the scheduler's own timestamps.
 * Used for compute_input / compute_infer / compute_output statistics (spec §3.2).
 */
export interface ExecuteTimings {
  computeStartNs?: bigint;
  computeEndNs?: bigint;
  execEndNs?: bigint;
  /**
   * For a backend whose batch statistics are its own reports, as Triton's core counts them
   * (`TRITONBACKEND_ModelInstanceReportBatchStatistics` → `UpdateInferBatchStats`, core
   * `infer_stats.cc`): the batch size it reported for this execution, or `null` when it reported
   * none — then the execution is no batch statistic at all (no `execution_count`, `batch_stats`
   * or `last_inference` change). Absent (Warden's own backends): Warden counts the execution
   * itself, with the scheduler's batch size.
   */
  backendBatchSize?: number | null;
}

/**
 * Identity of a model in the server: a namespace and a name. Namespace `''` is the operator's
 * (single-user mode and models of the operator's repositories); a tenant's models live in the
 * tenant's namespace, so two tenants may each have a model called `simple`.
 */
export interface ModelKey {
  readonly namespace: string;
  readonly name: string;
}

/**
 * Where a model's files came from — the trust boundary of loading (DESIGN "Multi-tenancy"):
 * `repository` = an operator's model repository on disk (trusted: may name native backends);
 * `upload` = the load API's file overrides (untrusted, whoever sent them: `tenant` is the
 * uploader's namespace, `''` in single-user mode). Resolvers use it to refuse native code from
 * uploads. An upload's `digests`, when set, are the SHA-256 (hex) of the files the upload store
 * just wrote or compared, by path relative to the model directory (`1/model.wasm`): a backend
 * may take them instead of hashing the files again (the store's directory is written by the
 * server alone; the files are read-only).
 */
export type ModelOrigin =
  | { readonly kind: 'repository'; readonly repository: string }
  | { readonly kind: 'upload'; readonly tenant: string; readonly digests?: ReadonlyMap<string, string> };

/**
 * Who makes a call on the server (from the frontend's authentication). `namespace` scopes model
 * names; `role: 'admin'` sees every namespace. Single-user mode uses {@link SINGLE_USER}.
 */
export interface Principal {
  readonly namespace: string;
  readonly role: 'admin' | 'tenant';
  /**
   * Set by in-process callers acting inside a request the data plane already admitted (an
   * ensemble's steps): the tenant's quotas (in-flight count) are charged once, at the outer
   * request. Never set from a frontend.
   */
  readonly within?: true;
  /**
   * The tenant on whose behalf an in-process call inside an admitted request is made (an
   * ensemble's steps: the namespace of the ensemble's caller). Names still resolve in
   * {@link namespace}; the request's {@link InferenceRequest.tenant} (queues, fairness, the
   * arbiter's CPU accounting) is this tenant, and its in-flight quota is charged per call. Never
   * set from a frontend.
   */
  readonly caller?: string;
}

/** The principal of single-user mode (no tenants configured): the operator, namespace `''`. */
export const SINGLE_USER: Principal = Object.freeze({ namespace: '', role: 'admin' });

/**
 * The server as a backend sees it, for in-process inference (BLS, ensembles, the native
 * `TRITONSERVER_ServerInferAsync`): the same data plane the frontends call. Implemented by
 * `ServerApi` (dataplane/server-api.ts).
 */
export interface InferenceServerHandle {
  /**
   * Queue a request on `model` (version -1 = highest ready); responses go to `sender`.
   * @throws TritonError synchronously (NOT_FOUND / UNAVAILABLE / INVALID_ARG); nothing was queued.
   */
  infer(
    principal: Principal,
    model: string,
    version: number,
    request: InferenceRequestInit,
    sender: ResponseSender,
    signal?: CancellationSignal,
  ): SubmittedRequest;
  /**
   * Whether a model version is ready (false for unknown models the principal may not see); asks
   * the model's own readiness check where it has one (Python `is_ready()`).
   */
  isModelReady(principal: Principal, model: string, version: number): Promise<boolean>;
  /**
   * The version that would serve `model` for `principal` now (-1 = highest ready): its number,
   * normalised config and transaction policy — what an ensemble checks its steps against at load.
   * @throws TritonError NOT_FOUND / UNAVAILABLE, as {@link infer} would
   */
  inferenceTarget?(
    principal: Principal,
    model: string,
    version: number,
  ): {
    readonly version: number;
    readonly config: ModelConfig;
    readonly decoupled: boolean;
    readonly ensemble?: { readonly inferences: number; readonly depth: number };
  };
  /** Model metadata (spec §1.5) — for `TRITONSERVER_ServerModelMetadata`. @throws TritonError NOT_FOUND / UNAVAILABLE */
  modelMetadata?(principal: Principal, model: string, version: number): object;
  /** The serving version's normalised config (spec §1.7). @throws TritonError NOT_FOUND / UNAVAILABLE */
  modelConfig?(principal: Principal, model: string, version: number): ModelConfig;
  /** Load or reload (repository extension, spec §3.1): resolves once READY. @throws TritonError */
  loadModel?(principal: Principal, model: string, options: { configOverride?: unknown; files?: Map<string, Uint8Array> }): Promise<void>;
  /** Unload every version (spec §3.1); with `unloadDependents` the ensembles using it too. @throws TritonError */
  unloadModel?(principal: Principal, model: string, options?: { unloadDependents?: boolean }): Promise<void>;
}

/**
 * What the data plane needs of a caller's cancellation: the part of `AbortSignal` it uses, so an
 * in-process caller passes an `AbortSignal` and a frontend may pass something lighter (the HTTP
 * frontend's per-connection signal costs one small object, where an AbortController per request
 * measured ~6 µs).
 */
export interface CancellationSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A request as a frontend (or an in-process caller) builds it, before validation: the fields of
 * InferenceRequest the client controls. `version` may be -1 (let the server pick the highest
 * ready version) and an empty `requestedOutputs` means every output in the config (spec §1.12).
 */
export type InferenceRequestInit = Omit<InferenceRequest, 'batchSize' | 'cancelled' | 'onTimes' | 'trace'> & {
  /**
   * Requested outputs to return as classification results (spec §3.10), by name → K (top K).
   * Applied by the data plane to the backend's outputs; absent = none.
   */
  classification?: ReadonlyMap<string, number>;
};

/** What {@link InferenceServerHandle.infer} queued: the resolved model version. */
export interface SubmittedRequest {
  readonly model: string;
  readonly version: number;
  readonly request: InferenceRequest;
}

/** What a backend needs to load one model version. */
export interface ModelLoadContext {
  /** The model's identity; `name` equals `key.name`. */
  key: ModelKey;
  name: string;
  version: number;
  /** Where the files came from (trusted operator repository, or an upload). */
  origin: ModelOrigin;
  /** The server, for in-process inference from the backend (BLS-style calls). */
  server: InferenceServerHandle;
  /** `<repository>/<model>` (or the override directory of a load with files). */
  modelPath: string;
  /** `<modelPath>/<version>`. */
  versionPath: string;
  /** Normalised config (JSON Triton would print). */
  config: ModelConfig;
  /** False with `--disable-auto-complete-config`. */
  autoCompleteConfig: boolean;
  /** Per-model child logger. */
  logger: Logger;
  /**
   * The model's own log, readable by its tenant (contract/model-log.ts): where a sandboxed
   * backend writes what its guest logs. Absent outside a server (the kit's runs).
   */
  modelLog?: ModelLogWriter;
}

/** Placement of one model instance (spec §5.5). */
export interface InstanceSpec {
  /** `<group name>_<k>` — what `TRITONBACKEND_ModelInstanceName` returns. */
  name: string;
  groupName: string;
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_MODEL';
  deviceId: number;
  hostPolicy: string;
  passive: boolean;
}

/**
 * A loaded instance. `execute` is never called concurrently on one instance; different instances
 * run in parallel.
 */
/** {@link BackendModelInstance.usage}. */
export interface InstanceUsage {
  /**
   * Times its sandbox, worker or process was replaced after it died (a trap, a deadline, a crash):
   * its supervisor's restarts (backends/supervisor.ts), since the instance started.
   */
  restarts: number;
  /**
   * Bytes of linear memory its sandbox holds reserved now (DESIGN "Sandbox rules": the most it
   * may grow to); 0 while the sandbox is released (idle) or for an instance without one.
   */
  sandboxMemoryBytes: number;
}

export interface BackendModelInstance {
  /**
   * Run one batch of requests (1 unless the scheduler batches). Resolves when the instance can
   * take more work. Each request must get exactly one final response through its sender, possibly
   * after `execute` resolved (decoupled). If `execute` rejects, the host sends the error to every
   * request that has not had its final response yet.
   */
  execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings | void>;
  /** Readiness probe (`TRITONBACKEND_ModelInstanceReady`); absent = always ready. */
  isReady?(): boolean;
  /**
   * The model's own readiness answer (a Python model's `is_ready()`, spec §7.1), asked by
   * readiness checks only (`/ready`, gRPC ModelReady, the repository index, `is_model_ready`),
   * never on the inference path. Resolves undefined when ready, else why not (the text the index
   * shows as the reason). Never rejects; bounded in time by the backend. Absent = only
   * {@link isReady} counts.
   */
  checkReady?(): Promise<string | undefined>;
  /**
   * Why this instance can no longer serve, for good (a native execute that never returned: its
   * thread cannot be stopped safely); undefined while healthy. The model version is then
   * UNAVAILABLE with this reason and refuses new requests.
   */
  unhealthy?(): string | undefined;
  /**
   * What the instance has been through and holds now, for the server's metrics
   * (`warden_instance_restarts_total`, `warden_sandbox_memory_bytes`); absent = nothing to report.
   */
  usage?(): InstanceUsage;
  /**
   * Release everything the instance holds. Called once, after in-flight executions finished (or
   * the unload's exit timeout passed). `deadlineMs` (a `Date.now()` time), when given, is when the
   * unload's exit timeout ends: an instance that waits for its backend (requests not yet
   * released) waits no longer than that.
   */
  finalize(deadlineMs?: number): Promise<void>;
  /**
   * The addon's handle of this instance (platform/addon.ts `InstanceHandle`) when it is a Triton
   * C-API backend instance in this process that the native data path may submit to directly
   * (DESIGN "The native data path"); undefined otherwise, or once it cannot serve.
   */
  nativeHandle?(): object | undefined;
  /**
   * The session of Warden's in-process ONNX Runtime engine (platform/addon.ts `OrtEngineBinding`
   * session external) this instance runs requests on, opened if it is not yet, for the native
   * data path to run requests on itself, one at a time per instance (DESIGN "The native data
   * path"); resolves undefined when the instance does not run on the engine, or once it cannot serve.
   */
  ortSession?(): Promise<object | undefined>;
  /**
   * The wasmtime engine's handle of the sandbox thread serving this instance now (platform/addon.ts
   * `WasmtimeNative` instance external) and its execute deadline (ms), for the native data path to
   * queue requests on that thread itself (DESIGN "The native data path"); undefined when the
   * instance is not a wasmtime sandbox, or while no thread serves it steadily: starting,
   * restarting after a failed respawn, under the idle policy, finalized.
   */
  wasmtimeThread?(): { handle: object; executeMs: number } | undefined;
  /** Calls `listener` whenever {@link wasmtimeThread}'s answer may have changed. */
  onWasmtimeThreadChange?(listener: () => void): void;
}

/** A loaded model version inside a backend. */
export interface BackendModel {
  /**
   * Config after backend-side auto-complete (`TRITONBACKEND_ModelSetConfig`, spec §5.7), if the
   * backend changed it; the host re-normalises and validates it before creating instances.
   */
  readonly config?: ModelConfig;
  /**
   * True if instances may be created concurrently (Triton's parallel-instance-loading backend
   * attribute); otherwise the host creates them one after another, in instance-group order.
   */
  readonly parallelInstanceLoading?: boolean;
  createInstance(spec: InstanceSpec): Promise<BackendModelInstance>;
  /** Called once after all instances were finalized. */
  finalize(): Promise<void>;
}

/** A backend library / engine: initialised once, shared by all models that use it. */
export interface Backend {
  readonly name: string;
  /** Errors (thrown TritonError) fail the load; the model becomes UNAVAILABLE with the message. */
  loadModel(ctx: ModelLoadContext): Promise<BackendModel>;
  /** Server shutdown. */
  finalize(): Promise<void>;
}

/** What a {@link BackendResolver} decides on. */
export interface BackendResolveRequest {
  key: ModelKey;
  /** Normalised config (after auto-complete by Warden, before any backend-side completion). */
  config: ModelConfig;
  /** `<repository>/<model>`, or the override directory of a load with files. */
  modelPath: string;
  /** `<modelPath>/<highest selected version>`. */
  versionPath: string;
  /** Trusted operator repository, or an upload: native code must never come from an upload. */
  origin: ModelOrigin;
}

/**
 * Finds the backend that serves a model, e.g. the wasm engine for `backend: "wasm"`, or a
 * `libtriton_<name>.so` found by the search order (spec §6.9). Resolvers are tried in order;
 * the first that returns a Backend serves the model.
 */
export interface BackendResolver {
  /** undefined = not this kind's model. Throws TritonError if it is, but cannot be served. */
  resolve(request: BackendResolveRequest): Promise<Backend | undefined>;
  /** Finalize every backend this resolver created (server shutdown). */
  finalizeAll(): Promise<void>;
}
