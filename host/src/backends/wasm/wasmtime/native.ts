/**
 * The wasmtime engine's native side, as the addon exports it (`addon.wasmtime`, built from
 * native/src/addon/wasmtime/binding.cc over the Rust engine in native/rust/wasmtime-engine/): opaque handles,
 * and messages from the engine's native threads delivered to one callback on the JS thread.
 */
import { nativeAddon } from '../../../platform/addon.js';

/** Opaque native handles (napi externals). */
export type EngineHandle = { readonly __brand: 'ww-engine' };
export type ComponentHandle = { readonly __brand: 'ww-component' };
export type InstanceHandle = { readonly __brand: 'ww-instance' };

/** Message kinds (native/rust/wasmtime-engine/src/ffi_types.rs `kind`). */
export const MSG = Object.freeze({
  READY: 1,
  CREATE_ERROR: 2,
  TRAP: 3,
  LOG: 4,
  OUTPUT: 5,
  CALL: 6,
  DONE: 7,
  RESPAWN_FAILED: 8,
  EXITED: 9,
  LOG_DROPPED: 10,
  /** A direct execute of the native data path that posted logs, output or host calls ended. */
  END_CALL: 11,
});

/** `miss` codes of a {@link WasmtimeNative.loadCached} rejection (native/rust/wasmtime-engine/src/cwasm.rs `Miss`). */
export const CACHED_MISS = Object.freeze({ 1: 'absent', 2: 'unreadable', 3: 'mac', 4: 'refused' } as const);

/** `check` codes of a {@link WasmtimeNative.loadCached} result (native/rust/wasmtime-engine/src/cwasm.rs `Check`). */
export const CACHED_CHECK = Object.freeze({ 1: 'mac', 2: 'stamp' } as const);

/** Receives every message of an engine: instance id, kind, JSON payload, owned byte buffers. */
export type MessageHandler = (instance: number, kind: number, json: string, buffers: Uint8Array[]) => void;

/** Pooling allocator and epoch settings of a wasmtime engine (all optional). */
export interface WasmtimePoolOptions {
  /** Epoch tick (ms): the resolution of execute deadlines. Default 1. */
  tickMs?: number;
  /** Pooling allocator (default true); false = allocate every instance on demand. */
  pooling?: boolean;
  /** Fuel metering (default false; costs speed): each execute reports the fuel it consumed (`SandboxStats.lastFuel`). */
  fuel?: boolean;
  /** Largest linear memory of any instance (bytes): the pool's slot size. */
  maxMemoryBytes?: number;
  /** Component instances alive at once, all models together (default 1000). */
  totalComponentInstances?: number;
  /** Core instances alive at once (default 20000). */
  totalCoreInstances?: number;
  /** Linear memories alive at once (default 2000). */
  totalMemories?: number;
  /** Tables alive at once (default 4000). */
  totalTables?: number;
  /** Elements per table (default 100000). */
  tableElements?: number;
}

/** `addon.wasmtime`. */
export interface WasmtimeNative {
  engineNew(optionsJson: string, onMessage: MessageHandler): EngineHandle;
  /** Holds (true) or lets go (false) of the event loop while messages are awaited; counted. */
  engineRef(engine: EngineHandle, on: boolean): void;
  /** SHA-256 (hex) of the engine configuration and wasmtime's compatibility hash. */
  engineConfigKey(engine: EngineHandle): string;
  /** After every instance EXITED and every component was freed. */
  engineFree(engine: EngineHandle): void;
  /** Cranelift compile + link, off the JS thread. Rejects with wasmtime's message. */
  compile(engine: EngineHandle, bytes: Uint8Array): Promise<ComponentHandle>;
  /**
   * Loads the compile-cache entry at `path` off the JS thread if the keyed BLAKE3 MAC of its bytes
   * (for component `hash` under this engine's configuration) is `mac`: the file is opened once
   * (no symlinks, regular files of at most `maxBytes`), checked — over all its bytes, or by its
   * verified stamp (`<entry>.verified`: the open file's stamps equal those recorded, under the
   * key, after an earlier full check) — and mapped by wasmtime (`Component::deserialize_file`),
   * never read into memory. After a full check the stamps are recorded if the file's last change
   * is at least `settleMs` old. `check` is {@link CACHED_CHECK}'s code of how it was checked.
   * Rejects with an Error whose `miss` is {@link CACHED_MISS}'s code.
   */
  loadCached(
    engine: EngineHandle,
    path: string,
    key: Uint8Array,
    hash: string,
    mac: Uint8Array,
    maxBytes: number,
    settleMs: number,
  ): Promise<{ component: ComponentHandle; check: number }>;
  /** The compile-cache MAC (32 bytes) of a serialized component, as `loadCached` checks it. */
  cwasmMac(engine: EngineHandle, key: Uint8Array, hash: string, payload: Uint8Array): Uint8Array;
  serialize(component: ComponentHandle): Uint8Array;
  componentFree(component: ComponentHandle): void;
  /** Linear memories the component's core modules define; -1 for a malformed binary. */
  countMemories(bytes: Uint8Array): number;
  instanceNew(engine: EngineHandle, component: ComponentHandle, id: number, paramsJson: string): InstanceHandle;
  /**
   * Queues an execute: a requests descriptor (./descriptor.ts; copied before this returns) and the
   * input buffers it indexes (NOT copied: kept alive and unchanged until the execute's terminal
   * message). False if the thread ended. Its DONE message carries the output buffers and, last,
   * the results descriptor (no JSON).
   */
  instanceExecute(instance: InstanceHandle, descriptor: Uint8Array, buffers: Uint8Array[]): boolean;
  /** Answers the instance's pending CALL. */
  instanceReply(instance: InstanceHandle, json: string, buffers: Uint8Array[]): boolean;
  /** Ends the instance's thread (it reports EXITED) and frees the handle. */
  instanceFree(instance: InstanceHandle): void;
}

/**
 * The addon's wasmtime binding.
 * @throws TritonError UNAVAILABLE if the addon was not built
 */
export function wasmtimeNative(): WasmtimeNative {
  return (nativeAddon() as unknown as { wasmtime: WasmtimeNative }).wasmtime;
}
