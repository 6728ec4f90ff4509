/**
 * Sandboxed backends (`backend: "wasm"`): the public entry point the server wires into its list
 * of {@link BackendResolver}s. See wit/README.md for the backend API, the sandbox rules and the
 * model parameters (`memory_limit_bytes`, `execute_timeout_ms`, `log_limit_bytes`).
 */
import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Backend, BackendResolveRequest, BackendResolver } from '../../core/types.js';
import type { ModelConfig } from '../../config/types.js';
import { WasmBackend } from './backend.js';
import { checkEngineName, createEngine, DEFAULT_ENGINE, type EngineName } from './engines.js';
import { checkWasmLimits, type WasmLimits } from './limits.js';

export type { WasmLimits, ModelLimits } from './limits.js';
export { DEFAULT_WASM_LIMITS, checkWasmLimits, modelLimits, PARAM_LOG, PARAM_MEMORY, PARAM_TIMEOUT } from './limits.js';
export { WasmBackend, WasmModel, DEFAULT_COMPONENT_FILE } from './backend.js';
export type { SandboxEngine, SandboxedInstance, SandboxStats, CompiledComponent, CompileInput, HostConfig } from './engine.js';
export { ENGINE_NAMES, DEFAULT_ENGINE, checkEngineName, createEngine, type EngineName } from './engines.js';
export { checkComponent, componentSurface, ALLOWED_IMPORTS, SANDBOX_MEMBERS, BACKEND_EXPORT, BACKEND_API_VERSION } from './component-check.js';

/** The backend name in model configs that selects the sandboxed engine. */
export const WASM_BACKEND_NAME = 'wasm';

/**
 * Resolves `backend: "wasm"` models to the one {@link WasmBackend} it owns, on the engine named
 * by `opts.engine`.
 *
 * @param opts.cacheDir folder for the engine's compile cache (created if missing); one subfolder
 *   per component SHA-256
 * @param opts.limits server-wide caps on memory (bytes per linear memory), execute deadline (ms)
 *   and log budget (bytes and messages per call); per-model parameters may only lower them
 * @param opts.logger server logger; the backend logs under `{ backend: 'wasm' }`
 * @param opts.engine sandbox engine, one of `ENGINE_NAMES` (default `v8`)
 * @throws RangeError for a cap that is not a positive integer or an unknown engine
 */
export class WasmBackendResolver implements BackendResolver {
  private backend?: WasmBackend;
  private readonly cacheDir: string;
  private readonly limits: Required<WasmLimits>;
  private readonly logger: Logger;
  private readonly engine: EngineName;

  constructor(opts: { cacheDir: string; limits: WasmLimits; logger: Logger; engine?: EngineName }) {
    this.limits = checkWasmLimits(opts.limits);
    this.engine = checkEngineName(opts.engine ?? DEFAULT_ENGINE);
    this.cacheDir = opts.cacheDir;
    this.logger = opts.logger.child({ backend: WASM_BACKEND_NAME });
  }

  /** The wasm backend for `backend: "wasm"` configs; undefined for any other model. */
  async resolve({ config }: BackendResolveRequest): Promise<Backend | undefined> {
    if (config.backend !== WASM_BACKEND_NAME) return undefined;
    if (!this.backend) {
      mkdirSync(this.cacheDir, { recursive: true });
      this.backend = new WasmBackend(createEngine(this.engine, { cacheDir: this.cacheDir }), this.limits, this.logger);
    }
    return this.backend;
  }

  async finalizeAll(): Promise<void> {
    const b = this.backend;
    this.backend = undefined;
    if (b) await b.finalize();
  }
}
