/**
 * `GET /v1/models` and `GET /v1/models/{id}`: the models the caller may use (its own and the
 * operator's models shared with it, in multi-tenant mode; every model in single-user mode) that
 * are ready and declare the text-generation I/O (io.ts), as OpenAI's `Model` objects. A model the
 * caller cannot see and one that does not exist get the same 404.
 */
import { TritonError } from '../../contract/errors.js';
import type { Principal } from '../../contract/types.js';
import type { InferenceTarget } from '../../dataplane/inference.js';
import type { ServerApi } from '../../dataplane/server-api.js';
import { type TextGenerationIO, textGenerationIO } from './io.js';
import * as errors from './openai.errors.js';

/** OpenAI's `Model` object. */
export interface ModelObject {
  id: string;
  object: 'model';
  /** Unix seconds: when this frontend started (Triton's OpenAI frontend gives its start time too). */
  created: number;
  owned_by: string;
}

/** Who owns what `/v1/models` lists: the tenant's namespace for the caller's own, `warden` for the operator's. */
function ownerOf(api: ServerApi, principal: Principal, name: string): string {
  if (principal.namespace === '') return 'warden';
  return api.tenantConfig(principal)?.shared_models?.includes(name) ? 'warden' : principal.namespace;
}

/** The text-generation models the caller may use, by name. */
export async function listModels(api: ServerApi, principal: Principal, created: number): Promise<ModelObject[]> {
  const index = await api.repositoryIndex(principal, true);
  const names = [...new Set(index.map((e) => e.name))];
  const out: ModelObject[] = [];
  for (const name of names) {
    try {
      if (textGenerationIO(api.modelConfig(principal, name, -1))) out.push({ id: name, object: 'model', created, owned_by: ownerOf(api, principal, name) });
    } catch {
      // Unloaded between the index and the config: not listed.
    }
  }
  return out;
}

/** One model the caller may use. @throws TritonError 404 (errors.modelNotFound) otherwise */
export function getModel(api: ServerApi, principal: Principal, id: string, created: number): ModelObject {
  let config;
  try {
    config = api.modelConfig(principal, id, -1);
  } catch (e) {
    if (e instanceof TritonError && (e.code === 'NOT_FOUND' || e.code === 'UNAVAILABLE' || e.code === 'INVALID_ARG')) throw errors.modelNotFound(id);
    throw e;
  }
  if (!textGenerationIO(config)) throw errors.modelNotFound(id);
  return { id, object: 'model', created, owned_by: ownerOf(api, principal, id) };
}

/**
 * The version that serves `model` and its text-generation I/O. A tenant model another replica
 * stored is loaded here first, as the data plane's unary call does (DESIGN "Multi-tenancy").
 * @throws TritonError 404 (unknown or invisible model), 503 (not ready), 400 (no text-generation I/O)
 */
export async function generationTarget(api: ServerApi, principal: Principal, model: string): Promise<{ target: InferenceTarget; io: TextGenerationIO }> {
  let target: InferenceTarget;
  try {
    target = api.inferenceTarget(principal, model, -1);
  } catch (e) {
    if (!(e instanceof TritonError && e.code === 'NOT_FOUND')) throw e;
    if (!(await api.loadOnDemand(principal, model).catch(() => false))) throw errors.modelNotFound(model);
    target = api.inferenceTarget(principal, model, -1);
  }
  const io = textGenerationIO(target.config);
  if (!io) throw errors.modelNotTextGeneration(model);
  return { target, io };
}
