/**
 * The host capabilities of one sandboxed instance, one module per capability (Spin's "factors"
 * shape; DESIGN "Sandbox rules"): ./log.ts (log + budget), ./responses.ts (send-response, send-final,
 * is-cancelled), ./files.ts (read-only model files), ./wasi/ (deny-by-default WASI). Each exposes
 * its WIT functions as plain functions over a small per-instance state; an engine creates the
 * states here, once per sandbox, and binds the functions into its own import mechanism, so every
 * engine gives the guest the same behaviour.
 */
import type { HostConfig } from '../engine.js';
import { createFilesState, type FilesState } from './files.js';
import { createLogState, endLogCall, type LogLine, type LogState } from './log.js';
import { createResponsesState, type ResponseSend, type ResponsesState } from './responses.js';
import { createStdioState, flushOutput, type StdioState } from './wasi/stdio.js';

/** Where an instance's capabilities deliver what leaves the sandbox. */
export interface HostSinks {
  /** A line for the model's log (already within the log budget). */
  log(line: LogLine): void;
  /** A response sent during execute (already checked). */
  send(send: ResponseSend): void;
  /** Whether the request at this batch position of the current execute was cancelled. */
  cancelledAt(index: number): boolean;
}

/** The per-instance states of all capabilities. */
export interface HostState {
  readonly log: LogState;
  readonly stdio: StdioState;
  readonly responses: ResponsesState;
  readonly files: FilesState;
}

/** Capability states for one sandbox of a model configured by `config`. */
export function createHostState(config: HostConfig, sinks: HostSinks): HostState {
  const log = createLogState({ bytes: config.limits.logBytes, messages: config.limits.logMessages }, (line) => sinks.log(line));
  return {
    log,
    stdio: createStdioState(log),
    responses: createResponsesState(
      config.model,
      config.outputs,
      (s) => sinks.send(s),
      (i) => sinks.cancelledAt(i),
    ),
    files: createFilesState(config.model.versionPath, config.limits.memoryBytes),
  };
}

/**
 * Ends a call into the guest (start-up or an execute): unfinished stdout / stderr lines go to
 * the log, then the log budget's warning (if anything was dropped) and a refill.
 */
export function endCall(state: HostState): void {
  flushOutput(state.stdio);
  endLogCall(state.log);
}
