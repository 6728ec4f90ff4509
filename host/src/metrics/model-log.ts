/**
 * A model's log (contract/model-log.ts): the recent lines its backend wrote, in a ring bounded in
 * lines and in bytes (the oldest go first, counted), each line escaped (control, line-separator and
 * bidirectional-override characters, and the backslash, as `\n` / `\uXXXX` / `\\`, so a line
 * can neither forge another nor reorder a reader's terminal) and cut at a byte bound (how much was
 * cut is kept with it). DESIGN "Sandbox rules"; docs/tenant-guide.md "Your model's log".
 */
import type { ModelLogEntry, ModelLogLevel, ModelLogLimits, ModelLogRead, ModelLogSource, ModelLogWriter } from '../contract/model-log.js';

export type { ModelLogEntry, ModelLogLimits, ModelLogRead };

/** 500 lines, 64 KiB of messages, 2 KiB a line: about 64 KiB a model at worst. */
export const DEFAULT_MODEL_LOG_LIMITS: ModelLogLimits = Object.freeze({ lines: 500, bytes: 64 * 1024, lineBytes: 2048 });

// C0, DEL, C1, the line / paragraph separators, bidi embeddings / overrides / isolates, BOM, and the backslash
// eslint-disable-next-line no-control-regex
const ESCAPED = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\\]/g;
const NEEDS_ESCAPE = new RegExp(ESCAPED.source);
const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

/** `message` with {@link ESCAPED} characters written as escapes. */
export function escapeLogText(message: string): string {
  return message.replace(ESCAPED, (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** UTF-8 bytes of one code point (a lone surrogate is escaped before this is asked). */
function utf8Bytes(cp: number): number {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/**
 * `message` escaped ({@link escapeLogText}, and lone surrogates as `\uXXXX`) and cut to at most
 * `max` UTF-8 bytes, never inside a code point or an escape.
 * @returns the text, and how many UTF-16 units of `message` it covers
 */
function escapeAndCut(message: string, max: number): { text: string; consumed: number } {
  if (message.length <= max && !NEEDS_ESCAPE.test(message) && !/[\ud800-\udfff]/.test(message) && Buffer.byteLength(message) <= max) {
    return { text: message, consumed: message.length };
  }
  let text = '';
  let bytes = 0;
  let consumed = 0;
  for (const ch of message) {
    const cp = ch.codePointAt(0)!;
    const lone = ch.length === 1 && cp >= 0xd800 && cp <= 0xdfff;
    const piece = lone ? `\\u${cp.toString(16)}` : escapeLogText(ch);
    const size = piece === ch ? utf8Bytes(cp) : piece.length;
    if (bytes + size > max) break;
    text += piece;
    bytes += size;
    consumed += ch.length;
  }
  return { text, consumed };
}

/** One model's ring. */
export class ModelLog {
  private readonly entries: ModelLogEntry[] = [];
  private head = 0;
  private bytes = 0;
  private nextSeq = 1;
  private droppedLines = 0;
  private droppedBytes = 0;

  constructor(
    readonly limits: ModelLogLimits = DEFAULT_MODEL_LOG_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** A writer that stamps `version` on each line. */
  forVersion(version: number): ModelLogWriter {
    return { write: (level, source, message) => this.append(version, level, source, message) };
  }

  /** Appends one line (escaped, cut to the line bound), dropping the oldest lines beyond the bounds. */
  append(version: number, level: ModelLogLevel, source: ModelLogSource, message: string): void {
    const { text, consumed } = escapeAndCut(message, this.limits.lineBytes);
    const size = Buffer.byteLength(text);
    const entry: ModelLogEntry = { seq: this.nextSeq++, time: new Date(this.now()).toISOString(), version, level, source, message: text };
    if (consumed < message.length) entry.truncated_bytes = Buffer.byteLength(message) - Buffer.byteLength(message.slice(0, consumed));
    this.entries.push(entry);
    this.bytes += size;
    while (this.entries.length - this.head > this.limits.lines || this.bytes > this.limits.bytes) {
      const old = this.entries[this.head++]!;
      const b = Buffer.byteLength(old.message);
      this.bytes -= b;
      this.droppedLines++;
      this.droppedBytes += b;
    }
    // compact the array once half of it is dropped lines
    if (this.head > 64 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Kept lines after `since` (default 0: all), of `version` (default: every version). */
  read(opts: { since?: number; version?: number } = {}): ModelLogRead {
    const since = opts.since ?? 0;
    const lines: ModelLogEntry[] = [];
    for (let i = this.head; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (e.seq > since && (opts.version === undefined || e.version === opts.version)) lines.push({ ...e });
    }
    return { lines, next_seq: this.nextSeq, dropped_lines: this.droppedLines, dropped_bytes: this.droppedBytes, limits: { ...this.limits } };
  }

  /** Lines kept now. */
  get size(): number {
    return this.entries.length - this.head;
  }

  /** UTF-8 bytes of the kept messages. */
  get keptBytes(): number {
    return this.bytes;
  }
}
