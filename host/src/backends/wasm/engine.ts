/**
 * The seam between the engine-neutral `wasm` backend (./backend.ts: read, check, limits, output
 * specs, model and instance bookkeeping) and a WebAssembly engine that compiles and runs the
 * checked component (DESIGN "Backend kinds"): `v8` (./v8/, jco + worker threads) and `wasmtime`
 * (./wasmtime/, the native addon's wasmtime engine). An engine gets only components that passed `checkComponent`,
 * and must give every instance exactly the host capabilities of ./host/ (deny-by-default WASI,
 * log budget, response sending, read-only model files) and the limits it is handed.
 */
import type { Logger } from 'pino';
import type { ModelLogWriter } from '../../contract/model-log.js';
import type { BackendModelInstance, InstanceSpec } from '../../contract/types.js';
import type { ComponentSurface } from './component-check.js';
import type { InferenceCalls } from './host/inference.js';
import type { ModelLimits } from './limits.js';
import type { SandboxMemory } from './memory-budget.js';
import type { OutputSpec } from './wire.js';

/** What {@link SandboxEngine.compile} is given: one model version's checked component. */
export interface CompileInput {
  /**
   * The component binary (it passed `checkComponent`), read on demand: when the digest memo
   * recorded the component's facts, the backend has not read the file, and an engine whose
   * compile cache holds `hash` need not read it at all. Resolves to the same bytes every call.
   * @throws TritonError UNAVAILABLE if the file no longer has `hash` (changed while loading),
   *   NOT_FOUND if it cannot be read
   */
  bytes(): Promise<Uint8Array>;
  /** SHA-256 of the bytes, hex (cache key). */
  hash: string;
  /** Its top-level imports and exports, as `checkComponent` returned them. */
  surface: ComponentSurface;
  /** Linear memories its core modules define (`definedMemories` of ./binary.ts). */
  memories: number;
  /** The model's limits (the V8 engine bakes the memory cap into the compiled modules). */
  limits: ModelLimits;
  /** Names the component in error messages, e.g. `model 'm' version 1: model.wasm`. */
  what: string;
}

/** A component compiled by one engine, shared by every instance of the model version. */
export interface CompiledComponent {
  /** {@link SandboxEngine.name} of the engine that compiled it; only that engine instantiates it. */
  readonly engine: string;
  /** SHA-256 of the component, hex. */
  readonly hash: string;
  /**
   * Linear memories one instance has at most (each capped at the model's memory limit): what an
   * instance reserves from the memory budget is this times the limit. The engine must not let an
   * instance have more.
   */
  readonly memories: number;
}

/** The model facts an instance's guest (`model.create`) and host capabilities see. */
export interface SandboxModelInfo {
  name: string;
  version: number;
  /** The normalised config as JSON (what `/config` prints), for `model-context.config`. */
  configJson: string;
  /** `<model>/<version>`: the only directory `host.read-file` / `list-files` serve. */
  versionPath: string;
  /** `model_transaction_policy.decoupled`: may send many responses per request. */
  decoupled: boolean;
  /** Config `max_batch_size` (0 = the model does not batch), for response shape checks. */
  maxBatchSize: number;
}

/** How the host capabilities of a model's instances are configured (same for all instances). */
export interface HostConfig {
  model: SandboxModelInfo;
  /** The outputs responses are checked against. */
  outputs: OutputSpec[];
  /** Memory cap (bytes; also the largest file `read-file` returns), deadline, log budget. */
  limits: ModelLimits;
  /**
   * The models the instances may call (`warden:backend/inference`, ./host/inference.ts); absent:
   * none. Lives on the JS thread: an engine does not hand it to a sandbox thread.
   */
  calls?: InferenceCalls;
}

/** Statistics of one sandboxed instance, for logs, tests and benchmarks. */
export interface SandboxStats {
  /** Sandboxes started (1 + respawns). */
  starts: number;
  /** Sandboxes discarded after the execute deadline. */
  deadlineKills: number;
  /** Sandboxes replaced after a trap or an unexpected exit. */
  traps: number;
  /** Time from the kill to the new sandbox being ready, last respawn (ms). */
  lastRespawnMs?: number;
  /**
   * wasmtime with fuel metering (`WasmtimePoolOptions.fuel`): the fuel the last execute consumed —
   * about one unit per wasm instruction, the same for the same input on any machine (a
   * deterministic CPU figure).
   */
  lastFuel?: number;
}

/**
 * One running model instance in its sandbox (core `BackendModelInstance`): `execute` runs under
 * the deadline and never re-enters a trapped sandbox (a replacement is started instead); errors
 * reach the requests' senders, other instances are unaffected.
 */
export interface SandboxedInstance extends BackendModelInstance {
  readonly stats: SandboxStats;
  /** False once finalized, or while the sandbox is down and its restart failed. */
  isReady(): boolean;
}

/**
 * A WebAssembly engine for sandboxed backends. One per {@link WasmBackend}; used from the main
 * thread only.
 */
export interface SandboxEngine<C extends CompiledComponent = CompiledComponent> {
  /** Engine name as in configs and test names: `v8` or `wasmtime`. */
  readonly name: string;
  /**
   * Prepares a checked component for instantiation (once per model version): e.g. transpile,
   * apply the memory cap, compile.
   * @throws TritonError INVALID_ARG for a component the engine cannot compile or that cannot
   *   run within `limits` (e.g. an initial memory above the cap), INTERNAL for cache failures.
   */
  compile(input: CompileInput): Promise<C>;
  /**
   * The model version `compiled` was made for is unloaded (called once per successful
   * `compile`, after its instances were finalized): the engine may drop what it keeps for it,
   * e.g. let its compile-cache entry be evicted.
   */
  release(compiled: C): void;
  /**
   * Starts one instance: a fresh sandbox with the host capabilities configured by `host`,
   * running the guest's `model.create` and `instance.create`.
   * @param executeMs deadline of each execute, and of start-up on top of a boot allowance (ms)
   * @param logger the model's logger; guest log lines go to a child tagged with the instance
   * @param memory each sandbox of the instance reserves its memory here before it starts (the
   *   first, and each cold start after an idle release) and releases it once the sandbox is gone;
   *   while it runs nothing it is marked idle, so that the budget may release it for another
   *   (./memory-budget.ts). Absent: no budget.
   * @param opts `released`: the instance comes up as after an idle release (no sandbox, no
   *   memory reserved; its first execute cold-starts it) — for an upload whose start inputs
   *   already started in this process (./start-memo.ts). An engine without that path (wasmtime)
   *   starts the sandbox anyway.
   * @throws TritonError the guest's own error from a `create`, INTERNAL if it trapped during
   *   start-up, UNAVAILABLE if start-up exceeded its deadline or its memory does not fit
   */
  instantiate(
    compiled: C,
    spec: InstanceSpec,
    host: HostConfig,
    executeMs: number,
    logger: Logger,
    memory?: SandboxMemory,
    modelLog?: ModelLogWriter,
    opts?: { released?: boolean },
  ): Promise<SandboxedInstance>;
  /** Sandboxes (V8: worker threads) alive now, terminating ones included; for tests and metrics. */
  liveSandboxes(): number;
  /** Releases engine-wide resources; called after every model of the backend was finalized. */
  dispose(): Promise<void>;
}
