/**
 * Messages between the host (main thread) and a V8 sandbox worker (one per model instance).
 * Tensors travel as wire tensors (../wire.ts); their byte buffers are transferred, not copied,
 * where the sender owns them.
 */
import type { HostConfig } from '../engine.js';
import type { LogLine } from '../host/log.js';
import type { ResponseSend } from '../host/responses.js';
import type { MessagePort } from 'node:worker_threads';
import type { CallRequest } from '../host/inference.js';
import type { WireError, WireRequest, WireResponse, WireResult } from '../wire.js';

/** What a sandbox worker is given by its `init` message (the first and only one before `exec`s). */
export interface WorkerInit extends Omit<HostConfig, 'calls'> {
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
  /**
   * The synchronous way back for host calls that wait (`warden:backend/inference`): the host
   * answers a {@link CallToHost} on `port`, then adds one to `signal[0]` and notifies it; the
   * worker blocks in `Atomics.wait` until an answer is there (`receiveMessageOnPort`).
   */
  callChannel: { port: MessagePort; signal: SharedArrayBuffer };
}

/** A `warden:backend/inference` call of the guest (../host/inference.ts); `cancel` gets no answer. */
export type CallToHost =
  | { fn: 'infer'; request: CallRequest }
  | { fn: 'start'; request: CallRequest; decoupled: boolean }
  | { fn: 'next'; handle: number }
  | { fn: 'cancel'; handle: number };

/** The host's answer to a `start` (`ok`: the handle), a `next` (`ok`: a response, or null at the end) or an `infer` (`ok`: the response). */
export type CallAnswer = { ok: number | WireResponse | null } | { err: WireError };

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
  | { t: 'done'; seq: number; results: WireResult[]; computeStartNs: bigint; computeEndNs: bigint }
  | ({ t: 'call' } & CallToHost);

/** Capacity of the cancellation flag array (requests beyond it in one batch are not cancellable). */
export const CANCEL_SLOTS = 4096;
