/**
 * Messages between the host (main thread) and a sandbox worker (one per model instance).
 * Tensors travel as {@link WireTensor}s; their byte buffers are transferred, not copied, where the
 * sender owns them.
 */
import type { ErrorCode } from '../../core/errors.js';
import type { ParameterValue } from '../../core/types.js';
import type { DataType } from '../../tensor/datatypes.js';
import type { ModelLimits } from './limits.js';

/** A tensor on the wire (same shape as core `Tensor`). */
export interface WireTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
}

/** An error on the wire. */
export interface WireError {
  code: ErrorCode;
  message: string;
}

/** A response on the wire. */
export interface WireResponse {
  outputs: WireTensor[];
  parameters?: Record<string, ParameterValue>;
}

/** One request as the worker needs it. */
export interface WireRequest {
  handle: number;
  id: string;
  correlationId: number | bigint | string;
  flags: number;
  priority: number;
  timeoutUs: number;
  batchSize: number;
  inputs: WireTensor[];
  requestedOutputs: string[];
  parameters: Record<string, ParameterValue>;
}

/** Expected output of the model config, for response checks in the worker. */
export interface OutputSpec {
  name: string;
  datatype: DataType;
  /** Dims the backend produces (config `reshape.shape` if set, else `dims`), without batch dim. */
  dims: number[];
}

/** `workerData` of a sandbox worker. */
export interface WorkerInit {
  /** file: URL of the jco glue module. */
  glueUrl: string;
  /** Compiled core modules by the name the glue asks for. */
  modules: Record<string, WebAssembly.Module>;
  model: { name: string; version: number; configJson: string; versionPath: string; decoupled: boolean; maxBatchSize: number };
  instance: { name: string; kind: 'cpu' | 'gpu' | 'model'; deviceId: number };
  outputs: OutputSpec[];
  limits: ModelLimits;
  /** Int32 cancellation flags, one per request position in the current execute. */
  cancelFlags: SharedArrayBuffer;
}

/** host → worker */
export type ToWorker = { t: 'exec'; seq: number; requests: WireRequest[] };

/** Outcome of one request as returned by `execute` (null: it already had its final response). */
export type WireResult = { ok: WireResponse } | { err: WireError } | null;

/** worker → host */
export type FromWorker =
  | { t: 'ready'; startMs: number }
  | { t: 'create-error'; error: WireError }
  | { t: 'trap'; message: string; during: 'create' | 'execute' }
  | { t: 'log'; level: 'info' | 'warn' | 'error' | 'verbose'; source: 'guest' | 'stdout' | 'stderr' | 'host'; message: string }
  | { t: 'send'; handle: number; response?: WireResponse; error?: WireError; final: boolean }
  | { t: 'done'; seq: number; results: WireResult[]; computeStartNs: bigint; computeEndNs: bigint };

/** Capacity of the cancellation flag array (requests beyond it in one batch are not cancellable). */
export const CANCEL_SLOTS = 4096;
