/**
 * Model admission: what the server checks on a model's config before any backend sees it or any
 * instance is allocated (DESIGN "Multi-tenancy", trust boundary). Two rules:
 *
 * - Counts from a config are bounded by server-wide caps before anything is allocated
 *   (`instance_group` counts: a config asking for 2^31 instances is refused, not attempted; priority
 *   levels, sequence slots, preferred batch sizes and implicit-state bytes: {@link ServerCaps}).
 * - Files that came through the load API (origin `upload`) can never make the server run native
 *   code: an upload may only name a backend the server runs itself, in a sandbox or as a data
 *   interpreter (`wasm`, and ONNX Runtime models where allowed). Native Triton backends, Python
 *   models, ensembles of unknown kinds and any `runtime` override are refused with a clear error.
 *   Operators install native and Python backends on disk (`--backend-directory`, their own
 *   repositories).
 */
import type { ModelConfig } from '../contract/model-config.js';
import type { ModelKey, ModelOrigin } from '../contract/types.js';
import { instanceCount, type ModelAdmission } from '../contract/admission.js';
import * as lifecycleErrors from './lifecycle.errors.js';

/**
 * Server-wide caps every model is held to, operator models included (CLI flags; see
 * {@link DEFAULT_SERVER_CAPS}): the config numbers the server allocates in proportion to.
 */
export interface ServerCaps {
  /** Most instances one model version may have (sum of its instance groups' counts). `--max-instances-per-model`. */
  maxInstancesPerModel: number;
  /** Most `dynamic_batching.priority_levels`. `--max-priority-levels`. */
  maxPriorityLevels?: number;
  /**
   * Most sequence slots per instance: `sequence_batching.oldest.max_candidate_sequences`, and
   * `max_batch_size` with the direct strategy. `--max-sequence-slots`.
   */
  maxSequenceSlots?: number;
  /** Most entries of a `preferred_batch_size` list (dynamic and oldest batching). `--max-preferred-batch-sizes`. */
  maxPreferredBatchSizes?: number;
  /** Most bytes of one implicit sequence state (`sequence_batching.state`, initial state included), bytes. `--max-state-bytes`. */
  maxStateBytes?: number;
}

/** 64 instances per model, 1024 priority levels, 1024 sequence slots per instance, 64 preferred batch sizes, 64 MiB per sequence state. */
export const DEFAULT_SERVER_CAPS: Readonly<Required<ServerCaps>> = Object.freeze({
  maxInstancesPerModel: 64,
  maxPriorityLevels: 1024,
  maxSequenceSlots: 1024,
  maxPreferredBatchSizes: 64,
  maxStateBytes: 64 * 1024 * 1024,
});

/** Bytes per element of a config data type (BYTES/STRING: 4, the length prefix of an empty string). */
const CONFIG_TYPE_BYTES: Readonly<Record<string, number>> = Object.freeze({
  TYPE_BOOL: 1,
  TYPE_UINT8: 1,
  TYPE_INT8: 1,
  TYPE_UINT16: 2,
  TYPE_INT16: 2,
  TYPE_FP16: 2,
  TYPE_BF16: 2,
  TYPE_UINT32: 4,
  TYPE_INT32: 4,
  TYPE_FP32: 4,
  TYPE_STRING: 4,
  TYPE_UINT64: 8,
  TYPE_INT64: 8,
  TYPE_FP64: 8,
});

/** Bytes of a state of `dims` (-1 counts as 1) of `dataType`; Infinity when not a finite count. */
function stateBytes(dataType: string, dims: readonly number[]): number {
  let n = CONFIG_TYPE_BYTES[dataType] ?? 8;
  for (const d of dims) n *= Math.max(1, Number(d));
  return Number.isFinite(n) ? n : Infinity;
}

/**
 * Holds `config` to the allocating caps of {@link ServerCaps} (all but the instance count), before
 * any scheduler or state exists.
 * @throws TritonError INVALID_ARG `model '<m>': <field> <n> exceeds this server's bound <cap> (--<flag>)`
 */
