/**
 * Where a model's files come from: the seam between the lifecycle and storage (Triton's model
 * repositories, local or cloud, model_repository_manager.cc `Poll`; here also the upload store of
 * the load API's file overrides, DESIGN "Multi-tenancy").
 *
 * The lifecycle asks its sources in order. Two implement this today: `upload-source.ts` (the
 * upload store: loads with files, and a tenant's stored uploads) and `repository-source.ts` (the
 * operator's repositories on disk). A new store — an object-store repository, or uploads kept in
 * an object store so that every replica serves them (DESIGN "Multi-tenancy": tenant state lives in
 * stores a fleet already runs) — is one more implementation in that list: the state machine, the
 * version builder and the dependencies never see where files came from.
 *
 * A load, as the lifecycle drives it (`lifecycle.ts`), in the model's turn (one operation per model
 * at a time; see `LifecycleOptions`):
 *
 * 1. {@link ModelSource.locate} on each source in order until one answers. It decides whether the
 *    source holds the model and may refuse the load (a throw): nothing about the model changes then.
 * 2. {@link LocatedModel.open} on the answer: files on local disk, ready to read. A failure here is
 *    the load's failure: the model becomes UNAVAILABLE with the reason (unless versions serve).
 * 3. The versions are built from {@link ModelFiles.modelPath}; then {@link ModelFiles.commit}
 *    (the files become the model's durable ones), or {@link ModelFiles.abandon} when either failed.
 * 4. When every version built from these files has retired (a reload swapped them out, an unload),
 *    {@link ModelFiles.release}; when it says so, {@link ModelSource.cleanUp} runs in a later turn
 *    of the model.
 */
import type { TritonError } from '../contract/errors.js';
import type { ModelKey, ModelOrigin } from '../contract/types.js';
import type { FileDigests, FileOverrides, HeldBlob } from '../repository/overrides.js';

const loggedRefusals = new WeakSet<object>();

/**
 * Mark a refusal that its source has logged in its own words (Triton's Poll lines), so that the
 * lifecycle, which logs every other refusal of a load with its reason, does not log it twice.
 * @returns `e`
 */
export function loggedBySource<E extends object>(e: E): E {
  loggedRefusals.add(e);
  return e;
}

/** Whether {@link loggedBySource} marked `e`. */
export function isLoggedBySource(e: unknown): boolean {
  return typeof e === 'object' && e !== null && loggedRefusals.has(e);
}

/** What the load API may carry (spec §3.1). */
export interface LoadOptions {
  /** Parsed JSON of `parameters.config`. */
  configOverride?: unknown;
  files?: FileOverrides;
  /**
   * Files named by their SHA-256 instead of sent (Warden's `file_sha256:` extension): resolved by
   * the data plane (dataplane/repository.ts) into {@link blobs} (or, fetched from the shared upload
   * store, {@link files}) before the load.
   */
  fileDigests?: FileDigests;
  /**
   * Files the caller's namespace already holds in the upload store, named by digest and resolved:
   * relative path → the blob, which the store links without reading it.
   */
  blobs?: ReadonlyMap<string, HeldBlob>;
  /** Largest accepted upload (decoded file bytes + config JSON), checked before anything is written. */
  maxUploadBytes?: number;
}

/** Whether a load carries files (sent, or named by digest): an upload. */
export function carriesFiles(o: LoadOptions): boolean {
  return (o.files?.size ?? 0) > 0 || (o.blobs?.size ?? 0) > 0;
}

/** One model a source lists ({@link ModelSource.catalog}). */
export interface CatalogEntry {
  /**
   * Why the model cannot be loaded as it stands (e.g. "model appears in two or more repositories"):
   * the index shows it UNAVAILABLE with this reason. Undefined = loadable.
   */
  readonly problem?: string;
  /**
   * A stamp of the model's files now; poll mode reloads a model whose stamp differs from the one
   * its serving files had ({@link ModelFiles.stamp}). Computed on demand (it may read every file).
   */
  stamp(): Promise<string>;
}

