/**
 * Resource limits of sandboxed backends: server-wide caps ({@link WasmLimits}) and the per-model
 * limits read from config `parameters` (documented in wit/README.md), clamped by the caps.
 * This file is the single source of the default caps ({@link DEFAULT_WASM_LIMITS}).
 */
import { memoryParamTooSmall } from './sandbox.errors.js';
import type { ModelConfig } from '../../contract/model-config.js';
import { positiveIntParam } from '../../config/parameters.js';
import { WASM_PAGE_BYTES } from './binary.js';

/** Server-wide caps on every sandboxed model (and the defaults for models that set nothing). */
export interface WasmLimits {
  /** Maximum size of each linear memory of each instance, in bytes. */
  maxMemoryBytes: number;
  /** Deadline of one execute call (and of instance start-up), in ms. */
  maxExecuteMs: number;
  /** Log budget per call into a backend (log + stdout + stderr), in bytes. */
  maxLogBytes: number;
  /**
   * Log budget per call into a backend, in messages (each `host.log` call is one, each stdout /
   * stderr line is one). Absent = {@link DEFAULT_WASM_LIMITS}`.maxLogMessages`.
   */
  maxLogMessages?: number;
  /**
   * Budget of the live sandboxes' linear memory together, in bytes: each sandbox reserves its
   * model's memory limit times the number of linear memories its component defines when it
   * starts, and releases it when it is gone (./memory-budget.ts); one that does not fit, even
   * after idle sandboxes were released for it, does not start.
   * Absent = {@link DEFAULT_WASM_LIMITS}`.maxTotalMemoryBytes`.
   */
  maxTotalMemoryBytes?: number;
}

/** The command-line flag that sets `maxTotalMemoryBytes` (named in budget errors). */
export const TOTAL_MEMORY_FLAG = '--wasm-max-total-memory-bytes';

/**
 * Caps used when the server sets none: 256 MiB per linear memory, 10 s per execute, 64 KiB and
 * 1024 messages of log per call, 4 GiB of linear memory for all sandboxes together. The server
 * and the CLI take their defaults from here.
 */
export const DEFAULT_WASM_LIMITS: Readonly<Required<WasmLimits>> = Object.freeze({
  maxMemoryBytes: 256 * 1024 * 1024,
  maxExecuteMs: 10_000,
  maxLogBytes: 64 * 1024,
  maxLogMessages: 1024,
  maxTotalMemoryBytes: 4 * 1024 * 1024 * 1024,
});

/**
 * Checks server-wide caps and fills in the defaults of optional ones.
 * @returns a copy with every field set
 * @throws RangeError for a cap that is not a positive safe integer
 */
export function checkWasmLimits(limits: WasmLimits): Required<WasmLimits> {
  const out: Required<WasmLimits> = {
    ...limits,
    maxLogMessages: limits.maxLogMessages ?? DEFAULT_WASM_LIMITS.maxLogMessages,
    maxTotalMemoryBytes: limits.maxTotalMemoryBytes ?? DEFAULT_WASM_LIMITS.maxTotalMemoryBytes,
  };
  for (const [k, v] of Object.entries(out)) {
    if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`WasmLimits.${k} must be a positive integer, got ${v}`);
  }
  return out;
}

/** Smallest memory limit accepted (one page). */
const MIN_MEMORY_BYTES = WASM_PAGE_BYTES;

/** Config parameter names (`parameters { key: ... }`). */
export const PARAM_MEMORY = 'memory_limit_bytes';
export const PARAM_TIMEOUT = 'execute_timeout_ms';
export const PARAM_LOG = 'log_limit_bytes';
/** Idle policy (ms): release an idle instance's sandbox after this long; `0` = never. */
export const PARAM_IDLE = 'idle_timeout_ms';

/**
 * The idle policy of a server that sets none (`--wasm-idle-timeout-ms`), both engines: a sandbox
 * that ran nothing for 30 s is released (its thread or worker and its memory reservation) and
 * started again on the next request (a cold start).
 */
export const DEFAULT_IDLE_MS = 30_000;

/** Limits in force for one model. */
export interface ModelLimits {
  /** Per linear memory, bytes, a multiple of 64 KiB. */
  memoryBytes: number;
  /** Execute deadline, ms. */
  executeMs: number;
  /** Log budget per call, bytes. */
  logBytes: number;
  /** Log budget per call, messages (the server cap; there is no per-model parameter). */
  logMessages: number;
  /**
   * Idle policy from `idle_timeout_ms` (ms; 0 = never release): the engine releases an
   * instance's sandbox after this long without an execute and starts a new one on the next.
   * Absent = the engine's default ({@link DEFAULT_IDLE_MS} unless the server sets another).
   */
  idleMs?: number;
}

/**
 * Per-model limits: `memory_limit_bytes`, `execute_timeout_ms`, `log_limit_bytes` from the config
 * parameters, each clamped to the server cap (a missing parameter = the cap); the message budget
 * is the server's `maxLogMessages`.
 * @throws TritonError INVALID_ARG for a parameter that is not a positive integer, or a memory
 *   limit below 64 KiB.
 */
export function modelLimits(config: ModelConfig, caps: WasmLimits): ModelLimits {
  const mem = Math.min(positiveIntParam(config, PARAM_MEMORY) ?? caps.maxMemoryBytes, caps.maxMemoryBytes);
  if (mem < MIN_MEMORY_BYTES) throw memoryParamTooSmall(config.name, PARAM_MEMORY, MIN_MEMORY_BYTES);
  return {
    memoryBytes: Math.floor(mem / WASM_PAGE_BYTES) * WASM_PAGE_BYTES,
    executeMs: Math.min(positiveIntParam(config, PARAM_TIMEOUT) ?? caps.maxExecuteMs, caps.maxExecuteMs),
    logBytes: Math.min(positiveIntParam(config, PARAM_LOG) ?? caps.maxLogBytes, caps.maxLogBytes),
    logMessages: caps.maxLogMessages ?? DEFAULT_WASM_LIMITS.maxLogMessages,
    ...idle(config),
  };
}

function idle(config: ModelConfig): { idleMs?: number } {
  const ms = positiveIntParam(config, PARAM_IDLE, true);
  return ms === undefined ? {} : { idleMs: ms };
}
