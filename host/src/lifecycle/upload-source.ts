/**
 * The upload store as a {@link ModelSource} (DESIGN "Multi-tenancy"): loads with file overrides
 * (spec §3.1) stage a new generation there, committed once the model loaded; a tenant's load
 * without files serves its stored model. The operator namespace's uploads are ephemeral (never
 * committed, removed once unused and at start); a tenant's are durable and restored at start.
 *
 * Generations in use: each load's files hold their generation until the versions built from them
 * retire ({@link ModelFiles.release}); {@link UploadSource.cleanUp} then removes what no version
 * uses. The store itself (`repository/upload-store.ts`) keeps the commit protocol.
 */
import type { Logger } from 'pino';
import { asTritonError } from '../contract/errors.js';
import { relabelledError } from '../contract/public-errors.js';
import type { ModelKey, ModelOrigin } from '../contract/types.js';
import { UploadStore, type StoredGeneration } from '../repository/upload-store.js';
import type { StoredUsage } from '../contract/admission.js';
import type { Pointer, SharedUploads, StoredPointer } from '../repository/object-store/shared-uploads.js';
import type { FileOverrides, HeldBlob } from '../repository/overrides.js';
import { carriesFiles, type CatalogEntry, type KnownTenants, type LoadOptions, type LocatedModel, type ModelFiles, type ModelSource } from './model-source.js';
import { modelKeyId } from './model-state.js';
import { uploadsRefused } from './lifecycle.errors.js';
import { fileDigestUnknown } from '../repository/upload-store.errors.js';

export interface UploadSourceOptions {
  /** The store's root (`--upload-directory`); undefined = uploads refused. */
  root: string | undefined;
  logger: Logger;
  /**
   * Checks an upload's config before anything is written (`ModelAdmission.precheckUpload`);
   * `stored`: what the namespace's other models in the shared store hold, when there is one.
   */
  precheck?: (key: ModelKey, configOverride: unknown, stored?: StoredUsage) => void;
  /** Multi-tenant mode: the tenants file now (id → uid); a new tenant directory records its owner. */
  tenants?: () => KnownTenants;
  /**
   * Tenants' uploads shared by every replica (`--upload-store=s3://...`): the truth for tenant
   * models, the local store their working copy. Undefined = the local store alone.
   */
  shared?: SharedUploads;
  /** Largest stored model fetched from {@link shared} (`--max-upload-bytes`). */
  maxUploadBytes?: number;
}

/** How a load uses a stored generation. */
interface Generation {
  key: ModelKey;
  generation: number;
  modelPath: string;
  /** The override the load applies. */
  configOverride: unknown;
  /** Publish on commit (a tenant's new generation, or a new config for its stored one). */
  publish: boolean;
  /** Staged by this load: removed if the load fails. */
  staged?: StoredGeneration;
  /** A tenant model of the shared store: what to publish there on commit, and its stamp. */
  shared?: SharedPlan;
}

/** How a load of a tenant model uses the shared upload store. */
interface SharedPlan {
  /** The files to store on commit (an upload), or undefined to keep the stored ones. */
  files?: FileOverrides;
  /** With {@link files}: the upload's files named by digest, which the tenant's stored models hold. */
  blobs?: ReadonlyMap<string, HeldBlob>;
  /** The stored pointer's files (a load without files that changes only the config). */
  stored?: Pointer['files'];
  /** Write a new pointer on commit. */
  push: boolean;
  /** The stored pointer's stamp; set by commit when it writes one. */
  stamp: string | undefined;
}

export class UploadSource implements ModelSource {
  private storeRef: UploadStore | undefined;
  /** Why uploads are refused (no upload directory, or it is not usable); '' while they are not. */
  private disabled = 'no upload directory is configured';
  /** Per model (key id): generation → the loads' file sets holding it (serving or draining). */
  private readonly users = new Map<string, Map<number, number>>();
  /** Tenant models (key id) whose committed local generation is the shared store's pointer of this stamp. */
  private readonly inSync = new Map<string, { generation: number; stamp: string }>();

  constructor(private readonly opts: UploadSourceOptions) {
    if (opts.root !== undefined) {
      this.storeRef = new UploadStore({ root: opts.root });
      this.disabled = '';
    }
  }

  /** The store (undefined while uploads are refused). */
  get store(): UploadStore | undefined {
    return this.storeRef;
  }

