/**
 * Builders for what a backend is handed at load: the {@link BackendResolveRequest} resolvers decide
 * on and the {@link ModelLoadContext} of one version. The repository manager builds them this way,
 * and so do tests and benchmarks that load a backend directly, so the shapes cannot drift.
 */
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { ModelConfig } from './model-config.js';
import type { ModelLogWriter } from './model-log.js';
import type { BackendResolveRequest, InferenceServerHandle, ModelKey, ModelLoadContext, ModelOrigin, Principal } from './types.js';
import { inferenceUnavailable } from './load-context.errors.js';

/**
 * The principal a model's in-process calls run with (an ensemble's steps, a native backend's
 * TRITONSERVER_ServerInferAsync): the owner of its namespace (the operator for `''`, else the
 * tenant), so a tenant's model reaches its own models and the operator models shared with it,
 * never another tenant's.
 */
export const ownerPrincipal = (key: ModelKey): Principal =>
  key.namespace === '' ? { namespace: '', role: 'admin' } : { namespace: key.namespace, role: 'tenant' };

/** In-process inference where no server is attached (a backend loaded on its own). */
export const NO_SERVER: InferenceServerHandle = Object.freeze({
  infer(): never {
    throw inferenceUnavailable();
  },
  isModelReady: async () => false,
});

/**
 * What a resolver decides on for the model at `modelPath`, selecting `<modelPath>/<version>`.
 * @param origin default: the operator's repository holding `modelPath` (trusted)
 * @param key default: `config.name` in the operator's namespace
 */
export function backendResolveRequest(
  config: ModelConfig,
  modelPath: string,
  version: number,
  origin: ModelOrigin = { kind: 'repository', repository: dirname(modelPath) },
  key: ModelKey = { namespace: '', name: config.name },
): BackendResolveRequest {
  return { key, config, modelPath, versionPath: join(modelPath, String(version)), origin };
}

/** The load context of `version` of the model a resolve request describes. */
export function modelLoadContext(
  request: BackendResolveRequest,
  version: number,
  opts: { logger: Logger; autoCompleteConfig?: boolean; server?: InferenceServerHandle; config?: ModelConfig; modelLog?: ModelLogWriter },
): ModelLoadContext {
  return {
    key: request.key,
    name: request.key.name,
    version,
    origin: request.origin,
    server: opts.server ?? NO_SERVER,
    modelPath: request.modelPath,
    versionPath: join(request.modelPath, String(version)),
    config: opts.config ?? request.config,
    autoCompleteConfig: opts.autoCompleteConfig ?? true,
    logger: opts.logger,
    ...(opts.modelLog ? { modelLog: opts.modelLog } : {}),
  };
}
