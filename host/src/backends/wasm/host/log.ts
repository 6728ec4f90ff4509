/**
 * Host capability `warden:backend/host.log`, and the per-call log budget it shares with captured
 * stdout / stderr (./wasi/stdio.ts).
 *
 * The budget is in bytes, per call into the backend (start-up, each execute): a message is
 * admitted only if it fits what is left of the budget. The first message that does not fit
 * empties the budget: it and every later non-empty message are dropped and counted, and
 * {@link endLogCall} emits one warning saying how many bytes were dropped, then refills the budget.
 */

/** `log-level` of the WIT. */
export type LogLevel = 'info' | 'warn' | 'error' | 'verbose';

/** Who wrote a log line: the guest through `host.log`, its stdout / stderr, or the host itself. */
export type LogSource = 'guest' | 'stdout' | 'stderr' | 'host';

/** One line for the model's log. */
export interface LogLine {
  level: LogLevel;
  source: LogSource;
  message: string;
}

/** Budget per call into the backend. */
export interface LogBudgetLimits {
  /** Bytes (UTF-8) of log per call, >= 1. */
  bytes: number;
}

/** Per-instance state of the log capability. */
export interface LogState {
  readonly limits: LogBudgetLimits;
  /** Delivers an admitted line to the model's log. */
  readonly emit: (line: LogLine) => void;
  /** Bytes left in this call's budget. */
  bytesLeft: number;
  /** Bytes dropped in this call. */
  droppedBytes: number;
}

/** A fresh log state with a full budget. */
export function createLogState(limits: LogBudgetLimits, emit: (line: LogLine) => void): LogState {
  return { limits, emit, bytesLeft: limits.bytes, droppedBytes: 0 };
}

/**
 * Charges `bytes` bytes to this call's budget.
 * @returns true if they fit (the caller may emit them), false if they were dropped (and counted)
 */
export function chargeLog(state: LogState, bytes: number): boolean {
  if (bytes > state.bytesLeft) {
    state.droppedBytes += bytes;
    state.bytesLeft = 0;
    return false;
  }
  state.bytesLeft -= bytes;
  return true;
}

const encoder = new TextEncoder();

/** `host.log(level, message)`: charged the message's UTF-8 length. */
export function log(state: LogState, level: LogLevel, message: string): void {
  if (chargeLog(state, encoder.encode(message).length)) state.emit({ level, source: 'guest', message });
}

/**
 * Ends a call into the backend: if anything was dropped, emits one `warn` line from the host
 * saying how much; then refills the budget.
 */
export function endLogCall(state: LogState): void {
  if (state.droppedBytes > 0) {
    state.emit({ level: 'warn', source: 'host', message: `log budget of ${state.limits.bytes} bytes per call exceeded: ${state.droppedBytes} bytes of backend log dropped` });
  }
  state.bytesLeft = state.limits.bytes;
  state.droppedBytes = 0;
}
