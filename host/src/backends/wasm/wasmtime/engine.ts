/**
 * The `wasmtime` sandbox engine (DESIGN "Backend kinds", "Sandbox rules"): components compiled by
 * wasmtime (Cranelift) in the native addon, once per content — shared by every model version with
 * the same component hash, and cached on disk as precompiled `.cwasm` (./cache.ts) — each instance
 * a wasmtime store on its own native thread with epoch deadlines, `StoreLimits` and the pooling
 * allocator (./instance.ts). Host capabilities are the TypeScript modules of ../host/, shared with
 * the V8 engine.
 */
import type { RemoteCompileCache } from './remote-cache.js';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import type { ModelLogWriter } from '../../../contract/model-log.js';
import * as errors from '../sandbox.errors.js';
import { fromAddonError } from '../../../platform/addon.js';
import type { InstanceSpec } from '../../../contract/types.js';
import type { EngineOptions } from '../engines.js';
import type { CompiledComponent, CompileInput, HostConfig, SandboxEngine } from '../engine.js';
import { DEFAULT_CACHE_LIMITS } from '../v8/transpile.js';
import { DEFAULT_IDLE_MS } from '../limits.js';
import type { SandboxMemory } from '../memory-budget.js';
import { CwasmCache } from './cache.js';
import { WasmtimeInstance, type InstancePort } from './instance.js';
import { CACHED_CHECK, CACHED_MISS, MSG, wasmtimeNative, type ComponentHandle, type EngineHandle, type InstanceHandle, type WasmtimeNative } from './native.js';

/** Engine name. */
export const WASMTIME_ENGINE = 'wasmtime';

/** A component compiled by the wasmtime engine (shared by all models with its hash). */
export interface WasmtimeCompiled extends CompiledComponent {
  readonly engine: typeof WASMTIME_ENGINE;
  readonly component: ComponentHandle;
  /** How the component was obtained: compiled now, from the disk cache, from the fleet's shared cache tier, or shared in memory. */
  readonly source: 'compiled' | 'cache' | 'shared-cache' | 'shared';
}

/** Options of the wasmtime engine: the options every engine is created with ({@link EngineOptions}). */
export type WasmtimeEngineOptions = EngineOptions;

interface Shared {
  component: ComponentHandle;
  memories: number;
  refs: number;
}

/**
 * A native wasmtime engine, shared by every {@link WasmtimeEngine} of the process with the same
 * settings: one pool reservation (the pooling allocator reserves address space for all its slots
 * up front, terabytes with 4 GiB guard regions), one epoch ticker, one wake-up path.
 */
interface NativeEngine {
  handle: EngineHandle;
  key: string;
  refs: number;
  /** Sandbox threads of all engines on it, by thread id. */
  threads: Map<number, WasmtimeInstance>;
}

const nativeEngines = new Map<string, NativeEngine>();
let nextThread = 1;

function acquireNative(native: WasmtimeNative, optionsJson: string): NativeEngine {
  let e = nativeEngines.get(optionsJson);
  if (!e) {
    const threads = new Map<number, WasmtimeInstance>();
    const handle = native.engineNew(optionsJson, (tid, kind, json, bufs) => {
      threads.get(tid)?.onMessage(tid, kind, json, bufs);
      if (kind === MSG.EXITED) threads.delete(tid);
    });
    e = { handle, key: optionsJson, refs: 0, threads };
    nativeEngines.set(optionsJson, e);
  }
  e.refs++;
  return e;
}

function releaseNative(native: WasmtimeNative, e: NativeEngine): void {
  if (--e.refs > 0) return;
  nativeEngines.delete(e.key);
  native.engineFree(e.handle);
}

/** The wasmtime engine. */
export class WasmtimeEngine implements SandboxEngine<WasmtimeCompiled>, InstancePort {
  readonly name = WASMTIME_ENGINE;
  private readonly native: WasmtimeNative;
  private shared?: NativeEngine;
  readonly cache: CwasmCache;
  private readonly components = new Map<string, Shared>();
  private readonly compiling = new Map<string, Promise<{ shared: Shared; source: WasmtimeCompiled['source'] }>>();
  /** This engine's sandbox threads (ids on the shared native engine). */
  private readonly threads = new Set<number>();
  private readonly logger?: Logger;
  /** Default idle release (ms; 0 = never; default `DEFAULT_IDLE_MS`). */
  readonly idleMs: number;
  /** The fleet's shared tier of the compile cache, if any. */
  private readonly remote?: RemoteCompileCache;

