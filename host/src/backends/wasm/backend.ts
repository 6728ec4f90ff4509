/**
 * The `wasm` backend with the V8 engine (DESIGN "Backend kinds"): loads a model version's
 * component (`<version>/model.wasm`), checks it against the `sandbox` world, transpiles it with
 * jco (cached by content hash), caps its memories, compiles the core modules once, and gives each
 * model instance its own sandbox worker (./instance.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { invalidArg, notFound, TritonError } from '../../core/errors.js';
import type { Backend, BackendModel, BackendModelInstance, InstanceSpec, ModelLoadContext } from '../../core/types.js';
import type { ModelConfig } from '../../config/types.js';
import { fromConfigDataType } from '../../tensor/datatypes.js';
import { checkComponent } from './component-check.js';
import { modelLimits, type ModelLimits, type WasmLimits } from './limits.js';
import { capMemories, WASM_PAGE_BYTES } from './memory-cap.js';
import type { OutputSpec, WorkerInit } from './protocol.js';
import { SandboxInstance } from './instance.js';
import { transpileCached } from './transpile.js';

/** Default component file name in a version directory. */
export const DEFAULT_COMPONENT_FILE = 'model.wasm';

/** Largest component accepted (bytes). */
const MAX_COMPONENT_BYTES = 512 * 1024 * 1024;

/** Outputs as the backend must produce them (config `reshape.shape` if set, else `dims`). */
function outputSpecs(config: ModelConfig): OutputSpec[] {
  return config.output.map((o) => {
    const datatype = fromConfigDataType(o.data_type);
    if (!datatype) throw invalidArg(`model '${config.name}': output '${o.name}' has unsupported data_type ${o.data_type}`);
    return { name: o.name, datatype, dims: o.reshape ? o.reshape.shape : o.dims };
  });
}

/** A loaded sandboxed model version: compiled modules shared by its instances. */
export class WasmModel implements BackendModel {
  readonly parallelInstanceLoading = true;
  private readonly instances = new Set<SandboxInstance>();

  constructor(
    private readonly ctx: ModelLoadContext,
    private readonly init: Omit<WorkerInit, 'cancelFlags' | 'instance'>,
    readonly limits: ModelLimits,
    /** SHA-256 of the component. */
    readonly componentHash: string,
  ) {}

  /**
   * Starts one instance: a sandbox worker running `model.create` and `instance.create`.
   * @throws TritonError the backend's own error from `create`, INTERNAL on a trap, UNAVAILABLE on
   *   a start-up timeout.
   */
  async createInstance(spec: InstanceSpec): Promise<BackendModelInstance> {
    const inst = await SandboxInstance.start({ init: this.init, spec, logger: this.ctx.logger, executeMs: this.limits.executeMs });
    this.instances.add(inst);
    const finalize = inst.finalize.bind(inst);
    inst.finalize = async () => {
      this.instances.delete(inst);
      await finalize();
    };
    return inst;
  }

  /** The instances currently alive (for tests and statistics). */
  liveInstances(): SandboxInstance[] {
    return [...this.instances];
  }

  async finalize(): Promise<void> {
    await Promise.all([...this.instances].map((i) => i.finalize()));
  }
}

/** The `wasm` backend: one per resolver, shared by every sandboxed model. */
export class WasmBackend implements Backend {
  readonly name = 'wasm';
  private readonly models = new Set<WasmModel>();

  constructor(
    private readonly cacheDir: string,
    private readonly caps: WasmLimits,
    private readonly logger: Logger,
  ) {}

  /**
   * Loads one model version: reads `<version>/<default_model_filename or model.wasm>`, checks
   * the component against the sandbox world (before anything else), transpiles (cached), caps
   * every linear memory at the model's memory limit and compiles the core modules.
   * @throws TritonError NOT_FOUND for a missing component file, INVALID_ARG for a refused or
   *   malformed component or bad limit parameters, INTERNAL for cache failures.
   */
  async loadModel(ctx: ModelLoadContext): Promise<WasmModel> {
    const t0 = performance.now();
    const config = ctx.config;
    const limits = modelLimits(config, this.caps);
    const file = config.default_model_filename || DEFAULT_COMPONENT_FILE;
    if (file.includes('/') || file.includes('\\') || file === '..') throw invalidArg(`model '${ctx.name}': default_model_filename '${file}' must be a file name`);
    const path = join(ctx.versionPath, file);
    let bytes: Uint8Array;
    try {
      const st = await stat(path);
      if (!st.isFile()) throw notFound(`model '${ctx.name}' version ${ctx.version}: ${file} is not a file`);
      if (st.size > MAX_COMPONENT_BYTES) throw invalidArg(`model '${ctx.name}': ${file} is ${st.size} bytes, more than ${MAX_COMPONENT_BYTES}`);
      bytes = await readFile(path);
    } catch (e) {
      if (e instanceof TritonError) throw e;
      throw notFound(`unable to find '${path}' for model '${ctx.name}' version ${ctx.version} (backend wasm expects a component at <version>/${file})`);
    }
    const what = `model '${ctx.name}' version ${ctx.version}: ${file}`;
    checkComponent(bytes, what);
    const outputs = outputSpecs(config);
    const transpiled = await transpileCached(bytes, this.cacheDir, what);

    const maxPages = limits.memoryBytes / WASM_PAGE_BYTES;
    const modules: Record<string, WebAssembly.Module> = {};
    for (const name of transpiled.coreModules) {
      const core = await readFile(join(transpiled.dir, name));
      const capped = capMemories(core, maxPages, `${what} (core module ${name})`);
      try {
        modules[name] = await WebAssembly.compile(capped.bytes as Uint8Array<ArrayBuffer>);
      } catch (e) {
        throw invalidArg(`${what}: core module ${name} does not compile: ${(e as Error).message}`);
      }
    }
    const init: Omit<WorkerInit, 'cancelFlags' | 'instance'> = {
      glueUrl: pathToFileURL(transpiled.gluePath).href,
      modules,
      model: {
        name: ctx.name,
        version: ctx.version,
        configJson: JSON.stringify(config),
        versionPath: ctx.versionPath,
        decoupled: config.model_transaction_policy?.decoupled === true,
        maxBatchSize: config.max_batch_size,
      },
      outputs,
      limits,
    };
    const model = new WasmModel(ctx, init, limits, transpiled.hash);
    const finalize = model.finalize.bind(model);
    model.finalize = async () => {
      this.models.delete(model);
      await finalize();
    };
    this.models.add(model);
    ctx.logger.info(
      { component: transpiled.hash.slice(0, 16), memoryLimitBytes: limits.memoryBytes, executeTimeoutMs: limits.executeMs, loadMs: Math.round(performance.now() - t0) },
      'sandboxed model loaded',
    );
    return model;
  }

  async finalize(): Promise<void> {
    const all = [...this.models];
    this.models.clear();
    await Promise.all(all.map((m) => m.finalize()));
    this.logger.debug('wasm backend finalized');
  }
}
