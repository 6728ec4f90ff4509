/**
 * The `wasm` backend, engine-neutral (DESIGN "Backend kinds", "Sandbox rules"): loads a model
 * version's component (`<version>/model.wasm`, size-capped), checks it against the `sandbox`
 * world before anything else sees it (./component-source.ts; from the digest memo's recorded
 * surface when the file is unchanged), works out the model's limits and output specs, and hands
 * the checked component to its {@link SandboxEngine} to compile (once per model version) and to
 * instantiate (once per model instance).
 */
import type { BigIntStats } from 'node:fs';
import type { Logger } from 'pino';
import * as err from './sandbox.errors.js';
import type { Backend, BackendModel, InstanceSpec, ModelLoadContext, ModelOrigin } from '../../contract/types.js';
import type { ModelConfig } from '../../contract/model-config.js';
import { fromConfigDataType } from '../../contract/datatypes.js';
import { componentSource } from './component-source.js';
import { ModelFileError, openModelFile, readModelFile } from '../../repository/model-files.js';
import type { ComponentDigests } from './digests.js';
import { inferenceCalls } from './grants.js';
import type { CompiledComponent, HostConfig, SandboxedInstance, SandboxEngine } from './engine.js';
import { engineOfConfig, type EngineName } from './engines.js';
import { DEFAULT_IDLE_MS, DEFAULT_WASM_LIMITS, modelLimits, PARAM_MEMORY, type ModelLimits, type WasmLimits } from './limits.js';
import { MemoryBudget, SERVER_BUDGET_NAME, type MemoryBudgetFor, type SandboxMemory } from './memory-budget.js';
import { instanceStartKey, KnownStarts, modelStartKey } from './start-memo.js';
import type { OutputSpec } from './wire.js';

/** Default component file name in a version directory. */
export const DEFAULT_COMPONENT_FILE = 'model.wasm';

/** Largest component accepted (bytes). */
const MAX_COMPONENT_BYTES = 512n * 1024n * 1024n;

/** Outputs as the backend must produce them (config `reshape.shape` if set, else `dims`). */
function outputSpecs(config: ModelConfig): OutputSpec[] {
  return config.output.map((o) => {
    const datatype = fromConfigDataType(o.data_type);
    if (!datatype) throw err.outputDatatypeUnsupported(config.name, o.name, String(o.data_type));
    return { name: o.name, datatype, dims: o.reshape ? o.reshape.shape : o.dims };
  });
}

/**
 * Finds `<version>/<file>` through the rule for config-named files (`repository/model-files.ts`:
 * beneath the model directory, checked on the opened descriptor, regular file) and checks the
 * size cap (the bytes are read by {@link componentSource}, only if they are needed, through the
 * same rule).
 * @returns the file's checked real path and its fstat
 * @throws TritonError NOT_FOUND for a missing file, one leading outside the model directory or a
 *   non-file, INVALID_ARG for one above {@link MAX_COMPONENT_BYTES}; the messages name the file
 *   relative to the model directory
 */
async function statComponent(ctx: ModelLoadContext, file: string): Promise<{ path: string; st: BigIntStats; read: () => Promise<Uint8Array> }> {
  const rel = `${ctx.version}/${file}`;
  const spec = { modelDir: ctx.modelPath, under: String(ctx.version), name: file, field: 'default_model_filename', maxBytes: Number(MAX_COMPONENT_BYTES) };
  const refused = (e: unknown): unknown => {
    if (!(e instanceof ModelFileError)) return e;
    switch (e.reason) {
      case 'outside':
        return err.componentMissing(ctx.name, ctx.version, rel, file);
      case 'not-regular':
        return err.componentNotFile(ctx.name, ctx.version, file);
      case 'too-large':
        return err.componentTooLarge(ctx.name, file, e.size, MAX_COMPONENT_BYTES);
      default:
        return e;
    }
  };
  let opened;
  try {
    opened = await openModelFile(spec);
  } catch (e) {
    throw refused(e);
  }
  let st: BigIntStats;
  try {
    st = await opened.handle.stat({ bigint: true });
  } finally {
    await opened.handle.close().catch(() => undefined);
  }
  const read = async (): Promise<Uint8Array> => {
    try {
      return await readModelFile(spec);
    } catch (e) {
      if (e instanceof ModelFileError && e.reason === 'too-large') throw err.componentGrew(ctx.name, file, MAX_COMPONENT_BYTES);
      throw refused(e);
    }
  };
  return { path: opened.realPath, st, read };
}

