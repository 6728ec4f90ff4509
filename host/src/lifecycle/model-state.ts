/**
 * The lifecycle's record of one model: one state record per version (Triton's
 * `ModelLifeCycle::ModelInfo`: `state_`, `state_reason_`, `model_`), plus what the model as a whole
 * holds while loads and unloads come and go. Its transitions are the state machine of the
 * repository extension's index (spec §3.1):
 *
 * ```
 *  (none) ──load──▶ LOADING ──built──▶ READY ──unload──▶ UNLOADING ──retired──▶ UNAVAILABLE "unloaded"
 *                      └──failed, nothing serving──▶ UNAVAILABLE <reason>
 * ```
 *
 * A reload builds the new versions beside the serving ones; a serving version stays READY until
 * the swap ({@link swapIn}). A failed load leaves serving versions as they are. The functions here
 * only change the record; `lifecycle.ts` sequences them per model.
 */
import type { ModelConfig } from '../contract/model-config.js';
import type { ModelKey, ModelOrigin } from '../contract/types.js';
import type { ModelLog } from '../metrics/model-log.js';
import type { ModelFiles } from './model-source.js';
import type { ModelVersion } from './model-version.js';

/** A version's state, as the repository index reports it (spec §3.1; Triton's ModelReadyState). */
export type ModelState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

/** The map key of a {@link ModelKey} (names never contain NUL). */
export const modelKeyId = (k: ModelKey): string => (k.namespace === '' ? k.name : `${k.namespace}\u0000${k.name}`);

/** One version's state record. */
export interface VersionSlot {
  readonly state: ModelState;
  /** Why it is not READY (a load failure's message); '' otherwise. */
  readonly reason: string;
  /**
   * UNAVAILABLE because it was unloaded on purpose (reason "unloaded"): readiness does not count it
   * as a failure, and it does not hold the model's name — a real state, not a test of the reason.
   */
  readonly unloaded?: true;
  /** The loaded version: set exactly while READY. */
  readonly version?: ModelVersion;
}

const UNLOADED: VersionSlot = Object.freeze({ state: 'UNAVAILABLE', reason: 'unloaded', unloaded: true });

/** The record of one model (one per {@link ModelKey} the lifecycle has seen). */
export interface ModelEntry {
  readonly key: ModelKey;
  /** Version number → its state record. */
  readonly slots: Map<number, VersionSlot>;
  /** The files the serving versions were built from (undefined while none serve). */
  files?: ModelFiles;
  /**
   * Where the latest load attempt's files came from: readiness counts a failure only when the
   * operator's repository produced it (an upload's failure is the uploader's problem).
   */
  attemptOrigin?: ModelOrigin;
  /** The config admitted for the load in progress and how many versions it loads (held against quotas). */
  admitted?: { config: ModelConfig; versions: number };
  /** Tail of the model's operation chain (`lifecycle.ts` runs one operation per model at a time). */
  chain: Promise<unknown>;
  /** The model's log (metrics/model-log.ts), from its first load until the record is dropped or forgotten. */
  log?: ModelLog;
}

/** A record with no version and no load in progress. */
export function newEntry(key: ModelKey): ModelEntry {
  return { key: { namespace: key.namespace, name: key.name }, slots: new Map(), chain: Promise.resolve() };
}

/** Nothing loaded, attempted or held under this record's name: it may be dropped. */
export function isEmptyEntry(e: ModelEntry): boolean {
  return e.slots.size === 0 && e.files === undefined && e.attemptOrigin === undefined && e.admitted === undefined;
}

/** The serving (READY) versions, ascending. */
export function servingVersions(e: ModelEntry): ModelVersion[] {
  const out: ModelVersion[] = [];
  for (const s of e.slots.values()) if (s.version) out.push(s.version);
  return out.sort((a, b) => a.version - b.version);
}

/** Whether any version serves. */
export function isServing(e: ModelEntry): boolean {
  for (const s of e.slots.values()) if (s.version) return true;
  return false;
}

/** `versions` are being built: LOADING, except those serving now (they stay READY until the swap). */
export function markLoading(e: ModelEntry, versions: readonly number[]): void {
  for (const v of versions) if (!e.slots.get(v)?.version) e.slots.set(v, { state: 'LOADING', reason: '' });
}

/**
 * A load failed with `reason`. When nothing serves, every version it tried is UNAVAILABLE with the
 * reason (version 1 when it got no further than the config); serving versions are left as they are.
 */
export function markFailed(e: ModelEntry, reason: string): void {
  if (isServing(e)) return;
  if (e.slots.size === 0) e.slots.set(1, { state: 'UNAVAILABLE', reason });
  for (const v of e.slots.keys()) e.slots.set(v, { state: 'UNAVAILABLE', reason });
}

/**
 * The swap of a successful load: `loaded` serve from now on (READY), every other version's record
 * goes. Returns what served before, to retire, and the files it was built from.
 */
export function swapIn(
  e: ModelEntry,
  loaded: ReadonlyMap<number, ModelVersion>,
  files: ModelFiles,
): { retiring: ModelVersion[]; files: ModelFiles | undefined } {
  const retiring = servingVersions(e);
  const old = e.files;
  for (const v of [...e.slots.keys()]) if (!loaded.has(v)) e.slots.delete(v);
  for (const [v, version] of loaded) e.slots.set(v, { state: 'READY', reason: '', version });
  e.files = files;
  return { retiring, files: old };
}

/**
 * An unload: serving versions become UNLOADING (each UNAVAILABLE "unloaded" once retired,
 * {@link markRetired}), failed ones UNAVAILABLE "unloaded" (the failure no longer counts anywhere).
 * Returns the versions to retire and the files they were built from.
 */
export function takeForUnload(e: ModelEntry): { retiring: ModelVersion[]; files: ModelFiles | undefined } {
  const retiring = servingVersions(e);
  const files = e.files;
  e.files = undefined;
  for (const [v, s] of e.slots) if (s.state === 'UNAVAILABLE') e.slots.set(v, UNLOADED);
  for (const v of retiring) e.slots.set(v.version, { state: 'UNLOADING', reason: '' });
  return { retiring, files };
}

/** `version` finished retiring after an unload (a newer state, if any, is kept). */
export function markRetired(e: ModelEntry, version: number): void {
  if (e.slots.get(version)?.state === 'UNLOADING') e.slots.set(version, UNLOADED);
}

/** Forget every version's state and the latest attempt (a removed tenant's model, once nothing serves). */
export function forgetStates(e: ModelEntry): void {
  e.slots.clear();
  e.attemptOrigin = undefined;
  e.log = undefined;
}

/**
 * Whether the model holds its name for lookups (DESIGN "Multi-tenancy"): a version serving, being
 * loaded, or failed to load. Versions unloaded (or draining after an unload) do not.
 */
export function holdsName(e: ModelEntry): boolean {
  for (const s of e.slots.values()) if (s.version || (!s.unloaded && s.state !== 'UNLOADING')) return true;
  return false;
}

/** Whether a version is neither READY nor unloaded on purpose (strict readiness counts it as a failure). */
export function hasFailedVersion(e: ModelEntry): boolean {
  for (const s of e.slots.values()) if (s.state !== 'READY' && !s.unloaded) return true;
  return false;
}
