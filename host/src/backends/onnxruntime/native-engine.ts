/**
 * Warden's in-process ONNX Runtime engine (native/rust/ort-engine, through the addon's `ort` binding): the
 * ONNX Runtime that onnxruntime-node ships, called from C++ with raw tensor bytes. A small model's
 * run costs about half of what it costs through onnxruntime-node (whose JavaScript and N-API layers
 * build, check and wrap tensor objects on every run), so the backend's inline runs — those that
 * compute on the event loop — go through it (docs/benchmarks.md, "ONNX Runtime inline or on a worker").
 *
 * Capability-checked: where the addon is not built, lacks the binding, or cannot load the library,
 * {@link nativeOrtEngine} says why and the backend keeps onnxruntime-node for inline runs.
 * Tensors of type BYTES (ONNX strings) and BF16 are not passed (the worker thread's onnxruntime-node
 * has no BF16 either); a model with such an input or output keeps onnxruntime-node.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as errors from './onnxruntime.errors.js';
import type { Tensor } from '../../contract/types.js';
import type { DataType } from '../../contract/datatypes.js';
import { fromAddonError, nativeAddon, type OrtEngineBinding } from '../../platform/addon.js';

/** Triton datatype → ONNX element type code (TensorProto.DataType), for what the engine passes. */
const ONNX_TYPE: Partial<Record<DataType, number>> = {
  FP32: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FP16: 10,
  FP64: 11,
  UINT32: 12,
  UINT64: 13,
};

/** True if the engine passes tensors of `datatype`. */
export function engineSupports(datatype: DataType): boolean {
  return ONNX_TYPE[datatype] !== undefined;
}

let loaded: { binding?: OrtEngineBinding; reason?: string } | undefined;

/** Where onnxruntime-node keeps its ONNX Runtime library, on Linux (the addon's only platform). */
function onnxRuntimeLibrary(): string {
  const require = createRequire(import.meta.url);
  const pkg = dirname(require.resolve('onnxruntime-node/package.json'));
  return join(pkg, 'bin', 'napi-v6', process.platform, process.arch, 'libonnxruntime.so.1');
}

/**
 * The engine, loaded once; undefined (with {@link nativeOrtEngineUnavailable} saying why) where it
 * cannot be used here.
 */
export function nativeOrtEngine(): OrtEngineBinding | undefined {
  if (!loaded) {
    try {
      if (process.platform !== 'linux') throw new Error(`not built for ${process.platform}`);
      const binding = nativeAddon().ort;
      if (!binding) throw new Error('the native addon has no ONNX Runtime binding (rebuild it: node scripts/build-native.mjs)');
      binding.init(onnxRuntimeLibrary());
      loaded = { binding };
    } catch (e) {
      loaded = { reason: (e as Error).message };
    }
  }
  return loaded.binding;
}

/** Why the engine cannot be used here, or undefined if it can (or was not tried yet). */
export function nativeOrtEngineUnavailable(): string | undefined {
  return loaded?.reason;
}

/** Room per output in the shapes buffer: element type, rank, dims. */
const rowOf = (maxRank: number) => 2 + maxRank;

/**
 * One engine session of a model instance. Runs are synchronous on the calling thread.
 */
export class NativeSession {
  private readonly inputIndex = new Map<string, number>();
  private readonly outputIndex = new Map<string, number>();
  private spec = new Float64Array(64);
  private readonly shapes: Float64Array;
  private closed = false;

  private constructor(
    private readonly binding: OrtEngineBinding,
    private readonly session: object,
    inputs: readonly { name: string }[],
    outputs: readonly { name: string }[],
  ) {
    inputs.forEach((o, i) => this.inputIndex.set(o.name, i));
    outputs.forEach((o, i) => this.outputIndex.set(o.name, i));
    this.shapes = new Float64Array(Math.max(1, outputs.length) * rowOf(binding.maxRank));
  }

  /**
   * Opens `file` off the JS thread.
   * @throws Error with ONNX Runtime's message if the file does not load
   */
  static async open(binding: OrtEngineBinding, file: string, intraOpThreads: number, interOpThreads: number): Promise<NativeSession> {
    const { session, inputs, outputs } = await binding.open(file, intraOpThreads, interOpThreads);
    return new NativeSession(binding, session, inputs, outputs);
  }

  /**
   * Runs the session once on the calling thread.
   * @param inputs the feeds, by the graph's input names; raw little-endian bytes, shapes as given
   * @param outputs the outputs wanted, with the datatype each must have
   * @returns one tensor per wanted output, in order (bytes owned by the returned arrays)
   * @throws TritonError INTERNAL for ONNX Runtime's failure (message kept), an output whose element
   *   type is not the one expected, or a run after {@link close}
   */
  run(inputs: readonly Tensor[], outputs: readonly { name: string; datatype: DataType }[]): Tensor[] {
    const nIn = inputs.length;
    const nOut = outputs.length;
    let size = 2 + nOut;
    for (let i = 0; i < nIn; i++) size += 3 + inputs[i]!.shape.length;
    if (size > this.spec.length) this.spec = new Float64Array(size * 2);
    const spec = this.spec;
    spec[0] = nIn;
    spec[1] = nOut;
    let at = 2;
    const data: Uint8Array[] = new Array(nIn);
    for (let i = 0; i < nIn; i++) {
      const t = inputs[i]!;
      const index = this.inputIndex.get(t.name);
      const type = ONNX_TYPE[t.datatype];
      if (index === undefined) throw errors.engineTensorUnknown('input', t.name);
      if (type === undefined) throw errors.engineDatatype(t.datatype);
      spec[at++] = index;
      spec[at++] = type;
      spec[at++] = t.shape.length;
      for (let d = 0; d < t.shape.length; d++) spec[at++] = t.shape[d]!;
      data[i] = t.data;
    }
    for (let k = 0; k < nOut; k++) {
      const index = this.outputIndex.get(outputs[k]!.name);
      if (index === undefined) throw errors.engineTensorUnknown('output', outputs[k]!.name);
      spec[at++] = index;
    }
    let bytes: Uint8Array[];
    try {
      bytes = this.binding.run(this.session, spec, data, this.shapes);
    } catch (e) {
      // the engine's code: INTERNAL for ONNX Runtime's own failures
      const err = fromAddonError(e);
      throw errors.executeFailed(err.message, err.code);
    }
    const row = rowOf(this.binding.maxRank);
    const result: Tensor[] = new Array(nOut);
    for (let k = 0; k < nOut; k++) {
      const o = outputs[k]!;
      const base = k * row;
      if (this.shapes[base] !== ONNX_TYPE[o.datatype]) {
        throw errors.outputTypeMismatch(o.name, this.shapes[base]!, o.datatype);
      }
      const rank = this.shapes[base + 1]!;
      const shape: number[] = new Array(rank);
      for (let d = 0; d < rank; d++) shape[d] = this.shapes[base + 2 + d]!;
      result[k] = { name: o.name, datatype: o.datatype, shape, data: bytes[k]! };
    }
    return result;
  }

  /** The addon's session external (the native data path runs it too), or undefined once closed. */
  get handle(): object | undefined {
    return this.closed ? undefined : this.session;
  }

  /** Releases the session (off the JS thread); runs after this throw. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return this.binding.close(this.session);
  }
}