/** Where an upload's instances look up and record their start inputs (./start-memo.ts). */
export interface StartMemoUse {
  readonly memo: KnownStarts;
  readonly namespace: string;
  /** {@link modelStartKey} of the version. */
  readonly model: string;
}

/** A loaded sandboxed model version: the compiled component shared by its instances. */
export class WasmModel implements BackendModel {
  readonly parallelInstanceLoading = true;
  private readonly instances = new Set<SandboxedInstance>();
  private released = false;

  constructor(
    private readonly ctx: ModelLoadContext,
    /** The engine that compiled the component and runs the instances. */
    readonly engine: SandboxEngine,
    private readonly compiled: CompiledComponent,
    private readonly host: HostConfig,
    /** The budget each instance reserves {@link instanceMemoryBytes} from. */
    readonly memoryBudget: MemoryBudget,
    /** An upload under the idle policy: its instances whose start inputs are known come up released. */
    private readonly starts?: StartMemoUse,
  ) {}

  /** Linear memory one instance reserves: the memory limit times the component's memories. */
  get instanceMemoryBytes(): number {
    return this.host.limits.memoryBytes * this.compiled.memories;
  }

  /** Limits in force for this model. */
  get limits(): ModelLimits {
    return this.host.limits;
  }

  /** SHA-256 of the component. */
  get componentHash(): string {
    return this.compiled.hash;
  }

  /**
   * Starts the instance in a fresh sandbox: `model.create`, then `instance.create`. Each of its
   * sandboxes (this one, and each cold start after an idle release) reserves
   * {@link instanceMemoryBytes} from the memory budget before it starts, releasing idle sandboxes
   * in the way first, and gives it back when the sandbox is gone (./memory-budget.ts).
   *
   * An upload's instance whose start inputs already started in this process and namespace (the
   * known-start memo, ./start-memo.ts) starts no sandbox (V8; wasmtime starts it anyway): it comes
   * up released, as after an idle release, and its first execute cold-starts it. If that cold start
   * fails, the request gets the cold start's error and the memo forgets the inputs.
   * @throws TritonError UNAVAILABLE if the memory budget (or one above it) has not enough room
   *   even after releasing idle sandboxes; the backend's own error from `create`, INTERNAL on a
   *   trap, UNAVAILABLE on a start-up timeout.
   */
  async createInstance(spec: InstanceSpec): Promise<SandboxedInstance> {
    const starts = this.starts;
    const key = starts ? instanceStartKey(starts.model, this.ctx.name, spec) : undefined;
    const known = key !== undefined && starts!.memo.has(starts!.namespace, key);
    const inst = await this.engine.instantiate(
      this.compiled,
      spec,
      this.host,
      this.host.limits.executeMs,
      this.ctx.logger,
      this.sandboxMemory,
      this.ctx.modelLog,
      { released: known },
    );
    if (key !== undefined && !known) starts!.memo.add(starts!.namespace, key);
    if (known) forgetIfColdStartFails(inst, () => starts!.memo.forget(starts!.namespace, key));
    this.instances.add(inst);
    const finalize = inst.finalize.bind(inst);
    inst.finalize = async () => {
      this.instances.delete(inst);
      await finalize();
    };
    return inst;
  }

  /** What each sandbox of this model reserves, and from which budget. */
  private readonly sandboxMemory: SandboxMemory = {
    reserve: async (instance) => {
      const need = this.instanceMemoryBytes;
      const r = await this.memoryBudget.reserve(need);
      if (r) return r;
      const full = this.memoryBudget.blocker(need) ?? this.memoryBudget;
      throw err.instanceMemoryFull(this.ctx.name, instance, need, this.memoryDescription(), full.name, full.freeBytes, full.limitBytes);
    },
  };

  /** `<n> linear memories × <limit> bytes (memory_limit_bytes)`, for budget errors. */
  memoryDescription(): string {
    const n = this.compiled.memories;
    return `${n} linear ${n === 1 ? 'memory' : 'memories'} × ${this.host.limits.memoryBytes} bytes (${PARAM_MEMORY})`;
  }

  /** The instances currently alive (for tests and statistics). */
  liveInstances(): SandboxedInstance[] {
    return [...this.instances];
  }

