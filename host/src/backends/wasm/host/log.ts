/**
 * Host capability `warden:backend/host.log`, and the per-call log budget it shares with captured
 * stdout / stderr (./wasi/stdio.ts).
 *
 * The budget is in bytes and in messages, per call into the backend (start-up, each execute):
 * a message is admitted only if it fits both what is left of the byte budget and of the message
 * budget. The first message that does not fit exhausts the budget for the rest of the call: it and
 * every later message (empty ones included) are dropped and counted, and {@link endLogCall}
 * emits one warning saying how much was dropped, then refills the budget.
 */
import type { Logger } from 'pino';
import type { ModelLogWriter } from '../../../contract/model-log.js';

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
  /** Messages per call, >= 1. */
  messages: number;
}

/** Per-instance state of the log capability. */
export interface LogState {
  readonly limits: LogBudgetLimits;
  /** Delivers an admitted line to the model's log. */
  readonly emit: (line: LogLine) => void;
  /** Bytes left in this call's budget. */
  bytesLeft: number;
  /** Messages left in this call's budget. */
  messagesLeft: number;
  /** The budget that ran out first in this call; once set, everything is dropped until the call ends. */
  exhausted?: 'bytes' | 'messages';
  /** Bytes dropped in this call. */
  droppedBytes: number;
  /** Messages dropped in this call. */
  droppedMessages: number;
}

/** A fresh log state with a full budget. */
export function createLogState(limits: LogBudgetLimits, emit: (line: LogLine) => void): LogState {
  return { limits, emit, bytesLeft: limits.bytes, messagesLeft: limits.messages, droppedBytes: 0, droppedMessages: 0 };
}

/**
 * Charges `bytes` bytes and `messages` messages to this call's budget.
 * @returns true if they fit (the caller may emit them), false if they were dropped (and counted)
 */
export function chargeLog(state: LogState, bytes: number, messages: number): boolean {
  if (state.exhausted === undefined && bytes <= state.bytesLeft && messages <= state.messagesLeft) {
    state.bytesLeft -= bytes;
    state.messagesLeft -= messages;
    return true;
  }
  state.exhausted ??= bytes > state.bytesLeft ? 'bytes' : 'messages';
  state.bytesLeft = 0;
  state.messagesLeft = 0;
  state.droppedBytes += bytes;
  state.droppedMessages += messages;
  return false;
}

const encoder = new TextEncoder();

/**
 * `host.log(level, message)`: one message of the message's UTF-8 length; an empty message still
 * costs one message.
 */
export function log(state: LogState, level: LogLevel, message: string): void {
  if (chargeLog(state, encoder.encode(message).length, 1)) state.emit({ level, source: 'guest', message });
}

/**
 * Ends a call into the backend: if anything was dropped, emits one `warn` line from the host
 * saying how much; then refills the budget.
 */
export function endLogCall(state: LogState): void {
  if (state.exhausted === 'bytes') {
    state.emit({
      level: 'warn',
      source: 'host',
      message: `log budget of ${state.limits.bytes} bytes per call exceeded: ${state.droppedBytes} bytes of backend log dropped`,
    });
  } else if (state.exhausted === 'messages') {
    state.emit({
      level: 'warn',
      source: 'host',
      message: `log budget of ${state.limits.messages} messages per call exceeded: ${state.droppedMessages} messages (${state.droppedBytes} bytes) of backend log dropped`,
    });
  }
  state.bytesLeft = state.limits.bytes;
  state.messagesLeft = state.limits.messages;
  state.exhausted = undefined;
  state.droppedBytes = 0;
  state.droppedMessages = 0;
}

/**
 * Delivers an admitted line where a model's guest lines go: the server's log (`logger`, at the
 * line's level; `verbose` is pino's debug) and the model's own log (`modelLog`, readable by the
 * model's tenant; DESIGN "Sandbox rules"), which escapes and bounds it.
 */
export function deliverLogLine(logger: Logger, modelLog: ModelLogWriter | undefined, line: LogLine): void {
  const fields = { source: line.source };
  if (line.level === 'error') logger.error(fields, line.message);
  else if (line.level === 'warn') logger.warn(fields, line.message);
  else if (line.level === 'verbose') logger.debug(fields, line.message);
  else logger.info(fields, line.message);
  modelLog?.write(line.level, line.source, line.message);
}
