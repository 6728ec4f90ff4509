/**
 * A model version loaded into a native Triton backend (TRITONBACKEND_ModelInitialize done).
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../../config/types.js';
import type { BackendModel, BackendModelInstance, InstanceSpec } from '../../core/types.js';
import { fromAddonError, type ModelHandle } from './addon.js';
import { NativeModelInstance } from './instance.js';

export class NativeModel implements BackendModel {
  private finalized?: Promise<void>;

  /**
   * @param config the config after the backend's auto-complete, when it called
   *   TRITONBACKEND_ModelSetConfig (undefined otherwise)
   * @param effectiveConfig the config instances are created from (`config` or the loaded one)
   * @param parallelInstanceLoading the backend's TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading
   */
  constructor(
    private readonly handle: ModelHandle,
    readonly config: ModelConfig | undefined,
    private readonly effectiveConfig: ModelConfig,
    readonly parallelInstanceLoading: boolean,
    private readonly logger: Logger,
    /** Called once after TRITONBACKEND_ModelFinalize (ends the model's in-process calls). */
    private readonly onFinalized: () => void = () => undefined,
  ) {}

  /**
   * TRITONBACKEND_ModelInstanceInitialize for one instance, on its own native thread.
   * @throws TritonError from the backend, or INVALID_ARG for KIND_GPU (no CUDA in this host).
   */
  createInstance(spec: InstanceSpec): Promise<BackendModelInstance> {
    return NativeModelInstance.create(this.handle, spec, this.effectiveConfig, this.logger);
  }

  /** TRITONBACKEND_ModelFinalize (after every instance was finalized). */
  finalize(): Promise<void> {
    this.finalized ??= this.handle
      .unload()
      .catch((e) => {
        throw fromAddonError(e);
      })
      .finally(this.onFinalized);
    return this.finalized;
  }
}
