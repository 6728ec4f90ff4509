/**
 * A codec worker: decodes large JSON inference requests and encodes large JSON responses for the
 * HTTP frontend, so that parsing or printing megabytes of tensor text never stalls the event loop.
 * The same functions as on the main thread (infer-request.ts, infer-response.ts); results return
 * with their buffers transferred. Protocol: messages.ts.
 */
import { parentPort } from 'node:worker_threads';
import { asTritonError } from '../../../contract/errors.js';
import { lowerThisThreadPriority } from '../../../threads/priority.js';
import { decodeInferRequest } from '../infer-request.js';
import { encodeInferResponse } from '../infer-response.js';
import { parseLoadRequest } from '../load-request.js';
import type { FromCodecWorker, ToCodecWorker } from './messages.js';

const port = parentPort!;
// parsing someone's 16 MB body must not take a core from the event loop serving everyone else
lowerThisThreadPriority();

/** The distinct ArrayBuffers under `views`. */
function buffersOf(views: Iterable<Uint8Array>): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const v of views) out.add(v.buffer as ArrayBuffer);
  return [...out];
}

port.on('message', (m: ToCodecWorker) => {
  let reply: FromCodecWorker;
  let transfer: ArrayBuffer[] = [];
  try {
    if (m.t === 'decode') {
      const body = Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength);
      const decoded = decodeInferRequest(body, m.headerLength, m.model, m.version, m.config);
      transfer = buffersOf(decoded.init.inputs.map((t) => t.data));
      reply = { seq: m.seq, ok: decoded };
    } else if (m.t === 'load') {
      const parts = parseLoadRequest(m.model, m.body);
      transfer = buffersOf(parts.files.map(([, data]) => data));
      reply = { seq: m.seq, ok: parts };
    } else {
      const enc = encodeInferResponse(m.model, m.version, m.id, m.response, m.formats, m.maxJsonBytes);
      if (typeof enc.body !== 'string') transfer = buffersOf([enc.body]);
      reply = { seq: m.seq, ok: enc };
    }
  } catch (e) {
    const err = asTritonError(e);
    reply = { seq: m.seq, error: { code: err.code, message: err.message } };
  }
  try {
    port.postMessage(reply, transfer);
  } catch {
    port.postMessage(reply); // a pooled (untransferable) buffer is copied instead
  }
});
