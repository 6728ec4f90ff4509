/**
 * Scheduler selection (spec §5.6), the shape of Triton's `SetConfiguredScheduler`: the config's
 * `scheduling_choice` picks the {@link ModelScheduler} implementation of a model version.
 * Adding a kind = one file implementing ModelScheduler + its entry in {@link FACTORIES}. Every kind
 * is served, the ensemble's included (`ensemble/scheduler.ts`, over the plan the lifecycle compiled).
 */
import type { ModelConfig } from '../contract/model-config.js';
import { TritonError } from '../contract/errors.js';
import type { BackendModelInstance } from '../contract/types.js';
import { EnsembleScheduler, type EnsembleSchedulerOptions } from '../ensemble/scheduler.js';
import { PASS_THROUGH_ARBITER, type ExecutionArbiter } from './arbiter.js';
import { SYSTEM_CLOCK, type Clock } from './clock.js';
import { DynamicBatchScheduler } from './dynamic-batch-scheduler.js';
import { IdleInstancePool, type InstancePool } from './instance-pool.js';
import { SequenceBatchScheduler } from './sequence-batch-scheduler.js';
import type { ModelScheduler, SchedulerHooks, TenantFairness } from './types.js';
import { initialStateFileUnread } from './scheduler.errors.js';

export type { ExecutionArbiter, ExecutionClaim, ExecutionGrant } from './arbiter.js';
export { PASS_THROUGH_ARBITER } from './arbiter.js';
export { SYSTEM_CLOCK, type Clock, type ClockTimer } from './clock.js';
export type { InstanceLease, InstancePool } from './instance-pool.js';
export type { PendingRequest } from './queue.js';
export type { ExecutionRecord, ModelScheduler, SchedulerHooks, TenantFairness } from './types.js';

/**
 * The scheduling kinds of a model config: `default` (no scheduling block: one request per
 * execution), `dynamic_batching`, `sequence_batching`, and `ensemble` (`ensemble_scheduling` or
 * `platform: "ensemble"`).
 */
export type SchedulerKind = 'default' | 'dynamic_batching' | 'sequence_batching' | 'ensemble';

/** Options of {@link createScheduler}. */
export interface SchedulerOptions {
  /** The model version served (the model name is `config.name`). */
  version: number;
  /** Server-wide admission of executions; default {@link PASS_THROUGH_ARBITER}. */
  arbiter?: ExecutionArbiter;
  /**
   * Fairness across the tenants sharing this model version (weights, DRR quantum, per-tenant
   * queue cap); default: equal weights, no per-tenant cap.
   */
  fairness?: TenantFairness;
  /**
   * The bytes of each `sequence_batching.state[].initial_state[].data_file`, read at load beneath
   * the model directory (`lifecycle/config-files.ts#readConfigFiles`); a state whose file is not here
   * fails the load.
   */
  initialStates?: ReadonlyMap<string, Uint8Array>;
  /**
   * An operator model in multi-tenant mode: the sequence batcher hands a backend tenants'
   * sequences under correlation ids of their own (`sequence-ids.ts`). Default false.
   */
  tenantSequenceIds?: boolean;
  /**
   * The ensemble kind's plan (`ensemble/load.ts#compileEnsemble`), the data plane its steps go
   * through, the owner's principal, the version's statistics and log. Required for an ensemble
   * config, ignored for any other.
   */
  ensemble?: Omit<EnsembleSchedulerOptions, 'name'>;
  /** Queue times, queue delays and timeouts, sequence idle timeouts; default {@link SYSTEM_CLOCK}. */
  clock?: Clock;
}

/** Everything a scheduler implementation is built from. */
interface SchedulerParts {
  config: ModelConfig;
  pool: InstancePool;
  instances: readonly BackendModelInstance[];
  hooks: SchedulerHooks;
  arbiter: ExecutionArbiter;
  version: number;
  fairness: TenantFairness | undefined;
  initialStates: ReadonlyMap<string, Uint8Array> | undefined;
  tenantSequenceIds: boolean;
  ensemble: Omit<EnsembleSchedulerOptions, 'name'> | undefined;
  clock: Clock;
}

type SchedulerFactory = (parts: SchedulerParts) => ModelScheduler;

const dynamicBatch: SchedulerFactory = (p) => new DynamicBatchScheduler(p.config, p.pool, p.hooks, p.arbiter, p.version, p.fairness, p.clock);

const sequenceBatch: SchedulerFactory = (p) =>
  new SequenceBatchScheduler(
    p.config,
    p.instances,
    p.hooks,
    p.arbiter,
    p.version,
    p.initialStates ? (f) => initialState(p.initialStates!, f) : undefined,
    p.tenantSequenceIds,
    p.clock,
  );

/** The bytes of `data_file`, read at load. */
function initialState(states: ReadonlyMap<string, Uint8Array>, file: string): Uint8Array {
  const bytes = states.get(file);
  if (!bytes) throw initialStateFileUnread(file);
  return bytes;
}

/** An ensemble runs each request as its plan's steps through the data plane; nothing queues here. */
const ensemble: SchedulerFactory = (p) => {
  if (!p.ensemble) throw new TritonError('INTERNAL', `model '${p.config.name}' is an ensemble: its scheduler needs the compiled plan`);
  return new EnsembleScheduler({ name: p.config.name, ...p.ensemble });
};

/** Implementation per kind. */
const FACTORIES: Record<SchedulerKind, SchedulerFactory> = {
  default: dynamicBatch,
  dynamic_batching: dynamicBatch,
  sequence_batching: sequenceBatch,
  ensemble,
};

/** The scheduling kind `config` asks for. */
export function schedulerKind(config: ModelConfig): SchedulerKind {
  if (config.sequence_batching) return 'sequence_batching';
  if (config.ensemble_scheduling || config.platform === 'ensemble') return 'ensemble';
  if (config.dynamic_batching) return 'dynamic_batching';
  return 'default';
}

/**
 * Build the scheduler of one model version over `instances` (one {@link IdleInstancePool} per
 * version), chosen by {@link schedulerKind}.
 * @throws TritonError INVALID_ARG for an unusable `sequence_batching` initial state; INTERNAL for
 *   an ensemble config without {@link SchedulerOptions.ensemble}.
 */
export function createScheduler(
  config: ModelConfig,
  instances: readonly BackendModelInstance[],
  hooks: SchedulerHooks,
  options: SchedulerOptions,
): ModelScheduler {
  return FACTORIES[schedulerKind(config)]({
    config,
    pool: new IdleInstancePool(instances),
    instances,
    hooks,
    arbiter: options.arbiter ?? PASS_THROUGH_ARBITER,
    version: options.version,
    fairness: options.fairness,
    initialStates: options.initialStates,
    tenantSequenceIds: options.tenantSequenceIds === true,
    ensemble: options.ensemble,
    clock: options.clock ?? SYSTEM_CLOCK,
  });
}
