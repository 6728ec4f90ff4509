/**
 * A small pool of codec workers (codec/worker.ts) for the HTTP frontend: JSON request bodies and
 * JSON responses above {@link OFFLOAD_BYTES} are decoded / encoded there instead of on the event
 * loop, so one client's 16 MB JSON request delays other clients by a transfer, not by a parse.
 * Workers start on first use and are `unref`'d: an idle pool never keeps the process alive.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { TritonError } from '../../../contract/errors.js';
import type { InferenceResponse } from '../../../contract/types.js';
import type { ModelConfig } from '../../../contract/model-config.js';
import { workerEntry } from '../../../threads/worker-entry.js';
import type { DecodedInferRequest, OutputFormats } from '../infer-request.js';
import type { EncodedResponse } from '../infer-response.js';
import type { LoadRequestParts } from '../load-request.js';
import type { DecodeJob, EncodeJob, FromCodecWorker, LoadJob, ToCodecWorker } from './messages.js';
import { codecPoolClosed, codecWorkerFailed } from '../http.errors.js';

type Result = DecodedInferRequest | EncodedResponse | LoadRequestParts;

/**
 * Size from which JSON work leaves the event loop, bytes: a request whose JSON part is at least
 * this long, or a response whose JSON outputs hold at least this many tensor bytes. About 1-3 ms of
 * parsing or printing on this machine; below it the thread hop costs more than it saves.
 */
export const OFFLOAD_BYTES = 256 * 1024;

interface Job {
  seq: number;
  resolve: (v: Result) => void;
  reject: (e: TritonError) => void;
}

interface Slot {
  worker: Worker;
  jobs: Map<number, Job>;
}

/** `body` as a view its buffer can be transferred with: the buffer itself when the body is the whole of one, else a copy. */
function givenUp(body: Buffer): Uint8Array {
  const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && !(body.buffer instanceof SharedArrayBuffer);
  return whole ? new Uint8Array(body.buffer, 0, body.byteLength) : new Uint8Array(body);
}

/** Codec workers, started on demand. */
export class CodecPool {
  private readonly slots: Slot[] = [];
  private seq = 0;
  private closed = false;

  /** @param size Worker count; default: the cores but one, at least 1, at most 4. */
  constructor(private readonly size = Math.max(1, Math.min(4, availableParallelism() - 1))) {}

  /**
   * decodeInferRequest (infer-request.ts) on a worker. `body` is given up: its buffer is
   * transferred when it is the whole of one, otherwise copied.
   * @throws TritonError as decodeInferRequest does; INTERNAL if the worker died.
   */
  decode(body: Buffer, headerLength: number | undefined, model: string, version: number, config: ModelConfig): Promise<DecodedInferRequest> {
    const data = givenUp(body);
    const job: DecodeJob = { t: 'decode', body: data, headerLength, model, version, config };
    return this.run(job, [data.buffer as ArrayBuffer]) as Promise<DecodedInferRequest>;
  }

  /**
   * parseLoadRequest (load-request.ts) on a worker; the files come back transferred. `body` is
   * given up as in {@link decode}.
   * @throws TritonError as parseLoadRequest does; INTERNAL if the worker died.
   */
  parseLoad(body: Buffer, model: string): Promise<LoadRequestParts> {
    const data = givenUp(body);
    const job: LoadJob = { t: 'load', body: data, model };
    return this.run(job, [data.buffer as ArrayBuffer]) as Promise<LoadRequestParts>;
  }

  /**
   * encodeInferResponse (infer-response.ts) on a worker; output tensors are copied to it.
   * @throws TritonError as encodeInferResponse does; INTERNAL if the worker died.
   */
  encode(model: string, version: number, id: string, response: InferenceResponse, formats: OutputFormats, maxJsonBytes: number): Promise<EncodedResponse> {
    const outputs = response.outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.data }));
    const job: EncodeJob = { t: 'encode', model, version, id, response: { ...response, outputs }, formats, maxJsonBytes };
    return this.run(job, []).then((enc) => {
      const e = enc as EncodedResponse;
      // a Buffer arrives as a plain Uint8Array
      return typeof e.body === 'string' ? e : { ...e, body: Buffer.from(e.body.buffer, e.body.byteOffset, e.body.byteLength) };
    });
  }

  private run(job: DecodeJob | EncodeJob | LoadJob, transfer: ArrayBuffer[]): Promise<Result> {
    if (this.closed) return Promise.reject(codecPoolClosed());
    const slot = this.pick();
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      slot.jobs.set(seq, { seq, resolve, reject });
      if (slot.jobs.size === 1) slot.worker.ref();
      slot.worker.postMessage({ ...job, seq } satisfies ToCodecWorker, transfer);
    });
  }

  /** The least busy worker, starting one while fewer than `size` run. */
  private pick(): Slot {
    let best: Slot | undefined;
    for (const s of this.slots) if (!best || s.jobs.size < best.jobs.size) best = s;
    if (best && (best.jobs.size === 0 || this.slots.length >= this.size)) return best;
    return this.start();
  }

  private start(): Slot {
    const entry = workerEntry(import.meta.url, 'worker');
    const worker = new Worker(entry.script, { eval: entry.eval });
    worker.unref();
    const slot: Slot = { worker, jobs: new Map() };
    this.slots.push(slot);
    worker.on('message', (m: FromCodecWorker) => {
      const job = slot.jobs.get(m.seq);
      if (!job) return;
      slot.jobs.delete(m.seq);
      if (slot.jobs.size === 0) worker.unref();
      if ('ok' in m) job.resolve(m.ok);
      else job.reject(new TritonError(m.error.code, m.error.message));
    });
    const gone = (why: string) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      for (const job of slot.jobs.values()) job.reject(codecWorkerFailed(why));
      slot.jobs.clear();
    };
    worker.on('error', (e) => gone(`failed: ${e.message}`));
    worker.on('exit', (code) => gone(`exited (code ${code})`));
    return slot;
  }

  /** Ends every worker; jobs in flight fail with INTERNAL. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
