/**
 * Control messages between Warden and a native backend-host process: the child runs
 * one model's instances through the same addon and libtritonserver.so as in-process models. Load,
 * instances, finalize and log lines use Node's IPC (`serialization: 'advanced'`); the per-request
 * path does not: requests, responses, releases and Execute completions are binary records in two
 * shared memory rings served natively in the child (ring.ts, native/src/addon/iso_server.cc).
 * A backend's in-process inference calls (BLS) travel over IPC to Warden's data plane, run there
 * with the isolated model's own principal.
 */
import type { ModelConfig } from '../../../contract/model-config.js';
import type { InstanceSpec } from '../../../contract/types.js';
import type { NativeLeaks } from '../model.js';

/** What the child needs to initialise the backend library and load the model. */
export interface LoadSpec {
  backend: { name: string; libraryPath: string; artifactsDir: string; configJson: string };
  model: { name: string; version: number; modelPath: string; versionPath: string; config: ModelConfig; autoCompleteConfig: boolean };
}

/** The two rings (names from the addon's shmCreate), `bytes` each. */
export interface RingNames {
  toChild: string;
  toParent: string;
  bytes: number;
}

/** Parent → child calls (each answered by one `reply` with the same `rid`). */
export type ToChild =
  /** First call: map both rings and remove their names (before the backend runs any code). */
  | { rid: number; t: 'rings'; shm: RingNames }
  | { rid: number; t: 'load'; spec: LoadSpec }
  | { rid: number; t: 'instance'; id: number; spec: InstanceSpec }
  | { rid: number; t: 'finalizeInstance'; id: number }
  /** TRITONBACKEND_ModelInstanceReady of instance `id`: replies undefined (ready) or why not. */
  | { rid: number; t: 'checkReady'; id: number }
  | { rid: number; t: 'finalizeModel' };

/**
 * Parent → child, the backend's in-process inference (BLS) run by Warden: the answer to a
 * `server` call, and the responses of its in-process requests (for the addon's serverRespond).
 */
export type ToChildServer =
  | { t: 'serverResult'; cid: number; value?: string; error?: { tritonCode: number; message: string } }
  | { t: 'serverRespond'; token: number; response: object | null; final: boolean };

/** Child → parent: replies, log lines, and the backend's in-process calls (hook `kind` and payload as server.cc builds them). */
export type FromChild =
  | { t: 'reply'; rid: number; value?: unknown; error?: { code: string; message: string } }
  | { t: 'log'; level: 'info' | 'warn' | 'error' | 'debug'; msg: string; obj?: Record<string, unknown> }
  | { t: 'server'; cid: number; kind: number; payload: unknown };

/** The `load` reply. */
export interface Loaded {
  /** The config after the backend's auto-complete, if it set one. */
  config?: ModelConfig;
  parallelInstanceLoading: boolean;
  /** The kernel thread id of the process's ring reader (the thread the doorbell wakes). */
  readerTid: number;
}

/** The `finalizeModel` reply: what the backend never gave back (responses, factories, requests). */
export type Finalized = NativeLeaks | undefined;