  /**
   * @throws TritonError UNAVAILABLE if the native addon was not built; Error if wasmtime refuses
   *   the configuration
   */
  constructor(opts: WasmtimeEngineOptions) {
    this.native = wasmtimeNative();
    this.logger = opts.logger;
    this.idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.remote = opts.remoteCache;
    this.shared = acquireNative(this.native, JSON.stringify({ maxMemoryBytes: opts.maxMemoryBytes, ...opts.pool }));
    const dir = join(opts.cacheDir, 'wasmtime');
    mkdirSync(dir, { recursive: true });
    this.cache = new CwasmCache(
      dir,
      this.native.engineConfigKey(this.shared.handle),
      { ...DEFAULT_CACHE_LIMITS, ...opts.cacheLimits },
      opts.logger,
      opts.cacheSettleMs,
      opts.cacheKey,
    );
    this.cache.prepare().catch((e: unknown) => opts.logger?.error({ err: e }, 'wasmtime compile cache could not be scanned'));
  }

  private engine(): EngineHandle {
    if (!this.shared) throw errors.engineDisposed();
    return this.shared.handle;
  }

  /**
   * Compiles once per hash, concurrent loads included — or takes the component from the disk
   * cache, or from the fleet's shared tier ({@link RemoteCompileCache}) into the disk cache.
   */
  private async obtain({ bytes: read, hash, what, memories }: CompileInput): Promise<{ shared: Shared; source: WasmtimeCompiled['source'] }> {
    const cached = await this.loadFromCache(hash);
    if (cached) return { shared: { component: cached, memories, refs: 0 }, source: 'cache' };
    if (this.remote) {
      const entry = await this.remote.fetch(this.cache.prefixOf(hash), this.cache.limits.maxBytes);
      if (entry && (await this.cache.adopt(hash, entry.name, entry.bytes))) {
        const adopted = await this.loadFromCache(hash);
        if (adopted) return { shared: { component: adopted, memories, refs: 0 }, source: 'shared-cache' };
      }
    }
    // a cache miss: only now is the component file read (a hit never reads it)
    const bytes = await read();
    let component: ComponentHandle;
    try {
      component = await this.native.compile(this.engine(), bytes);
    } catch (e) {
      // the engine's code: INVALID_ARG for a component wasmtime refuses
      const err = fromAddonError(e);
      throw errors.wasmtimeCompile(what, err.code, err.message);
    }
    const payload = this.native.serialize(component);
    const mac = this.native.cwasmMac(this.engine(), this.cache.key, hash, payload);
    await this.cache.write(hash, payload, mac);
    if (this.remote) void this.remote.store({ name: this.cache.entryName(hash, mac), bytes: payload });
    return { shared: { component, memories, refs: 0 }, source: 'compiled' };
  }

  /** `hash`'s component from the disk cache, its MAC checked; undefined on a miss (a failed check deletes the entry). */
  private async loadFromCache(hash: string): Promise<ComponentHandle | undefined> {
    const entry = await this.cache.lookup(hash);
    if (!entry) return undefined;
    try {
      // touched first: a touch moves ctime and so voids a verified stamp recorded by this load
      await this.cache.touch(entry);
      const { component, check } = await this.native.loadCached(
        this.engine(),
        entry.file,
        this.cache.key,
        hash,
        entry.mac,
        this.cache.limits.maxBytes,
        this.cache.settleMs,
      );
      this.cache.counts[CACHED_CHECK[check as keyof typeof CACHED_CHECK] ?? 'mac']++;
      return component;
    } catch (e) {
      const code = (e as { miss?: number }).miss;
      const miss = CACHED_MISS[code as keyof typeof CACHED_MISS] ?? 'unreadable';
      if (miss !== 'absent') await this.cache.reject(hash, miss);
      return undefined;
    }
  }

