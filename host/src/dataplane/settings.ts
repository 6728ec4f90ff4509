/**
 * The server's settings on the data plane: the trace extension (spec §3.5) and the logging
 * extension (spec §3.4), both the operator's (a tenant gets 403).
 */
import * as err from './settings.errors.js';
import type { Principal } from '../contract/types.js';
import type { ModelRepositoryManager } from '../lifecycle/repository-manager.js';
import type { TraceManager, TraceSettingsJson } from '../trace/trace-manager.js';
import type { LogSettings, LogSettingsStore } from './log-settings.js';
import type { ModelNames } from './model-names.js';

export class ServerSettings {
  constructor(
    private readonly manager: ModelRepositoryManager,
    private readonly names: ModelNames,
    private readonly logStore: LogSettingsStore,
    private readonly trace: TraceManager | undefined,
  ) {}

  /**
   * The trace settings of the server, or of `model` (its overrides over the global ones).
   * @throws TritonError INVALID_ARG "Request for unknown model : <m>" for a model that is not
   *   ready (Triton's answer); AccessError `forbidden` for a tenant; UNAVAILABLE without tracing
   */
  traceSettings(principal: Principal, model?: string): TraceSettingsJson {
    return this.traceOf(principal, model).settings(model === undefined ? undefined : this.traceModelId(principal, model));
  }

  /** Apply trace settings (POST). @throws TritonError as Triton (see TraceManager.update), AccessError `forbidden` for a tenant */
  updateTraceSettings(principal: Principal, model: string | undefined, body: unknown): TraceSettingsJson {
    const t = this.traceOf(principal, model);
    return t.update(body, model === undefined ? undefined : this.traceModelId(principal, model));
  }

  private traceOf(principal: Principal, model: string | undefined): TraceManager {
    adminOnly(principal, 'trace settings');
    if (!this.trace) throw err.tracingUnsupported();
    if (model !== undefined && !this.isKnownReady(principal, model)) throw err.traceModelUnknown(model);
    return this.trace;
  }

  /** A loaded, serving model (the trace extension's check; the model's own is_ready is not asked). */
  private isKnownReady(principal: Principal, model: string): boolean {
    try {
      const key = this.names.keyOf(principal, model);
      return this.manager.isKnown(key) && this.manager.getVersion(key, -1).isReady();
    } catch {
      return false;
    }
  }

  /** The name a model's trace settings are kept under (its key; the admin may name a tenant's). */
  private traceModelId(principal: Principal, model: string): string {
    // Model versions sample by their name (tenants' models of the same name share overrides).
    return this.names.keyOf(principal, model).name;
  }

  // ---- logging extension (spec §3.4) ----

  /** The server's log settings. @throws AccessError `forbidden` for a tenant (they are the operator's) */
  logSettings(principal: Principal): LogSettings {
    adminOnly(principal, 'logging settings');
    return this.logStore.get();
  }

  /** Apply log settings (`null` values leave a setting unchanged). @throws TritonError on bad values, AccessError `forbidden` for a tenant */
  updateLogSettings(principal: Principal, body: unknown): LogSettings {
    adminOnly(principal, 'logging settings');
    return this.logStore.update(body);
  }
}

/** @throws AccessError `forbidden` unless `principal` is an admin */
function adminOnly(principal: Principal, what: string): void {
  if (principal.role !== 'admin') throw err.settingsAdminOnly(what);
}
