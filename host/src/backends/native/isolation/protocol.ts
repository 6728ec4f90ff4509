/**
 * Messages between Warden and a native backend-host process (issue 12 point 2): the child runs
 * one model's instances through the same addon and libtritonserver.so as in-process models; the
 * channel is Node's IPC with `serialization: 'advanced'` (bigint ns timestamps stay bigint);
 * tensors go through two shared memory rings (shm-ring.ts), inline only when they do not fit.
 * `shmEnd` is the sender's ring position after the message, `ack` the receiver's: see shm-ring.ts.
 */
import type { ModelConfig } from '../../../config/types.js';
import type { ExecuteTimings, InferenceRequest, InstanceSpec, ParameterValue } from '../../../core/types.js';
import type { WireTensor } from './shm-ring.js';

/** What the child needs to initialise the backend library and load the model. */
export interface LoadSpec {
  backend: { name: string; libraryPath: string; artifactsDir: string; configJson: string };
  model: { name: string; version: number; modelPath: string; versionPath: string; config: ModelConfig; autoCompleteConfig: boolean };
  /** The two shared memory rings (names from the addon's shmCreate), `bytes` each. */
  shm?: { toChild: string; toParent: string; bytes: number };
}

/** A request as it crosses: the InferenceRequest fields (inputs in shared memory or inline) plus the parent's token. */
export type WireRequest = Omit<InferenceRequest, 'onTimes' | 'inputs'> & { token: number; inputs: WireTensor[] };

/** A response as it crosses (outputs in shared memory or inline). */
export interface WireResponse {
  outputs: WireTensor[];
  parameters?: Record<string, ParameterValue>;
}

/** Parent → child calls (each answered by one `reply` with the same `rid`). */
export type ToChild =
  | { rid: number; t: 'load'; spec: LoadSpec }
  | { rid: number; t: 'instance'; id: number; spec: InstanceSpec }
  | { rid: number; t: 'execute'; instance: number; requests: WireRequest[]; shmEnd: number; ack: number }
  | { rid: number; t: 'finalizeInstance'; id: number }
  | { rid: number; t: 'finalizeModel' };

/** Child → parent: replies, responses of requests, log lines. */
export type FromChild =
  | { t: 'reply'; rid: number; value?: unknown; error?: { code: string; message: string }; ack?: number }
  | { t: 'response'; token: number; final: boolean; response?: WireResponse | null; error?: { code: string; message: string }; shmEnd?: number; ack?: number }
  | { t: 'log'; level: 'info' | 'warn' | 'error' | 'debug'; msg: string; obj?: Record<string, unknown> };

/** The `load` reply. */
export interface Loaded {
  /** The config after the backend's auto-complete, if it set one. */
  config?: ModelConfig;
  parallelInstanceLoading: boolean;
}

/** The `execute` reply. */
export type Executed = ExecuteTimings | undefined;
