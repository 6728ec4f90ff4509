/**
 * The `onnxruntime` backend (platform `onnxruntime_onnx` or `backend: "onnxruntime"`), on
 * onnxruntime-node's CPU execution provider: one InferenceSession per model instance, dynamic
 * batches concatenated along dim 0. Auto-completes inputs, outputs and max_batch_size from the
 * ONNX model when the config leaves them out (as Triton's onnxruntime backend does).
 *
 * Config `parameters` honoured: `intra_op_thread_count`, `inter_op_thread_count` (as Triton's
 * onnxruntime backend); defaults 1 / 1 so instances do not fight over cores.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import type { ModelConfig, ModelInput, ModelOutput } from '../../config/types.js';
import { internal, invalidArg } from '../../core/errors.js';
import type {
  Backend,
  BackendModel,
  BackendModelInstance,
  BackendResolveRequest,
  BackendResolver,
  ExecuteTimings,
  InferenceRequest,
  ModelLoadContext,
  ResponseSender,
} from '../../core/types.js';
import { tensorDataType } from '../../core/validate.js';
import { type DataType, toConfigDataType } from '../../tensor/datatypes.js';
import { sequenceInputNames, stateOutputTypes } from '../../scheduler/sequence-controls.js';
import { concatBatch, dataTypeFromOrt, fromOrtTensor, splitBatch, toOrtTensor } from './tensors.js';

/** True if this model is served by the onnxruntime backend. */
export function isOnnxModel(config: ModelConfig): boolean {
  return config.platform === 'onnxruntime_onnx' || config.backend === 'onnxruntime';
}

async function modelFile(ctx: ModelLoadContext): Promise<string> {
  const name = ctx.config.default_model_filename || 'model.onnx';
  const p = join(ctx.versionPath, name);
  const st = await stat(p).catch(() => undefined);
  if (!st) throw invalidArg(`unable to find '${p}' for model '${ctx.name}'`);
  // A directory holds model.onnx plus external data files.
  return st.isDirectory() ? join(p, 'model.onnx') : p;
}

function intParam(config: ModelConfig, key: string, dflt: number): number {
  const v = config.parameters[key]?.string_value;
  const n = v === undefined ? dflt : Number(v);
  if (!Number.isInteger(n) || n < 0) throw invalidArg(`parameter '${key}' must be a non-negative integer, got '${v}'`);
  return n;
}

/**
 * Backend-side auto-complete (spec §5.7): fill inputs / outputs from the ONNX graph when the
 * config has none, and max_batch_size when the first dim is dynamic on every tensor.
 */
function autoComplete(config: ModelConfig, session: ort.InferenceSession): ModelConfig | undefined {
  if (config.input.length > 0 && config.output.length > 0) return undefined;
  const meta = (list: readonly ort.InferenceSession.ValueMetadata[]) =>
    list.map((m) => {
      if (!m.isTensor) throw invalidArg(`unable to auto-complete config: '${m.name}' is not a tensor`);
      const dt = dataTypeFromOrt(m.type);
      if (!dt) throw invalidArg(`unable to auto-complete config: '${m.name}' has unsupported type ${m.type}`);
      return { name: m.name, dt, dims: m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : -1)) };
    });
  const ins = meta(session.inputMetadata);
  const outs = meta(session.outputMetadata);
  const batchable = [...ins, ...outs].every((t) => t.dims.length > 0 && t.dims[0] === -1);
  const mbs = config.max_batch_size > 0 ? config.max_batch_size : batchable ? 4 : 0;
  const strip = (d: number[]) => (mbs > 0 ? d.slice(1) : d);
  const input: ModelInput[] =
    config.input.length > 0
      ? config.input
      : ins.map((t) => ({
          name: t.name,
          data_type: toConfigDataType(t.dt) as ModelInput['data_type'],
          format: 'FORMAT_NONE',
          dims: strip(t.dims),
          is_shape_tensor: false,
          allow_ragged_batch: false,
          optional: false,
          is_non_linear_format_io: false,
        }));
  const output: ModelOutput[] =
    config.output.length > 0
      ? config.output
      : outs.map((t) => ({
          name: t.name,
          data_type: toConfigDataType(t.dt) as ModelOutput['data_type'],
          dims: strip(t.dims),
          label_filename: '',
          is_shape_tensor: false,
          is_non_linear_format_io: false,
        }));
  return { ...config, max_batch_size: mbs, input, output };
}

class OnnxInstance implements BackendModelInstance {
  /** Config inputs, then the sequence batcher's control and state inputs (spec §5.6). */
  private readonly feedNames: string[];
  /** Implicit-state outputs (not in `config.output`) and their datatypes. */
  private readonly stateOutputs: Map<string, DataType>;

