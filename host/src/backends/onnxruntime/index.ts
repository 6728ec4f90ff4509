/**
 * The `onnxruntime` backend (platform `onnxruntime_onnx` or `backend: "onnxruntime"`), on
 * onnxruntime-node's CPU execution provider: one InferenceSession per model instance, each on its
 * own worker thread (onnxruntime-node's `run` computes on the calling thread), dynamic batches
 * concatenated along dim 0. Auto-completes inputs, outputs and max_batch_size from the
 * ONNX model when the config leaves them out (as Triton's onnxruntime backend does).
 *
 * Config `parameters` honoured: `intra_op_thread_count`, `inter_op_thread_count` (as Triton's
 * onnxruntime backend); defaults 1 / 1 so instances do not fight over cores. Warden's own
 * `inline_run_max_us` (µs, default 100; 0 = every run on the worker thread): runs the model has
 * shown to take less than this stay on the event loop, where a thread hop would cost more. Warden's
 * `inline_engine` (`warden`, the default, or `onnxruntime-node`): what those inline runs go through,
 * Warden's in-process engine (native-engine.ts; used where it is available and passes the model's
 * tensor types, else onnxruntime-node) or always onnxruntime-node (inline-session.ts).
 */
import { dirname, relative, sep } from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import type { ModelConfig, ModelInput, ModelOutput } from '../../contract/model-config.js';
import * as errors from './onnxruntime.errors.js';
import type {
  Backend,
  BackendModel,
  BackendModelInstance,
  BackendResolveRequest,
  BackendResolver,
  ExecuteTimings,
  InferenceRequest,
  InstanceUsage,
  ModelLoadContext,
  ResponseSender,
  Tensor,
} from '../../contract/types.js';
import { tensorDataType } from '../../contract/datatypes.js';
import { type DataType, fromConfigDataType, toConfigDataType } from '../../contract/datatypes.js';
import type { OrtEngineBinding } from '../../platform/addon.js';
import { sequenceInputNames, stateOutputTypes } from '../../config/sequence-inputs.js';
import { type InlineSession, openInlineSession } from './inline-session.js';
import type { SessionMetadata, SessionWorkerInit, WireTensor } from './messages.js';
import { engineSupports, nativeOrtEngine, nativeOrtEngineUnavailable } from './native-engine.js';
import { RunPlacement, threadCpuClock, type ThreadCpuClock } from './placement.js';
import { SessionWorker, type RunResult } from './session-worker.js';
import { Supervisor } from '../supervisor.js';
import { concatBatch, dataTypeFromOrt, splitBatch } from './tensors.js';
import { externalDataRefs } from './external-data.js';
import { byteCapParameter, checkedModelFilePath, isModelDirectory, openModelFile, readOpenedModelFile } from '../../repository/model-files.js';

/** Default of the `inline_run_max_us` parameter: runs shorter than this may stay on the event loop. */
export const DEFAULT_INLINE_MAX_US = 100;

/** True if this model is served by the onnxruntime backend. */
export function isOnnxModel(config: ModelConfig): boolean {
  return config.platform === 'onnxruntime_onnx' || config.backend === 'onnxruntime';
}

/** Parameter capping the ONNX model file, bytes (default {@link DEFAULT_MODEL_FILE_MAX_BYTES}). */
export const PARAM_MODEL_FILE_MAX_BYTES = 'model_file_max_bytes';
/** Default and ceiling of `model_file_max_bytes`: 2 GiB, protobuf's limit on one message. */
export const DEFAULT_MODEL_FILE_MAX_BYTES = 2 ** 31 - 1;
/** Parameter capping each external-data file, bytes (default {@link DEFAULT_EXTERNAL_DATA_MAX_BYTES}). */
export const PARAM_EXTERNAL_DATA_MAX_BYTES = 'external_data_max_bytes';
/** Default and ceiling of `external_data_max_bytes`: 64 GiB. */
export const DEFAULT_EXTERNAL_DATA_MAX_BYTES = 64 * 2 ** 30;

