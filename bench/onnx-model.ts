/**
 * Writes small ONNX models for tests and benchmarks (the ONNX protobuf encoded by hand: no `onnx` Python package
 * or protobuf library is needed). Only the fields these models use are written.
 *
 * `identityModel()`: FP32 [N] → the same. `matmulChainModel(steps)`: input `INPUT0` FP32 [N, N] (N dynamic), output `OUTPUT0` FP32 [N, N]
 * = INPUT0 multiplied by itself `steps` times. Its cost grows as steps × N³, so a test picks how
 * long one ONNX Runtime run takes by the size of the input it sends.
 */

/** Protobuf varint of a non-negative integer (< 2^53). */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

type Field = [field: number, value: number | string | Uint8Array];

/** A protobuf message of varint (number), string and embedded-message (Uint8Array) fields. */
function message(fields: Field[]): Uint8Array {
  const parts: number[] = [];
  for (const [field, value] of fields) {
    if (typeof value === 'number') {
      parts.push(...varint(field * 8), ...varint(value));
    } else {
      const bytes = typeof value === 'string' ? new TextEncoder().encode(value) : value;
      parts.push(...varint(field * 8 + 2), ...varint(bytes.length), ...bytes);
    }
  }
  return Uint8Array.from(parts);
}

const FLOAT = 1;

function tensorValueInfo(name: string, dimParams: string[]): Uint8Array {
  const shape = message(dimParams.map((p) => [1, message([[2, p]])] as Field));
  const tensorType = message([
    [1, FLOAT],
    [2, shape],
  ]);
  return message([
    [1, name],
    [2, message([[1, tensorType]])],
  ]);
}

/** ONNX model bytes: OUTPUT0 = INPUT0 · INPUT0 · … (`steps` MatMuls), FP32 [N, N]. */
export function matmulChainModel(steps: number): Uint8Array {
  const nodes: Field[] = [];
  let prev = 'INPUT0';
  for (let i = 0; i < steps; i++) {
    const out = i === steps - 1 ? 'OUTPUT0' : `t${i}`;
    nodes.push([
      1,
      message([
        [1, prev],
        [1, 'INPUT0'],
        [2, out],
        [3, `mm${i}`],
        [4, 'MatMul'],
      ]),
    ]);
    prev = out;
  }
  const graph = message([...nodes, [2, 'matmul_chain'], [11, tensorValueInfo('INPUT0', ['N', 'N'])], [12, tensorValueInfo('OUTPUT0', ['N', 'N'])]]);
  return message([
    [1, 8], // ir_version
    [2, 'warden-tests'], // producer_name
    [7, graph],
    [8, message([[2, 13]])], // opset_import: default domain, opset 13
  ]);
}

/** config.pbtxt for {@link matmulChainModel} served by the onnxruntime backend, with string `parameters`. */
export function matmulChainConfig(name: string, instances = 1, parameters: Record<string, string> = {}): string {
  const params = Object.entries(parameters)
    .map(([k, v]) => `parameters { key: "${k}" value: { string_value: "${v}" } }\n`)
    .join('');
  return `name: "${name}"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
instance_group [ { count: ${instances} kind: KIND_CPU } ]
${params}`;
}

/** ONNX model bytes: OUTPUT0 = Identity(INPUT0), FP32 [N] (N dynamic). */
export function identityModel(): Uint8Array {
  const graph = message([
    [
      1,
      message([
        [1, 'INPUT0'],
        [2, 'OUTPUT0'],
        [3, 'id'],
        [4, 'Identity'],
      ]),
    ],
    [2, 'identity'],
    [11, tensorValueInfo('INPUT0', ['N'])],
    [12, tensorValueInfo('OUTPUT0', ['N'])],
  ]);
  return message([
    [1, 8],
    [2, 'warden-tests'],
    [7, graph],
    [8, message([[2, 13]])],
  ]);
}

/** config.pbtxt for {@link identityModel} served by the onnxruntime backend. */
export function identityConfig(name: string): string {
  return `name: "${name}"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;
}
