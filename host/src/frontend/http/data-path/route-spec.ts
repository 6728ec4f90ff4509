/**
 * Which model versions the native data path serves (DESIGN "The native data path"), and
 * the route it is given for one: a version whose every instance is a Triton C-API backend instance
 * in this process ({@link routeOf}), runs on a session of Warden's in-process ONNX Runtime
 * engine ({@link ortRouteOf}) or in a wasmtime sandbox ({@link wasmRouteOf}), with a configuration whose requests the data path decodes and
 * answers exactly as the TypeScript data plane would. Everything else stays on the TypeScript path.
 */
import type { ModelConfig } from '../../../contract/model-config.js';
import { tensorDataType } from '../../../contract/datatypes.js';
import type { ModelVersion } from '../../../lifecycle/model-version.js';

/** The datatypes the data path decodes and prints (fixed-size, JSON-printable). */
const NATIVE_DATATYPES = new Set(['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP32', 'FP64']);

/** The JSON the addon's `publish` takes (native/rust/data-path/src/route.rs RouteSpec). */
export interface RouteSpec {
  name: string;
  version: number;
  max_batch_size: number;
  inputs: { name: string; datatype: string; dims: number[] }[];
  /** `datatype`: the configuration's (an ONNX Runtime route's answers carry it). */
  outputs: { name: string; dims: number[]; datatype: string }[];
}

/**
 * Why `config` is not served natively, or undefined when it can be. The data path submits one
 * request per execution with no queue of its own, so a configuration that asks for a scheduler
 * (dynamic or sequence batching, ensembles, rate limits), a transaction policy, the response
 * cache, reshapes, optional or shape inputs, or datatypes it does not print stays on the
 * TypeScript path, which implements them.
 */
export function configRefusal(config: ModelConfig): string | undefined {
  if (config.platform === 'ensemble' || config.ensemble_scheduling) return 'ensemble';
  if (config.dynamic_batching) return 'dynamic batching';
  if (config.sequence_batching) return 'sequence batching';
  if (config.model_transaction_policy?.decoupled) return 'decoupled';
  if (config.response_cache?.enable) return 'response cache';
  if (config.batch_input.length > 0 || config.batch_output.length > 0) return 'batch inputs or outputs';
  if (config.instance_group.some((g) => g.passive || g.rate_limiter !== undefined)) return 'passive or rate-limited instances';
  for (const i of config.input) {
    if (i.reshape || i.optional || i.is_shape_tensor || i.allow_ragged_batch) return `input '${i.name}' is reshaped, optional, ragged or a shape tensor`;
    if (!NATIVE_DATATYPES.has(tensorDataType(i))) return `input '${i.name}' is ${tensorDataType(i)}`;
  }
  for (const o of config.output) {
    if (o.reshape || o.is_shape_tensor || o.label_filename) return `output '${o.name}' is reshaped, labelled or a shape tensor`;
    if (!NATIVE_DATATYPES.has(tensorDataType(o))) return `output '${o.name}' is ${tensorDataType(o)}`;
  }
  return undefined;
}

/**
 * The route of `version` with its instances' handles, or why it is not served natively.
 */
export function routeOf(version: ModelVersion): { spec: RouteSpec; handles: object[] } | { refusal: string } {
  const refusal = configRefusal(version.config);
  if (refusal) return { refusal };
  const handles: object[] = [];
  for (const i of version.backendInstances) {
    const h = i.nativeHandle?.();
    if (!h) return { refusal: 'instances are not in-process Triton C-API backend instances' };
    handles.push(h);
  }
  if (handles.length === 0) return { refusal: 'no instances' };
  return { spec: specOf(version), handles };
}

/**
 * The route of `version` with its instances' ONNX Runtime engine sessions (opened where they are
 * not yet), or why it is not served that way: every instance must run on Warden's in-process
 * engine (BackendModelInstance.ortSession).
 */
export async function ortRouteOf(version: ModelVersion): Promise<{ spec: RouteSpec; sessions: object[] } | { refusal: string }> {
  const refusal = configRefusal(version.config);
  if (refusal) return { refusal };
  const instances = version.backendInstances;
  if (instances.length === 0) return { refusal: 'no instances' };
  if (!instances.every((i) => i.ortSession)) return { refusal: 'instances do not run on the ONNX Runtime engine' };
  const sessions = await Promise.all(instances.map((i) => i.ortSession!()));
  if (sessions.some((s) => s === undefined)) return { refusal: 'instances do not run on the ONNX Runtime engine' };
  return { spec: specOf(version), sessions: sessions as object[] };
}

/**
 * The route of `version` with its instances' wasmtime sandbox threads and their execute deadline,
 * or why it is not served that way: every instance must be a wasmtime sandbox with a thread that
 * serves steadily now (BackendModelInstance.wasmtimeThread).
 */
export function wasmRouteOf(version: ModelVersion): { spec: RouteSpec; threads: object[]; executeMs: number } | { refusal: string } {
  const refusal = configRefusal(version.config);
  if (refusal) return { refusal };
  const instances = version.backendInstances;
  if (instances.length === 0) return { refusal: 'no instances' };
  const threads: object[] = [];
  let executeMs = 0;
  for (const i of instances) {
    const t = i.wasmtimeThread?.();
    if (!t) return { refusal: 'instances are not wasmtime sandboxes serving steadily' };
    threads.push(t.handle);
    executeMs = t.executeMs;
  }
  return { spec: specOf(version), threads, executeMs };
}

function specOf(version: ModelVersion): RouteSpec {
  const c = version.config;
  return {
    name: version.name,
    version: version.version,
    max_batch_size: c.max_batch_size,
    inputs: c.input.map((i) => ({ name: i.name, datatype: tensorDataType(i), dims: [...i.dims] })),
    outputs: c.output.map((o) => ({ name: o.name, dims: [...o.dims], datatype: tensorDataType(o) })),
  };
}
