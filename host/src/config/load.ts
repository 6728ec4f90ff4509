/**
 * Reading a model's configuration from its directory (spec §5.1, §5.7, §5.8), in Triton's order:
 * load-API override JSON, or `configs/<name>.pbtxt` (`--model-config-name`, falling back to
 * `config.pbtxt`), or nothing when auto-complete is enabled; then server-side auto-complete of the
 * backend fields (always, as Triton), normalisation and validation (including "directory name must
 * equal model name").
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TritonError } from '../contract/errors.js';
import { autoCompleteFromRepository } from './autocomplete.js';
import { modelConfigFromJson } from './json.js';
import { normalizeModelConfig } from './normalize.js';
import { parsePbtxt } from './pbtxt/parse.js';
import { ModelConfigDesc } from './schema.js';
import type { ModelConfig } from '../contract/model-config.js';
import { validateModelConfig } from './validate.js';
import * as configErrors from './config.errors.js';

/** Options of {@link loadModelConfig}. */
export interface LoadModelConfigOptions {
  /** Directory name of the model. */
  modelName: string;
  /** False with `--disable-auto-complete-config`: config.pbtxt is then mandatory. */
  autoComplete: boolean;
  /** `--model-config-name`: use `configs/<configName>.pbtxt` when it exists. */
  configName?: string;
  /** Version directories present (numbers), as the repository scan found them. */
  versions: number[];
  /** Load API `parameters.config` (JSON text or parsed value); replaces the file. */
  overrideJson?: unknown;
  /** Usable GPUs; default 0. */
  gpuCount?: number;
}

/** Strict UTF-8; a leading byte-order mark is dropped (TextDecoder's default). */
const utf8 = new TextDecoder('utf-8', { fatal: true });

async function exists(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isFile() ?? false;
}

/** The config file Triton reads for a model (`configs/<name>.pbtxt` if present, else config.pbtxt). */
export async function modelConfigPath(modelPath: string, configName?: string): Promise<{ path: string; relative: string }> {
  if (configName !== undefined && configName !== '') {
    if (/[/\\]/.test(configName) || configName === '.' || configName === '..') {
      throw configErrors.configNameInvalid(configName);
    }
    const relative = join('configs', `${configName}.pbtxt`);
    const path = join(modelPath, relative);
    if (await exists(path)) return { path, relative };
  }
  return { path: join(modelPath, 'config.pbtxt'), relative: 'config.pbtxt' };
}

/**
 * Read, parse, auto-complete, normalise and validate a model's configuration.
 * @throws TritonError INVALID_ARG for syntax / schema / validation errors (pbtxt errors carry
 *   `<model>/config.pbtxt:line:col`; override errors are prefixed `Invalid config override: `),
 *   and `model configuration is not provided` when the file is missing and auto-complete is
 *   disabled; INTERNAL `failed to open text file for read <path>: ...` when it cannot be read.
 */
export async function loadModelConfig(modelPath: string, opts: LoadModelConfigOptions): Promise<ModelConfig> {
  let raw: Partial<ModelConfig>;
  if (opts.overrideJson !== undefined) {
    try {
      raw = modelConfigFromJson(opts.overrideJson);
    } catch (e) {
      throw configErrors.overrideInvalid(e instanceof Error ? e.message : String(e));
    }
  } else {
    const { path, relative } = await modelConfigPath(modelPath, opts.configName);
    let bytes: Buffer | undefined;
    try {
      bytes = await readFile(path);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      // Triton (qa/L0_model_config special_cases/noautofill_noconfig): a missing config is an
      // error only when auto-complete is disabled.
      if (err.code === 'ENOENT') {
        if (!opts.autoComplete) throw configErrors.configNotProvided();
      } else {
        throw configErrors.configUnreadable(path, err.message);
      }
    }
    if (bytes === undefined) {
      raw = {};
    } else {
      let text: string;
      try {
        text = utf8.decode(bytes);
      } catch {
        throw configErrors.configNotUtf8(`${opts.modelName}/${relative}`);
      }
      raw = parsePbtxt(text, ModelConfigDesc, `${opts.modelName}/${relative}`) as Partial<ModelConfig>;
    }
  }
  try {
    const completed = await autoCompleteFromRepository(raw, opts.modelName, modelPath, opts.versions);
    const config = normalizeModelConfig(completed, { modelName: opts.modelName, gpuCount: opts.gpuCount ?? 0 });
    validateModelConfig(config, { gpuCount: opts.gpuCount ?? 0, directoryName: opts.modelName });
    return config;
  } catch (e) {
    if (e instanceof TritonError) throw e;
    throw configErrors.configLoadFailed(opts.modelName, e instanceof Error ? e.message : String(e));
  }
}
