/**
 * An ONNX Runtime session on its own thread (one per model instance): `InferenceSession.run` of
 * onnxruntime-node computes synchronously on the calling JS thread, so the backend runs it here,
 * leaving the server's event loop free for HTTP. Protocol: messages.ts.
 *
 * Never `terminate()` this thread while it may be inside `run`: when the native call returns into a
 * terminating thread, onnxruntime-node throws a C++ exception nobody catches and the process
 * aborts. `release` makes the thread end itself.
 */
import { parentPort, workerData } from 'node:worker_threads';
import ort from 'onnxruntime-node';
import type { FromSessionWorker, SessionWorkerInit, ToSessionWorker, WireTensor } from './messages.js';
import { fromOrtTensor, toOrtTensor } from './tensors.js';

const port = parentPort!;
const init = workerData as SessionWorkerInit;

function post(m: FromSessionWorker, transfer: ArrayBuffer[] = []): void {
  try {
    port.postMessage(m, transfer);
  } catch {
    port.postMessage(m); // a buffer that cannot be transferred is copied instead
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

let session: ort.InferenceSession;
try {
  session = await ort.InferenceSession.create(init.file, init.options);
} catch (e) {
  post({ t: 'load-error', message: errorText(e) });
  process.exit(0);
}

async function run(m: Extract<ToSessionWorker, { t: 'run' }>): Promise<void> {
  let feeds: Record<string, ort.Tensor>;
  try {
    feeds = {};
    for (const f of m.feeds) feeds[f.name] = toOrtTensor(f.datatype, f.shape, f.data);
  } catch (e) {
    post({ t: 'run-error', seq: m.seq, message: errorText(e) });
    return;
  }
  const computeStartNs = process.hrtime.bigint();
  let results: ort.InferenceSession.ReturnType;
  try {
    results = await session.run(
      feeds,
      m.outputs.map((o) => o.name),
    );
  } catch (e) {
    post({ t: 'run-error', seq: m.seq, message: errorText(e) });
    return;
  }
  const computeEndNs = process.hrtime.bigint();
  const outputs: WireTensor[] = [];
  const transfer: ArrayBuffer[] = [];
  try {
    for (const o of m.outputs) {
      const r = results[o.name];
      if (!r) throw new Error(`onnxruntime did not produce output '${o.name}'`);
      const t = fromOrtTensor(o.name, o.datatype, r as ort.Tensor);
      const whole = t.data.byteOffset === 0 && t.data.byteLength === t.data.buffer.byteLength;
      const data = whole ? t.data : new Uint8Array(t.data);
      if (!transfer.includes(data.buffer as ArrayBuffer)) transfer.push(data.buffer as ArrayBuffer);
      outputs.push({ name: o.name, datatype: o.datatype, shape: t.shape, data });
    }
  } catch (e) {
    post({ t: 'run-error', seq: m.seq, message: errorText(e) });
    return;
  }
  post({ t: 'result', seq: m.seq, outputs, computeStartNs, computeEndNs }, transfer);
}

port.on('message', (m: ToSessionWorker) => {
  if (m.t === 'run') {
    void run(m);
  } else if (m.t === 'release') {
    // end the thread from inside: terminating it from outside while ONNX Runtime runs aborts the
    // whole process (onnxruntime-node throws a C++ Napi::Error nobody catches)
    void session.release().finally(() => {
      post({ t: 'released' });
      process.exit(0);
    });
  }
});

post({
  t: 'ready',
  metadata: {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    inputMetadata: session.inputMetadata,
    outputMetadata: session.outputMetadata,
  },
});
