/**
 * The sandbox engines this build has, by name. Adding an engine is one folder (e.g. ./wasmtime/)
 * and one entry here; the backend, the host capabilities and the engine-parametrised tests
 * (test/wasm) pick it up from {@link ENGINE_NAMES}.
 */
import type { Logger } from 'pino';
import type { SandboxEngine } from './engine.js';
import { V8Engine } from './v8/engine.js';
import type { CacheLimits } from './v8/transpile.js';

export { DEFAULT_CACHE_LIMITS, type CacheLimits } from './v8/transpile.js';

/** What every engine is created with. */
export interface EngineOptions {
  /** Folder for the engine's compile cache; one entry per component hash. */
  cacheDir: string;
  /**
   * Bounds of the compile cache (entries, bytes; least recently used entries not used by a
   * loaded model are evicted past them). Default `DEFAULT_CACHE_LIMITS`: 256 entries, 2 GiB.
   */
  cacheLimits?: Partial<CacheLimits>;
  /** The backend's logger (cache clean-up and eviction). */
  logger?: Logger;
}

const FACTORIES = {
  v8: (o: EngineOptions): SandboxEngine => new V8Engine(o),
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

/**
 * A new engine.
 * @throws RangeError for a name that is not in {@link ENGINE_NAMES}
 */
export function createEngine(name: EngineName, opts: EngineOptions): SandboxEngine {
  return FACTORIES[checkEngineName(name)](opts);
}
