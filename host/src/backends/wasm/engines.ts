/**
 * The sandbox engines this build has, by name: `v8` (./v8/, jco + worker threads) and `wasmtime`
 * (./wasmtime/, the native addon). Adding an engine is one folder and one entry here; the
 * backend, the host capabilities and the engine-parametrised tests (test/wasm) pick it up from
 * {@link ENGINE_NAMES}. A model picks its engine with `parameters { key: "engine" }`
 * ({@link PARAM_ENGINE}); the server's default is `--wasm-engine`.
 */
import type { RemoteCompileCache } from './wasmtime/remote-cache.js';
import type { Logger } from 'pino';
import { engineUnknown } from './sandbox.errors.js';
import type { ModelConfig } from '../../contract/model-config.js';
import type { SandboxEngine } from './engine.js';
import { V8Engine } from './v8/engine.js';
import type { CacheLimits } from './v8/transpile.js';
import { WasmtimeEngine } from './wasmtime/engine.js';
import type { WasmtimePoolOptions } from './wasmtime/native.js';

export { DEFAULT_CACHE_LIMITS, type CacheLimits } from './v8/transpile.js';

/** What every engine is created with. */
export interface EngineOptions {
  /** Folder for the engine's compile cache; one entry per component hash (wasmtime: in a `wasmtime/` subfolder). */
  cacheDir: string;
  /**
   * Bounds of the compile cache (entries, bytes; least recently used entries not used by a
   * loaded model are evicted past them). Default `DEFAULT_CACHE_LIMITS`: 256 entries, 2 GiB.
   */
  cacheLimits?: Partial<CacheLimits>;
  /**
   * wasmtime: how long ago (ms) a compile-cache entry must have last changed before its verified
   * stamp is recorded (./wasmtime/cache.ts). Default 2000; tests lower it.
   */
  cacheSettleMs?: number;
  /** The backend's logger (cache clean-up and eviction). */
  logger?: Logger;
  /** Largest linear memory of any instance (bytes; the server's cap). wasmtime: the pool's slot size. */
  maxMemoryBytes?: number;
  /** wasmtime: pooling allocator and epoch settings. */
  pool?: WasmtimePoolOptions;
  /** Default idle policy (ms; 0 = never release an idle instance's sandbox; default `DEFAULT_IDLE_MS`). */
  idleMs?: number;
  /** wasmtime: the fleet's compile-cache key (`--wasm-cache-key-file`); default the cache folder's own. */
  cacheKey?: Buffer;
  /** wasmtime: the fleet's shared tier of the compile cache (./wasmtime/remote-cache.ts; needs {@link cacheKey}). */
  remoteCache?: RemoteCompileCache;
}

const FACTORIES = {
  v8: (o: EngineOptions): SandboxEngine => new V8Engine(o),
  wasmtime: (o: EngineOptions): SandboxEngine => new WasmtimeEngine(o),
} satisfies Record<string, (o: EngineOptions) => SandboxEngine>;

/** Name of an available engine. */
export type EngineName = keyof typeof FACTORIES;

/** The engines available, default first. */
export const ENGINE_NAMES: readonly EngineName[] = Object.freeze(Object.keys(FACTORIES) as EngineName[]);

/** The engine `backend: "wasm"` models run on unless told otherwise. */
export const DEFAULT_ENGINE: EngineName = 'v8';

/**
 * Checks an engine name (e.g. from options or a command line).
 * @throws RangeError for a name that is not in {@link ENGINE_NAMES}
 */
export function checkEngineName(name: string): EngineName {
  if (!Object.prototype.hasOwnProperty.call(FACTORIES, name)) throw new RangeError(`unknown sandbox engine '${name}' (available: ${ENGINE_NAMES.join(', ')})`);
  return name as EngineName;
}

/** The config parameter that picks a model's engine (`parameters { key: "engine" value: { string_value: "wasmtime" } }`). */
export const PARAM_ENGINE = 'engine';

/**
 * The engine a model's config asks for, if any.
 * @throws TritonError INVALID_ARG for an engine name that is not in {@link ENGINE_NAMES}
 */
export function engineOfConfig(config: ModelConfig): EngineName | undefined {
  const p = config.parameters?.[PARAM_ENGINE];
  if (p === undefined) return undefined;
  const name = p.string_value.trim();
  if (!Object.prototype.hasOwnProperty.call(FACTORIES, name)) {
    throw engineUnknown(config.name, PARAM_ENGINE, ENGINE_NAMES, name);
  }
  return name as EngineName;
}

/**
 * A new engine.
 * @throws RangeError for a name that is not in {@link ENGINE_NAMES}
 */
export function createEngine(name: EngineName, opts: EngineOptions): SandboxEngine {
  return FACTORIES[checkEngineName(name)](opts);
}
