/**
 * The `v8` sandbox engine (DESIGN "Backend kinds"): `jco transpile --instantiation async` (cached
 * on disk by content hash), every core module's memory maximum rewritten to the model's memory
 * cap, core modules compiled once per model version; each instance is a worker thread
 * (./instance.ts, ./worker.ts) that instantiates them with the host capabilities of ../host/.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import * as err from '../sandbox.errors.js';
import type { InstanceSpec } from '../../../contract/types.js';
import { WASM_PAGE_BYTES } from '../binary.js';
import { DEFAULT_IDLE_MS } from '../limits.js';
import type { SandboxMemory } from '../memory-budget.js';
import type { CompiledComponent, CompileInput, HostConfig, SandboxedInstance, SandboxEngine } from '../engine.js';
import { SandboxInstance, type WorkerCounter } from './instance.js';
import { capMemories } from './memory-cap.js';
import { TranspileCache, type CacheLimits } from './transpile.js';

/** Engine name. */
export const V8_ENGINE = 'v8';

/** A component compiled by the V8 engine: jco glue on disk plus compiled core modules. */
export interface V8Compiled extends CompiledComponent {
  readonly engine: typeof V8_ENGINE;
  /** file: URL of the jco glue module (in the transpile cache). */
  readonly glueUrl: string;
  /** Compiled, memory-capped core modules by the name the glue asks for. */
  readonly modules: Record<string, WebAssembly.Module>;
  /** Linear memories each core module defines, by name (the worker counts instantiations). */
  readonly memoryCounts: Record<string, number>;
}

/** Options of the V8 engine. */
export interface V8EngineOptions {
  /** Folder of the transpile cache (created if missing); one subfolder per component SHA-256. */
  cacheDir: string;
  /** Bounds of the transpile cache (default `DEFAULT_CACHE_LIMITS`: 256 entries, 2 GiB). */
  cacheLimits?: Partial<CacheLimits>;
  /** Logs cache clean-ups and evictions. */
  logger?: Logger;
  /** Default idle policy (ms; 0 = never release an idle worker; default `DEFAULT_IDLE_MS`). */
  idleMs?: number;
}

/** The V8 engine: jco + worker threads. */
export class V8Engine implements SandboxEngine<V8Compiled> {
  readonly name = V8_ENGINE;
  private readonly workers: WorkerCounter = { live: 0 };
  /** The transpile cache (bounded, cleaned at start). */
  readonly cache: TranspileCache;
  /** Default idle release (ms; 0 = never). */
  readonly idleMs: number;

  /** @throws RangeError for cache bounds that are not positive integers */
  constructor(opts: V8EngineOptions) {
    this.idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.cache = new TranspileCache(opts.cacheDir, opts.cacheLimits, opts.logger);
    // clean what a crashed process left as soon as the engine exists; compile waits for it
    this.cache.prepare().catch((e: unknown) => opts.logger?.error({ err: e, cacheDir: opts.cacheDir }, 'transpile cache could not be scanned'));
  }

  /**
   * Transpiles (cached), caps every defined linear memory at `limits.memoryBytes` and compiles
   * the core modules.
   * @throws TritonError INVALID_ARG if jco cannot transpile the component, a memory starts
   *   above the cap, or a core module does not compile; INTERNAL for cache failures
   */
  async compile({ bytes, hash, limits, what }: CompileInput): Promise<V8Compiled> {
    const transpiled = await this.cache.acquire(await bytes(), what, hash);
    try {
      const maxPages = limits.memoryBytes / WASM_PAGE_BYTES;
      const modules: Record<string, WebAssembly.Module> = {};
      const memoryCounts: Record<string, number> = {};
      for (const name of transpiled.coreModules) {
        const core = await readFile(join(transpiled.dir, name));
        const capped = capMemories(core, maxPages, `${what} (core module ${name})`);
        memoryCounts[name] = capped.initialBytes.length;
        try {
          modules[name] = await WebAssembly.compile(capped.bytes as Uint8Array<ArrayBuffer>);
        } catch (e) {
          throw err.coreModuleCompile(what, name, (e as Error).message);
        }
      }
      // one instance of each core module (what jco's glue does); the worker refuses more
      const memories = Object.values(memoryCounts).reduce((a, b) => a + b, 0);
      return { engine: V8_ENGINE, hash: transpiled.hash, glueUrl: pathToFileURL(transpiled.gluePath).href, modules, memoryCounts, memories };
    } catch (e) {
      this.cache.release(hash);
      throw e;
    }
  }

  /** The model of `compiled` was unloaded: its cache entry may be evicted once no model uses it. */
  release(compiled: V8Compiled): void {
    this.cache.release(compiled.hash);
  }

  /**
   * Starts a sandbox worker for the instance.
   * @throws TritonError as {@link SandboxEngine.instantiate}; INTERNAL for a component compiled
   *   by another engine
   */
  async instantiate(
    compiled: V8Compiled,
    spec: InstanceSpec,
    host: HostConfig,
    executeMs: number,
    logger: Logger,
    memory?: SandboxMemory,
  ): Promise<SandboxedInstance> {
    if (compiled.engine !== V8_ENGINE) throw err.engineMismatch(V8_ENGINE, compiled.engine);
    const init = { ...host, glueUrl: compiled.glueUrl, modules: compiled.modules, memoryCounts: compiled.memoryCounts, maxMemories: compiled.memories };
    const idleMs = host.limits.idleMs ?? this.idleMs;
    return SandboxInstance.start({ init, spec, logger, executeMs, workers: this.workers, idleMs, memory });
  }

  liveSandboxes(): number {
    return this.workers.live;
  }

  async dispose(): Promise<void> {}
}
