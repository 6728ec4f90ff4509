/**
 * The classification extension (spec §3.10): a requested output with `classification: K` is
 * returned as BYTES strings `"<value>:<index>[:<label>]"`, the top K elements by value (descending,
 * compared in the output's datatype; ties keep the lower index first), shape `[batch, min(K, n)]`
 * for batching models (each batch element classified on its own) or `[min(K, n)]` otherwise.
 * Values print as C++ `std::to_string` does (floats with 6 decimals); labels come from the
 * output's `label_filename` in the model directory, one per line, read at model load through the
 * confinement rule (`lifecycle/config-files.ts`, `repository/model-files.ts`) and kept on the version.
 *
 * Applied by the data plane on the final response path, so backends produce ordinary outputs.
 */
import type { ModelConfig } from '../contract/model-config.js';
import { dataTypeByteSize, type DataType } from '../contract/datatypes.js';
import { TritonError, invalidArg } from '../contract/errors.js';
import { tensorDataType } from '../contract/datatypes.js';
import type { InferenceResponse, ResponseSender, Tensor } from '../contract/types.js';
import { encodeBytesElements } from '../tensor/bytes.js';
import { elementReader, type ElementReader } from '../tensor/elements.js';
import * as dataplaneErrors from './inference.errors.js';

/** Triton's cap on the elements classified in one output. */
const MAX_ELEMENTS = 1_000_000;

const UNSUPPORTED: ReadonlySet<string> = new Set(['BOOL', 'FP16', 'BF16', 'BYTES']);

/** `std::to_string` of a float / double: `%f`. */
function cFloat(v: number): string {
  if (Number.isNaN(v)) return v < 0 ? '-nan' : 'nan';
  if (!Number.isFinite(v)) return v < 0 ? '-inf' : 'inf';
  const neg = v < 0 || Object.is(v, -0);
  const a = Math.abs(v);
  const text = a < 1e21 ? a.toFixed(6) : `${BigInt(a)}.000000`;
  return neg ? `-${text}` : text;
}

/** The reader of a classifiable datatype's elements. @throws TritonError INVALID_ARG for BOOL, FP16, BF16, BYTES */
function readerOf(datatype: DataType): ElementReader {
  const reader = UNSUPPORTED.has(datatype) ? undefined : elementReader(datatype);
  if (!reader) throw dataplaneErrors.classificationType(datatype);
  return reader;
}

function bytesTensor(name: string, shape: number[], strings: string[]): Tensor {
  return { name, datatype: 'BYTES', shape, data: encodeBytesElements(strings) };
}

/**
 * Classify one output tensor.
 * @param batched the model batches (first dim = batch): each batch element is classified alone
 * @throws TritonError INVALID_ARG for an unsupported datatype or too many elements
 */
export function classifyTensor(t: Tensor, k: number, labels: readonly string[] | undefined, batched: boolean): Tensor {
  const read = readerOf(t.datatype);
  const size = dataTypeByteSize(t.datatype);
  const total = t.data.length / size;
  if (total > MAX_ELEMENTS) throw dataplaneErrors.classificationTooLarge(t.name, total, MAX_ELEMENTS);
  const batch = batched && t.shape.length > 0 ? t.shape[0]! : 1;
  const per = batch === 0 ? 0 : total / batch;
  const dv = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const take = Math.min(k, per);
  const float = t.datatype === 'FP32' || t.datatype === 'FP64';
  const strings: string[] = [];
  for (let b = 0; b < batch; b++) {
    const idx = Array.from({ length: per }, (_, i) => i);
    const vals = idx.map((i) => read(dv, (b * per + i) * size));
    idx.sort((x, y) => {
      const a = vals[x]!;
      const c = vals[y]!;
      return a > c ? -1 : a < c ? 1 : x - y;
    });
    for (let j = 0; j < take; j++) {
      const i = idx[j]!;
      const v = vals[i]!;
      let s = `${float ? cFloat(v as number) : String(v)}:${i}`;
      const label = labels?.[i];
      if (label !== undefined && label !== '') s += `:${label}`;
      strings.push(s);
    }
  }
  return bytesTensor(t.name, batched && t.shape.length > 0 ? [batch, take] : [take], strings);
}

/**
 * Check a request's classification asks against the config (before queueing).
 * @throws TritonError INVALID_ARG for an unknown output or an unsupported datatype
 */
export function checkClassification(config: ModelConfig, classification: ReadonlyMap<string, number>): void {
  for (const name of classification.keys()) {
    const o = config.output.find((x) => x.name === name);
    if (!o) continue; // the request validator reports unknown outputs
    const dt = tensorDataType(o);
    if (UNSUPPORTED.has(dt)) throw dataplaneErrors.classificationOutputType(name, dt);
  }
}

/** Wraps a sender: outputs asked for as classification are replaced by their top-K strings. */
export class ClassificationSender implements ResponseSender {
  constructor(
    private readonly downstream: ResponseSender,
    private readonly config: ModelConfig,
    /** Labels per output name, as read at load (`ConfigFiles.labels`). */
    private readonly labels: ReadonlyMap<string, readonly string[]>,
    private readonly classification: ReadonlyMap<string, number>,
  ) {}

  send(response: InferenceResponse | null, final: boolean): void {
    if (!response) return this.downstream.send(response, final);
    let outputs: Tensor[];
    try {
      outputs = response.outputs.map((t) => {
        const k = this.classification.get(t.name);
        if (k === undefined) return t;
        const c = classifyTensor(t, k, this.labels.get(t.name), this.config.max_batch_size > 0);
        t.owner?.release();
        return c;
      });
    } catch (e) {
      return this.downstream.sendError(e instanceof TritonError ? e : invalidArg(String(e)), final);
    }
    this.downstream.send({ ...response, outputs }, final);
  }

  sendError(error: TritonError, final: boolean): void {
    this.downstream.sendError(error, final);
  }
}
