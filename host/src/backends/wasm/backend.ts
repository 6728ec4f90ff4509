/**
 * The `wasm` backend, engine-neutral (DESIGN "Backend kinds", "Sandbox rules"): loads a model
 * version's component (`<version>/model.wasm`, size-capped), checks it against the `sandbox`
 * world before anything else sees it, works out the model's limits and output specs, and hands
 * the checked component to its {@link SandboxEngine} to compile (once per model version) and to
 * instantiate (once per model instance).
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { invalidArg, notFound, TritonError } from '../../core/errors.js';
import type { Backend, BackendModel, InstanceSpec, ModelLoadContext } from '../../core/types.js';
import type { ModelConfig } from '../../config/types.js';
import { fromConfigDataType } from '../../tensor/datatypes.js';
import { checkComponent } from './component-check.js';
import type { CompiledComponent, HostConfig, SandboxedInstance, SandboxEngine } from './engine.js';
import { modelLimits, type ModelLimits, type WasmLimits } from './limits.js';
import type { OutputSpec } from './wire.js';

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

/**
 * Reads `<version>/<file>` with the size cap.
 * @throws TritonError NOT_FOUND for a missing file or a non-file, INVALID_ARG for one above
 *   {@link MAX_COMPONENT_BYTES}
 */
async function readComponent(ctx: ModelLoadContext, file: string): Promise<Uint8Array> {
  const path = join(ctx.versionPath, file);
  try {
    const st = await stat(path);
    if (!st.isFile()) throw notFound(`model '${ctx.name}' version ${ctx.version}: ${file} is not a file`);
    if (st.size > MAX_COMPONENT_BYTES) throw invalidArg(`model '${ctx.name}': ${file} is ${st.size} bytes, more than ${MAX_COMPONENT_BYTES}`);
    return await readFile(path);
  } catch (e) {
    if (e instanceof TritonError) throw e;
    throw notFound(`unable to find '${path}' for model '${ctx.name}' version ${ctx.version} (backend wasm expects a component at <version>/${file})`);
  }
}

/** A loaded sandboxed model version: the compiled component shared by its instances. */
export class WasmModel implements BackendModel {
  readonly parallelInstanceLoading = true;
  private readonly instances = new Set<SandboxedInstance>();
  private released = false;

  constructor(
    private readonly ctx: ModelLoadContext,
    /** The engine that compiled the component and runs the instances. */
    readonly engine: SandboxEngine,
    private readonly compiled: CompiledComponent,
    private readonly host: HostConfig,
  ) {}

  /** Limits in force for this model. */
  get limits(): ModelLimits {
    return this.host.limits;
  }

  /** SHA-256 of the component. */
  get componentHash(): string {
    return this.compiled.hash;
  }

  /**
   * Starts one instance in a fresh sandbox: `model.create`, then `instance.create`.
   * @throws TritonError the backend's own error from `create`, INTERNAL on a trap, UNAVAILABLE on
   *   a start-up timeout.
   */
  async createInstance(spec: InstanceSpec): Promise<SandboxedInstance> {
    const inst = await this.engine.instantiate(this.compiled, spec, this.host, this.host.limits.executeMs, this.ctx.logger);
    this.instances.add(inst);
    const finalize = inst.finalize.bind(inst);
    inst.finalize = async () => {
      this.instances.delete(inst);
      await finalize();
    };
    return inst;
  }

  /** The instances currently alive (for tests and statistics). */
  liveInstances(): SandboxedInstance[] {
    return [...this.instances];
  }

  /** Finalizes the instances, then releases the compiled component (once). */
  async finalize(): Promise<void> {
    await Promise.all([...this.instances].map((i) => i.finalize()));
    if (this.released) return;
    this.released = true;
    this.engine.release(this.compiled);
  }
}

/** The `wasm` backend: one per resolver, shared by every sandboxed model, on one engine. */
export class WasmBackend implements Backend {
  readonly name = 'wasm';
  private readonly models = new Set<WasmModel>();

  /**
   * @param engine the engine that compiles and runs every model of this backend (the resolver
   *   creates the `v8` engine unless told otherwise); disposed by {@link finalize}
   * @param caps server-wide caps; per-model parameters may only lower them
   */
  constructor(
    readonly engine: SandboxEngine,
    private readonly caps: WasmLimits,
    private readonly logger: Logger,
  ) {}

  /**
   * Loads one model version: reads `<version>/<default_model_filename or model.wasm>`, checks
   * the component against the sandbox world (before anything else), then has the engine compile
   * it under the model's limits.
   * @throws TritonError NOT_FOUND for a missing component file, INVALID_ARG for a refused or
   *   malformed component or bad limit parameters, INTERNAL for cache failures.
   */
  async loadModel(ctx: ModelLoadContext): Promise<WasmModel> {
    const t0 = performance.now();
    const config = ctx.config;
    const limits = modelLimits(config, this.caps);
    const file = config.default_model_filename || DEFAULT_COMPONENT_FILE;
    if (file.includes('/') || file.includes('\\') || file === '..') throw invalidArg(`model '${ctx.name}': default_model_filename '${file}' must be a file name`);
    const bytes = await readComponent(ctx, file);
    const what = `model '${ctx.name}' version ${ctx.version}: ${file}`;
    const surface = checkComponent(bytes, what);
    const outputs = outputSpecs(config);
    const hash = createHash('sha256').update(bytes).digest('hex');
    const compiled = await this.engine.compile({ bytes, hash, surface, limits, what });
    const host: HostConfig = {
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
    const model = new WasmModel(ctx, this.engine, compiled, host);
    const finalize = model.finalize.bind(model);
    model.finalize = async () => {
      this.models.delete(model);
      await finalize();
    };
    this.models.add(model);
    ctx.logger.info(
      { engine: this.engine.name, component: hash.slice(0, 16), memoryLimitBytes: limits.memoryBytes, executeTimeoutMs: limits.executeMs, loadMs: Math.round(performance.now() - t0) },
      'sandboxed model loaded',
    );
    return model;
  }

  async finalize(): Promise<void> {
    const all = [...this.models];
    this.models.clear();
    await Promise.all(all.map((m) => m.finalize()));
    await this.engine.dispose();
    this.logger.debug('wasm backend finalized');
  }
}