  /**
   * Start-up of the store: move aside the uploads of tenants no longer in the file (or of an
   * earlier creation of a listed id), remove what a previous process left (staging, uncommitted
   * generations, the operator namespace's uploads); a store that cannot be used disables uploads
   * (logged).
   * @returns the tenant models stored there
   */
  async restore(tenants: KnownTenants | undefined): Promise<ModelKey[]> {
    const store = this.storeRef;
    if (!store) return [];
    try {
      if (tenants) {
        for (const ns of await store.strangers(tenants)) {
          const moved = await store.quarantine(ns);
          this.opts.logger.info({ audit: true, event: 'tenant_uploads_quarantined', tenant: ns, to: moved }, 'uploads of a removed tenant moved aside');
        }
      }
      const report = await store.recover();
      if (report.removed.length > 0) this.opts.logger.info({ removed: report.removed }, 'upload store: removed leftovers of an earlier run');
      // With a shared store, tenant models load when first asked for, on whichever replica (the
      // local copies may be stale): nothing is restored here.
      return this.opts.shared ? [] : report.models;
    } catch (e) {
      this.storeRef = undefined;
      this.disabled = `the upload directory is not usable (${(e as NodeJS.ErrnoException).code ?? 'error'})`;
      this.opts.logger.error({ reason: this.disabled }, 'upload store unavailable: uploads are refused');
      return [];
    }
  }

  /**
   * A load with files stages them as a new generation; a tenant's load without files serves its
   * committed one (with its stored config override unless a new one is given). A damaged stored
   * model is held here: opening it fails the load.
   * @throws TritonError UNAVAILABLE "uploads are refused: ..."; what the admission's precheck and
   *   {@link UploadStore.stage} throw
   */
  async locate(key: ModelKey, request: LoadOptions): Promise<LocatedModel | undefined> {
    const origin: ModelOrigin = { kind: 'upload', tenant: key.namespace };
    if (carriesFiles(request)) {
      if (!this.storeRef) throw uploadsRefused(key.name, this.disabled);
      const store = this.storeRef;
      // With a shared store, model and instance counts are the fleet's: the tenant's other stored models.
      const stored = this.opts.shared && key.namespace !== '' ? await this.opts.shared.usage(key.namespace, key.name) : undefined;
      this.opts.precheck?.(key, request.configOverride, stored);
      const owner = this.opts.tenants && key.namespace !== '' ? { uid: this.opts.tenants().get(key.namespace) } : undefined;
      const files = request.files ?? new Map<string, Uint8Array>();
      const staged = await store.stage(key, files, request.configOverride, { maxUploadBytes: request.maxUploadBytes, owner, blobs: request.blobs });
      // The operator namespace's uploads are ephemeral: nothing to commit.
      const g: Generation = { ...staged, configOverride: request.configOverride, publish: key.namespace !== '', staged };
      if (this.opts.shared && key.namespace !== '') g.shared = { files, blobs: request.blobs, push: true, stamp: undefined };
      // the backend takes the digests the store computed instead of hashing the files again
      const hashed: ModelOrigin = { ...origin, digests: staged.digests };
      return { origin: hashed, open: async () => this.use(store, g, hashed) };
    }
    const store = this.storeRef;
    if (key.namespace === '' || !store) return undefined;
    if (this.opts.shared) return this.locateShared(this.opts.shared, store, key, request, origin);
    try {
      const stored = await store.current(key);
      if (!stored) return undefined;
      const configOverride = request.configOverride ?? stored.configOverride;
      const publish = JSON.stringify(configOverride) !== JSON.stringify(stored.configOverride);
      return { origin, open: async () => this.use(store, { ...stored, configOverride, publish }, origin) };
    } catch (e) {
      const err = asTritonError(e);
      return { origin, open: () => Promise.reject(err) };
    }
  }

