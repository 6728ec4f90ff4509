/**
 * Model configuration (spec §1.7, §5): `config.pbtxt` parsing and printing, the load API's JSON
 * config, server-side auto-complete, normalisation, validation and Triton's `/config` JSON.
 *
 * Typical use: `loadModelConfig(modelPath, {...})` for a repository model, then
 * `modelConfigToJson(config)` for `GET /v2/models/{m}/config` and `TRITONBACKEND_ModelConfig`.
 */
import { parsePbtxt } from './pbtxt/parse.js';
import { printPbtxt } from './pbtxt/print.js';
import { ModelConfigDesc } from './schema.js';
import type { ModelConfig } from '../contract/model-config.js';

export type * from '../contract/model-config.js';
export { autoCompleteFromRepository } from './autocomplete.js';
export { modelConfigFromJson, modelConfigToJson } from './json.js';
export { loadModelConfig, modelConfigPath, type LoadModelConfigOptions } from './load.js';
export { defaultHostPolicy, normalizeModelConfig, SEQUENCE_IDLE_DEFAULT_MICROSECONDS, type NormalizeOptions } from './normalize.js';
export { validateModelConfig, type ValidateOptions } from './validate.js';

/**
 * Parse protobuf text format as Triton's configs use it into a raw (un-normalised) config
 * (spec §5.2). Schema-driven: every ModelConfig field and its type is known.
 * @param source name used in error messages (default `config.pbtxt`).
 * @throws TritonError INVALID_ARG `source:line:col: message (at field.path)` for unknown fields
 *   (e.g. `config.pbtxt:12:5: unknown field 'dimz' in ModelInput (at input[0])`), bad enum names,
 *   wrong value types, out-of-range numbers, a oneof set twice, and syntax errors.
 */
export function parseModelConfigPbtxt(text: string, source?: string): Partial<ModelConfig> {
  return parsePbtxt(text, ModelConfigDesc, source) as Partial<ModelConfig>;
}

/**
 * Print a config as protobuf text; `parseModelConfigPbtxt(printModelConfigPbtxt(c))` deep-equals `c`.
 * @throws TritonError INVALID_ARG if `config` has unknown fields or wrongly typed values.
 */
export function printModelConfigPbtxt(config: Partial<ModelConfig>): string {
  return printPbtxt(config, ModelConfigDesc);
}
