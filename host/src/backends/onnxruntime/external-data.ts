/**
 * The external-data files an ONNX model names (`TensorProto.external_data { key: "location" }`
 * with `data_location: EXTERNAL`, onnx.proto): ONNX Runtime opens them relative to the model
 * file's directory. Warden reads them from the ModelProto itself and checks each through the
 * confinement rule (`repository/model-files.ts`, DESIGN "Multi-tenancy") before ONNX Runtime sees
 * the model, so a location that leaves the model directory, is no regular file or is over its cap
 * fails the load with a path-free error (ONNX Runtime 1.30 refuses `..`, absolute locations and
 * links leaving the model file's directory itself too, but with absolute host paths in its message).
 *
 * Walked: the main graph, nodes' attribute tensors and subgraphs (`If` / `Loop` bodies), sparse
 * initializers, model-local functions and training-info graphs; nesting deeper than
 * {@link MAX_DEPTH} is refused.
 */
import protobuf from 'protobufjs';
import * as errors from './onnxruntime.errors.js';

const { Reader } = protobuf;

/** Deepest graph / attribute nesting walked. */
export const MAX_DEPTH = 64;
/** Most external-data entries one model may name. */
export const MAX_EXTERNAL_ENTRIES = 100_000;

const LEN = 2;

/** One external-data reference: the tensor's name and the location as the model gives it. */
export interface ExternalDataRef {
  tensor: string;
  location: string;
}

type Walker = (r: protobuf.Reader, end: number, depth: number, out: ExternalDataRef[]) => void;

/** Calls `each(field, reader)` for every field of the message in [r.pos, end); skips what `each` does not read. */
function fields(r: protobuf.Reader, end: number, each: (field: number, wire: number) => boolean): void {
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (!each(field, wire)) r.skipType(wire);
  }
  if (r.pos !== end) throw new Error('truncated message');
}

/** Runs `walk` over the length-delimited submessage at the reader. */
function sub(r: protobuf.Reader, depth: number, out: ExternalDataRef[], walk: Walker): void {
  if (depth > MAX_DEPTH) throw errors.modelTooDeep(MAX_DEPTH);
  const len = r.uint32();
  const end = r.pos + len;
  if (end > r.len) throw new Error('truncated message');
  walk(r, end, depth + 1, out);
}

const tensor: Walker = (r, end, _depth, out) => {
  let name = '';
  let external = false;
  const entries: [string, string][] = [];
  fields(r, end, (f, w) => {
    if (w !== LEN && f !== 14) return false;
    if (f === 8) name = r.string();
    else if (f === 14 && w === 0) external = r.int32() === 1;
    else if (f === 13) {
      const len = r.uint32();
      const stop = r.pos + len;
      let k = '';
      let v = '';
      fields(r, stop, (g, gw) => {
        if (gw !== LEN) return false;
        if (g === 1) k = r.string();
        else if (g === 2) v = r.string();
        else return false;
        return true;
      });
      entries.push([k, v]);
    } else return false;
    return true;
  });
  // ONNX Runtime reads external_data entries whether or not data_location says EXTERNAL when
  // they name a location; check both.
  const location = entries.find(([k]) => k === 'location')?.[1];
  if (external || location !== undefined) {
    if (out.length >= MAX_EXTERNAL_ENTRIES) throw errors.tooManyExternalEntries(MAX_EXTERNAL_ENTRIES);
    out.push({ tensor: name, location: location ?? '' });
  }
};

/**
 * The walker of a message whose walked fields are all submessages: `children` gives each field
 * number's submessage walker (called on first use, so that walkers may name each other).
 */
function submessages(children: () => Readonly<Record<number, Walker>>): Walker {
  let table: ReadonlyMap<number, Walker> | undefined;
  return (r, end, depth, out) => {
    const walkers = (table ??= new Map(Object.entries(children()).map(([f, walk]) => [Number(f), walk])));
    fields(r, end, (f, w) => {
      const walk = w === LEN ? walkers.get(f) : undefined;
      if (!walk) return false;
      sub(r, depth, out, walk);
      return true;
    });
  };
}

// The fields walked, by their numbers in onnx.proto.
/** SparseTensorProto: values, indices. */
const sparseTensor: Walker = submessages(() => ({ 1: tensor, 2: tensor }));
/** AttributeProto: t, g, tensors, graphs, sparse_tensor, sparse_tensors. */
const attribute: Walker = submessages(() => ({ 5: tensor, 6: graph, 10: tensor, 11: graph, 22: sparseTensor, 23: sparseTensor }));
/** NodeProto: attribute. */
const node: Walker = submessages(() => ({ 5: attribute }));
/** GraphProto: node, initializer, sparse_initializer. */
const graph: Walker = submessages(() => ({ 1: node, 5: tensor, 15: sparseTensor }));
/** FunctionProto: node. */
const fn: Walker = submessages(() => ({ 7: node }));
/** TrainingInfoProto: initialization, algorithm. */
const trainingInfo: Walker = submessages(() => ({ 1: graph, 2: graph }));
/** ModelProto: graph, training_info, functions. */
const model: Walker = submessages(() => ({ 7: graph, 20: trainingInfo, 25: fn }));

/**
 * Every external-data reference of a serialized ModelProto.
 * @throws TritonError INVALID_ARG for bytes that are not a well-formed ModelProto (as far as the
 *   walk reads), nesting deeper than {@link MAX_DEPTH}, more than {@link MAX_EXTERNAL_ENTRIES}
 */
export function externalDataRefs(bytes: Uint8Array): ExternalDataRef[] {
  const r = Reader.create(bytes);
  const out: ExternalDataRef[] = [];
  try {
    model(r, bytes.length, 0, out);
  } catch (e) {
    if (e instanceof Error && e.name === 'TritonError') throw e;
    throw errors.modelUnparsable(e instanceof Error ? e.message : 'malformed protobuf');
  }
  return out;
}