/**
 * The model file ONNX Runtime opens: `<version>/<default_model_filename or model.onnx>` (a folder
 * holds `model.onnx` plus its external data), and every external-data location it names, each
 * through the confinement rule beneath the model directory (DESIGN "Multi-tenancy").
 * @returns the checked real path of the model file
 * @throws TritonError INVALID_ARG naming the field and the relative name (never a host path)
 */
export async function resolveOnnxModelFile(ctx: ModelLoadContext): Promise<string> {
  const params = ctx.config.parameters;
  const maxBytes = byteCapParameter(params, PARAM_MODEL_FILE_MAX_BYTES, DEFAULT_MODEL_FILE_MAX_BYTES, DEFAULT_MODEL_FILE_MAX_BYTES);
  const externalMax = byteCapParameter(params, PARAM_EXTERNAL_DATA_MAX_BYTES, DEFAULT_EXTERNAL_DATA_MAX_BYTES, DEFAULT_EXTERNAL_DATA_MAX_BYTES);
  const field = 'default_model_filename';
  let name = ctx.config.default_model_filename || 'model.onnx';
  const base = { modelDir: ctx.modelPath, under: String(ctx.version), field, maxBytes };
  if (await isModelDirectory({ ...base, name })) name = `${name}/model.onnx`;
  const opened = await openModelFile({ ...base, name });
  const bytes = await readOpenedModelFile(opened, { ...base, name });
  // External data is relative to the model file's directory (as ONNX Runtime resolves it), and
  // must stay beneath the model directory.
  const fileDir = relative(opened.root, dirname(opened.realPath))
    .split(sep)
    .filter((s) => s !== '')
    .join('/');
  let refs: ReturnType<typeof externalDataRefs>;
  try {
    refs = externalDataRefs(bytes);
  } catch (e) {
    // The model-relative name, as the repository shows it (never the host path).
    throw errors.modelFileRefused(ctx.name, ctx.version, name, (e as Error).message);
  }
  for (const ref of refs) {
    await checkedModelFilePath({
      modelDir: ctx.modelPath,
      under: fileDir,
      name: ref.location,
      field: `external data location of tensor ${JSON.stringify(ref.tensor.slice(0, 100))} in ${field} '${name}'`,
      maxBytes: externalMax,
    });
  }
  return opened.realPath;
}

function intParam(config: ModelConfig, key: string, dflt: number): number {
  const v = config.parameters[key]?.string_value;
  const n = v === undefined ? dflt : Number(v);
  if (!Number.isInteger(n) || n < 0) throw errors.parameterNotCount(key, v);
  return n;
}

/**
 * Backend-side auto-complete (spec §5.7): fill inputs / outputs from the ONNX graph when the
 * config has none, and max_batch_size when the first dim is dynamic on every tensor.
 */
