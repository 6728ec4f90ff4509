/**
 * Messages between the HTTP frontend and a codec worker (codec/worker.ts): decoding of large JSON
 * inference requests and load requests, and encoding of large JSON responses, moved off the event loop. Buffers
 * travel transferred where the sender owns them.
 */
import type { ModelConfig } from '../../../contract/model-config.js';
import type { ErrorCode } from '../../../contract/errors.js';
import type { InferenceResponse } from '../../../contract/types.js';
import type { DecodedInferRequest, OutputFormats } from '../infer-request.js';
import type { EncodedResponse } from '../infer-response.js';
import type { LoadRequestParts } from '../load-request.js';

/** Arguments of decodeInferRequest (infer-request.ts). */
export interface DecodeJob {
  t: 'decode';
  body: Uint8Array;
  headerLength: number | undefined;
  model: string;
  version: number;
  config: ModelConfig;
}

/** Arguments of encodeInferResponse (infer-response.ts). */
export interface EncodeJob {
  t: 'encode';
  model: string;
  version: number;
  id: string;
  response: InferenceResponse;
  formats: OutputFormats;
  maxJsonBytes: number;
}

/** Arguments of parseLoadRequest (load-request.ts). */
export interface LoadJob {
  t: 'load';
  body: Uint8Array;
  model: string;
}

/** host → worker */
export type ToCodecWorker = (DecodeJob | EncodeJob | LoadJob) & { seq: number };

/** worker → host */
export type FromCodecWorker =
  { seq: number; ok: DecodedInferRequest | EncodedResponse | LoadRequestParts } | { seq: number; error: { code: ErrorCode; message: string } };