  /**
   * Files named by digest (Warden's `file_sha256:` extension of the load API), resolved from what
   * `key`'s own namespace holds: a file of one of its stored generations (the local store), or of
   * one of its stored models (the shared store). Another tenant's files never count: naming their
   * digest is refused exactly like an unknown one (docs/tenancy.md "Uploads by digest"). A blob of
   * the local store comes back as a {@link HeldBlob} (verified, linked at staging without being
   * read); one only the bucket has, as its bytes (checked against the digest).
   * @throws TritonError UNAVAILABLE when uploads are refused; NOT_FOUND for a digest the namespace
   *   does not hold (or whose blob is gone or changed); INTERNAL when the shared store fails
   */
  async resolveDigests(key: ModelKey, digests: ReadonlyMap<string, string>): Promise<{ files: FileOverrides; blobs: Map<string, HeldBlob> }> {
    if (!this.storeRef) throw uploadsRefused(key.name, this.disabled);
    const store = this.storeRef;
    const shared = key.namespace === '' ? undefined : this.opts.shared;
    const held = shared ? await shared.heldDigests(key.namespace, this.opts.tenants?.().get(key.namespace)) : undefined;
    // the caller's own files, read once for every digest of the load
    const holdings = shared ? undefined : await store.holdings(key.namespace);
    const files: FileOverrides = new Map();
    const blobs = new Map<string, HeldBlob>();
    for (const [path, sha256] of digests) {
      let blob: HeldBlob | undefined;
      if (shared && held) {
        const size = held.get(sha256);
        if (size !== undefined) {
          blob = await store.heldBlob(undefined, sha256);
          if (!blob || blob.size !== size) {
            files.set(path, await shared.blob(key.name, path, sha256, size));
            continue;
          }
        }
      } else {
        blob = await store.heldBlob(holdings, sha256);
      }
      if (!blob) throw fileDigestUnknown(key.name, JSON.stringify(path), sha256);
      blobs.set(path, blob);
    }
    return { files, blobs };
  }

  /** A tenant's committed upload (a damaged one does not count). */
  async holds(key: ModelKey): Promise<boolean> {
    if (key.namespace === '') return false;
    // A pointer that cannot be read counts as held: the load then fails with the reason.
    if (this.opts.shared)
      return this.sharedPointer(this.opts.shared, key).then(
        (stored) => stored !== undefined,
        () => true,
      );
    return (await this.storeRef?.current(key).catch(() => undefined)) !== undefined;
  }

  /**
   * Remove the model's generations no loaded version uses (and, `forget`, a tenant's committed
   * upload). Failures are logged: the files go at the next start.
   */
  async cleanUp(key: ModelKey, forget: boolean): Promise<void> {
    const store = this.storeRef;
    if (!store) return;
    try {
      if (forget && key.namespace !== '') {
        await this.opts.shared?.remove(key);
        this.inSync.delete(modelKeyId(key));
        await store.forget(key);
      }
      await store.prune(key, new Set(this.users.get(modelKeyId(key))?.keys() ?? []), key.namespace === '' ? 'operator' : 'tenant');
    } catch (e) {
      this.opts.logger.error({ model: key.name, namespace: key.namespace, reason: asTritonError(e).message }, 'failed to remove uploaded files');
    }
  }

  async strangers(tenants: KnownTenants): Promise<string[]> {
    return this.storeRef ? await this.storeRef.strangers(tenants).catch(() => []) : [];
  }

  async removeTenant(tenant: string): Promise<string | undefined> {
    return this.storeRef?.quarantine(tenant);
  }

  /**
   * A tenant's stored models in the shared store (the repository index lists them on every
   * replica, loaded here or not). Without a shared store: none listed (the index shows loaded ones).
   * @throws TritonError when the shared store cannot be listed
   */
  async catalog(namespace: string): Promise<ReadonlyMap<string, CatalogEntry>> {
    const out = new Map<string, CatalogEntry>();
    if (!this.opts.shared || namespace === '') return out;
    for (const [id, stamp] of await this.opts.shared.stamps(namespace)) out.set(id.slice(namespace.length + 1), { stamp: async () => stamp });
    return out;
  }

  /**
   * What changed in the shared store for the tenant models loaded here (`loaded`: key and the
   * stamp their files were loaded with): models whose pointer is gone (deleted on another replica,
   * or of an earlier creation of the tenant) and models whose pointer changed (re-uploaded).
   * @throws TritonError when the shared store cannot be listed (nothing is decided then)
   */
  async sync(loaded: readonly { key: ModelKey; stamp: string }[]): Promise<{ gone: ModelKey[]; changed: ModelKey[] }> {
    const shared = this.opts.shared;
    if (!shared || loaded.length === 0) return { gone: [], changed: [] };
    const stamps = await shared.stamps();
    const gone: ModelKey[] = [];
    const changed: ModelKey[] = [];
    for (const { key, stamp } of loaded) {
      const now = stamps.get(`${key.namespace}/${key.name}`);
      if (now === undefined) gone.push(key);
      else if (now !== stamp) changed.push(key);
    }
    return { gone, changed };
  }

