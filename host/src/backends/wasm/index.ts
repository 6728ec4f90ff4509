/**
 * Sandboxed backends (`backend: "wasm"`): the public entry point the server wires into its list
 * of {@link BackendResolver}s. See wit/README.md for the backend API, the sandbox rules and the
 * model parameters (`memory_limit_bytes`, `execute_timeout_ms`, `log_limit_bytes`).
 */
import type { RemoteCompileCache } from './wasmtime/remote-cache.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Backend, BackendResolveRequest, BackendResolver } from '../../contract/types.js';
import { WasmBackend } from './backend.js';
import { ComponentDigests } from './digests.js';
import { checkEngineName, createEngine, DEFAULT_CACHE_LIMITS, DEFAULT_ENGINE, type CacheLimits, type EngineName } from './engines.js';
import { checkWasmLimits, DEFAULT_IDLE_MS, type WasmLimits } from './limits.js';
import type { WasmtimePoolOptions } from './wasmtime/native.js';
import { MemoryBudget, SERVER_BUDGET_NAME, type MemoryBudgetFor } from './memory-budget.js';

export type { WasmLimits, ModelLimits } from './limits.js';
export { DEFAULT_WASM_LIMITS, checkWasmLimits, modelLimits, PARAM_LOG, PARAM_MEMORY, PARAM_TIMEOUT, TOTAL_MEMORY_FLAG } from './limits.js';
export { MemoryBudget, SERVER_BUDGET_NAME, type Reservation, type MemoryBudgetFor, type BudgetedModel } from './memory-budget.js';
export { WasmBackend, WasmModel, DEFAULT_COMPONENT_FILE } from './backend.js';
export type { SandboxEngine, SandboxedInstance, SandboxStats, CompiledComponent, CompileInput, HostConfig } from './engine.js';
export type { WasmtimePoolOptions } from './wasmtime/native.js';
export { PARAM_ENGINE, engineOfConfig } from './engines.js';
export { ENGINE_NAMES, DEFAULT_ENGINE, DEFAULT_CACHE_LIMITS, checkEngineName, createEngine, type EngineName, type CacheLimits } from './engines.js';
export { checkComponent, componentSurface, ALLOWED_IMPORTS, SANDBOX_MEMBERS, BACKEND_EXPORT, BACKEND_API_VERSION } from './component-check.js';

/** The backend name in model configs that selects the sandboxed engine. */
export const WASM_BACKEND_NAME = 'wasm';

/** Options of {@link WasmBackendResolver}. */
export interface WasmBackendOptions {
  /** Folder for the engine's compile cache (created if missing); one entry per component SHA-256. */
  cacheDir: string;
  /**
   * Server-wide caps on memory (bytes per linear memory), execute deadline (ms) and log budget
   * (bytes and messages per call); per-model parameters may only lower them.
   */
  limits: WasmLimits;
  /** Server logger; the backend logs under `{ backend: 'wasm' }`. */
  logger: Logger;
  /** Sandbox engine, one of `ENGINE_NAMES` (default `DEFAULT_ENGINE`); a model may pick another with `parameters { key: "engine" }`. */
  engine?: EngineName;
  /** wasmtime: pooling allocator and epoch settings. */
  wasmtimePool?: WasmtimePoolOptions;
  /**
   * Both engines: default idle policy (ms; 0 = never release an idle instance's sandbox). Absent:
   * uploaded models are released after `DEFAULT_IDLE_MS` (30 s), the operator's models never.
   */
  idleMs?: number;
  /**
   * Bounds of the compile cache: `maxEntries` (default 256) and `maxBytes` (default 2 GiB); past
   * either, the least recently used entries no loaded model uses are removed.
   */
  cacheLimits?: Partial<CacheLimits>;
  /** wasmtime: age (ms) a compile-cache entry's last change must have before its verified stamp is recorded (default 2000; tests lower it). */
  cacheSettleMs?: number;
  /** wasmtime: the fleet's compile-cache key and shared tier (engines.ts `EngineOptions`). */
  sharedCompileCache?: { key: Buffer; remote?: RemoteCompileCache };
  /**
   * Picks the memory budget a model's instances reserve from — e.g. its tenant's quota, made with
   * `resolver.memoryBudget.child(name, bytes)` — from the model's key (namespace), origin and
   * config; undefined (or no hook) = the server's budget (`limits.maxTotalMemoryBytes`).
   */
  memoryBudgetFor?: MemoryBudgetFor;
}

/**
 * Resolves `backend: "wasm"` models to the one {@link WasmBackend} it owns, on the engine named
 * by `opts.engine`.
 * @throws RangeError for a cap or bound that is not a positive integer, or an unknown engine
 */
