/**
 * A model version loaded into a native Triton backend (TRITONBACKEND_ModelInitialize done).
 */
import type { Logger } from 'pino';
import type { ModelConfig } from '../../contract/model-config.js';
import { positiveIntParam } from '../../config/parameters.js';
import type { BackendModel, BackendModelInstance, InferenceRequest, InstanceSpec } from '../../contract/types.js';
import { fromAddonError, type ModelHandle } from '../../platform/addon.js';
import { NativeModelInstance } from './instance.js';

/** Model config parameter: per-model execute limit in ms (overrides the server's default). */
export const PARAM_EXECUTE_TIMEOUT = 'warden.execute_timeout_ms';

/** What a native model left behind at unload: counted and reported (`warden_native_leaked_total`). */
export interface NativeLeaks {
  /** TRITONBACKEND_Response objects neither sent nor deleted. */
  responses: number;
  /** TRITONBACKEND_ResponseFactory objects not deleted. */
  factories: number;
  /** Requests the backend never released (TRITONBACKEND_RequestRelease). */
  requests: number;
}

/**
 * The execute limit of a model: `warden.execute_timeout_ms` (a positive integer, ms), else the
 * server default (`--native-execute-timeout-ms`, 0 = none).
 * @throws TritonError INVALID_ARG for a value that is not a positive integer
 */
export function executeTimeoutMs(config: ModelConfig, serverDefaultMs: number): number {
  return positiveIntParam(config, PARAM_EXECUTE_TIMEOUT) ?? serverDefaultMs;
}

export class NativeModel implements BackendModel {
  private finalized?: Promise<void>;
  private readonly instances: NativeModelInstance[] = [];

  /**
   * @param config the config after the backend's auto-complete, when it called
   *   TRITONBACKEND_ModelSetConfig (undefined otherwise)
   * @param effectiveConfig the config instances are created from (`config` or the loaded one)
   * @param parallelInstanceLoading the backend's TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading
   * @param opts.executeTimeoutMs execute limit of every instance (0 = none)
   * @param opts.onFinalized called once after TRITONBACKEND_ModelFinalize (or after giving up on
   *   a model whose instance is stuck) with what the backend leaked
   */
  constructor(
    private readonly handle: ModelHandle,
    readonly config: ModelConfig | undefined,
    private readonly effectiveConfig: ModelConfig,
    readonly parallelInstanceLoading: boolean,
    private readonly logger: Logger,
    private readonly opts: { executeTimeoutMs: number; onFinalized?: (leaks: NativeLeaks) => void } = { executeTimeoutMs: 0 },
  ) {}

  /**
   * TRITONBACKEND_ModelInstanceInitialize for one instance, on its own native thread.
   * @throws TritonError from the backend, or INVALID_ARG for KIND_GPU (no CUDA in this host).
   */
  /** The requests its instances hold, not yet answered FINAL. */
  *waitingRequests(): Iterable<InferenceRequest> {
    for (const i of this.instances) yield* i.waitingRequests();
  }

  async createInstance(spec: InstanceSpec): Promise<BackendModelInstance> {
    const inst = await NativeModelInstance.create(this.handle, spec, this.effectiveConfig, this.logger, {
      executeTimeoutMs: this.opts.executeTimeoutMs,
    });
    this.instances.push(inst);
    return inst;
  }

  /**
   * TRITONBACKEND_ModelFinalize (after every instance was finalized). Backend objects still alive
   * then were leaked: they are logged (warning) and reported to `onFinalized`. A model with an
   * instance given up while stuck in Execute is not finalized (its thread is still in the backend).
   */
  finalize(): Promise<void> {
    this.finalized ??= (async () => {
      const live = this.handle.liveObjects();
      const leaks: NativeLeaks = { ...live, requests: this.instances.reduce((n, i) => n + i.leakedRequests, 0) };
      if (leaks.responses + leaks.factories + leaks.requests > 0) {
        this.logger.warn(leaks, 'the backend leaked responses, response factories or requests (never sent, deleted or released)');
      }
      try {
        if (this.instances.some((i) => i.unhealthy() !== undefined)) {
          this.logger.error('TRITONBACKEND_ModelFinalize skipped: an instance is stuck inside the backend');
          return;
        }
        await this.handle.unload().catch((e) => {
          throw fromAddonError(e);
        });
      } finally {
        this.opts.onFinalized?.(leaks);
      }
    })();
    return this.finalized;
  }
}
