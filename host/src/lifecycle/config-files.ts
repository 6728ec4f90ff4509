/**
 * The files a model config names that the server itself reads (not a backend): each output's
 * `label_filename` (classification, spec §3.10) and each sequence state's
 * `initial_state.data_file` (`<model>/initial_state/<file>`, spec §5.4). They are read once, at
 * model load, through the confinement rule of `repository/model-files.ts` (DESIGN
 * "Multi-tenancy"), off the event loop, and kept on the model version; a file that is missing,
 * leads outside the model directory, is not a regular file or is over its cap fails the load, as
 * Triton's label provider fails a load whose label file cannot be read.
 *
 * Caps (config `parameters`, bytes): `label_file_max_bytes` (default
 * {@link DEFAULT_LABEL_FILE_MAX_BYTES}, at most {@link MAX_LABEL_FILE_BYTES}),
 * `initial_state_max_bytes` (default {@link DEFAULT_INITIAL_STATE_MAX_BYTES}, at most
 * {@link MAX_INITIAL_STATE_BYTES}).
 */
import type { ModelConfig } from '../contract/model-config.js';
import { byteCapParameter, DEFAULT_INITIAL_STATE_MAX_BYTES, DEFAULT_LABEL_FILE_MAX_BYTES, readModelFile } from '../repository/model-files.js';
import { configFilesNoDirectory } from './lifecycle.errors.js';

export { DEFAULT_INITIAL_STATE_MAX_BYTES, DEFAULT_LABEL_FILE_MAX_BYTES };

/** Parameter capping a label file, bytes. */
export const PARAM_LABEL_FILE_MAX_BYTES = 'label_file_max_bytes';
/** Parameter capping an initial-state file, bytes. */
export const PARAM_INITIAL_STATE_MAX_BYTES = 'initial_state_max_bytes';
/** Ceiling of `label_file_max_bytes`: 256 MiB. */
export const MAX_LABEL_FILE_BYTES = 256 * 1024 * 1024;
/** Ceiling of `initial_state_max_bytes`: 1 GiB. */
export const MAX_INITIAL_STATE_BYTES = 1024 * 1024 * 1024;

/** What a model version keeps of its config-named files. */
export interface ConfigFiles {
  /** Labels per output name (one per line of its `label_filename`). */
  readonly labels: ReadonlyMap<string, readonly string[]>;
  /** Bytes per `initial_state.data_file` name. */
  readonly initialStates: ReadonlyMap<string, Uint8Array>;
}

/** No files (a config that names none, or a version built without a model directory). */
export const NO_CONFIG_FILES: ConfigFiles = { labels: new Map(), initialStates: new Map() };

/** Splits a label file: one label per line, `\r\n` accepted, no trailing empty label. */
export function parseLabels(bytes: Uint8Array): string[] {
  const labels = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8').split('\n');
  if (labels.length > 0 && labels[labels.length - 1] === '') labels.pop();
  return labels.map((l) => l.replace(/\r$/, ''));
}

/**
 * Reads every label file and initial-state file `config` names, beneath `modelDir`.
 * @param modelDir the model's directory; undefined (a version without one) only if the config
 *   names no such file
 * @throws TritonError INVALID_ARG naming the field and the file (relative) for a file refused by
 *   the rule, a bad cap parameter, or a config naming files without a model directory
 */
export async function readConfigFiles(config: ModelConfig, modelDir: string | undefined): Promise<ConfigFiles> {
  const labelOutputs = config.output.filter((o) => o.label_filename);
  const stateFiles = [
    ...new Set((config.sequence_batching?.state ?? []).flatMap((s) => s.initial_state.map((i) => i.data_file ?? '').filter((f) => f !== ''))),
  ];
  if (labelOutputs.length === 0 && stateFiles.length === 0) return NO_CONFIG_FILES;
  if (modelDir === undefined) throw configFilesNoDirectory(config.name);
  const labelCap = byteCapParameter(config.parameters, PARAM_LABEL_FILE_MAX_BYTES, DEFAULT_LABEL_FILE_MAX_BYTES, MAX_LABEL_FILE_BYTES);
  const stateCap = byteCapParameter(config.parameters, PARAM_INITIAL_STATE_MAX_BYTES, DEFAULT_INITIAL_STATE_MAX_BYTES, MAX_INITIAL_STATE_BYTES);
  const labels = new Map<string, string[]>();
  for (const o of labelOutputs) {
    const bytes = await readModelFile({ modelDir, name: o.label_filename, field: `output '${o.name}' label_filename`, maxBytes: labelCap });
    labels.set(o.name, parseLabels(bytes));
  }
  const initialStates = new Map<string, Uint8Array>();
  for (const f of stateFiles) {
    initialStates.set(
      f,
      await readModelFile({ modelDir, under: 'initial_state', name: f, field: 'sequence_batching initial_state data_file', maxBytes: stateCap }),
    );
  }
  return { labels, initialStates };
}