  /** Finalizes the instances, then releases the compiled component (once). */
  async finalize(): Promise<void> {
    await Promise.all([...this.instances].map((i) => i.finalize()));
    if (this.released) return;
    this.released = true;
    this.engine.release(this.compiled);
  }
}

/**
 * Until `inst`'s first execute has a sandbox: an execute that throws (its cold start failed)
 * calls `forget` first.
 */
function forgetIfColdStartFails(inst: SandboxedInstance, forget: () => void): void {
  const execute = inst.execute.bind(inst);
  inst.execute = async (requests, senders) => {
    try {
      const t = await execute(requests, senders);
      inst.execute = execute;
      return t;
    } catch (e) {
      forget();
      throw e;
    }
  };
}

/** The idle policy (ms; 0 = never release) of models that set none, by origin. */
export interface IdleDefaults {
  readonly repository: number;
  readonly upload: number;
}

/**
 * The idle policy a model runs under (ms; 0 = never release). An operator's model: its own
 * `idle_timeout_ms`, else the repository default. An upload: it may ask to be released sooner than
 * the upload default, never later nor never (a tenant cannot keep sandbox memory pinned while it
 * sends nothing; DESIGN "Multi-tenancy"), unless the server itself never releases uploads (0).
 */
export function idlePolicy(own: number | undefined, origin: ModelOrigin, defaults: IdleDefaults): number {
  if (origin.kind === 'repository') return own ?? defaults.repository;
  if (defaults.upload <= 0) return own ?? 0;
  return own === undefined || own <= 0 ? defaults.upload : Math.min(own, defaults.upload);
}

/** The `wasm` backend: one per resolver, shared by every sandboxed model, on one engine. */
export class WasmBackend implements Backend {
  readonly name = 'wasm';
  private readonly models = new Set<WasmModel>();
  /** Start inputs of uploads that started in this process, per namespace (./start-memo.ts). */
  readonly knownStarts = new KnownStarts();

  /**
   * @param engine the engine that compiles and runs every model of this backend (the resolver
   *   creates the `v8` engine unless told otherwise); disposed by {@link finalize}
   * @param caps server-wide caps; per-model parameters may only lower them
   * @param budgets `server`: the budget of all instances' linear memory (default: a new one of
   *   `caps.maxTotalMemoryBytes`); `budgetFor`: picks a budget inside it per model (e.g. the
   *   tenant's quota)
   */
  constructor(
    readonly engine: SandboxEngine,
    private readonly caps: WasmLimits,
    private readonly logger: Logger,
    budgets: { server?: MemoryBudget; budgetFor?: MemoryBudgetFor } = {},
    /** Another engine by name, for models whose `parameters { key: "engine" }` names one (created on first use). */
    private readonly otherEngine?: (name: EngineName) => SandboxEngine,
    /** Digests of unchanged component files, across restarts (none: every load hashes its component). */
    private readonly digests?: ComponentDigests,
    /**
     * The idle policy (ms; 0 = never release) of models that set no `idle_timeout_ms`, by origin:
     * the operator's repository models, and uploads ({@link idlePolicy}).
     */
    private readonly idleDefaults: IdleDefaults = { repository: 0, upload: DEFAULT_IDLE_MS },
  ) {
    this.memoryBudget = budgets.server ?? new MemoryBudget(SERVER_BUDGET_NAME, caps.maxTotalMemoryBytes ?? DEFAULT_WASM_LIMITS.maxTotalMemoryBytes);
    this.budgetFor = budgets.budgetFor;
  }

  /** The budget of all sandboxed instances' linear memory. */
  readonly memoryBudget: MemoryBudget;
  private readonly budgetFor?: MemoryBudgetFor;

  private readonly others = new Map<string, SandboxEngine>();

  /**
   * The engine a model runs on: its `engine` parameter's, else the backend's.
   * @throws TritonError INVALID_ARG for an unknown engine, or one this backend cannot create
   */
  engineFor(config: ModelConfig): SandboxEngine {
    const name = engineOfConfig(config);
    if (name === undefined || name === this.engine.name) return this.engine;
    let e = this.others.get(name);
    if (!e) {
      if (!this.otherEngine) throw err.engineNotServed(config.name, this.engine.name);
      e = this.otherEngine(name);
      this.others.set(name, e);
    }
    return e;
  }

