/**
 * Messages between Warden and a native backend-host process (issue 12 point 2): the child runs
 * one model's instances through the same addon and libtritonserver.so as in-process models; the
 * channel is Node's IPC with `serialization: 'advanced'` (tensors travel as Uint8Array copies,
 * bigint ns timestamps as bigint).
 */
import type { ModelConfig } from '../../../config/types.js';
import type { ExecuteTimings, InferenceRequest, InferenceResponse, InstanceSpec } from '../../../core/types.js';

/** What the child needs to initialise the backend library and load the model. */
export interface LoadSpec {
  backend: { name: string; libraryPath: string; artifactsDir: string; configJson: string };
  model: { name: string; version: number; modelPath: string; versionPath: string; config: ModelConfig; autoCompleteConfig: boolean };
}

/** A request as it crosses: the InferenceRequest fields plus the parent's token. */
export type WireRequest = Omit<InferenceRequest, 'onTimes'> & { token: number };

/** Parent → child calls (each answered by one `reply` with the same `rid`). */
export type ToChild =
  | { rid: number; t: 'load'; spec: LoadSpec }
  | { rid: number; t: 'instance'; id: number; spec: InstanceSpec }
  | { rid: number; t: 'execute'; instance: number; requests: WireRequest[] }
  | { rid: number; t: 'finalizeInstance'; id: number }
  | { rid: number; t: 'finalizeModel' };

/** Child → parent: replies, responses of requests, log lines. */
export type FromChild =
  | { t: 'reply'; rid: number; value?: unknown; error?: { code: string; message: string } }
  | { t: 'response'; token: number; final: boolean; response?: InferenceResponse | null; error?: { code: string; message: string } }
  | { t: 'log'; level: 'info' | 'warn' | 'error' | 'debug'; msg: string; obj?: Record<string, unknown> };

/** The `load` reply. */
export interface Loaded {
  /** The config after the backend's auto-complete, if it set one. */
  config?: ModelConfig;
  parallelInstanceLoading: boolean;
}

/** The `execute` reply. */
export type Executed = ExecuteTimings | undefined;
