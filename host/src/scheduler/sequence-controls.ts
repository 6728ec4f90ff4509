/**
 * What the sequence batcher adds to each request it hands a backend (spec §5.6
 * `sequence_batching`): the control input tensors (`CONTROL_SEQUENCE_START`, `_END`, `_READY`
 * with their `int32_false_true` / `fp32_false_true` / `bool_false_true` values, `_CORRID` with
 * its `data_type`) and the implicit-state tensors (`state[]`). Control and state inputs are not
 * listed in the config's `input`; backends that feed inputs by the config (onnxruntime) use
 * {@link sequenceInputNames} / {@link stateOutputTypes} to know about them.
 */
import type { ConfigDataType, ModelConfig, ModelSequenceControl } from '../contract/model-config.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START, type Tensor } from '../contract/types.js';
import { type DataType, dataTypeByteSize, elementCount, fromConfigDataType } from '../contract/datatypes.js';
import * as schedulerErrors from './scheduler.errors.js';

/** A boolean control (START / END / READY): its tensor name, datatype and the false/true bytes. */
interface BoolControl {
  name: string;
  datatype: DataType;
  off: Uint8Array;
  on: Uint8Array;
}

/** The CORRID control: tensor name and datatype (UINT64 / INT64 / UINT32 / INT32 / BYTES). */
interface CorridControl {
  name: string;
  datatype: DataType;
  configType: ConfigDataType;
}

/** One implicit state of `sequence_batching.state[]`, with its initial value precomputed. */
export interface StateSpec {
  /** Input the backend reads the state from. */
  input: string;
  /** Output the backend writes the next state to. */
  output: string;
  datatype: DataType;
  /** Shape of the state without the batch dim (`dims` with -1 ⇒ 1, or `initial_state.dims`). */
  shape: number[];
  /** Bytes of the initial state: zeros (BYTES: empty strings), or `initial_state.data_file`. */
  initial: Uint8Array;
}

function boolControl(name: string, c: ModelSequenceControl): BoolControl {
  if (c.int32_false_true.length === 2) {
    const [f, t] = c.int32_false_true as [number, number];
    return { name, datatype: 'INT32', off: new Uint8Array(Int32Array.of(f).buffer), on: new Uint8Array(Int32Array.of(t).buffer) };
  }
  if (c.fp32_false_true.length === 2) {
    const [f, t] = c.fp32_false_true as [number, number];
    return { name, datatype: 'FP32', off: new Uint8Array(Float32Array.of(f).buffer), on: new Uint8Array(Float32Array.of(t).buffer) };
  }
  const [f, t] = c.bool_false_true as [boolean, boolean];
  return { name, datatype: 'BOOL', off: Uint8Array.of(f ? 1 : 0), on: Uint8Array.of(t ? 1 : 0) };
}

/** Zero bytes for `shape` of `datatype` (BYTES: each element an empty string, 4 zero bytes). */
function zeros(datatype: DataType, shape: readonly number[]): Uint8Array {
  const per = datatype === 'BYTES' ? 4 : dataTypeByteSize(datatype);
  return new Uint8Array(per * elementCount(shape));
}

/**
 * The control and state tensors of one model's sequence batcher, built once per model version.
 * Control tensors have shape `[1]`, `[1, 1]` when the model batches (`max_batch_size > 0`).
 */
export class SequenceControls {
  private readonly start: BoolControl | undefined;
  private readonly end: BoolControl | undefined;
  private readonly ready: BoolControl | undefined;
  private readonly corrid: CorridControl | undefined;
  private readonly shape: number[];
  private readonly batched: boolean;
  readonly states: StateSpec[];