export class WasmBackendResolver implements BackendResolver {
  private backend?: WasmBackend;
  private readonly cacheDir: string;
  private readonly limits: Required<WasmLimits>;
  private readonly logger: Logger;
  private readonly engine: EngineName;
  private readonly cacheLimits: CacheLimits;
  private readonly memoryBudgetFor?: MemoryBudgetFor;
  private readonly wasmtimePool?: WasmtimePoolOptions;
  private readonly idleMs?: number;
  private readonly cacheSettleMs?: number;
  private readonly sharedCompileCache?: { key: Buffer; remote?: RemoteCompileCache };
  /**
   * The budget of all sandboxed instances' linear memory (`limits.maxTotalMemoryBytes`); make
   * tenant budgets inside it with `child()` and hand them out through `memoryBudgetFor`.
   */
  readonly memoryBudget: MemoryBudget;

  constructor(opts: WasmBackendOptions) {
    this.limits = checkWasmLimits(opts.limits);
    this.engine = checkEngineName(opts.engine ?? DEFAULT_ENGINE);
    this.cacheLimits = checkCacheLimits(opts.cacheLimits ?? {});
    this.cacheDir = opts.cacheDir;
    this.logger = opts.logger.child({ backend: WASM_BACKEND_NAME });
    this.memoryBudget = new MemoryBudget(SERVER_BUDGET_NAME, this.limits.maxTotalMemoryBytes);
    this.memoryBudgetFor = opts.memoryBudgetFor;
    this.wasmtimePool = opts.wasmtimePool;
    if (opts.idleMs !== undefined && (!Number.isSafeInteger(opts.idleMs) || opts.idleMs < 0))
      throw new RangeError(`idleMs must be a non-negative integer, got ${opts.idleMs}`);
    this.idleMs = opts.idleMs;
    if (opts.cacheSettleMs !== undefined && (!Number.isSafeInteger(opts.cacheSettleMs) || opts.cacheSettleMs < 0))
      throw new RangeError(`cacheSettleMs must be a non-negative integer, got ${opts.cacheSettleMs}`);
    this.cacheSettleMs = opts.cacheSettleMs;
    this.sharedCompileCache = opts.sharedCompileCache;
  }

  /** The wasm backend for `backend: "wasm"` configs; undefined for any other model. */
  async resolve({ config }: BackendResolveRequest): Promise<Backend | undefined> {
    if (config.backend !== WASM_BACKEND_NAME) return undefined;
    return this.getBackend();
  }

  /**
   * The backend, created on first use (which also starts the engine: e.g. the V8 engine cleans
   * its compile cache then). A server may call this at start to clean the cache right away.
   */
  getBackend(): WasmBackend {
    if (!this.backend) {
      mkdirSync(this.cacheDir, { recursive: true });
      const make = (name: EngineName) =>
        createEngine(name, {
          cacheDir: this.cacheDir,
          cacheLimits: this.cacheLimits,
          logger: this.logger,
          maxMemoryBytes: this.limits.maxMemoryBytes,
          pool: this.wasmtimePool,
          idleMs: this.idleMs,
          cacheSettleMs: this.cacheSettleMs,
          cacheKey: this.sharedCompileCache?.key,
          remoteCache: this.sharedCompileCache?.remote,
        });
      this.backend = new WasmBackend(
        make(this.engine),
        this.limits,
        this.logger,
        { server: this.memoryBudget, budgetFor: this.memoryBudgetFor },
        make,
        this.digests(),
        // No idle policy given: the operator's models stay warm, uploads follow DEFAULT_IDLE_MS.
        { repository: this.idleMs ?? 0, upload: this.idleMs ?? DEFAULT_IDLE_MS },
      );
    }
    return this.backend;
  }

  /** The component digest memo in `<cacheDir>/digests` (none if it cannot be created: every load then hashes). */
  private digests(): ComponentDigests | undefined {
    try {
      return new ComponentDigests(join(this.cacheDir, 'digests'));
    } catch (e) {
      this.logger.warn({ err: (e as Error).message }, 'component digest memo unavailable; components are hashed on every load');
      return undefined;
    }
  }

  async finalizeAll(): Promise<void> {
    const b = this.backend;
    this.backend = undefined;
    if (b) await b.finalize();
  }
}

/**
 * Fills in and checks compile-cache bounds.
 * @throws RangeError for a bound that is not a positive safe integer
 */
export function checkCacheLimits(limits: Partial<CacheLimits>): CacheLimits {
  const out: CacheLimits = { ...DEFAULT_CACHE_LIMITS, ...limits };
  for (const [k, v] of Object.entries(out)) {
    if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`cacheLimits.${k} must be a positive integer, got ${v}`);
  }
  return out;
}
