/**
 * `warden backend test [dir] --input in.json [--engine v8|wasmtime]`: runs the project's component
 * in this process on the server's own sandbox engines (backends/wasm: the same load-time check,
 * limits, host capabilities and response checks as the server, with the server's default caps),
 * no server. The input is a KServe v2 JSON request body (spec §1.8, what `POST
 * /v2/models/<m>/infer` takes); the result is the response in the same form, with the time each
 * step took and the memory the sandbox reserved. A failure is the server's error text.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { TritonError, asTritonError } from '../contract/errors.js';
import { backendResolveRequest, modelLoadContext } from '../contract/load-context.js';
import { elementCount, isDataType, type DataType } from '../contract/datatypes.js';
import type { ModelConfig } from '../contract/model-config.js';
import type { InferenceRequest, InferenceResponse, ResponseSender, Tensor } from '../contract/types.js';
import { loadModelConfig } from '../config/index.js';
import { jsonToTensorData, tensorDataToValues } from '../tensor/json.js';
import { WasmBackendResolver, DEFAULT_ENGINE, DEFAULT_WASM_LIMITS, PARAM_ENGINE, engineOfConfig, type EngineName } from '../backends/wasm/index.js';
import type { WasmModel } from '../backends/wasm/backend.js';
import type { SandboxedInstance } from '../backends/wasm/engine.js';
import * as err from './kit.errors.js';
import type { KitProject } from './project.js';

/** Options of {@link runProject}. */
export interface RunOptions {
  /** The KServe v2 JSON request body file. */
  input: string;
  /** The engine; default the model's `engine` parameter, else the server's default (`v8`). */
  engine?: EngineName;
  /** Executions of the request (each timed; outputs of the last are reported). Default 1. */
  runs?: number;
  /** Logger for the backend and the guest's log lines. */
  logger: Logger;
  /** Compile cache folder (default `$XDG_CACHE_HOME/warden-kit` or `~/.cache/warden-kit`). */
  cacheDir?: string;
}

/** One output as KServe v2 JSON prints it. */
export interface JsonTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
}

/** What a run gives. */
export interface RunResult {
  /** The response body as the server would give it (`model_name`, `model_version`, `outputs`). */
  response: { model_name: string; model_version: string; outputs: JsonTensor[] };
  engine: string;
  /** Load (check + compile), instance start (`model.create` + `instance.create`), each execute; ms. */
  loadMs: number;
  startMs: number;
  executeMs: number[];
  /** Linear memory the sandbox reserved: memory limit × linear memories (bytes). */
  reservedBytes: number;
  /** `memory_limit_bytes` in force (bytes per linear memory). */
  memoryLimitBytes: number;
  /** Peak resident memory of this process (bytes; the V8 engine's sandboxes run inside it). */
  peakRssBytes: number;
}

interface RequestBody {
  inputs?: { name?: unknown; shape?: unknown; datatype?: unknown; data?: unknown }[];
  outputs?: { name?: unknown }[];
}

/**
 * Reads the request body `file` into tensors for `config`.
 * @throws TritonError INVALID_ARG for a malformed body, an input the model does not declare, or
 *   data that does not match its shape (the server's JSON text)
 */
export function readRequestBody(file: string, config: ModelConfig): { inputs: Tensor[]; requested: string[] } {
  let body: RequestBody;
  try {
    body = JSON.parse(readFileSync(file, 'utf8')) as RequestBody;
  } catch (e) {
    throw err.inputInvalid(file, (e as Error).message);
  }
  if (!Array.isArray(body?.inputs) || body.inputs.length === 0) throw err.inputInvalid(file, '"inputs" must be a non-empty list');
  const inputs = body.inputs.map((i, k): Tensor => {
    const { name, shape, datatype, data } = i ?? {};
    if (typeof name !== 'string') throw err.inputInvalid(file, `inputs[${k}].name must be a string`);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0))
      throw err.inputInvalid(file, `inputs[${k}].shape must list non-negative integers`);
    if (!isDataType(datatype)) throw err.inputInvalid(file, `inputs[${k}].datatype must be a Triton datatype (FP32, INT64, BYTES ...)`);
    if (!config.input.some((c) => c.name === name))
      throw err.inputUnknown(
        config.name,
        name,
        config.input.map((c) => c.name),
      );
    const dims = shape as number[];
    return { name, datatype, shape: dims, data: jsonToTensorData(data, datatype, elementCount(dims), name) };
  });
  const requested = Array.isArray(body.outputs) && body.outputs.length > 0 ? body.outputs.map((o) => String(o?.name)) : config.output.map((o) => o.name);
  return { inputs, requested };
}

