/**
 * The model log a backend writes for the model's owner (DESIGN "Sandbox rules": what a sandboxed
 * guest writes through the `log` capability and its stdout / stderr): one bounded ring per model,
 * kept by the lifecycle (metrics/model-log.ts), read through `GET /v2/models/{m}/log` by the
 * model's tenant and by operators.
 */

/** Severity of a model-log line: the WIT `log-level`. */
export type ModelLogLevel = 'error' | 'warn' | 'info' | 'verbose';

/** Where a line came from: the guest's `log` call, its stdout / stderr, or the host about the guest. */
export type ModelLogSource = 'guest' | 'stdout' | 'stderr' | 'host';

/** What a backend writes to one version's model log; lines are escaped and bounded by the ring. */
export interface ModelLogWriter {
  write(level: ModelLogLevel, source: ModelLogSource, message: string): void;
}

/** Bounds of one model's ring. */
export interface ModelLogLimits {
  /** Lines kept, >= 1. */
  lines: number;
  /** UTF-8 bytes of kept (escaped) messages, >= `lineBytes`. */
  bytes: number;
  /** UTF-8 bytes of one (escaped) message; the rest is cut and counted, >= 16. */
  lineBytes: number;
}

/** One kept line, as the log endpoint prints it. */
export interface ModelLogEntry {
  /** 1, 2, ... in write order, over the model's life (gaps: lines the ring dropped). */
  seq: number;
  /** When it was written, ISO 8601 UTC. */
  time: string;
  /** The model version whose backend wrote it. */
  version: number;
  level: ModelLogLevel;
  source: ModelLogSource;
  /** The escaped message, at most `ModelLogLimits.lineBytes` UTF-8 bytes. */
  message: string;
  /** UTF-8 bytes of the original message cut off the end (absent when nothing was). */
  truncated_bytes?: number;
}

/** What a read returns. */
export interface ModelLogRead {
  /** Lines in write order: every kept line after `since`, of the asked version (all versions by default). */
  lines: ModelLogEntry[];
  /** The seq the next written line will get (a reader's next `since` is this minus one). */
  next_seq: number;
  /** Lines the ring dropped to stay within its bounds since the model was first loaded. */
  dropped_lines: number;
  /** Bytes of those lines' (escaped) messages. */
  dropped_bytes: number;
  /** The ring's bounds. */
  limits: ModelLogLimits;
}
