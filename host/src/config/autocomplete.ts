/**
 * Server-side auto-complete of the backend fields (spec §5.7), ported from Triton core's
 * `AutoCompleteBackendFields` (src/model_config_utils.cc): fills `name` (from the directory),
 * `backend`, `platform` and `default_model_filename` from what the config already says and from
 * the files of the first version directory. Triton runs this for every model, with or without
 * `--disable-auto-complete-config` (that flag only controls backend-side completion).
 *
 * Checked in Triton's order: TensorFlow (`model.savedmodel/` dir, `model.graphdef` file),
 * TensorRT (`model.plan`), ONNX Runtime (`model.onnx`, file or dir), OpenVINO (`model.xml`),
 * PyTorch (`model.pt`, `model.pt2`), Python (`model.py`); then — Warden addition — the sandboxed
 * WebAssembly backend (`model.wasm` ⇒ backend `wasm`); finally a custom backend named by the model
 * name `foo.<backend>` (default filename `model.<backend>`), else INVALID_ARG.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelConfig } from '../contract/model-config.js';
import { modelConfigFromJson } from './json.js';
import { normalizeModelConfig } from './normalize.js';
import * as configErrors from './config.errors.js';

/** Filenames / names Triton's auto-complete knows (core src/constants.h). */
export const KNOWN = {
  tfSavedModelPlatform: 'tensorflow_savedmodel',
  tfGraphDefPlatform: 'tensorflow_graphdef',
  tfSavedModelFile: 'model.savedmodel',
  tfGraphDefFile: 'model.graphdef',
  tfBackend: 'tensorflow',
  trtPlatform: 'tensorrt_plan',
  trtFile: 'model.plan',
  trtBackend: 'tensorrt',
  onnxPlatform: 'onnxruntime_onnx',
  onnxFile: 'model.onnx',
  onnxBackend: 'onnxruntime',
  openvinoFile: 'model.xml',
  openvinoBackend: 'openvino',
  torchPlatform: 'pytorch_libtorch',
  torchPlatformAlt: 'libtorch',
  torchFile: 'model.pt',
  torchBackend: 'pytorch',
  aotiPlatform: 'torch_aoti',
  aotiFile: 'model.pt2',
  pythonFile: 'model.py',
  pythonBackend: 'python',
  wasmFile: 'model.wasm',
  wasmBackend: 'wasm',
} as const;

/**
 * A backend Triton's auto-complete knows by its model file (and platform, where it has one).
 * `fileOnly`: a directory of the file's name in the version directory does not count.
 */
interface FileBackend {
  readonly backend: string;
  readonly file: string;
  readonly platform?: string;
  readonly fileOnly?: boolean;
}

const TRT: FileBackend = { backend: KNOWN.trtBackend, platform: KNOWN.trtPlatform, file: KNOWN.trtFile, fileOnly: true };
/** model.onnx may be a file or a directory holding a large model. */
const ONNX: FileBackend = { backend: KNOWN.onnxBackend, platform: KNOWN.onnxPlatform, file: KNOWN.onnxFile };
const OPENVINO: FileBackend = { backend: KNOWN.openvinoBackend, file: KNOWN.openvinoFile };
const PYTHON: FileBackend = { backend: KNOWN.pythonBackend, file: KNOWN.pythonFile };
/** A WebAssembly component (Warden's; Triton has no such backend and would fail on it). */
const WASM: FileBackend = { backend: KNOWN.wasmBackend, file: KNOWN.wasmFile, fileOnly: true };

async function isDirectory(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isDirectory() ?? false;
}

/**
 * Fill `name`, `backend`, `platform` and `default_model_filename` (spec §5.7). Does not modify `raw`.
 * @param modelName directory name of the model.
 * @param modelPath `<repository>/<model>`.
 * @param versions version numbers present; Triton inspects the first version directory in
 *   directory-listing (lexical) order, so does Warden.
 * @throws TritonError INVALID_ARG `Invalid model name: Could not determine backend ...` when no
 *   backend can be determined.
 */
