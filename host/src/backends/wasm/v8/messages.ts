/**
 * Messages between the host (main thread) and a V8 sandbox worker (one per model instance).
 * Tensors travel as wire tensors (../wire.ts); their byte buffers are transferred, not copied,
 * where the sender owns them.
 */
import type { HostConfig } from '../engine.js';
import type { LogLine } from '../host/log.js';
import type { ResponseSend } from '../host/responses.js';
import type { WireError, WireRequest, WireResult } from '../wire.js';

/** What a sandbox worker is given by its `init` message (the first and only one before `exec`s). */
export interface WorkerInit extends HostConfig {
  /** file: URL of the jco glue module. */
  glueUrl: string;
  /** Compiled core modules by the name the glue asks for. */
  modules: Record<string, WebAssembly.Module>;
  /** Linear memories each core module defines, by name. */
  memoryCounts: Record<string, number>;
  /** Most linear memories the instance may create (what its memory reservation covers). */
  maxMemories: number;
  instance: { name: string; kind: 'cpu' | 'gpu' | 'model'; deviceId: number };
  /** Int32 cancellation flags, one per request position in the current execute. */
  cancelFlags: SharedArrayBuffer;
}

/**
 * host → worker: `init` once (a worker starts without its instance's data, so that it can be
 * started ahead of need as a spare: ./spares.ts), then `exec`s.
 */
export type ToWorker = { t: 'init'; init: WorkerInit } | { t: 'exec'; seq: number; requests: WireRequest[] };

/** worker → host */
export type FromWorker =
  | { t: 'ready'; startMs: number }
  | { t: 'create-error'; error: WireError }
  | { t: 'trap'; message: string; during: 'create' | 'execute' }
  | ({ t: 'log' } & LogLine)
  | ({ t: 'send' } & ResponseSend)
  | { t: 'done'; seq: number; results: WireResult[]; computeStartNs: bigint; computeEndNs: bigint };

/** Capacity of the cancellation flag array (requests beyond it in one batch are not cancellable). */
export const CANCEL_SLOTS = 4096;
