/**
 * Messages between the onnxruntime backend (main thread) and an ONNX Runtime session worker (one
 * per model instance). Tensor bytes travel in ArrayBuffers the sender owns and transfers, so a
 * tensor is copied at most once on its way in (out of the request body) and not at all on its way
 * out (the worker transfers ONNX Runtime's output buffers).
 */
import type { InferenceSession } from 'onnxruntime-node';
import type { DataType } from '../../contract/datatypes.js';

/** `workerData` of a session worker. */
export interface SessionWorkerInit {
  /** The `.onnx` file (operator's disk; never a tenant upload). */
  file: string;
  options: InferenceSession.SessionOptions;
}

/**
 * A tensor crossing the thread boundary: Triton datatype, shape, and the raw little-endian bytes
 * (BYTES: 4-byte length-prefixed elements) as the whole of `data`'s buffer.
 */
export interface WireTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: Uint8Array;
}

/** The session's graph, as the main thread needs it for auto-complete and checks (spec §5.7). */
export interface SessionMetadata {
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata: readonly InferenceSession.ValueMetadata[];
  outputMetadata: readonly InferenceSession.ValueMetadata[];
}

/** host → worker */
export type ToSessionWorker =
  | { t: 'run'; seq: number; feeds: WireTensor[]; outputs: { name: string; datatype: DataType }[] }
  /** Release the session, then end the thread. */
  | { t: 'release' };

/** worker → host */
export type FromSessionWorker =
  | { t: 'ready'; metadata: SessionMetadata }
  | { t: 'load-error'; message: string }
  | { t: 'result'; seq: number; outputs: WireTensor[]; computeStartNs: bigint; computeEndNs: bigint }
  | { t: 'run-error'; seq: number; message: string }
  /** The session is released; the thread is ending. */
  | { t: 'released' };