  /** The budget `ctx`'s instances reserve from: `budgetFor`'s choice, or the server's. */
  private budgetOf(ctx: ModelLoadContext): MemoryBudget {
    const chosen = this.budgetFor?.({ key: ctx.key, origin: ctx.origin, config: ctx.config });
    if (!chosen) return this.memoryBudget;
    if (!chosen.within(this.memoryBudget)) throw err.budgetOutside(ctx.name, chosen.name);
    return chosen;
  }

  /**
   * Loads one model version: reads `<version>/<default_model_filename or model.wasm>`, checks
   * the component against the sandbox world (before anything else), then has the engine compile
   * it under the model's limits. When the digest memo vouches for the unchanged file, its
   * recorded surface is checked instead and the file is read only if the engine needs the bytes
   * (./component-source.ts).
   * @throws TritonError NOT_FOUND for a missing component file, INVALID_ARG for a refused or
   *   malformed component, bad limit parameters, or instances that could never fit in the
   *   model's memory budget; INTERNAL for cache failures.
   */
  async loadModel(ctx: ModelLoadContext): Promise<WasmModel> {
    const t0 = performance.now();
    const config = ctx.config;
    const own = modelLimits(config, this.caps);
    const limits = { ...own, idleMs: idlePolicy(own.idleMs, ctx.origin, this.idleDefaults) };
    const file = config.default_model_filename || DEFAULT_COMPONENT_FILE;
    if (file.includes('/') || file.includes('\\') || file === '..') throw err.componentFileName(ctx.name, file);
    const { path, st, read } = await statComponent(ctx, file);
    const what = `model '${ctx.name}' version ${ctx.version}: ${file}`;
    // an upload's file: the digest the upload store computed when it stored it
    const known = ctx.origin.kind === 'upload' ? ctx.origin.digests?.get(`${ctx.version}/${file}`) : undefined;
    const source = await componentSource(path, st, what, read, this.digests, known);
    const { hash } = source;
    const outputs = outputSpecs(config);
    const budget = this.budgetOf(ctx);
    const engine = this.engineFor(config);
    const calls = inferenceCalls(ctx, limits.memoryBytes);
    const compiled = await engine.compile({ bytes: source.bytes, hash, surface: source.surface, memories: source.memories, limits, what });
    const host: HostConfig = {
      model: {
        name: ctx.name,
        version: ctx.version,
        configJson: JSON.stringify(config),
        versionPath: ctx.versionPath,
        decoupled: config.model_transaction_policy?.decoupled === true,
        maxBatchSize: config.max_batch_size,
      },
      outputs,
      limits,
      ...(calls ? { calls } : {}),
    };
    // an upload under the idle policy whose files are known by digest: its known starts come up released
    const digests = ctx.origin.kind === 'upload' ? ctx.origin.digests : undefined;
    const starts =
      digests && (limits.idleMs ?? 0) > 0
        ? { memo: this.knownStarts, namespace: ctx.key.namespace, model: modelStartKey({ engine: engine.name, digests, version: ctx.version, config, limits }) }
        : undefined;
    const model = new WasmModel(ctx, engine, compiled, host, budget, starts);
    // one sandbox must fit (sandboxes, not loads, hold memory: an idle one is released for another)
    const tooSmall = budget.tooSmallFor(model.instanceMemoryBytes);
    if (tooSmall) {
      engine.release(compiled);
      throw err.modelMemoryTooLarge(ctx.name, model.instanceMemoryBytes, model.memoryDescription(), tooSmall.name, tooSmall.limitBytes, PARAM_MEMORY);
    }
    const finalize = model.finalize.bind(model);
    model.finalize = async () => {
      this.models.delete(model);
      await finalize();
    };
    this.models.add(model);
    ctx.logger.info(
      {
        engine: engine.name,
        component: hash.slice(0, 16),
        componentFrom: source.from,
        // wasmtime: compiled now, or from the disk cache, the fleet's shared tier, or memory
        compiledFrom: 'source' in compiled ? compiled.source : undefined,
        memoryLimitBytes: limits.memoryBytes,
        executeTimeoutMs: limits.executeMs,
        loadMs: Math.round(performance.now() - t0),
      },
      'sandboxed model loaded',
    );
    return model;
  }

  async finalize(): Promise<void> {
    const all = [...this.models];
    this.models.clear();
    await Promise.all(all.map((m) => m.finalize()));
    await Promise.all([this.engine, ...this.others.values()].map((e) => e.dispose()));
    this.others.clear();
    this.logger.debug('wasm backend finalized');
  }
}