  /** The stored pointer of a tenant model, when it belongs to the tenant's current creation. */
  private async sharedPointer(shared: SharedUploads, key: ModelKey): Promise<StoredPointer | undefined> {
    const stored = await shared.get(key);
    if (!stored) return undefined;
    // A pointer left by an earlier tenant of the same id is never served (DESIGN "Multi-tenancy").
    const uid = this.opts.tenants?.().get(key.namespace);
    return stored.pointer.owner === (uid ?? null) ? stored : undefined;
  }

  /**
   * A tenant's load without files when uploads are shared: the stored pointer decides; the local
   * copy serves when it is that pointer's, else the files are fetched into a new local generation.
   */
  private async locateShared(
    shared: SharedUploads,
    store: UploadStore,
    key: ModelKey,
    request: LoadOptions,
    origin: ModelOrigin,
  ): Promise<LocatedModel | undefined> {
    let stored: StoredPointer | undefined;
    try {
      stored = await this.sharedPointer(shared, key);
    } catch (e) {
      const err = asTritonError(e);
      return { origin, open: () => Promise.reject(err) };
    }
    if (!stored) return undefined;
    const { pointer, stamp } = stored;
    const configOverride = request.configOverride ?? (pointer.config === null ? undefined : pointer.config);
    const push = JSON.stringify(configOverride ?? null) !== JSON.stringify(pointer.config);
    const plan: SharedPlan = { stored: pointer.files, push, stamp };
    const synced = this.inSync.get(modelKeyId(key));
    const open = async (): Promise<ModelFiles> => {
      const local = synced?.stamp === stamp ? await store.current(key).catch(() => undefined) : undefined;
      if (local && local.generation === synced?.generation) return this.use(store, { ...local, configOverride, publish: push, shared: plan }, origin);
      const files = await shared.files(key, pointer, this.opts.maxUploadBytes ?? Number.MAX_SAFE_INTEGER);
      const owner = this.opts.tenants ? { uid: this.opts.tenants().get(key.namespace) } : undefined;
      const staged = await store.stage(key, files, configOverride, { owner });
      return this.use(
        store,
        { ...staged, configOverride, publish: true, staged, shared: plan },
        { kind: 'upload', tenant: key.namespace, digests: staged.digests },
      );
    };
    return { origin, open };
  }

  /** The files of generation `g`, held until released (or abandoned). */
  private use(store: UploadStore, g: Generation, origin: ModelOrigin): ModelFiles {
    const id = modelKeyId(g.key);
    const users = this.users.get(id) ?? new Map<number, number>();
    this.users.set(id, users);
    users.set(g.generation, (users.get(g.generation) ?? 0) + 1);
    let held = true;
    const drop = (): boolean => {
      if (!held) return false;
      held = false;
      const n = (users.get(g.generation) ?? 1) - 1;
      if (n > 0) {
        users.set(g.generation, n);
        return false;
      }
      users.delete(g.generation);
      if (users.size === 0 && this.users.get(id) === users) this.users.delete(id);
      return true;
    };
    return {
      source: this,
      origin,
      modelPath: g.modelPath,
      configOverride: g.configOverride,
      // A shared tenant model is followed by its pointer's stamp (UploadSource.sync); others by none.
      get stamp() {
        return g.shared?.stamp;
      },
      // Durable from here: a restart serves this generation with this config. With a shared store,
      // the pointer there first (every replica then serves it), the local copy after.
      commit: async () => {
        const shared = this.opts.shared;
        if (shared && g.shared?.push) {
          const owner = this.opts.tenants?.().get(g.key.namespace);
          g.shared.stamp = g.shared.files
            ? await shared.publish(g.key, g.shared.files, g.configOverride, owner, g.shared.blobs)
            : await shared.publishPointer(g.key, g.shared.stored ?? {}, g.configOverride, owner);
        }
        if (g.publish) await store.publish(g.key, g.generation, g.configOverride);
        if (g.shared?.stamp !== undefined) this.inSync.set(id, { generation: g.generation, stamp: g.shared.stamp });
      },
      abandon: async () => {
        drop();
        if (!g.staged) return;
        const log = this.opts.logger.child(g.key.namespace === '' ? { model: g.key.name } : { model: g.key.name, namespace: g.key.namespace });
        await store.discard(g.staged).catch((d: unknown) => log.error({ err: d }, 'failed to remove a failed upload'));
      },
      release: drop,
      // the model directory (somewhere in the upload store) is named by the model's name, as the uploader knows it
      publicError: (e) => relabelledError(e, { path: g.modelPath, label: g.key.name }),
    };
  }
}