  /**
   * @param readFile reads `<model>/initial_state/<data_file>` for `initial_state.data_file`; without
   *   it such a state is refused.
   * @throws TritonError INVALID_ARG for an initial state whose data does not match its dims, or a
   *   `data_file` that cannot be read.
   */
  constructor(config: ModelConfig, readFile?: (dataFile: string) => Uint8Array) {
    const sb = config.sequence_batching!;
    for (const ci of sb.control_input) {
      for (const c of ci.control) {
        if (c.kind === 'CONTROL_SEQUENCE_START') this.start = boolControl(ci.name, c);
        else if (c.kind === 'CONTROL_SEQUENCE_END') this.end = boolControl(ci.name, c);
        else if (c.kind === 'CONTROL_SEQUENCE_READY') this.ready = boolControl(ci.name, c);
        else this.corrid = { name: ci.name, datatype: fromConfigDataType(c.data_type) ?? 'UINT64', configType: c.data_type };
      }
    }
    this.batched = config.max_batch_size > 0;
    this.shape = this.batched ? [1, 1] : [1];
    this.states = sb.state.map((s) => {
      const datatype = fromConfigDataType(s.data_type) ?? 'BYTES';
      const init = s.initial_state[0];
      if (!init) {
        const shape = s.dims.map((d) => (d === -1 ? 1 : d));
        return { input: s.input_name, output: s.output_name, datatype, shape, initial: zeros(datatype, shape) };
      }
      const shape = init.dims.map((d) => (d === -1 ? 1 : d));
      let initial: Uint8Array;
      if (init.data_file) {
        if (!readFile) throw schedulerErrors.initialStateFileUnsupported(init.name, config.name);
        initial = readFile(init.data_file);
        const expected = datatype === 'BYTES' ? undefined : dataTypeByteSize(datatype) * elementCount(shape);
        if (expected !== undefined && initial.length !== expected) {
          throw schedulerErrors.initialStateFileSize(init.name, config.name, init.data_file, initial.length, expected);
        }
      } else {
        initial = zeros(datatype, shape);
      }
      return { input: s.input_name, output: s.output_name, datatype, shape, initial };
    });
  }

  /**
   * The CORRID tensor bytes for correlation id `id`, or undefined without a CORRID control.
   * Integer ids are written as the control's type (little-endian; the low bytes for 32-bit
   * types, as Triton copies them); a string id goes as a BYTES element for `TYPE_STRING`, and as
   * its integer value for integer types when it is a decimal unsigned integer.
   * @throws TritonError INVALID_ARG for a string id that is not a decimal integer when the CORRID
   *   control is an integer type.
   */
  corridData(id: number | bigint | string, model: string): Uint8Array | undefined {
    const c = this.corrid;
    if (!c) return undefined;
    if (c.datatype === 'BYTES') {
      const s = new TextEncoder().encode(String(id));
      const out = new Uint8Array(4 + s.length);
      new DataView(out.buffer).setUint32(0, s.length, true);
      out.set(s, 4);
      return out;
    }
    let v: bigint;
    if (typeof id === 'string') {
      if (!/^\d{1,20}$/.test(id) || BigInt(id) > 0xffff_ffff_ffff_ffffn) {
        throw schedulerErrors.sequenceIdNotInteger(id, model, c.name, c.configType);
      }
      v = BigInt(id);
    } else {
      v = BigInt(id);
    }
    const buf = new Uint8Array(8);
    new DataView(buf.buffer).setBigUint64(0, BigInt.asUintN(64, v), true);
    return buf.slice(0, dataTypeByteSize(c.datatype));
  }

  /**
   * The control tensors for one request: START / END from `flags`, READY true (false and every
   * other control false for a filler that only pads a batch slot, `ready = false`), CORRID from
   * `corrid` ({@link corridData}; zeros when absent).
   */
  controlTensors(flags: number, ready: boolean, corrid: Uint8Array | undefined): Tensor[] {
    const out: Tensor[] = [];
    const put = (c: BoolControl | undefined, on: boolean): void => {
      if (c) out.push({ name: c.name, datatype: c.datatype, shape: this.shape.slice(), data: on ? c.on : c.off });
    };
    put(this.start, ready && (flags & REQUEST_FLAG_SEQUENCE_START) !== 0);
    put(this.end, ready && (flags & REQUEST_FLAG_SEQUENCE_END) !== 0);
    put(this.ready, ready);
    const c = this.corrid;
    if (c) {
      const data = corrid ?? (c.datatype === 'BYTES' ? new Uint8Array(4) : new Uint8Array(dataTypeByteSize(c.datatype)));
      out.push({ name: c.name, datatype: c.datatype, shape: this.shape.slice(), data });
    }
    return out;
  }

  /** The input tensor of a state holding `data` of `shape` (no batch dim), batch dim added when batching. */
  stateTensor(spec: StateSpec, shape: readonly number[], data: Uint8Array): Tensor {
    return { name: spec.input, datatype: spec.datatype, shape: this.batched ? [1, ...shape] : [...shape], data };
  }

  /** The CORRID control's datatype; undefined without a CORRID control. */
  get corridType(): DataType | undefined {
    return this.corrid?.datatype;
  }

  /** Whether the model batches (tensors carry a leading batch dim of 1). */
  get batching(): boolean {
    return this.batched;
  }
}
