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
import type { ModelLogWriter } from '../../../contract/model-log.js';
import * as err from '../sandbox.errors.js';
import type { InstanceSpec } from '../../../contract/types.js';
import { WASM_PAGE_BYTES } from '../binary.js';
import { DEFAULT_IDLE_MS } from '../limits.js';
import type { SandboxMemory } from '../memory-budget.js';
import type { CompiledComponent, CompileInput, HostConfig, SandboxEngine } from '../engine.js';
import { SandboxInstance, type WorkerCounter } from './instance.js';
import { capMemories } from './memory-cap.js';
import { DEFAULT_SPARE_WORKERS, SpareWorkers } from './spares.js';
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
  /** Sandbox workers kept started ahead of need (./spares.ts; default `DEFAULT_SPARE_WORKERS`, 0 = none). */
  spareWorkers?: number;
}

/** The V8 engine: jco + worker threads. */
export class V8Engine implements SandboxEngine<V8Compiled> {
  readonly name = V8_ENGINE;
  private readonly workers: WorkerCounter = { live: 0 };
  /** The transpile cache (bounded, cleaned at start). */
  readonly cache: TranspileCache;
  /** Default idle release (ms; 0 = never). */
  readonly idleMs: number;
  /** Spare sandbox workers: started at the first compile, refilled after each instance start, terminated by {@link dispose}. */
  readonly spares: SpareWorkers;

  /** @throws RangeError for cache bounds that are not positive integers, or a negative or fractional `spareWorkers` */
  constructor(opts: V8EngineOptions) {
    this.idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.spares = new SpareWorkers(opts.spareWorkers ?? DEFAULT_SPARE_WORKERS);
    this.cache = new TranspileCache(opts.cacheDir, opts.cacheLimits, opts.logger);
    // clean what a crashed process left as soon as the engine exists; compile waits for it
    this.cache.prepare().catch((e: unknown) => opts.logger?.error({ err: e, cacheDir: opts.cacheDir }, 'transpile cache could not be scanned'));
  }

  /** Compiled components by `<hash>:<memory cap>`, shared by every model of the same bytes and cap, with their users. */
  private readonly compiled = new Map<string, { promise: Promise<V8Compiled>; refs: number }>();
  private readonly keys = new WeakMap<V8Compiled, string>();

  /**
   * Transpiles (cached), caps every defined linear memory at `limits.memoryBytes` and compiles
   * the core modules — once per component and cap while a model uses them: another model of the
   * same bytes and cap shares them (and reads nothing).
   * @throws TritonError INVALID_ARG if jco cannot transpile the component, a memory starts
   *   above the cap, or a core module does not compile; INTERNAL for cache failures
   */
  async compile(input: CompileInput): Promise<V8Compiled> {
    // a model is coming: have a spare worker booting while it compiles
    this.spares.refill();
    const key = `${input.hash}:${input.limits.memoryBytes}`;
    let entry = this.compiled.get(key);
    const mine = !entry;
    if (!entry) {
      const made = { promise: this.compileNew(input), refs: 0 };
      this.compiled.set(key, (entry = made));
      made.promise.catch(() => {
        if (this.compiled.get(key) === made) this.compiled.delete(key);
      });
    }
    entry.refs++;
    try {
      const c = await entry.promise;
      this.keys.set(c, key);
      return c;
    } catch (e) {
      entry.refs--;
      // another model's compile failed: this one's own, so that its error names this model
      if (!mine) return this.compile(input);
      throw e;
    }
  }

  /** {@link compile} of a component and cap no loaded model shares. */
  private async compileNew({ bytes, hash, limits, what }: CompileInput): Promise<V8Compiled> {
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

  /** The model of `compiled` was unloaded: once no model uses it, its cache entry may be evicted. */
  release(compiled: V8Compiled): void {
    const key = this.keys.get(compiled);
    const entry = key === undefined ? undefined : this.compiled.get(key);
    if (!entry || --entry.refs > 0) return;
    this.compiled.delete(key!);
    this.cache.release(compiled.hash);
  }

  /**
   * Starts a sandbox worker for the instance (with `opts.released`, none: the first execute starts it).
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
    modelLog?: ModelLogWriter,
    opts: { released?: boolean } = {},
  ) {
    if (compiled.engine !== V8_ENGINE) throw err.engineMismatch(V8_ENGINE, compiled.engine);
    // the calls capability stays on this thread (./instance.ts answers the worker's calls)
    const { calls, ...forWorker } = host;
    const init = { ...forWorker, glueUrl: compiled.glueUrl, modules: compiled.modules, memoryCounts: compiled.memoryCounts, maxMemories: compiled.memories };
    const idleMs = host.limits.idleMs ?? this.idleMs;
    const p = { init, spec, logger, modelLog, executeMs, workers: this.workers, idleMs, memory, spares: this.spares, calls };
    return opts.released ? SandboxInstance.released(p) : SandboxInstance.start(p);
  }

  /** Instances' sandbox workers alive; spares (./spares.ts) are not sandboxes until an instance takes one. */
  liveSandboxes(): number {
    return this.workers.live;
  }

  /** Terminates the spare workers (the instances were finalized before). */
  async dispose(): Promise<void> {
    await this.spares.close();
  }
}