/** A source's answer to {@link ModelSource.locate}: it holds the model. */
export interface LocatedModel {
  /** Where the files come from (readiness, admission and the backends' trust rules read it). */
  readonly origin: ModelOrigin;
  /**
   * The files, on local disk (a remote source fetches them here).
   * @throws TritonError the load's failure (e.g. a damaged stored upload): the model is then
   *   UNAVAILABLE with this reason unless versions serve
   */
  open(): Promise<ModelFiles>;
}

/**
 * The files of one load. The lifecycle keeps the handle of the serving versions' files and calls
 * {@link release} once they all retired.
 */
export interface ModelFiles {
  /** The source that produced them (its {@link ModelSource.cleanUp} follows a {@link release} that says so). */
  readonly source: ModelSource;
  readonly origin: ModelOrigin;
  /** The model directory on local disk: `config.pbtxt`, the version folders, the files a config names. */
  readonly modelPath: string;
  /** The config override the load applies (`parameters.config`, or the one stored with an upload); undefined = none. */
  readonly configOverride: unknown;
  /**
   * The files' stamp for poll mode ({@link CatalogEntry.stamp}); undefined = never polled (poll
   * leaves a model that serves such files alone).
   */
  readonly stamp: string | undefined;
  /**
   * The versions built from these files are about to serve: make them the model's durable files
   * (a stored upload's new generation or config is published: a restart serves it).
   * @throws TritonError the load fails (the built versions are finalized, then {@link abandon})
   */
  commit(): Promise<void>;
  /** The load failed: drop what it added (a staged upload). Never rejects (failures are logged). */
  abandon(): Promise<void>;
  /**
   * Every version built from these files has retired. True when nothing loaded uses the source's
   * files of this model any more, so {@link ModelSource.cleanUp} is due.
   */
  release(): boolean;
  /** A load error as the model's owner may see it (a stored upload's host paths become the model's name). */
  publicError(error: TritonError): TritonError;
}

/** The tenants file as last applied: tenant id → creation identity (`uid`, undefined for an entry without one). */
export type KnownTenants = ReadonlyMap<string, string | undefined>;

/**
 * A store of model files. Only {@link locate} and {@link holds} are required; a read-only
 * repository lists its models ({@link catalog}), a writable store restores, cleans up and
 * follows the tenants file.
 */
export interface ModelSource {
  /**
   * The models the source lists in `namespace` (name → entry): the repository index shows them
   * even when not loaded, poll mode loads, reloads and unloads by them, and start-up loads them
   * (modes none / poll, or explicit with `--load-model=*`). Absent = lists nothing.
   * @throws Error when the source cannot be read (start-up fails; a poll is logged and skipped)
   */
  catalog?(namespace: string): Promise<ReadonlyMap<string, CatalogEntry>>;

  /**
   * Find a load's files. Undefined = not held here (the next source is asked; when none holds it
   * the load fails "failed to poll from model repository").
   * @throws TritonError the load is refused before it starts (a bad upload, uploads disabled, a
   *   name in two repositories); the model's state does not change
   */
  locate(key: ModelKey, request: LoadOptions): Promise<LocatedModel | undefined>;

  /**
   * Whether a load of `key` without files would find it here (explicit mode loads an ensemble's
   * missing step models from their sources).
   */
  holds(key: ModelKey): Promise<boolean>;

  /**
   * Start-up, before anything loads: make the source usable (recover from an interrupted write,
   * move aside the files of tenants no longer in `tenants`) and name the models to serve again
   * whatever the control mode. A failure is logged and disables what needs the source; it never
   * fails start-up.
   * @param tenants undefined in single-user mode
   */
  restore?(tenants: KnownTenants | undefined): Promise<ModelKey[]>;

  /**
   * In the model's turn: delete the model's files no loaded version uses; with `forget`, its
   * stored model as well (an unload that asked to delete the files). Never rejects (failures are
   * logged; leftovers go at the next start).
   */
  cleanUp?(key: ModelKey, forget: boolean): Promise<void>;

  /** Tenants holding files here that are not in `tenants` now, or are but under another creation identity. */
  strangers?(tenants: KnownTenants): Promise<string[]>;

  /**
   * Move a removed tenant's files out of reach (its models were unloaded first).
   * @returns where they went (for the audit log), or undefined when the tenant had none here
   * @throws TritonError when they could not be moved
   */
  removeTenant?(tenant: string): Promise<string | undefined>;
}
