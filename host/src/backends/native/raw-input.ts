/**
 * Raw inputs of Triton's in-process inference API (`TRITONSERVER_InferenceRequestAddRawInput`,
 * spec §6.4): the backend hands only bytes; name, datatype and shape come from the target model's
 * config, as Triton's request normalisation derives them:
 *  - the target must have exactly one input and the request exactly that one raw input;
 *  - shape = [1] (when max_batch_size > 0) + the config's dims, its one variable (-1) dimension
 *    = byte size / (product of the fixed dims) / element size (integer division; a size that does
 *    not divide fails the data plane's own byte-size check afterwards);
 *  - a BYTES input must have dims [1]: the data becomes one element, its 4-byte length prepended.
 */
import type { ModelConfig } from '../../contract/model-config.js';
import * as err from './native.errors.js';
import type { Tensor } from '../../contract/types.js';
import { dataTypeByteSize, fromConfigDataType } from '../../contract/datatypes.js';
import * as rawInput from '../../contract/raw-input.errors.js';

/** A request input as the addon hands it over: `raw` when added with AddRawInput. */
export interface BridgeInput extends Tensor {
  raw?: boolean;
}

/**
 * The request's inputs with a raw input resolved against `config` (others returned as they are).
 * @throws TritonError INVALID_ARG with Triton's texts: a raw input beside others or for a model
 *   with several inputs, more than one variable dimension, BYTES not of shape [1]
 */
export function resolveRawInputs(inputs: readonly BridgeInput[], config: ModelConfig): Tensor[] {
  if (!inputs.some((t) => t.raw)) return inputs as Tensor[];
  if (inputs.length !== 1 || config.input.length !== 1) {
    throw rawInput.rawInputCount(inputs.length, config.input.length, config.name);
  }
  const raw = inputs[0]!;
  const spec = config.input[0]!;
  const datatype = fromConfigDataType(spec.data_type);
  if (!datatype) throw err.rawInputDatatype(raw.name, config.name, spec.name, String(spec.data_type));
  const shape: number[] = config.max_batch_size !== 0 ? [1] : [];
  let dynamicAxis = -1;
  let fixed = 1;
  for (const d of spec.dims) {
    if (d === -1) {
      if (dynamicAxis !== -1) {
        throw rawInput.rawShapeAmbiguous(spec.name);
      }
      dynamicAxis = shape.length;
    } else {
      fixed *= d;
    }
    shape.push(d);
  }
  if (datatype === 'BYTES') {
    if (dynamicAxis !== -1 || fixed !== 1) throw rawInput.rawBytesShape(spec.name);
    const data = new Uint8Array(4 + raw.data.length);
    new DataView(data.buffer).setUint32(0, raw.data.length, true);
    data.set(raw.data, 4);
    return [{ name: spec.name, datatype, shape, data }];
  }
  if (dynamicAxis !== -1) shape[dynamicAxis] = fixed === 0 ? 0 : Math.floor(raw.data.length / fixed / dataTypeByteSize(datatype));
  return [{ name: spec.name, datatype, shape, data: raw.data }];
}