export async function autoCompleteFromRepository(
  raw: Partial<ModelConfig>,
  modelName: string,
  modelPath: string,
  versions: number[],
): Promise<Partial<ModelConfig>> {
  const c: Partial<ModelConfig> = { ...raw };
  const first = versions.map(String).sort()[0];
  const hasVersion = first !== undefined;
  const versionPath = hasVersion ? join(modelPath, first) : '';
  const contents = new Set<string>(hasVersion ? await readdir(versionPath).catch(() => []) : []);
  const has = (f: string) => contents.has(f);
  const isDir = (f: string) => isDirectory(join(versionPath, f));

  if (!c.name) c.name = modelName;
  const platform = () => c.platform ?? '';
  const backend = () => c.backend ?? '';
  const filename = () => c.default_model_filename ?? '';

  // TensorFlow: the platform is required by the TF backend.
  if (platform() === '' && (backend() === '' || backend() === KNOWN.tfBackend)) {
    if (filename() === KNOWN.tfSavedModelFile) c.platform = KNOWN.tfSavedModelPlatform;
    else if (filename() === KNOWN.tfGraphDefFile) c.platform = KNOWN.tfGraphDefPlatform;
    else if (filename() === '' && hasVersion) {
      if (has(KNOWN.tfSavedModelFile) && (await isDir(KNOWN.tfSavedModelFile))) c.platform = KNOWN.tfSavedModelPlatform;
      if (has(KNOWN.tfGraphDefFile) && !(await isDir(KNOWN.tfGraphDefFile))) c.platform = KNOWN.tfGraphDefPlatform;
    }
  }
  if (platform() === KNOWN.tfSavedModelPlatform || platform() === KNOWN.tfGraphDefPlatform) {
    if (backend() === '') c.backend = KNOWN.tfBackend;
    if (filename() === '') {
      c.default_model_filename = platform() === KNOWN.tfSavedModelPlatform ? KNOWN.tfSavedModelFile : KNOWN.tfGraphDefFile;
    }
    return c;
  }

  // The backend a config names, or its platform or model file names, or (when it names none of
  // them) whose model file the first version directory holds: its platform and file filled in.
  const byFile = async (b: FileBackend): Promise<boolean> => {
    if (backend() === '') {
      if ((b.platform !== undefined && platform() === b.platform) || filename() === b.file) c.backend = b.backend;
      else if (platform() === '' && filename() === '' && hasVersion && has(b.file) && !(b.fileOnly && (await isDir(b.file)))) c.backend = b.backend;
    }
    if (backend() !== b.backend) return false;
    if (b.platform !== undefined && platform() === '') c.platform = b.platform;
    if (filename() === '') c.default_model_filename = b.file;
    return true;
  };

  // TensorRT, ONNX Runtime, OpenVINO
  for (const b of [TRT, ONNX, OPENVINO]) if (await byFile(b)) return c;

  // PyTorch (LibTorch and AOTInductor share the `pytorch` backend)
  if (backend() === '') {
    if (platform() === KNOWN.torchPlatform || platform() === KNOWN.torchPlatformAlt || filename() === KNOWN.torchFile) {
      c.backend = KNOWN.torchBackend;
    } else if (platform() === KNOWN.aotiPlatform || filename() === KNOWN.aotiFile) {
      c.backend = KNOWN.torchBackend;
    } else if (hasVersion && filename() === '' && platform() === '') {
      if (has(KNOWN.torchFile)) {
        if (!(await isDir(KNOWN.torchFile))) {
          c.backend = KNOWN.torchBackend;
          c.platform = KNOWN.torchPlatform;
        }
      } else if (has(KNOWN.aotiFile) && !(await isDir(KNOWN.aotiFile))) {
        c.backend = KNOWN.torchBackend;
        c.platform = KNOWN.aotiPlatform;
      }
    }
  }
  if (backend() === KNOWN.torchBackend) {
    if (platform() === '') {
      c.platform = KNOWN.torchPlatform;
      if (filename() === '') c.default_model_filename = KNOWN.torchFile;
    } else if (platform() === KNOWN.aotiPlatform && filename() === '') {
      c.default_model_filename = KNOWN.aotiFile;
    }
    return c;
  }

  // Python, WebAssembly component
  for (const b of [PYTHON, WASM]) if (await byFile(b)) return c;

  // Custom backend named by the model name: `model.<backend_name>`.
  if (backend() === '' && platform() === '' && filename() === '') {
    const dot = modelName.indexOf('.');
    if (dot < 0) {
      throw configErrors.backendUndetermined(modelName);
    }
    const b = modelName.slice(dot + 1);
    c.backend = b;
    c.default_model_filename = `model.${b}`;
  }
  return c;
}

/**
 * Apply what a backend set with TRITONBACKEND_ModelSetConfig (spec §5.7): only `input`, `output`,
 * `max_batch_size`, the scheduling choice (when the config had none) and
 * `model_transaction_policy` are taken; the result is normalised again.
 * @throws TritonError INVALID_ARG naming the backend if its JSON is not a valid ModelConfig.
 */
export function mergeAutoCompletedConfig(base: ModelConfig, backendName: string, setJson: string): ModelConfig {
  let fromBackend: Partial<ModelConfig>;
  try {
    fromBackend = modelConfigFromJson(setJson);
  } catch (e) {
    throw configErrors.backendConfigInvalid(backendName, base.name, (e as Error).message);
  }
  const merged: Partial<ModelConfig> = { ...base };
  if (fromBackend.input !== undefined) merged.input = fromBackend.input;
  if (fromBackend.output !== undefined) merged.output = fromBackend.output;
  if (fromBackend.max_batch_size !== undefined) merged.max_batch_size = fromBackend.max_batch_size;
  const hasScheduler = base.dynamic_batching || base.sequence_batching || base.ensemble_scheduling;
  if (!hasScheduler) {
    if (fromBackend.dynamic_batching) merged.dynamic_batching = fromBackend.dynamic_batching;
    else if (fromBackend.sequence_batching) merged.sequence_batching = fromBackend.sequence_batching;
  }
  if (fromBackend.model_transaction_policy !== undefined) {
    merged.model_transaction_policy = fromBackend.model_transaction_policy;
  }
  return normalizeModelConfig(merged, { modelName: base.name, gpuCount: 0 });
}
