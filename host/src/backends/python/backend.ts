/**
 * The `python` backend (spec §7) and Python-based backends (`<backend-directory>/<name>/model.py`,
 * spec §6.9): a model version loads by importing its `model.py` in a throw-away stub for
 * `auto_complete_config`, then one supervised stub process per instance (`instance.ts`).
 */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { modelConfigToJson } from '../../config/index.js';
import type { ModelConfig } from '../../contract/model-config.js';
import * as errors from './python.errors.js';
import { checkedModelFilePath, ModelFileError } from '../../repository/model-files.js';
import type { Backend, BackendModel, BackendModelInstance, InstanceSpec, ModelLoadContext } from '../../contract/types.js';
import { ownerPrincipal } from '../../contract/load-context.js';
import { mergeAutoCompletedConfig } from '../../config/autocomplete.js';
import { BlsBridge } from './bls.js';
import { pythonFor } from './environment.js';
import { IS_READY_CACHE_MS, IS_READY_TIMEOUT_MS, PythonInstance } from './instance.js';
import type { PythonMetrics } from './metrics.js';
import { StubProcess, type StubStartOptions } from './stub.js';

/** Default time a stub has to import the model and run `initialize` (ms), Triton's `stub-timeout-seconds` 30. */
export const STUB_TIMEOUT_MS = 30_000;

export interface PythonBackendOptions {
  /** Backend name: `python`, or a Python-based backend's name. */
  name: string;
  /** For Python-based backends: `<backend-directory>/<name>`, holding `model.py`. */
  artifactsDir?: string;
  metrics: PythonMetrics;
  cacheDir: string;
  logger: Logger;
}

/** Largest `model.py` accepted, bytes. */
const MODEL_PY_MAX_BYTES = 64 * 1024 * 1024;

const KIND = { KIND_CPU: 'CPU', KIND_GPU: 'GPU', KIND_MODEL: 'MODEL' } as const;

function plainFileName(name: string, what: string): string {
  if (!name || name !== basename(name) || name === '.' || name === '..' || name.includes('\0')) {
    throw errors.fileNameInvalid(what, name);
  }
  return name;
}

function uintParam(config: ModelConfig, key: string, dflt: number): number {
  const v = config.parameters[key]?.string_value;
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw errors.parameterNotCount(key, config.name, v);
  return n;
}

export class PythonBackend implements Backend {
  constructor(private readonly opts: PythonBackendOptions) {}

  get name(): string {
    return this.opts.name;
  }

  /**
   * @throws TritonError INVALID_ARG for an uploaded model, a missing model.py, a bad
   *   EXECUTION_ENV_PATH or parameter; INTERNAL with the model's error if importing it or
   *   `auto_complete_config` fails
   */
  async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
    if (ctx.origin.kind === 'upload') {
      throw errors.uploadedModel(ctx.name);
    }
    let modelFile: string;
    if (this.opts.artifactsDir) {
      modelFile = join(this.opts.artifactsDir, 'model.py');
      if (!existsSync(modelFile)) throw errors.backendModelMissing(ctx.name, this.opts.name);
    } else {
      // The model's own file, through the rule for config-named files (repository/model-files.ts).
      const name = plainFileName(ctx.config.default_model_filename || 'model.py', 'default_model_filename');
      try {
        modelFile = (
          await checkedModelFilePath({
            modelDir: ctx.modelPath,
            under: String(ctx.version),
            name,
            field: 'default_model_filename',
            maxBytes: MODEL_PY_MAX_BYTES,
          })
        ).realPath;
      } catch (e) {
        if (e instanceof ModelFileError && e.reason === 'outside') throw errors.modelFileMissing(name, ctx.name, ctx.version);
        throw e;
      }
    }
    const python = pythonFor(ctx.config, ctx.modelPath, this.opts.cacheDir);
    const sysPaths = [ctx.versionPath, ...(this.opts.artifactsDir ? [this.opts.artifactsDir] : [])];
    const base = (label: string, init: Record<string, unknown>): StubStartOptions => ({
      python,
      label,
      init: { model_file: modelFile, model_dir: ctx.modelPath, sys_paths: sysPaths, ...init },
      logger: ctx.logger,
      startTimeoutMs: uintParam(ctx.config, 'stub_timeout_ms', STUB_TIMEOUT_MS),
    });
    let config = ctx.config;
    let completed: ModelConfig | undefined;
    if (ctx.autoCompleteConfig) {
      const { stub, answer } = await StubProcess.start(
        base(`${ctx.name}-autocomplete`, { mode: 'auto_complete', config: JSON.parse(modelConfigToJson(config) || '{}') }),
      );
      stub.kill();
      const before = modelConfigToJson(config);
      const merged = mergeAutoCompletedConfig(config, this.opts.name, JSON.stringify(answer.config ?? {}));
      if (modelConfigToJson(merged) !== before) config = completed = merged;
    }
    const executeTimeoutMs = uintParam(config, 'execute_timeout_ms', 0);
    const isReadyTimeoutMs = Math.min(3_600_000, Math.max(1, uintParam(config, 'is_ready_timeout_ms', IS_READY_TIMEOUT_MS)));
    const isReadyCacheMs = uintParam(config, 'is_ready_cache_ms', IS_READY_CACHE_MS);
    const principal = ownerPrincipal(ctx.key);
    const final = config;
    return {
      config: completed,
      createInstance: (spec: InstanceSpec): Promise<BackendModelInstance> =>
        PythonInstance.create({
          stub: base(`${ctx.name}-${spec.name}`, {
            mode: 'serve',
            decoupled: final.model_transaction_policy?.decoupled === true,
            args: {
              model_config: modelConfigToJson(final),
              model_instance_kind: KIND[spec.kind],
              model_instance_name: spec.name,
              model_instance_device_id: String(spec.deviceId),
              model_repository: ctx.modelPath,
              model_version: String(ctx.version),
              model_name: ctx.name,
            },
          }),
          decoupled: final.model_transaction_policy?.decoupled === true,
          executeTimeoutMs,
          isReadyTimeoutMs,
          isReadyCacheMs,
          modelName: ctx.name,
          instanceName: spec.name,
          logger: ctx.logger,
          bls: () => new BlsBridge(ctx.server, principal, ctx.logger, ctx.key),
          metrics: this.opts.metrics,
        }),
      finalize: async () => {},
    };
  }

  async finalize(): Promise<void> {}
}