function autoComplete(config: ModelConfig, session: SessionMetadata): ModelConfig | undefined {
  if (config.input.length > 0 && config.output.length > 0) return undefined;
  const meta = (list: readonly InferenceSession.ValueMetadata[]) =>
    list.map((m) => {
      if (!m.isTensor) throw errors.autoCompleteNotTensor(m.name);
      const dt = dataTypeFromOrt(m.type);
      if (!dt) throw errors.autoCompleteType(m.name, String(m.type));
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

/** Starts a session worker for one more instance of the model. */
type StartWorker = () => Promise<SessionWorker>;

/** How an instance opens its sessions. */
interface SessionSource {
  init: SessionWorkerInit;
  startWorker: StartWorker;
  /** Longest run (µs) allowed inline on the event loop (placement.ts); 0 = never inline. */
  inlineMaxUs: number;
  /**
   * Times inline runs for the placement: the event-loop thread's CPU clock when the session computes
   * on the calling thread alone (intra_op_thread_count 1), else undefined (wall clock).
   */
  inlineClock?: ThreadCpuClock;
  /** The in-process engine inline runs go through; undefined = onnxruntime-node. */
  engine?: OrtEngineBinding;
  /** Sessions being released in the background; the backend's finalize waits for them. */
  releases: Set<Promise<unknown>>;
}

/** Start releasing, without waiting; `releases` holds the promise until it settles. */
function releaseInBackground(releases: Set<Promise<unknown>>, release: Promise<unknown>): void {
  const p = release.catch(() => undefined).finally(() => releases.delete(p));
  releases.add(p);
}

/** Where the last runs went (supervision and tests). */
export interface RunCounts {
  inline: number;
  worker: number;
}

/**
 * One model instance: an ONNX Runtime session on its own worker thread (session-worker.ts), so a
 * run that takes longer than a thread hop never computes on the event loop and instances run in
 * parallel. Runs the model has shown to be cheaper than the hop (placement.ts) run on a second,
 * inline session instead. If the thread dies, the batch in flight fails with INTERNAL (the session
 * worker rejects its run) and the backends' one supervisor (../supervisor.ts) starts a
 * replacement: at once, then backing off while replacements keep dying young or failing to start.
 */
export class OnnxInstance implements BackendModelInstance {
  /** Config inputs, then the sequence batcher's control and state inputs (spec §5.6). */
  private readonly feedNames: string[];
  /** Output datatypes: config outputs and implicit-state outputs (spec §5.6). */
  private readonly outputTypes: Map<string, DataType>;
  private readonly placement: RunPlacement;
  /** The session workers: one serves at a time; another starts when it dies. */
  private readonly sup: Supervisor<SessionWorker>;
  private inlineSession?: InlineSession;
  /** The inline session's open, once started (it settles with the session set, or not on failure). */
  private inlineOpen?: Promise<void>;
  private finalized = false;
  /** Runs done inline and on the worker. */
  readonly runs: RunCounts = { inline: 0, worker: 0 };

  constructor(
    worker: SessionWorker,
    private readonly source: SessionSource,
    private readonly config: ModelConfig,
  ) {
    this.feedNames = [...config.input.map((i) => i.name), ...sequenceInputNames(config)];
    this.outputTypes = new Map([...config.output.map((o) => [o.name, tensorDataType(o)] as const), ...stateOutputTypes(config)]);
    this.placement = new RunPlacement(source.inlineMaxUs);
    this.sup = new Supervisor<SessionWorker>({
      start: async () => this.watch(await source.startWorker()),
      // unloaded while it started: it never serves
      stop: (w) => releaseInBackground(source.releases, w.release()),
      // the session worker rejects the run in flight itself when its thread dies (session-worker.ts)
      failInFlight: () => undefined,
    });
    this.sup.adopt(this.watch(worker));
  }

  /** Which engine the inline session runs on, once it is open (tests, supervision). */
  get inlineEngine(): InlineSession['engine'] | undefined {
    return this.inlineSession?.engine;
  }

  /** The current session worker, if one is up (supervision and tests). */
  get sessionWorker(): SessionWorker | undefined {
    return this.finalized ? undefined : this.sup.child;
  }

  /** Ready while a worker serves or its replacement starts; not once a replacement failed to start, until one serves. */
  isReady(): boolean {
    return !this.finalized && (this.sup.state === 'up' || (this.sup.state === 'restarting' && !this.sup.failing));
  }

  /** Restarts of its session worker (no sandbox memory). */
  usage(): InstanceUsage {
    return { restarts: this.sup.restarts, sandboxMemoryBytes: 0 };
  }

  /** Report `worker`'s death to the supervisor. @returns the worker */
  private watch(worker: SessionWorker): SessionWorker {
    worker.onGone((e) => this.sup.died(worker, e.message));
    return worker;
  }

  /**
   * The live worker, waiting for a replacement under way after a crash.
   * @throws TritonError UNAVAILABLE with the replacement's start error (at once while the
   *   supervisor backs off after a failed start)
   */
  private async current(): Promise<SessionWorker> {
    const worker = this.sup.child;
    if (worker) return worker;
    try {
      return await this.sup.attempt();
    } catch (e) {
      throw errors.instanceUnavailable(this.config.name, (e as Error).message);
    }
  }

  /** The inline session, or undefined while it opens (in the background; runs use the worker meanwhile). */
  private inline(): InlineSession | undefined {
    if (!this.inlineSession) void this.openInline();
    return this.inlineSession;
  }

  /** Opens the inline session once; resolves when the open settled (a failure leaves it unset). */
  private openInline(): Promise<void> {
    this.inlineOpen ??= openInlineSession(this.source.init, this.source.engine).then(
      (s) => {
        if (this.finalized) releaseInBackground(this.source.releases, s.release());
        else this.inlineSession = s;
      },
      () => {}, // the worker's session opened the same file; keep using the worker
    );
    return this.inlineOpen;
  }

  /**
   * {@link BackendModelInstance.ortSession}: the inline session's engine session (opened now if
   * it is not yet), where this instance runs requests on Warden's engine at all: the engine passes
   * the model's tensor types and inline runs are allowed (`inline_run_max_us` > 0). Runs on it are
   * one at a time, as this instance's (execute runs one batch at a time).
   */
  async ortSession(): Promise<object | undefined> {
    if (this.finalized || !this.source.engine || this.source.inlineMaxUs <= 0) return undefined;
    await this.openInline();
    return this.finalized ? undefined : this.inlineSession?.engineSession();
  }

  /**
   * Runs one batch. On the worker, inputs are copied once into buffers handed to the thread (a
   * dynamic batch's concatenation is that copy) and outputs come back without a copy; inline,
   * nothing is copied (unaligned views excepted, tensors.ts).
   * @throws TritonError INVALID_ARG for an optional input not given by every request of a batch,
   *   INTERNAL for an ONNX Runtime failure or a worker that died during the run, UNAVAILABLE if no
   *   worker can be started.
   */
  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<ExecuteTimings> {
    if (this.finalized) throw errors.instanceFinalized(this.config.name);
    const batched = this.config.max_batch_size > 0 && requests.length > 1;
    const single = requests.length === 1 ? requests[0]! : undefined;
    const inputs: { t: Tensor; owned: boolean }[] = [];
    let inputBytes = 0;
    for (const name of this.feedNames) {
      // one request (every c=1 run, most small-model runs): its input as it is, no per-run arrays
      if (single) {
        const t = findTensor(single.inputs, name);
        if (!t) continue; // optional input not given
        inputs.push({ t, owned: false });
        inputBytes += t.data.byteLength;
        continue;
      }
      const parts = requests.map((r) => findTensor(r.inputs, name)).filter((t) => t !== undefined);
      if (parts.length === 0) continue; // optional input not given
      if (parts.length !== requests.length) throw errors.optionalInputPartial(name);
      const t = batched ? concatBatch(parts) : parts[0]!;
      inputs.push({ t: { ...t, name }, owned: batched && parts.length > 1 });
      inputBytes += t.data.byteLength;
    }
    const wanted = single && !hasDuplicates(single.requestedOutputs) ? single.requestedOutputs : [...new Set(requests.flatMap((r) => r.requestedOutputs))];
    const outputs = wanted.map((name) => {
      const datatype = this.outputTypes.get(name);
      if (!datatype) throw errors.outputUndeclared(name, this.config.name);
      return { name, datatype };
    });
    const session = this.placement.inline(inputBytes) ? this.inline() : undefined;
    const result = session ? await this.runInline(session, inputs, outputs) : await this.runOnWorker(inputs, outputs);
    // an inline run timed on the wall clock where the CPU clock applies is not exact (placement.ts)
    const exact = !session || result.costUs !== undefined || !this.source.inlineClock;
    this.placement.record(inputBytes, result.costUs ?? Number(result.computeEndNs - result.computeStartNs) / 1000, exact);
    if (single) {
      // every output computed is one this request asked for (wanted = its requestedOutputs)
      senders[0]!.send({ outputs: result.outputs }, true);
      return { computeStartNs: result.computeStartNs, computeEndNs: result.computeEndNs };
    }
    const sizes = requests.map((r) => r.batchSize);
    const perRequest = requests.map(() => [] as Tensor[]);
    for (const t of result.outputs) {
      const split = batched ? splitBatch(t, sizes) : [t];
      requests.forEach((r, i) => {
        if (r.requestedOutputs.includes(t.name)) perRequest[i]!.push(split[i]!);
      });
    }
    senders.forEach((s, i) => s.send({ outputs: perRequest[i]! }, true));
    return { computeStartNs: result.computeStartNs, computeEndNs: result.computeEndNs };
  }

  private async runOnWorker(inputs: { t: Tensor; owned: boolean }[], outputs: { name: string; datatype: DataType }[]): Promise<RunResult> {
    // the worker gets buffers of its own: concatBatch made one, otherwise copy the request's view once
    const feeds: WireTensor[] = inputs.map(({ t, owned }) => ({
      name: t.name,
      datatype: t.datatype,
      shape: [...t.shape],
      data: owned ? t.data : new Uint8Array(t.data),
    }));
    const worker = await this.current();
    this.runs.worker++;
    return worker.run(feeds, outputs);
  }

  private runInline(session: InlineSession, inputs: { t: Tensor }[], outputs: { name: string; datatype: DataType }[]): Promise<RunResult> {
    this.runs.inline++;
    return session.run(
      inputs.map((i) => i.t),
      outputs,
      this.placement.wantsCpuClock ? this.source.inlineClock : undefined,
    );
  }

  /**
   * Stops the instance at once; its sessions are released in the background (an unload completes
   * without waiting for a thread hop) and the backend's finalize, at server shutdown, waits for
   * every release still in progress.
   */
  async finalize(): Promise<void> {
    this.finalized = true;
    const w = this.sup.child;
    this.sup.close();
    const s = this.inlineSession;
    this.inlineSession = undefined;
    if (w) releaseInBackground(this.source.releases, w.release());
    if (s) releaseInBackground(this.source.releases, s.release());
  }
}

/** The tensor named `name` in `list` (a loop, not `find` with a closure: once per input per run). */
function findTensor(list: readonly Tensor[], name: string): Tensor | undefined {
  for (let i = 0; i < list.length; i++) if (list[i]!.name === name) return list[i];
  return undefined;
}

/** True if a name occurs twice (output lists are a handful long). */
function hasDuplicates(names: readonly string[]): boolean {
  for (let i = 1; i < names.length; i++) if (names.lastIndexOf(names[i]!, i - 1) >= 0) return true;
  return false;
}

class OnnxModel implements BackendModel {
  readonly parallelInstanceLoading = true;
  private first?: SessionWorker;

  constructor(
    private readonly source: SessionSource,
    readonly config: ModelConfig | undefined,
    private readonly effective: ModelConfig,
    first: SessionWorker,
  ) {
    this.first = first;
  }

  async createInstance(): Promise<BackendModelInstance> {
    // The worker opened for auto-complete serves the first instance.
    const first = this.first;
    this.first = undefined;
    return new OnnxInstance(first ?? (await this.source.startWorker()), this.source, this.effective);
  }

  async finalize(): Promise<void> {
    await this.first?.release();
    this.first = undefined;
  }
}

class OnnxRuntimeBackend implements Backend {
  readonly name = 'onnxruntime';
  private readonly releases = new Set<Promise<unknown>>();

  /** @param clock see {@link OnnxRuntimeResolver}'s constructor */
  constructor(private readonly clock?: ThreadCpuClock | null) {}

  async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
    const file = await resolveOnnxModelFile(ctx);
    const inlineEngine = ctx.config.parameters['inline_engine']?.string_value ?? 'warden';
    if (inlineEngine !== 'warden' && inlineEngine !== 'onnxruntime-node') {
      throw errors.inlineEngineInvalid(String(inlineEngine));
    }
    const init: SessionWorkerInit = {
      file,
      options: {
        executionProviders: ['cpu'],
        intraOpNumThreads: intParam(ctx.config, 'intra_op_thread_count', 1),
        interOpNumThreads: intParam(ctx.config, 'inter_op_thread_count', 1),
        graphOptimizationLevel: 'all',
      },
    };
    const source: SessionSource = {
      init,
      startWorker: () => SessionWorker.start(init, ctx.name),
      inlineMaxUs: intParam(ctx.config, 'inline_run_max_us', DEFAULT_INLINE_MAX_US),
      inlineClock: init.options.intraOpNumThreads === 1 ? (this.clock === undefined ? threadCpuClock() : (this.clock ?? undefined)) : undefined,
      releases: this.releases,
    };
    const first = await source.startWorker();
    try {
      const completed = ctx.autoCompleteConfig ? autoComplete(ctx.config, first.metadata) : undefined;
      const effective = completed ?? ctx.config;
      checkAgainstGraph(effective, first.metadata);
      if (inlineEngine === 'warden') source.engine = this.inlineEngine(effective, ctx);
      return new OnnxModel(source, completed, effective, first);
    } catch (e) {
      await first.release();
      throw e;
    }
  }

  /** The in-process engine for `config`'s inline runs, if it may serve them. */
  private inlineEngine(config: ModelConfig, ctx: ModelLoadContext): OrtEngineBinding | undefined {
    if (!engineCanPass(config)) return undefined;
    const engine = nativeOrtEngine();
    if (!engine) ctx.logger.warn(`inline runs use onnxruntime-node: Warden's ONNX Runtime engine is unavailable (${nativeOrtEngineUnavailable()})`);
    return engine;
  }

  /** Server shutdown: waits for every session release still in progress. */
  async finalize(): Promise<void> {
    while (this.releases.size > 0) await Promise.all([...this.releases]);
  }
}

/** True if every tensor the model exchanges (inputs, outputs, sequence controls and states) has a type the engine passes. */
function engineCanPass(config: ModelConfig): boolean {
  const sb = config.sequence_batching;
  const types: (DataType | undefined)[] = [
    ...config.input.map(tensorDataType),
    ...config.output.map(tensorDataType),
    ...(sb?.state ?? []).map((st) => fromConfigDataType(st.data_type)),
    // START / READY / END are INT32, FP32 or BOOL tensors (all passed); CORRID has its own type
    ...(sb?.control_input ?? []).flatMap((c) => c.control.map((k) => (k.kind === 'CONTROL_SEQUENCE_CORRID' ? fromConfigDataType(k.data_type) : 'INT32'))),
  ];
  return types.every((t) => t !== undefined && engineSupports(t));
}

/** Config inputs / outputs must exist in the graph (Triton's onnxruntime backend checks this). */
function checkAgainstGraph(config: ModelConfig, session: SessionMetadata): void {
  for (const i of config.input) {
    if (!session.inputNames.includes(i.name)) {
      throw errors.sessionInputUnknown(i.name, session.inputNames);
    }
  }
  for (const o of config.output) {
    if (!session.outputNames.includes(o.name)) {
      throw errors.sessionOutputUnknown(o.name, session.outputNames);
    }
  }
}

/** Resolves `onnxruntime_onnx` / `onnxruntime` models to the single onnxruntime backend. */
export class OnnxRuntimeResolver implements BackendResolver {
  private readonly backend: OnnxRuntimeBackend;

  /**
   * @param options.inlineClock the thread CPU clock inline runs are timed with (tests); null = the
   *   wall clock; left out = the addon's ({@link threadCpuClock}), where it loads
   */
  constructor(options: { inlineClock?: ThreadCpuClock | null } = {}) {
    this.backend = new OnnxRuntimeBackend(options.inlineClock);
  }

  async resolve({ config }: BackendResolveRequest): Promise<Backend | undefined> {
    return isOnnxModel(config) ? this.backend : undefined;
  }

  async finalizeAll(): Promise<void> {
    await this.backend.finalize();
  }
}