  constructor(
    private readonly session: ort.InferenceSession,
    private readonly config: ModelConfig,
  ) {
    this.feedNames = [...config.input.map((i) => i.name), ...sequenceInputNames(config)];
    this.stateOutputs = stateOutputTypes(config);
  }

  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings> {
    const batched = this.config.max_batch_size > 0 && requests.length > 1;
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of this.feedNames) {
      const parts = requests.map((r) => r.inputs.find((t) => t.name === name)).filter((t) => t !== undefined);
      if (parts.length === 0) continue; // optional input not given
      if (parts.length !== requests.length) throw invalidArg(`optional input '${name}' must be given by every request of a batch`);
      const t = batched ? concatBatch(parts) : parts[0]!;
      feeds[name] = toOrtTensor(t.datatype, t.shape, t.data);
    }
    const wanted = [...new Set(requests.flatMap((r) => r.requestedOutputs))];
    const computeStartNs = process.hrtime.bigint();
    let results: ort.InferenceSession.ReturnType;
    try {
      results = await this.session.run(feeds, wanted);
    } catch (e) {
      throw internal(`onnxruntime execute failure: ${(e as Error).message}`);
    }
    const computeEndNs = process.hrtime.bigint();
    const sizes = requests.map((r) => r.batchSize);
    const perRequest = requests.map(() => [] as ReturnType<typeof fromOrtTensor>[]);
    for (const name of wanted) {
      const co = this.config.output.find((o) => o.name === name);
      const out = results[name];
      if (!out) throw internal(`onnxruntime did not produce output '${name}'`);
      const t = fromOrtTensor(name, co ? tensorDataType(co) : this.stateOutputs.get(name)!, out as ort.Tensor);
      const split = batched ? splitBatch(t, sizes) : [t];
      requests.forEach((r, i) => {
        if (r.requestedOutputs.includes(name)) perRequest[i]!.push(split[i]!);
      });
    }
    senders.forEach((s, i) => s.send({ outputs: perRequest[i]! }, true));
    return { computeStartNs, computeEndNs };
  }

  async finalize(): Promise<void> {
    await this.session.release();
  }
}

class OnnxModel implements BackendModel {
  readonly parallelInstanceLoading = true;
  constructor(
    private readonly file: string,
    private readonly options: ort.InferenceSession.SessionOptions,
    readonly config: ModelConfig | undefined,
    private readonly effective: ModelConfig,
    private readonly first: ort.InferenceSession,
  ) {}
  private firstTaken = false;

  async createInstance(): Promise<BackendModelInstance> {
    // The session opened for auto-complete serves the first instance.
    if (!this.firstTaken) {
      this.firstTaken = true;
      return new OnnxInstance(this.first, this.effective);
    }
    return new OnnxInstance(await ort.InferenceSession.create(this.file, this.options), this.effective);
  }

  async finalize(): Promise<void> {
    if (!this.firstTaken) await this.first.release();
  }
}

class OnnxRuntimeBackend implements Backend {
  readonly name = 'onnxruntime';

  async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
    const file = await modelFile(ctx);
    const options: ort.InferenceSession.SessionOptions = {
      executionProviders: ['cpu'],
      intraOpNumThreads: intParam(ctx.config, 'intra_op_thread_count', 1),
      interOpNumThreads: intParam(ctx.config, 'inter_op_thread_count', 1),
      graphOptimizationLevel: 'all',
    };
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(file, options);
    } catch (e) {
      throw invalidArg(`failed to load ONNX model '${ctx.name}' from ${file}: ${(e as Error).message}`);
    }
    try {
      const completed = ctx.autoCompleteConfig ? autoComplete(ctx.config, session) : undefined;
      const effective = completed ?? ctx.config;
      checkAgainstGraph(effective, session);
      return new OnnxModel(file, options, completed, effective, session);
    } catch (e) {
      await session.release();
      throw e;
    }
  }

  async finalize(): Promise<void> {}
}

/** Config inputs / outputs must exist in the graph (Triton's onnxruntime backend checks this). */
function checkAgainstGraph(config: ModelConfig, session: ort.InferenceSession): void {
  for (const i of config.input) {
    if (!session.inputNames.includes(i.name)) {
      throw invalidArg(`unexpected inference input '${i.name}', allowed inputs are: ${session.inputNames.join(', ')}`);
    }
  }
  for (const o of config.output) {
    if (!session.outputNames.includes(o.name)) {
      throw invalidArg(`unexpected inference output '${o.name}', allowed outputs are: ${session.outputNames.join(', ')}`);
    }
  }
}

/** Resolves `onnxruntime_onnx` / `onnxruntime` models to the single onnxruntime backend. */
export class OnnxRuntimeResolver implements BackendResolver {
  private readonly backend = new OnnxRuntimeBackend();

  async resolve({ config }: BackendResolveRequest): Promise<Backend | undefined> {
    return isOnnxModel(config) ? this.backend : undefined;
  }

  async finalizeAll(): Promise<void> {
    await this.backend.finalize();
  }
}
