/**
 * Inference from a sandboxed backend (Triton's BLS, spec §7.2; wit/inference.wit): the models a
 * model may call — its grants, read from its configuration — and the limits every call chain
 * obeys (DESIGN "Sandbox rules": capabilities, not ambient authority).
 *
 * A grant is one config parameter per callee, `bls_model:<name>`, whose value is `*` (any version)
 * or the allowed version numbers, comma-separated:
 *
 *     parameters { key: "bls_model:simple" value { string_value: "*" } }
 *     parameters { key: "bls_model:repeat_int32" value { string_value: "1" } }
 *
 * The name is the rest of the key, so any model name works (commas and colons included). Names
 * resolve as the owner resolves them: a tenant's own model, else an operator model shared with it.
 */
import type { ModelConfig } from './model-config.js';
import type { ModelKey } from './types.js';
import { modelNameProblem } from './names.js';
import * as errors from './bls.errors.js';

/** Prefix of a grant's parameter key. */
export const BLS_GRANT_PREFIX = 'bls_model:';
/** Parameter: most calls in flight per `execute` (capped by {@link MAX_BLS_INFLIGHT}). */
export const PARAM_BLS_INFLIGHT = 'bls_max_inflight';
/** Default of {@link PARAM_BLS_INFLIGHT}. */
export const DEFAULT_BLS_INFLIGHT = 16;
/** Server cap of {@link PARAM_BLS_INFLIGHT}: a fan-out bomb ends here. */
export const MAX_BLS_INFLIGHT = 256;
/** Most models on one call chain (the client's model first): a model calling a model ... at most this deep. */
export const MAX_BLS_DEPTH = 8;
/** Most grants one configuration may hold. */
export const MAX_BLS_GRANTS = 64;

/** The models a model may call: name → allowed versions (`undefined`: any). */
export type BlsGrants = ReadonlyMap<string, ReadonlySet<number> | undefined>;

/**
 * The grants of `config` (its `bls_model:<name>` parameters).
 * @throws TritonError INVALID_ARG for a grant naming no valid model name, a value that is neither
 *   `*` nor a list of version numbers, or more than {@link MAX_BLS_GRANTS} grants
 */
export function blsGrants(config: Pick<ModelConfig, 'name' | 'parameters'>): BlsGrants {
  const out = new Map<string, ReadonlySet<number> | undefined>();
  for (const [key, p] of Object.entries(config.parameters ?? {})) {
    if (!key.startsWith(BLS_GRANT_PREFIX)) continue;
    const name = key.slice(BLS_GRANT_PREFIX.length);
    const problem = modelNameProblem(name);
    if (problem !== undefined) throw errors.grantName(config.name, key, problem);
    if (out.size >= MAX_BLS_GRANTS) throw errors.tooManyGrants(config.name, MAX_BLS_GRANTS);
    const value = p.string_value.trim();
    if (value === '*') {
      out.set(name, undefined);
      continue;
    }
    const versions = new Set<number>();
    for (const part of value.split(',')) {
      const v = part.trim();
      if (!/^\d{1,15}$/.test(v)) throw errors.grantVersions(config.name, key, p.string_value);
      versions.add(Number(v));
    }
    out.set(name, versions);
  }
  return out;
}

/**
 * Whether `grants` allow a call to `version` of `name` (`version` as resolved: the version that
 * serves the call).
 */
export function granted(grants: BlsGrants, name: string, version: number): boolean {
  if (!grants.has(name)) return false;
  const versions = grants.get(name);
  return versions === undefined || versions.has(version);
}

/**
 * The call chain a request belongs to: the models (by key id, `<namespace>/<name>`) whose executes
 * are waiting, outermost first. Set by the BLS capability on the requests it makes, never by a
 * client; carried through ensembles.
 */
export type BlsChain = readonly string[];

/** A model's entry on a {@link BlsChain}: `<namespace>/<name>` (a namespace never holds `/`). */
export const chainEntry = (key: ModelKey): string => `${key.namespace}/${key.name}`;

/**
 * Checks a request of `chain` for the model `key` (named `name` by its caller) before it is queued:
 * a model already waiting on the chain would wait on itself (its instances are busy with the
 * execute that called), and a chain of {@link MAX_BLS_DEPTH} models goes no deeper.
 * @throws TritonError INVALID_ARG for a cycle or a chain too deep
 */
export function checkChain(chain: BlsChain, key: ModelKey, name: string): void {
  if (chain.includes(chainEntry(key))) throw errors.chainCycle(name);
  if (chain.length >= MAX_BLS_DEPTH) throw errors.chainTooDeep(name, MAX_BLS_DEPTH);
}

/**
 * The chain of a call `key` makes while `requests` wait on it: every model their chains hold, in
 * order of first appearance, then `key`.
 */
export function extendChain(requests: Iterable<{ readonly blsChain?: BlsChain }>, key: ModelKey): BlsChain {
  const chain: string[] = [];
  for (const r of requests) for (const m of r.blsChain ?? []) if (!chain.includes(m)) chain.push(m);
  chain.push(chainEntry(key));
  return chain;
}

/**
 * The trace a call made on behalf of `waiting` continues: the one traced request among them, or
 * none when none or several are traced (a backend's calls carry no link to the request they serve;
 * a call is then sampled as any request).
 */
export function soleParentTrace<T>(waiting: Iterable<{ readonly trace?: T }>): T | undefined {
  let found: T | undefined;
  for (const r of waiting) {
    if (r.trace === undefined) continue;
    if (found !== undefined) return undefined;
    found = r.trace;
  }
  return found;
}
