/**
 * Model configuration normalisation (spec §5.5–§5.7), ported from Triton core's
 * `NormalizeModelConfig`, `NormalizeInstanceGroup` and `SetDefaultInstanceCount`
 * (src/model_config_utils.cc) — the defaults Triton fills whether or not auto-complete is enabled:
 *
 * - `version_policy` unset ⇒ `latest { num_versions: 1 }`;
 * - `dynamic_batching.preferred_batch_size` empty and max_batch_size > 0 ⇒ `[max_batch_size]`
 *   (same for `sequence_batching.oldest.preferred_batch_size`);
 * - `sequence_batching.max_sequence_idle_microseconds` 0 ⇒ 1,000,000 µs;
 * - except for ensembles: `optimization.{input,output}_pinned_memory` unset ⇒ `{ enable: true }`;
 * - except for ensembles, instance groups: none ⇒ one group named after the model (a backend's
 *   preferred group, if any, gives its kind/count/gpus); each unnamed group ⇒ `<model>_<index>`;
 *   KIND_AUTO ⇒ KIND_GPU when GPUs exist and every listed gpu exists, else KIND_CPU; count < 1 ⇒
 *   2 for KIND_CPU groups of the `onnxruntime` and `tensorflow` backends, 1 otherwise; KIND_GPU
 *   without `gpus` ⇒ every GPU. `host_policy` is NOT filled in (Triton prints `""` and derives
 *   `cpu` / `model` / `gpu_<id>` per instance, see {@link defaultHostPolicy}).
 *
 * Then every primitive field gets its proto3 default and keys are put in model_config.proto
 * declaration order, so the result serialises exactly like Triton's `/config` JSON.
 * Normalising an already normalised config returns an equal config.
 */
import { withDefaults } from './defaults.js';
import { ModelConfigDesc } from './schema.js';
import type { InstanceGroupKind, ModelConfig, ModelInstanceGroup } from '../contract/model-config.js';

/** Options of {@link normalizeModelConfig}. */
export interface NormalizeOptions {
  /** Directory name of the model; fills `name` when the config has none. */
  modelName: string;
  /** Number of usable GPUs (ids 0..gpuCount-1). 0 on CPU-only hosts. */
  gpuCount: number;
  /**
   * Backend's preferred instance groups (`TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup`),
   * in preference order; used for a config without instance groups and for unset counts / gpus.
   */
  preferredInstanceGroups?: readonly { kind: InstanceGroupKind; count: number; gpus?: readonly number[] }[];
}

/** Triton's default idle timeout of a sequence slot, µs (`SEQUENCE_IDLE_DEFAULT_MICROSECONDS`). */
export const SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000;

/** Backends whose KIND_CPU groups default to 2 instances (Triton `SetDefaultInstanceCount`). */
const TWO_CPU_INSTANCE_BACKENDS = new Set(['onnxruntime', 'tensorflow']);

type Obj = Record<string, unknown>;
type RawGroup = Partial<ModelInstanceGroup> & Obj;

function normalizeInstanceGroups(c: Obj, opts: NormalizeOptions): void {
  const supported = new Set(Array.from({ length: Math.max(0, opts.gpuCount) }, (_, i) => i));
  const preferred = opts.preferredInstanceGroups ?? [];
  const name = c.name as string;
  const groups = ((c.instance_group as RawGroup[] | undefined) ?? []).map((g) => ({ ...g }));

  if (groups.length === 0) {
    const g: RawGroup = { name };
    for (const pg of preferred) {
      if (pg.kind === 'KIND_GPU') {
        if (supported.size === 0) continue;
        if (pg.gpus?.length) g.gpus = pg.gpus.filter((id) => supported.has(id));
      } else if (pg.kind === 'KIND_AUTO') {
        g.gpus = [...(pg.gpus ?? [])];
      }
      g.kind = pg.kind;
      g.count = pg.count;
      break;
    }
    groups.push(g);
  }

  groups.forEach((g, index) => {
    if (!g.name) g.name = `${name}_${index}`;
    if ((g.kind ?? 'KIND_AUTO') === 'KIND_AUTO') {
      const gpus = g.gpus ?? [];
      g.kind = supported.size > 0 && gpus.every((id) => supported.has(id)) ? 'KIND_GPU' : 'KIND_CPU';
    }
    for (const pg of preferred) {
      if (g.kind !== pg.kind) continue;
      if (g.kind === 'KIND_GPU' && !g.gpus?.length && pg.gpus?.length) {
        g.gpus = pg.gpus.filter((id) => supported.has(id));
        if (g.gpus.length === 0) continue;
      }
      if ((g.count ?? 0) < 1 && pg.count > 0) g.count = pg.count;
    }
    if ((g.count ?? 0) < 1) {
      g.count = g.kind === 'KIND_CPU' && TWO_CPU_INSTANCE_BACKENDS.has((c.backend as string) ?? '') ? 2 : 1;
    }
    if (g.kind === 'KIND_GPU' && !g.gpus?.length) g.gpus = [...supported];
  });
  c.instance_group = groups;
}

/**
 * Fill every default Triton fills and return the complete config (spec §5.5–§5.7).
 * Does not modify `raw`.
 * @throws TritonError INVALID_ARG if `raw` is not a structurally valid ModelConfig (unknown fields,
 *   wrong value types, two members of a oneof).
 */
export function normalizeModelConfig(raw: Partial<ModelConfig>, opts: NormalizeOptions): ModelConfig {
  // Structural check + deep copy first, so the steps below work on plain, well-typed data.
  const c = withDefaults(raw, ModelConfigDesc) as Obj & ModelConfig;
  if (!c.name) c.name = opts.modelName;

  if (!c.version_policy) c.version_policy = { latest: { num_versions: 1 } };

  const mbs = c.max_batch_size;
  if (c.dynamic_batching && c.dynamic_batching.preferred_batch_size.length === 0 && mbs > 0) {
    c.dynamic_batching.preferred_batch_size = [mbs];
  }
  if (c.sequence_batching) {
    if (c.sequence_batching.max_sequence_idle_microseconds === 0) {
      c.sequence_batching.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
    }
    const oldest = c.sequence_batching.oldest;
    if (oldest && oldest.preferred_batch_size.length === 0 && mbs > 0) oldest.preferred_batch_size = [mbs];
  }

  if (!c.ensemble_scheduling) {
    const opt = (c.optimization ?? {}) as Obj;
    opt.input_pinned_memory ??= { enable: true };
    opt.output_pinned_memory ??= { enable: true };
    c.optimization = opt as unknown as ModelConfig['optimization'];
    normalizeInstanceGroups(c, opts);
  }

  // Re-run the default filler: fills the sub-messages added above and restores key order.
  return withDefaults(c, ModelConfigDesc) as unknown as ModelConfig;
}

/**
 * The host policy name Triton uses for an instance when its group's `host_policy` is empty
 * (model_config.proto: KIND_CPU ⇒ `cpu`, KIND_MODEL ⇒ `model`, KIND_GPU ⇒ `gpu_<device id>`).
 */
export function defaultHostPolicy(group: Pick<ModelInstanceGroup, 'kind' | 'host_policy'>, deviceId: number): string {
  if (group.host_policy) return group.host_policy;
  if (group.kind === 'KIND_GPU') return `gpu_${deviceId}`;
  if (group.kind === 'KIND_MODEL') return 'model';
  return 'cpu';
}
