/**
 * Health (spec §1.3), server metadata (§1.4), model metadata (§1.5), model ready (§1.6), model
 * config (§1.7) and statistics (§3.2).
 */
import type { ModelConfig } from '../../config/types.js';
import { invalidArg, notFound, TritonError } from '../../core/errors.js';
import type { ModelVersion } from '../../core/model.js';
import { tensorDataType } from '../../core/validate.js';
import type { FrontendContext } from './context.js';

export const SERVER_NAME = 'warden';
/** The Triton release whose HTTP protocol Warden implements (spec header). */
export const TRITON_PROTOCOL_VERSION = '2.73.0';
export const EXTENSIONS = [
  'model_repository',
  'model_configuration',
  'binary_tensor_data',
  'parameters',
  'statistics',
  'schedule_policy',
  'logging',
  'generate',
];

export function serverMetadata(): Record<string, unknown> {
  return { name: SERVER_NAME, version: TRITON_PROTOCOL_VERSION, extensions: EXTENSIONS };
}

/** Ready = accepting and (strict) every loaded model ready. */
export function serverReady(ctx: FrontendContext): boolean {
  return ctx.accepting() && (!ctx.strictReadiness || ctx.manager.allReady());
}

function tensorMetadata(config: ModelConfig, t: ModelConfig['input'][number] | ModelConfig['output'][number]) {
  return {
    name: t.name,
    datatype: tensorDataType(t),
    shape: config.max_batch_size >= 1 ? [-1, ...t.dims] : [...t.dims],
  };
}

/** `GET /v2/models/{m}[/versions/{v}]`. @throws TritonError NOT_FOUND / UNAVAILABLE */
export function modelMetadata(ctx: FrontendContext, name: string, version: number): Record<string, unknown> {
  const mv = ctx.manager.getVersion(name, version);
  const versions = version >= 0 ? [String(version)] : ctx.manager.servingVersions(name).map((v) => String(v.version));
  const c = mv.config;
  return {
    name,
    versions,
    platform: c.platform || c.backend,
    inputs: c.input.map((t) => tensorMetadata(c, t)),
    outputs: c.output.map((t) => tensorMetadata(c, t)),
  };
}

/** Whether a model version is ready. @throws TritonError NOT_FOUND for an unknown model */
export function modelReady(ctx: FrontendContext, name: string, version: number): boolean {
  if (!ctx.manager.isKnown(name)) throw notFound(`Request for unknown model: '${name}' is not found`);
  try {
    return ctx.manager.getVersion(name, version).isReady();
  } catch (e) {
    // The model is known: a missing or unready version is "not ready", not an unknown model.
    if (e instanceof TritonError && (e.code === 'NOT_FOUND' || e.code === 'UNAVAILABLE')) return false;
    throw e;
  }
}

/** Statistics of every serving version, or of one model / version (spec §3.2). */
export function modelStatistics(ctx: FrontendContext, name?: string, version = -1): Record<string, unknown> {
  let versions: ModelVersion[];
  if (name === undefined) {
    versions = ctx.manager.servingVersions();
  } else {
    versions = ctx.manager.servingVersions(name).filter((v) => version < 0 || v.version === version);
    if (versions.length === 0) throw invalidArg(`requested model '${name}' is not available`);
  }
  return { model_stats: versions.map((v) => v.stats.toJson(v.name, v.version)) };
}