export function checkServerCaps(model: string, config: ModelConfig, caps: ServerCaps): void {
  const c = { ...DEFAULT_SERVER_CAPS, ...caps };
  const over = (what: string, n: number, cap: number, flag: string): void => {
    if (n > cap) throw lifecycleErrors.overServerBound(model, what, n, cap, flag);
  };
  const db = config.dynamic_batching;
  if (db) {
    over('dynamic_batching.priority_levels', Number(db.priority_levels), c.maxPriorityLevels, 'max-priority-levels');
    over('dynamic_batching.preferred_batch_size count', db.preferred_batch_size.length, c.maxPreferredBatchSizes, 'max-preferred-batch-sizes');
  }
  const sb = config.sequence_batching;
  if (!sb) return;
  if (sb.oldest) {
    over('sequence_batching.oldest.max_candidate_sequences', Number(sb.oldest.max_candidate_sequences), c.maxSequenceSlots, 'max-sequence-slots');
    over('sequence_batching.oldest.preferred_batch_size count', sb.oldest.preferred_batch_size.length, c.maxPreferredBatchSizes, 'max-preferred-batch-sizes');
  } else {
    over('max_batch_size (the slots of a direct sequence batcher)', Number(config.max_batch_size), c.maxSequenceSlots, 'max-sequence-slots');
  }
  sb.state.forEach((s, i) => {
    over(`sequence_batching.state[${i}] bytes`, stateBytes(s.data_type, s.dims), c.maxStateBytes, 'max-state-bytes');
    s.initial_state.forEach((init, j) => {
      over(`sequence_batching.state[${i}].initial_state[${j}] bytes`, stateBytes(s.data_type, init.dims), c.maxStateBytes, 'max-state-bytes');
    });
  });
}

/** Backend kinds an upload may use. */
export type UploadBackend = 'wasm' | 'onnxruntime';

/** The backend kind of a config as far as uploads are concerned, or undefined if it is not one an upload may use. */
export function uploadBackendOf(config: Pick<ModelConfig, 'backend' | 'platform'>): UploadBackend | undefined {
  const { backend, platform } = config;
  if (backend === 'wasm' && platform === '') return 'wasm';
  const onnxPlatform = platform === '' || platform === 'onnxruntime_onnx';
  const onnxBackend = backend === 'onnxruntime' || (backend === '' && platform === 'onnxruntime_onnx');
  return onnxPlatform && onnxBackend ? 'onnxruntime' : undefined;
}

/**
 * The server's admission rules: {@link ServerCaps} for every model; for uploads, the backend
 * allow-list (`uploadBackends(origin)`; default `wasm` and `onnxruntime`) and no `runtime`.
 */
export class ServerAdmission implements ModelAdmission {
  constructor(
    private readonly caps: ServerCaps = DEFAULT_SERVER_CAPS,
    private readonly uploadBackends: (origin: Extract<ModelOrigin, { kind: 'upload' }>) => ReadonlySet<UploadBackend> = () => ALL_UPLOAD_BACKENDS,
  ) {}

  admit(key: ModelKey, origin: ModelOrigin, config: ModelConfig, _versions = 1): ModelConfig {
    const n = instanceCount(config);
    if (n > this.caps.maxInstancesPerModel) {
      throw lifecycleErrors.instancesOverServerCap(key.name, n, this.caps.maxInstancesPerModel);
    }
    checkServerCaps(key.name, config, this.caps);
    if (origin.kind !== 'upload') return config;
    // An ensemble runs no code of its own: its steps are inferences on models its owner may use,
    // through the data plane with the owner's principal (ensemble/load.ts).
    if (config.platform === 'ensemble' && !config.backend && !config.runtime) return config;
    const kind = uploadBackendOf(config);
    const what = config.backend ? `backend '${config.backend}'` : config.platform ? `platform '${config.platform}'` : 'no backend';
    if (!kind || !this.uploadBackends(origin).has(kind)) {
      const allowed = [...this.uploadBackends(origin)].join(', ') || 'none';
      throw lifecycleErrors.uploadBackendRefused(key.name, what, allowed);
    }
    if (config.runtime) {
      throw lifecycleErrors.uploadRuntimeRefused(key.name, config.runtime);
    }
    return config;
  }
}

/** Every backend kind an upload may use. */
export const ALL_UPLOAD_BACKENDS: ReadonlySet<UploadBackend> = new Set<UploadBackend>(['wasm', 'onnxruntime']);
/** Sandboxed models only. */
export const WASM_UPLOADS: ReadonlySet<UploadBackend> = new Set<UploadBackend>(['wasm']);