/** Default compile cache of the kit. */
export function defaultCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'warden-kit');
}

/** Runs one request on `inst`; resolves to its final response, rejects with its error. */
function executeOnce(inst: Pick<SandboxedInstance, 'execute'>, req: InferenceRequest): Promise<InferenceResponse> {
  return new Promise<InferenceResponse>((resolve, reject) => {
    let last: InferenceResponse | null = null;
    const sender: ResponseSender = {
      send(response, final) {
        if (response) last = response;
        if (final) resolve(last ?? { outputs: [] });
      },
      sendError(error, final) {
        if (final) reject(error);
      },
    };
    inst.execute([req], [sender]).catch(reject);
  });
}

function jsonOutput(t: Tensor): JsonTensor {
  const datatype = t.datatype as DataType;
  return { name: t.name, datatype, shape: [...t.shape], data: tensorDataToValues(t.data, datatype) };
}

/**
 * Loads the project's `config.pbtxt` and `1/model.wasm` the way the server loads an upload,
 * starts one instance and runs the request `opts.input` on it `opts.runs` times.
 * @throws TritonError the server's error for a refused config or component, a failing `create`,
 *   a trap, a missed deadline, an over-memory guest or a response that does not match the config
 */
export async function runProject(project: KitProject, opts: RunOptions): Promise<RunResult> {
  const name = project.manifest.name;
  let config = await loadModelConfig(project.dir, { modelName: name, autoComplete: false, versions: [1] });
  // the engine: --engine, else the model's `engine` parameter (checked as the server checks it), else
  // the server's default; --engine over the parameter drops it (the backend would follow the parameter)
  const engineName = opts.engine ?? engineOfConfig(config) ?? DEFAULT_ENGINE;
  if (opts.engine && config.parameters?.[PARAM_ENGINE]) {
    const { [PARAM_ENGINE]: _own, ...rest } = config.parameters;
    config = { ...config, parameters: rest };
  }
  const { inputs, requested } = readRequestBody(opts.input, config);
  const resolver = new WasmBackendResolver({
    cacheDir: opts.cacheDir ?? defaultCacheDir(),
    limits: { ...DEFAULT_WASM_LIMITS },
    logger: opts.logger,
    engine: engineName,
  });
  const resolve = backendResolveRequest(config, project.dir, 1, { kind: 'upload', tenant: 'kit' });
  try {
    let t = performance.now();
    const backend = await resolver.resolve(resolve);
    if (!backend) throw err.projectInvalid(join(project.dir, 'config.pbtxt'), 'backend must be "wasm"');
    const model = (await backend.loadModel(modelLoadContext(resolve, 1, { logger: opts.logger }))) as WasmModel;
    const loadMs = performance.now() - t;
    t = performance.now();
    const group = config.instance_group[0]?.name ?? name;
    const inst = await model.createInstance({ name: `${group}_0`, groupName: group, kind: 'KIND_CPU', deviceId: 0, hostPolicy: 'cpu', passive: false });
    const startMs = performance.now() - t;
    const executeMs: number[] = [];
    let response: InferenceResponse = { outputs: [] };
    try {
      for (let k = 0; k < Math.max(1, opts.runs ?? 1); k++) {
        const req: InferenceRequest = {
          id: `kit-${k}`,
          model: name,
          version: 1,
          tenant: '',
          inputs,
          requestedOutputs: requested,
          parameters: {},
          correlationId: 0,
          flags: 0,
          priority: 0,
          timeoutUs: 0,
          batchSize: config.max_batch_size > 0 ? (inputs[0]?.shape[0] ?? 1) : 1,
          cancelled: false,
        };
        t = performance.now();
        response = await executeOnce(inst, req);
        executeMs.push(performance.now() - t);
      }
    } finally {
      await model.finalize();
    }
    return {
      response: { model_name: name, model_version: '1', outputs: response.outputs.map(jsonOutput) },
      engine: engineName,
      loadMs,
      startMs,
      executeMs,
      reservedBytes: model.instanceMemoryBytes,
      memoryLimitBytes: model.limits.memoryBytes,
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    };
  } catch (e) {
    throw e instanceof TritonError ? e : asTritonError(e);
  } finally {
    await resolver.finalizeAll();
  }
}
