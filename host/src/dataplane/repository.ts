/**
 * The repository extension on the data plane (spec §3.1): a principal's index, load (with the
 * tenant's upload quota and the server's upload cap) and unload, each audited
 * (DESIGN "Multi-tenancy": loads, unloads and deletes leave an audit line).
 */
import { sha256Of } from '../contract/content-digest.js';
import type { Logger } from 'pino';
import type { PathScrubber } from '../contract/public-errors.js';
import type { ModelKey, Principal } from '../contract/types.js';
import type { IndexEntry, LoadOptions, ModelRepositoryManager } from '../lifecycle/repository-manager.js';
import { auditEvent, type AuditFile } from '../tenancy/audit.js';
import { TenantUploadRate } from '../tenancy/request-rate.js';
import type { ModelNames } from './model-names.js';
import { uploadQuota } from './inference.errors.js';

export class RepositoryControl {
  /** Each tenant's load-request bytes per minute, charged by the frontends as requests arrive. */
  readonly uploadRate = new TenantUploadRate();

  /**
   * @param maxUploadBytes `--max-upload-bytes`: decoded size of one load request's files, any caller
   * @param logger where audit lines go (loads, unloads, deletes), and loads refused here (error level)
   */
  constructor(
    private readonly manager: ModelRepositoryManager,
    private readonly names: ModelNames,
    private readonly scrubber: PathScrubber,
    private readonly maxUploadBytes: number | undefined,
    private readonly logger: Logger | undefined,
  ) {}

  /** The index of the principal's namespace (`ready` = READY versions only); reasons carry no host paths. */
  async repositoryIndex(principal: Principal, readyOnly: boolean): Promise<IndexEntry[]> {
    const entries = await this.manager.index(readyOnly, principal.namespace);
    const shared = this.names.tenantOf(principal)?.shared_models ?? [];
    if (shared.length > 0) {
      const own = new Set(entries.map((e) => e.name));
      const operator = await this.manager.index(readyOnly, '');
      entries.push(...operator.filter((e) => shared.includes(e.name) && !own.has(e.name)));
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    }
    for (const e of entries) if (e.reason) e.reason = this.scrubber.scrub(e.reason);
    return entries;
  }

  /**
   * Load or reload a model; resolves once it is READY.
   * @throws TritonError UNAVAILABLE (not explicit mode), INVALID_ARG / NOT_FOUND / INTERNAL (load failure)
   */
  async loadModel(principal: Principal, name: string, options: LoadOptions): Promise<void> {
    const key = this.names.controlKeyOf(principal, name);
    // Hashed on the thread pool, once: the upload store names its blobs by the same digests.
    const files: AuditFile[] = await Promise.all(
      [...(options.files ?? new Map<string, Uint8Array>())].map(async ([path, data]) => ({ path, sha256: await sha256Of(data), bytes: data.length })),
    );
    const named = [...(options.fileDigests ?? new Map<string, string>())];
    const byDigest: AuditFile[] = named.map(([path, sha256]) => ({ path, sha256, bytes: 0, byDigest: true }));
    const audit = (outcome: 'ok' | 'error', reason?: string) =>
      this.logger &&
      auditEvent(this.logger, { event: 'load', tenant: auditTenant(principal, key), model: key.name, files: [...files, ...byDigest], outcome, reason });
    let handedOver = false; // from then on the lifecycle logs a failure
    try {
      if (named.length > 0) {
        // Files named by digest become the blobs the namespace holds; from here on the load is
        // the same as if they were sent (quotas count their size, the backend checks them).
        const { files: fetched, blobs } = await this.manager.resolveDigests(key, new Map(named));
        for (const f of byDigest) f.bytes = blobs.get(f.path)?.size ?? fetched.get(f.path)?.length ?? 0;
        options = { ...options, files: new Map([...(options.files ?? []), ...fetched]), blobs, fileDigests: undefined };
      }
      const tenant = this.names.tenantOf(principal);
      if (tenant) {
        const bytes = [...files, ...byDigest].reduce((n, f) => n + f.bytes, 0);
        if (bytes > tenant.quotas.max_upload_bytes) {
          throw uploadQuota(tenant.id, bytes, tenant.quotas.max_upload_bytes);
        }
      }
      handedOver = true;
      await this.manager.load(key, this.maxUploadBytes === undefined ? options : { ...options, maxUploadBytes: this.maxUploadBytes });
      audit('ok');
    } catch (e) {
      const reason = this.scrubber.publicError(e).message;
      audit('error', reason);
      // A load refused before it reaches the lifecycle (a digest the namespace does not hold, the
      // tenant's upload quota) is a failed load too: logged at the error level with its reason.
      if (!handedOver && this.logger) {
        const where = key.namespace === '' ? { model: key.name } : { model: key.name, namespace: key.namespace };
        this.logger.error({ ...where, reason }, `failed to load '${key.name}': ${reason}`);
      }
      throw e;
    }
  }

  /**
   * Unload every version of a model (succeeds for a model that is not loaded). With
   * `unloadDependents` (Triton's `unload_dependents`, TRITONSERVER_ServerUnloadModelAndDependents)
   * the loaded ensembles of the same namespace that use it, directly or not, are unloaded first.
   * @throws TritonError UNAVAILABLE (not explicit mode)
   */
  async unloadModel(principal: Principal, name: string, options: { deleteFiles?: boolean; unloadDependents?: boolean } = {}): Promise<void> {
    const key = this.names.controlKeyOf(principal, name);
    const event = options.deleteFiles ? 'delete' : 'unload';
    try {
      if (options.unloadDependents) {
        for (const dep of this.manager.dependentsOf(key)) {
          await this.manager.unload(dep, false);
          if (this.logger) auditEvent(this.logger, { event: 'unload', tenant: auditTenant(principal, dep), model: dep.name, outcome: 'ok' });
        }
      }
      await this.manager.unload(key, false, { deleteFiles: options.deleteFiles === true });
      if (this.logger) auditEvent(this.logger, { event, tenant: auditTenant(principal, key), model: key.name, outcome: 'ok' });
    } catch (e) {
      if (this.logger)
        auditEvent(this.logger, {
          event,
          tenant: auditTenant(principal, key),
          model: key.name,
          outcome: 'error',
          reason: this.scrubber.publicError(e).message,
        });
      throw e;
    }
  }
}

/** The tenant an audit line names: the model's namespace, or null for the operator's. */
function auditTenant(principal: Principal, key: ModelKey): string | null {
  return key.namespace || (principal.role === 'admin' ? null : principal.namespace);
}
