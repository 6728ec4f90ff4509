/**
 * Writes small ONNX models for tests (protobufjs Writer over onnx.proto's field numbers): one
 * `Add` node, `Y = X + W`, with `W` a FLOAT initializer of `n` elements kept either in the model
 * (raw_data) or as external data (`data_location: EXTERNAL`, `external_data { location, offset,
 * length }`), the way ONNX's `save_model(..., save_as_external_data=True)` writes it.
 */
import protobuf from 'protobufjs';

const { Writer } = protobuf;

/** Where the initializer's bytes are: inline, or an external-data entry (location relative to the model file). */
export type InitializerData = { inline: Float32Array } | { external: { location: string; offset?: number; length?: number } };

function valueInfo(w: protobuf.Writer, field: number, name: string, n: number): void {
  w.uint32((field << 3) | 2).fork();
  w.uint32((1 << 3) | 2).string(name);
  w.uint32((2 << 3) | 2).fork(); // TypeProto
  w.uint32((1 << 3) | 2).fork(); // tensor_type
  w.uint32((1 << 3) | 0).int32(1); // elem_type FLOAT
  w.uint32((2 << 3) | 2).fork(); // shape
  w.uint32((1 << 3) | 2)
    .fork()
    .uint32((1 << 3) | 0)
    .int64(n)
    .ldelim(); // dim { dim_value: n }
  w.ldelim().ldelim().ldelim().ldelim();
}

function tensor(w: protobuf.Writer, field: number, name: string, n: number, data: InitializerData): void {
  w.uint32((field << 3) | 2).fork();
  w.uint32((1 << 3) | 0).int64(n); // dims
  w.uint32((2 << 3) | 0).int32(1); // data_type FLOAT
  w.uint32((8 << 3) | 2).string(name);
  if ('inline' in data) {
    w.uint32((9 << 3) | 2).bytes(new Uint8Array(data.inline.buffer, data.inline.byteOffset, data.inline.byteLength));
  } else {
    const entry = (k: string, v: string) =>
      w
        .uint32((13 << 3) | 2)
        .fork()
        .uint32((1 << 3) | 2)
        .string(k)
        .uint32((2 << 3) | 2)
        .string(v)
        .ldelim();
    entry('location', data.external.location);
    if (data.external.offset !== undefined) entry('offset', String(data.external.offset));
    entry('length', String(data.external.length ?? n * 4));
    w.uint32((14 << 3) | 0).int32(1); // data_location EXTERNAL
  }
  w.ldelim();
}

/**
 * An ONNX model (opset 13, IR 8): inputs X FLOAT[n], output Y FLOAT[n], Y = X + W.
 * @param where `'graph'`: W is a graph initializer; `'constant'`: W comes from a `Constant` node's
 *   `value` attribute (a TensorProto inside a node, which external data may use too)
 */
export function addModel(n: number, data: InitializerData, where: 'graph' | 'constant' = 'graph'): Uint8Array {
  const w = Writer.create();
  w.uint32((1 << 3) | 0).int64(8); // ir_version
  w.uint32((2 << 3) | 2).string('warden-test');
  w.uint32((7 << 3) | 2).fork(); // graph
  if (where === 'constant') {
    w.uint32((1 << 3) | 2).fork(); // node Constant -> W
    w.uint32((2 << 3) | 2).string('W');
    w.uint32((4 << 3) | 2).string('Constant');
    w.uint32((5 << 3) | 2).fork(); // attribute value
    w.uint32((1 << 3) | 2).string('value');
    tensor(w, 5, 'W', n, data);
    w.uint32((20 << 3) | 0).int32(4); // type TENSOR
    w.ldelim();
    w.ldelim();
  }
  w.uint32((1 << 3) | 2).fork(); // node Add
  w.uint32((1 << 3) | 2).string('X');
  w.uint32((1 << 3) | 2).string('W');
  w.uint32((2 << 3) | 2).string('Y');
  w.uint32((4 << 3) | 2).string('Add');
  w.ldelim();
  w.uint32((2 << 3) | 2).string('g');
  if (where === 'graph') tensor(w, 5, 'W', n, data);
  valueInfo(w, 11, 'X', n);
  valueInfo(w, 12, 'Y', n);
  w.ldelim();
  w.uint32((8 << 3) | 2)
    .fork()
    .uint32((2 << 3) | 0)
    .int64(13)
    .ldelim(); // opset_import { version: 13 }
  return w.finish();
}
