/**
 * `wasi:io/streams` and `wasi:cli/{stdin,stdout,stderr}` for sandboxed backends: stdin is always
 * closed; stdout and stderr are captured line by line into the model's log (stdout at `info`,
 * stderr at `warn`), charged to the per-call log budget of ../log.ts. A write costs its bytes and
 * one message per line it completes; a write that does not fit is dropped whole.
 */
import { chargeLog, type LogState } from '../log.js';
import { Pollable } from './poll.js';

/** The captured streams. */
export type OutputStreamName = 'stdout' | 'stderr';

/** Receives guest stdout/stderr bytes. */
export type OutputSink = (stream: OutputStreamName, bytes: Uint8Array) => void;

/** Per-instance state of stdout / stderr capture. */
export interface StdioState {
  readonly log: LogState;
  /** Text after the last newline, per stream, not yet in the log. */
  readonly pending: Record<OutputStreamName, string>;
  /** UTF-8 decoders (streaming: a character may span writes), per stream. */
  readonly decoders: Record<OutputStreamName, TextDecoder>;
}

/** Capture state writing into `log`. */
export function createStdioState(log: LogState): StdioState {
  return { log, pending: { stdout: '', stderr: '' }, decoders: { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') } };
}

const levelOf = (stream: OutputStreamName) => (stream === 'stderr' ? 'warn' : 'info');

function countNewlines(bytes: Uint8Array): number {
  let n = 0;
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}

/**
 * One write to stdout / stderr: charged to the log budget (its bytes, one message per newline);
 * if it fits, every line it completes goes to the log and the rest waits for more.
 */
export function writeOutput(state: StdioState, stream: OutputStreamName, bytes: Uint8Array): void {
  if (!chargeLog(state.log, bytes.length, countNewlines(bytes))) return;
  const text = state.pending[stream] + state.decoders[stream].decode(bytes, { stream: true });
  const lines = text.split('\n');
  state.pending[stream] = lines.pop()!;
  for (const line of lines) state.log.emit({ level: levelOf(stream), source: stream, message: line });
}

/** End of a call into the backend: an unfinished line of each stream goes to the log as it is. */
export function flushOutput(state: StdioState): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    if (state.pending[stream]) state.log.emit({ level: levelOf(stream), source: stream, message: state.pending[stream] });
    state.pending[stream] = '';
  }
}

const CLOSED = { tag: 'closed' } as const;

/** `input-stream`: always closed (stdin of a sandboxed backend is empty). */
class InputStream {
  read(): Uint8Array {
    throw CLOSED;
  }
  blockingRead(): Uint8Array {
    throw CLOSED;
  }
  skip(): bigint {
    throw CLOSED;
  }
  blockingSkip(): bigint {
    throw CLOSED;
  }
  subscribe(): Pollable {
    return new Pollable(undefined);
  }
}

/** Largest single write accepted (what `check-write` permits), bytes. */
const WRITE_CHUNK = 64 * 1024;

/** `output-stream`: every write goes to `sink`; splicing from input streams is closed. */
class OutputStream {
  constructor(
    private readonly stream: OutputStreamName,
    private readonly sink: OutputSink,
  ) {}
  checkWrite(): bigint {
    return BigInt(WRITE_CHUNK);
  }
  write(contents: Uint8Array): void {
    this.sink(this.stream, contents);
  }
  blockingWriteAndFlush(contents: Uint8Array): void {
    this.sink(this.stream, contents);
  }
  flush(): void {}
  blockingFlush(): void {}
  subscribe(): Pollable {
    return new Pollable(undefined);
  }
  writeZeroes(len: bigint): void {
    this.sink(this.stream, new Uint8Array(Number(len > BigInt(WRITE_CHUNK) ? BigInt(WRITE_CHUNK) : len)));
  }
  blockingWriteZeroesAndFlush(len: bigint): void {
    this.writeZeroes(len);
  }
  splice(): bigint {
    throw CLOSED;
  }
  blockingSplice(): bigint {
    throw CLOSED;
  }
}

/** `wasi:io/streams` and `wasi:cli/{stdin,stdout,stderr}`, keyed by unversioned interface name. */
export function stdioImports(state: StdioState): Record<string, Record<string, unknown>> {
  const sink: OutputSink = (stream, bytes) => writeOutput(state, stream, bytes);
  const stdin = new InputStream();
  const stdout = new OutputStream('stdout', sink);
  const stderr = new OutputStream('stderr', sink);
  return {
    'wasi:io/streams': { InputStream, OutputStream },
    'wasi:cli/stdin': { getStdin: () => stdin },
    'wasi:cli/stdout': { getStdout: () => stdout },
    'wasi:cli/stderr': { getStderr: () => stderr },
  };
}
