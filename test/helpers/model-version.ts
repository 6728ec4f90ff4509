/**
 * Build a ModelVersion directly (no repository, no HTTP) over fake in-process instances whose
 * executions the test releases by hand: for scheduler, arbiter and cancellation tests.
 */
import { pino } from 'pino';
import { normalizeModelConfig, parseModelConfigPbtxt } from '../../host/src/config/index.js';
import type { ModelConfig } from '../../host/src/contract/model-config.js';
import { TritonError } from '../../host/src/contract/errors.js';
import { ModelVersion, type ModelVersionOptions } from '../../host/src/lifecycle/model-version.js';
import type { BackendModelInstance, InferenceRequest, InferenceResponse, ResponseSender } from '../../host/src/contract/types.js';
import { emptyRequestInit } from '../../host/src/dataplane/request-parameters.js';
import type { InferenceRequestInit } from '../../host/src/contract/types.js';
import { ServerMetrics } from '../../host/src/metrics/prometheus.js';
import { ModelStatistics } from '../../host/src/metrics/stats.js';

/** A normalised config from pbtxt (`name` defaults to `model`). */
export function config(pbtxt: string, name = 'model'): ModelConfig {
  return normalizeModelConfig(parseModelConfigPbtxt(pbtxt), { modelName: name, gpuCount: 0 });
}

/** Counts executions running at once across every fake instance given the same counter. */
export class Concurrency {
  active = 0;
  max = 0;
  enter(): void {
    this.active++;
    this.max = Math.max(this.max, this.active);
  }
  leave(): void {
    this.active--;
  }
}

/**
 * A fake instance answering OUTPUT0 = INPUT0. With `manual`, each execution waits until the
 * test calls {@link release}; otherwise it finishes after a macrotask.
 */
export class FakeInstance implements BackendModelInstance {
  /** Request ids of each execution, in order. */
  readonly executions: string[][] = [];
  private gates: (() => void)[] = [];

  constructor(private readonly opts: { manual?: boolean; concurrency?: Concurrency } = {}) {}

  async execute(requests: InferenceRequest[], senders: ResponseSender[]): Promise<void> {
    this.executions.push(requests.map((r) => r.id));
    this.opts.concurrency?.enter();
    try {
      await new Promise<void>((resolve) => (this.opts.manual ? this.gates.push(resolve) : setImmediate(resolve)));
    } finally {
      this.opts.concurrency?.leave();
    }
    requests.forEach((r, i) => senders[i]!.send({ outputs: [{ ...r.inputs[0]!, name: 'OUTPUT0' }] }, true));
  }

  /** Executions waiting for {@link release}. */
  get waiting(): number {
    return this.gates.length;
  }

  /** Let the oldest waiting execution finish. */
  release(): void {
    this.gates.shift()?.();
  }

  async finalize(): Promise<void> {}
}

/** What one request got back. */
export interface Outcome {
  response?: InferenceResponse | null;
  error?: TritonError;
}

/** A sender that resolves `done` with the final response or error. */
export function collector(): { sender: ResponseSender; done: Promise<Outcome> } {
  let finish!: (o: Outcome) => void;
  const done = new Promise<Outcome>((r) => (finish = r));
  return {
    done,
    sender: {
      send: (response, final) => final && finish({ response }),
      sendError: (error, final) => final && finish({ error }),
    },
  };
}

/** A ModelVersion with real statistics and Prometheus series over `instances`. */
export function modelVersion(cfg: ModelConfig, instances: BackendModelInstance[], options: ModelVersionOptions = {}) {
  const metrics = new ServerMetrics();
  const stats = new ModelStatistics(metrics.forModel(cfg.name, 1));
  const backendModel = { createInstance: async () => instances[0]!, finalize: async () => {} };
  const mv = new ModelVersion(cfg.name, 1, cfg, backendModel, instances, stats, pino({ level: 'silent' }), options);
  return { mv, stats, metrics };
}

/**
 * An INT32 request for the echo configs: INPUT0 of shape [1, 4] (or [4] with `batched: false`),
 * from the operator (tenant '') unless `extra.tenant` says otherwise.
 */
export function echoInit(id: string, extra: Partial<InferenceRequestInit> = {}, batched = true): InferenceRequestInit {
  return {
    ...emptyRequestInit('model', 1),
    id,
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: batched ? [1, 4] : [4], data: new Uint8Array(16) }],
    ...extra,
  };
}

/** Let pending microtasks and one macrotask run. */
export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A batching echo model (INT32 [4] in and out, max_batch_size 8) on the fake backend, one instance. */
export const ECHO = `
backend: "fake"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;