  /**
   * The component for `hash`: shared in memory with every loaded model of the same content, else
   * deserialized from the compile cache (checked), else compiled and cached.
   * @throws TritonError INVALID_ARG if wasmtime cannot compile it
   */
  async compile(input: CompileInput): Promise<WasmtimeCompiled> {
    const { hash } = input;
    let source: WasmtimeCompiled['source'] = 'shared';
    let shared = this.components.get(hash);
    // in use from now on: the entry written for it is never the one evicted to make room
    this.cache.retain(hash);
    try {
      if (!shared) {
        let p = this.compiling.get(hash);
        if (!p) {
          p = this.obtain(input).finally(() => this.compiling.delete(hash));
          this.compiling.set(hash, p);
          const got = await p;
          source = got.source;
          this.components.set(hash, got.shared);
        } else {
          await p;
        }
        shared = this.components.get(hash)!;
      }
    } catch (e) {
      this.cache.release(hash);
      throw e;
    }
    shared.refs++;
    return { engine: WASMTIME_ENGINE, hash, memories: shared.memories, component: shared.component, source };
  }

  /** The model of `compiled` was unloaded: the component is freed when no model uses it. */
  release(compiled: WasmtimeCompiled): void {
    const shared = this.components.get(compiled.hash);
    this.cache.release(compiled.hash);
    if (!shared || --shared.refs > 0) return;
    this.components.delete(compiled.hash);
    this.native.componentFree(shared.component);
  }

  /**
   * Starts an instance on a sandbox thread.
   * @throws TritonError as {@link SandboxEngine.instantiate}; INTERNAL for a component compiled
   *   by another engine
   */
  async instantiate(
    compiled: WasmtimeCompiled,
    spec: InstanceSpec,
    host: HostConfig,
    executeMs: number,
    logger: Logger,
    memory?: SandboxMemory,
    modelLog?: ModelLogWriter,
  ) {
    if (compiled.engine !== WASMTIME_ENGINE) throw errors.engineMismatch(WASMTIME_ENGINE, compiled.engine);
    return WasmtimeInstance.start({
      port: this,
      component: compiled.component,
      memories: compiled.memories,
      spec,
      host,
      executeMs,
      logger,
      modelLog,
      idleMs: host.limits.idleMs ?? this.idleMs,
      memory,
    });
  }

  // ------------------------------------------------------------------ InstancePort

  spawn(inst: WasmtimeInstance, paramsJson: string): { handle: InstanceHandle; id: number } {
    const shared = this.shared;
    if (!shared) throw errors.engineDisposed();
    const id = nextThread++;
    shared.threads.set(id, inst);
    this.threads.add(id);
    try {
      return { handle: this.native.instanceNew(shared.handle, inst.component, id, paramsJson), id };
    } catch (e) {
      shared.threads.delete(id);
      this.threads.delete(id);
      throw e;
    }
  }

  execute(handle: InstanceHandle, descriptor: Uint8Array, buffers: Uint8Array[]): boolean {
    return this.native.instanceExecute(handle, descriptor, buffers);
  }

  reply(handle: InstanceHandle, json: string, buffers: Uint8Array[]): void {
    this.native.instanceReply(handle, json, buffers);
  }

  free(handle: InstanceHandle): void {
    this.native.instanceFree(handle);
  }

  hold(on: boolean): void {
    if (this.shared) this.native.engineRef(this.shared.handle, on);
  }

  /** Sandbox threads of this engine alive now (terminating ones included). */
  liveSandboxes(): number {
    const shared = this.shared;
    if (!shared) return 0;
    for (const id of this.threads) if (!shared.threads.has(id)) this.threads.delete(id);
    return this.threads.size;
  }

  /**
   * Frees this engine's components once its sandbox threads have ended (waits up to 5 s), and
   * the native engine with the last user.
   */
  async dispose(): Promise<void> {
    const shared = this.shared;
    if (!shared) return;
    for (let i = 0; i < 500 && this.liveSandboxes() > 0; i++) await new Promise((r) => setTimeout(r, 10));
    if (this.liveSandboxes() > 0) {
      this.logger?.warn({ threads: this.threads.size }, 'wasmtime engine disposed with sandbox threads still running; its memory is kept');
      return;
    }
    for (const s of this.components.values()) this.native.componentFree(s.component);
    this.components.clear();
    this.shared = undefined;
    releaseNative(this.native, shared);
  }
}
