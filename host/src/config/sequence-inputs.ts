/**
 * The inputs and outputs a model's `sequence_batching` adds beyond `config.input` / `config.output`
 * (spec §5.4): control inputs, implicit state inputs and state outputs. Read by the sequence
 * batcher (scheduler/sequence-controls.ts) and by backends that feed them (ONNX Runtime).
 */
import type { ModelConfig } from '../contract/model-config.js';
import { fromConfigDataType, type DataType } from '../contract/datatypes.js';

/**
 * Names of the inputs the sequence batcher adds to a request of `config`, beyond `config.input`:
 * the control inputs and the state inputs (none without `sequence_batching`).
 */
export function sequenceInputNames(config: ModelConfig): string[] {
  const sb = config.sequence_batching;
  if (!sb) return [];
  return [...sb.control_input.map((c) => c.name), ...sb.state.map((s) => s.input_name)];
}

/** State output name → datatype for `config`'s implicit states (empty without `sequence_batching`). */
export function stateOutputTypes(config: ModelConfig): Map<string, DataType> {
  return new Map((config.sequence_batching?.state ?? []).map((s) => [s.output_name, fromConfigDataType(s.data_type) ?? 'BYTES']));
}
