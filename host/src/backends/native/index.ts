/**
 * Trusted native backends (spec §6): real Triton backend libraries (`libtriton_<name>.so`) hosted
 * by Warden's own `libtritonserver.so` (native/) through a Node addon. This module is what the
 * server wires into its {@link BackendResolver} list, after the wasm, onnxruntime and python kinds.
 */
import { basename } from 'node:path';
import type { Logger } from 'pino';
import { libraryNotFound } from '../library-search.errors.js';
import { uploadedNotServed } from './native.errors.js';
import type { Backend, BackendResolveRequest, BackendResolver } from '../../contract/types.js';
import { nativeAddon } from '../../platform/addon.js';
import { NativeBackend } from './backend.js';
import type { NativeLeaks } from './model.js';
import { PARAM_ISOLATION } from './isolation/isolated.js';
import { backendConfigJson } from './config.js';
import { backendNameOf, findBackendLibrary, libraryFileName } from '../library-search.js';

export { NativeBackend } from './backend.js';
export { NativeModel, PARAM_EXECUTE_TIMEOUT, executeTimeoutMs, type NativeLeaks } from './model.js';
export { NativeModelInstance, FINALIZE_DRAIN_TIMEOUT_MS } from './instance.js';
export { backendConfigJson } from './config.js';
export { installNativeLogger } from './log.js';
export { NativeServerBridge, nativeServerBridge } from './server-bridge.js';
export { IsolatedNativeModel, PARAM_ISOLATION, isolationOf } from './isolation/isolated.js';

/**
 * Resolves every model whose backend no earlier resolver took to a native library found by
 * Triton's search order (spec §6.9): `<version dir>`, `<model dir>`, `<backendDirectory>/<name>/`,
 * file `runtime` or `libtriton_<name>.so`. Backend objects are cached per (name, library path) and
 * live until {@link finalizeAll}.
 */
export class NativeBackendResolver implements BackendResolver {
  private readonly backends = new Map<string, NativeBackend>();
  private readonly logger: Logger;

  /**
   * @param opts.backendDirectory `--backend-directory`
   * @param opts.backendConfig `--backend-config` settings by backend name ('' = every backend),
   *   passed to backends in TRITONBACKEND_BackendConfig's `cmdline`
   * @param opts.autoCompleteConfig false with `--disable-auto-complete-config`
   */
  constructor(
    private readonly opts: {
      backendDirectory: string;
      backendConfig?: Record<string, Record<string, string>>;
      autoCompleteConfig: boolean;
      logger: Logger;
      /** `--native-execute-timeout-ms`: default execute limit (0 = none; `warden.execute_timeout_ms` overrides). */
      executeTimeoutMs?: number;
    },
  ) {
    this.logger = opts.logger;
  }

  /**
   * The native backend serving `config`, or undefined for models without a backend (ensembles) and
   * Python-based runtimes (`runtime: "*.py"`).
   * @throws TritonError INVALID_ARG if no library is found (the message lists where it looked) or
   *   the backend name / runtime is not a plain file name.
   */
  async resolve({ config, modelPath, versionPath, origin }: BackendResolveRequest): Promise<Backend | undefined> {
    const name = backendNameOf(config);
    if (!name) return undefined;
    if (config.runtime.endsWith('.py')) return undefined;
    // Native code never comes from an upload, whatever admission let through (defence in depth):
    // the library search order would otherwise find a library inside the uploaded folder.
    if (origin.kind === 'upload') {
      throw uploadedNotServed(config.name, name);
    }
    const found = findBackendLibrary({
      backendName: name,
      runtime: config.runtime,
      modelPath,
      versionPath,
      backendDirectory: this.opts.backendDirectory,
    });
    if (!found) {
      const file = config.runtime || libraryFileName(name);
      throw libraryNotFound(file, name, config.name, basename(versionPath));
    }
    const key = `${name}\0${found.libraryPath}`;
    let backend = this.backends.get(key);
    if (!backend) {
      backend = new NativeBackend(
        name,
        found.libraryPath,
        found.artifactsDir,
        backendConfigJson({
          backendName: name,
          backendDirectory: this.opts.backendDirectory,
          autoCompleteConfig: this.opts.autoCompleteConfig,
          settings: this.opts.backendConfig,
        }),
        this.logger,
        {
          executeTimeoutMs: this.opts.executeTimeoutMs ?? 0,
          onLeaks: (model, version, leaks) => this.countLeaks(model, version, leaks),
          isolation: this.opts.backendConfig?.[name]?.[PARAM_ISOLATION] ?? this.opts.backendConfig?.['']?.[PARAM_ISOLATION],
        },
      );
      this.backends.set(key, backend);
    }
    return backend;
  }

  /** TRITONBACKEND_Finalize every backend this resolver initialised (server shutdown). */
  async finalizeAll(): Promise<void> {
    const all = [...this.backends.values()];
    this.backends.clear();
    for (const b of all) {
      await b.finalize().catch((e) => this.logger.error({ err: e, backend: b.name }, 'backend finalize failed'));
    }
  }

  /**
   * Prometheus text of the custom metrics native backends created (TRITONSERVER_MetricFamilyNew),
   * for appending to `/metrics`; '' when the native host is not loaded.
   */
  customMetricsText(): string {
    let text: string;
    try {
      text = nativeAddon().customMetricsText();
    } catch {
      return '';
    }
    if (this.leaks.size === 0) return text;
    const lines = [
      '# HELP warden_native_leaked_total Objects native backends never gave back (responses, response factories, requests), counted at unload',
      '# TYPE warden_native_leaked_total counter',
    ];
    for (const [key, n] of this.leaks) {
      const [model, version, kind] = key.split('\0') as [string, string, string];
      lines.push(`warden_native_leaked_total{model=${JSON.stringify(model)},version="${version}",kind="${kind}"} ${n}`);
    }
    return text + lines.join('\n') + '\n';
  }

  /** Leak counters by model, version and kind (`warden_native_leaked_total`). */
  private readonly leaks = new Map<string, number>();

  private countLeaks(model: string, version: number, leaks: NativeLeaks): void {
    for (const [kind, n] of [
      ['response', leaks.responses],
      ['response_factory', leaks.factories],
      ['request', leaks.requests],
    ] as const) {
      if (n <= 0) continue;
      const key = `${model}\0${version}\0${kind}`;
      this.leaks.set(key, (this.leaks.get(key) ?? 0) + n);
    }
  }
}
