/**
 * One native Triton backend library (`libtriton_<name>.so`), initialised once at the first model
 * load that needs it and shared by all its models (spec §6.2).
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../../contract/model-config.js';
import type { Backend, BackendModel, ModelLoadContext } from '../../contract/types.js';
import { fromAddonError, nativeAddon, type BackendHandle, type ModelHandle } from '../../platform/addon.js';
import { configJson, responseContract } from './config.js';
import { mergeAutoCompletedConfig } from '../../config/autocomplete.js';
import { ensureNativeLogger } from './log.js';
import { executeTimeoutMs, NativeModel, type NativeLeaks } from './model.js';
import { nativeServerBridge, type ServerCallHandler } from './server-bridge.js';
import { IsolatedNativeModel, isolationOf, shmBytesOf } from './isolation/isolated.js';

export class NativeBackend implements Backend {
  private handle?: Promise<BackendHandle>;

  /**
   * @param name backend name (`backend:` or the platform's backend)
   * @param libraryPath the library found by the search order (spec §6.9)
   * @param artifactsDir what TRITONBACKEND_BackendArtifacts reports (the library's directory)
   * @param backendConfigJson TRITONBACKEND_BackendConfig message, `{"cmdline":{...}}`
   * @param opts.executeTimeoutMs server default execute limit, ms (0 = none)
   * @param opts.onLeaks told what each model left behind at unload
   */
  constructor(
    readonly name: string,
    readonly libraryPath: string,
    readonly artifactsDir: string,
    private readonly backendConfigJson: string,
    private readonly logger: Logger,
    private readonly opts: {
      executeTimeoutMs: number;
      onLeaks?: (model: string, version: number, leaks: NativeLeaks) => void;
      /** `warden.isolation` from `--backend-config` for this backend (a model's parameter wins). */
      isolation?: string;
      /** True in the backend-host process itself: load in-process, whatever the config says. */
      inBackendHostProcess?: boolean;
      /** Where models' in-process inference calls go instead of this process's data plane (a backend-host process: to Warden). */
      serverCalls?: () => ServerCallHandler;
    } = { executeTimeoutMs: 0 },
  ) {}

  /** dlopen + TRITONBACKEND_Initialize, once; a failure is not cached (the next load retries). */
  private backend(): Promise<BackendHandle> {
    if (!this.handle) {
      const addon = nativeAddon();
      ensureNativeLogger(addon, this.logger);
      this.handle = addon
        .loadBackend({ name: this.name, libraryPath: this.libraryPath, artifactsDir: this.artifactsDir, configJson: this.backendConfigJson })
        .then((h) => {
          this.logger.info({ library: this.libraryPath, ...h.attributes() }, `backend '${this.name}' initialized`);
          return h;
        })
        .catch((e) => {
          this.handle = undefined;
          throw fromAddonError(e);
        });
    }
    return this.handle;
  }

  /**
   * Load one model version: TRITONBACKEND_Initialize if this is the library's first model, then
   * TRITONBACKEND_ModelInitialize with the normalised config JSON (off the JS thread). A config the
   * backend set with TRITONBACKEND_ModelSetConfig is merged and re-normalised (spec §5.7).
   * @throws TritonError with the backend's code and message (the model becomes UNAVAILABLE).
   */
  async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
    if (!this.opts.inBackendHostProcess && isolationOf(ctx.config, this.opts.isolation) === 'process') {
      // Crash isolation: the backend-host process loads this library and model (isolation/isolated.ts).
      return IsolatedNativeModel.load(
        {
          backend: { name: this.name, libraryPath: this.libraryPath, artifactsDir: this.artifactsDir, configJson: this.backendConfigJson },
          model: {
            name: ctx.name,
            version: ctx.version,
            modelPath: ctx.modelPath,
            versionPath: ctx.versionPath,
            config: ctx.config,
            autoCompleteConfig: ctx.autoCompleteConfig,
          },
        },
        ctx.logger,
        executeTimeoutMs(ctx.config, this.opts.executeTimeoutMs),
        shmBytesOf(ctx.config),
        (leaks) => this.opts.onLeaks?.(ctx.name, ctx.version, leaks),
        ctx,
      );
    }
    const be = await this.backend();
    const bridge = nativeServerBridge(nativeAddon());
    // the model's calls carry the call chain and trace of the requests it holds (set once it exists)
    const loaded: { model?: NativeModel } = {};
    const serverOwner = bridge.register(ctx, this.opts.serverCalls?.(), () => loaded.model?.waitingRequests() ?? []);
    let model: ModelHandle;
    try {
      model = await be.loadModel({
        name: ctx.name,
        version: ctx.version,
        repositoryPath: ctx.modelPath,
        configJson: configJson(ctx.config),
        autoCompleteConfig: ctx.autoCompleteConfig,
        ...responseContract(ctx.config),
        serverOwner,
      });
    } catch (e) {
      bridge.unregister(serverOwner);
      throw fromAddonError(e);
    }
    let completed: ModelConfig | undefined;
    const setJson = model.setConfigJson();
    if (setJson !== null) {
      try {
        completed = mergeAutoCompletedConfig(ctx.config, this.name, setJson);
        const contract = responseContract(completed);
        model.updateConfig(configJson(completed), contract.outputs, contract.decoupled);
      } catch (e) {
        await model.unload().catch(() => undefined);
        bridge.unregister(serverOwner);
        throw fromAddonError(e);
      }
    }
    const { parallelInstanceLoading } = be.attributes();
    let timeoutMs: number;
    try {
      // Inside a backend-host process the parent enforces the limit (it kills the process).
      timeoutMs = this.opts.inBackendHostProcess ? 0 : executeTimeoutMs(completed ?? ctx.config, this.opts.executeTimeoutMs);
    } catch (e) {
      await model.unload().catch(() => undefined);
      bridge.unregister(serverOwner);
      throw e;
    }
    loaded.model = new NativeModel(model, completed, completed ?? ctx.config, parallelInstanceLoading, ctx.logger, {
      executeTimeoutMs: timeoutMs,
      onFinalized: (leaks) => {
        bridge.unregister(serverOwner);
        this.opts.onLeaks?.(ctx.name, ctx.version, leaks);
      },
    });
    return loaded.model;
  }

  /** TRITONBACKEND_Finalize and dlclose (server shutdown, after every model was unloaded). */
  async finalize(): Promise<void> {
    const pending = this.handle;
    this.handle = undefined;
    const h = pending ? await pending.catch(() => undefined) : undefined;
    if (!h) return;
    try {
      await h.unload();
    } catch (e) {
      throw fromAddonError(e);
    }
  }
}
