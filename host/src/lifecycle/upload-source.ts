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
import { asTritonError, unavailable } from '../contract/errors.js';
import { relabelledError } from '../contract/public-errors.js';
import type { ModelKey, ModelOrigin } from '../contract/types.js';
import { UploadStore, type StoredGeneration } from '../repository/upload-store.js';
import type { KnownTenants, LoadOptions, LocatedModel, ModelFiles, ModelSource } from './model-source.js';
import { modelKeyId } from './model-state.js';

export interface UploadSourceOptions {
  /** The store's root (`--upload-directory`); undefined = uploads refused. */
  root: string | undefined;
  logger: Logger;
  /** Checks an upload's config before anything is written (`ModelAdmission.precheckUpload`). */
  precheck?: (key: ModelKey, configOverride: unknown) => void;
  /** Multi-tenant mode: the tenants file now (id → uid); a new tenant directory records its owner. */
  tenants?: () => KnownTenants;
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
}

export class UploadSource implements ModelSource {
  private storeRef: UploadStore | undefined;
  /** Why uploads are refused (no upload directory, or it is not usable); '' while they are not. */
  private disabled = 'no upload directory is configured';
  /** Per model (key id): generation → the loads' file sets holding it (serving or draining). */
  private readonly users = new Map<string, Map<number, number>>();

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
      return report.models;
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
    if (request.files && request.files.size > 0) {
      if (!this.storeRef) throw unavailable(`failed to load '${key.name}': uploads are refused: ${this.disabled}`);
      const store = this.storeRef;
      this.opts.precheck?.(key, request.configOverride);
      const owner = this.opts.tenants && key.namespace !== '' ? { uid: this.opts.tenants().get(key.namespace) } : undefined;
      const staged = await store.stage(key, request.files, request.configOverride, { maxUploadBytes: request.maxUploadBytes, owner });
      // The operator namespace's uploads are ephemeral: nothing to commit.
      const g: Generation = { ...staged, configOverride: request.configOverride, publish: key.namespace !== '', staged };
      return { origin, open: async () => this.use(store, g, origin) };
    }
    const store = this.storeRef;
    if (key.namespace === '' || !store) return undefined;
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

  /** A tenant's committed upload (a damaged one does not count). */
  async holds(key: ModelKey): Promise<boolean> {
    if (key.namespace === '') return false;
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
      if (forget && key.namespace !== '') await store.forget(key);
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
      stamp: undefined,
      // Durable from here: a restart serves this generation with this config.
      commit: async () => {
        if (g.publish) await store.publish(g.key, g.generation, g.configOverride);
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
