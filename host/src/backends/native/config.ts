/**
 * What the native host hands backends besides tensors: the backend config message
 * (TRITONBACKEND_BackendConfig), the model config JSON and its backend-side auto-complete
 * (TRITONBACKEND_ModelSetConfig, spec §5.7), and instance placement (spec §5.5).
 */
import { modelConfigToJson } from '../../config/index.js';
import type { ModelConfig } from '../../contract/model-config.js';
import type { InstanceSpec } from '../../contract/types.js';
import type { AddonInstanceSpec } from '../../platform/addon.js';

/** Triton's default `--min-supported-compute-capability`, printed as std::to_string does. */
const MIN_COMPUTE_CAPABILITY = (6.0).toFixed(6);
/** Triton's default `--backend-config=<backend>,default-max-batch-size`. */
const DEFAULT_MAX_BATCH_SIZE = '4';

/**
 * The TRITONBACKEND_BackendConfig message: `{"cmdline":{...}}` with the settings Triton always adds
 * (`auto-complete-config`, `backend-directory`, `min-compute-capability`, `default-max-batch-size`),
 * then the global `--backend-config` settings (key ''), then this backend's (spec §6.3).
 */
export function backendConfigJson(opts: {
  backendName: string;
  backendDirectory: string;
  autoCompleteConfig: boolean;
  settings?: Record<string, Record<string, string>>;
}): string {
  const cmdline: Record<string, string> = {
    'auto-complete-config': String(opts.autoCompleteConfig),
    'backend-directory': opts.backendDirectory,
    'min-compute-capability': MIN_COMPUTE_CAPABILITY,
    'default-max-batch-size': DEFAULT_MAX_BATCH_SIZE,
  };
  Object.assign(cmdline, opts.settings?.[''] ?? {}, opts.settings?.[opts.backendName] ?? {});
  return JSON.stringify({ cmdline });
}

/** The model config as TRITONBACKEND_ModelConfig returns it (Triton's `/config` JSON). */
export function configJson(config: ModelConfig): string {
  return modelConfigToJson(config) || '{}';
}

/** Output names (the only names TRITONBACKEND_ResponseOutput accepts) and the decoupled flag. */
export function responseContract(config: ModelConfig): { outputs: string[]; decoupled: boolean } {
  return {
    outputs: config.output.map((o) => o.name),
    decoupled: config.model_transaction_policy?.decoupled === true,
  };
}

/** TRITONSERVER_InstanceGroupKind of an instance spec (note: not the config enum order). */
const INSTANCE_KIND = { KIND_CPU: 1, KIND_GPU: 2, KIND_MODEL: 3 } as const;

/** The addon's view of an instance: kind, device, host policy, and its group's profiles and
 *  secondary devices (spec §5.5; what TRITONBACKEND_ModelInstance* report). */
export function addonInstanceSpec(spec: InstanceSpec, config: ModelConfig): AddonInstanceSpec {
  const group = config.instance_group.find((g) => g.name === spec.groupName);
  return {
    name: spec.name,
    kind: INSTANCE_KIND[spec.kind],
    deviceId: spec.deviceId,
    hostPolicy: spec.hostPolicy,
    passive: spec.passive,
    profiles: [...(group?.profile ?? [])],
    secondaryDevices: (group?.secondary_devices ?? []).map((d) => ({ kind: d.kind, deviceId: Number(d.device_id) })),
  };
}
