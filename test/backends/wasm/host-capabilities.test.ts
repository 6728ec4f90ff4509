/**
 * The host capabilities of sandboxed instances (host/src/backends/wasm/host/), one module at a
 * time and without any engine: the log budget (bytes and messages, empty messages included),
 * stdout / stderr capture, read-only model files (path containment), response sending (nothing
 * after a final), the deny-by-default WASI pieces, and the import object the V8 engine builds from
 * them (exactly the sandbox world's interfaces, plain objects). A second engine is checked against
 * the same modules.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOWED_IMPORTS, SANDBOX_MEMBERS, SUPPORTED_BACKEND_API_VERSIONS } from '../../../host/src/backends/wasm/component-check.js';
import type { HostConfig } from '../../../host/src/backends/wasm/engine.js';
import { createFilesState, fileError, listFiles, readFile, resolveModelFile } from '../../../host/src/backends/wasm/host/files.js';
import { createHostState, endCall } from '../../../host/src/backends/wasm/host/index.js';
import { createLogState, endLogCall, log, type LogLine } from '../../../host/src/backends/wasm/host/log.js';
import {
  beginExecute,
  createResponsesState,
  finishExecute,
  isCancelled,
  sendFinal,
  sendResponse,
  type ResponseSend,
} from '../../../host/src/backends/wasm/host/responses.js';
import { exit, GuestExit } from '../../../host/src/backends/wasm/host/wasi/exit.js';
import { createWasi } from '../../../host/src/backends/wasm/host/wasi/index.js';
import { poll, Pollable } from '../../../host/src/backends/wasm/host/wasi/poll.js';
import { MAX_RANDOM_BYTES, randomBytes } from '../../../host/src/backends/wasm/host/wasi/random.js';
import { createStdioState, flushOutput, stdioImports, writeOutput } from '../../../host/src/backends/wasm/host/wasi/stdio.js';
import type { WireRequest } from '../../../host/src/backends/wasm/wire.js';
import { buildImports, type InferenceImports } from '../../../host/src/backends/wasm/v8/imports.js';

/** Runs `fn`, expecting a host call error (`{ payload: { code, message } }`); returns the message. */
function hostError(fn: () => unknown, code: string): string {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, 'expected a host call error').toMatchObject({ payload: { code } });
  return (thrown as { payload: { message: string } }).payload.message;
}

function logCapture(bytes: number, messages: number) {
  const lines: LogLine[] = [];
  return { lines, state: createLogState({ bytes, messages }, (l) => lines.push(l)) };
}

describe('log (host.log + budget)', () => {
  it('admits messages while both budgets last; the first that does not fit ends the call, then one warning and a refill', () => {
    const { lines, state } = logCapture(10, 100);
    log(state, 'info', 'abcd');
    log(state, 'warn', 'éé'); // 4 bytes of UTF-8
    log(state, 'info', 'xyz'); // 11 > 10: dropped, budget exhausted
    log(state, 'info', 'a'); // would fit the bytes left, but the budget is gone for this call
    expect(lines.map((l) => [l.level, l.source, l.message])).toEqual([
      ['info', 'guest', 'abcd'],
      ['warn', 'guest', 'éé'],
    ]);
    endLogCall(state);
    expect(lines.at(-1)).toEqual({ level: 'warn', source: 'host', message: 'log budget of 10 bytes per call exceeded: 4 bytes of backend log dropped' });
    log(state, 'info', '0123456789');
    expect(lines.at(-1)?.message).toBe('0123456789');
    endLogCall(state);
    expect(lines).toHaveLength(4); // nothing dropped: no warning
  });

  it('empty messages count against the message budget', () => {
    const { lines, state } = logCapture(1024, 3);
    for (let i = 0; i < 5; i++) log(state, 'info', '');
    expect(lines).toHaveLength(3);
    endLogCall(state);
    expect(lines.at(-1)).toEqual({
      level: 'warn',
      source: 'host',
      message: 'log budget of 3 messages per call exceeded: 2 messages (0 bytes) of backend log dropped',
    });
  });

  it('empty messages do not get through once the byte budget is exhausted', () => {
    const { lines, state } = logCapture(4, 1000);
    log(state, 'info', 'too long');
    for (let i = 0; i < 100; i++) log(state, 'info', '');
    expect(lines).toEqual([]);
    endLogCall(state);
    expect(lines.map((l) => l.message)).toEqual(['log budget of 4 bytes per call exceeded: 8 bytes of backend log dropped']);
  });

  it('a message that breaks both budgets is reported as the byte budget', () => {
    const { lines, state } = logCapture(4, 1);
    log(state, 'info', 'a');
    log(state, 'info', 'bcdef');
    endLogCall(state);
    expect(lines.at(-1)?.message).toBe('log budget of 4 bytes per call exceeded: 5 bytes of backend log dropped');
  });
});

describe('stdout / stderr capture (wasi/stdio)', () => {
  const enc = (s: string) => new TextEncoder().encode(s);

  it('logs complete lines (stdout info, stderr warn), keeps the rest until the call ends', () => {
    const { lines, state } = logCapture(1024, 100);
    const stdio = createStdioState(state);
    writeOutput(stdio, 'stdout', enc('one\ntw'));
    writeOutput(stdio, 'stderr', enc('oops'));
    writeOutput(stdio, 'stdout', enc('o\n'));
    expect(lines).toEqual([
      { level: 'info', source: 'stdout', message: 'one' },
      { level: 'info', source: 'stdout', message: 'two' },
    ]);
    flushOutput(stdio);
    expect(lines.at(-1)).toEqual({ level: 'warn', source: 'stderr', message: 'oops' });
    flushOutput(stdio);
    expect(lines).toHaveLength(3);
  });

  it('decodes a UTF-8 character split across writes', () => {
    const { lines, state } = logCapture(1024, 100);
    const stdio = createStdioState(state);
    const bytes = enc('€\n');
    writeOutput(stdio, 'stdout', bytes.subarray(0, 1));
    writeOutput(stdio, 'stdout', bytes.subarray(1));
    expect(lines.map((l) => l.message)).toEqual(['€']);
  });

  it('charges the bytes of each write; a write that does not fit is dropped whole', () => {
    const { lines, state } = logCapture(8, 100);
    const stdio = createStdioState(state);
    writeOutput(stdio, 'stdout', enc('abc\n'));
    writeOutput(stdio, 'stdout', enc('defgh\nij\n'));
    flushOutput(stdio);
    endLogCall(state);
    expect(lines.map((l) => l.message)).toEqual(['abc', 'log budget of 8 bytes per call exceeded: 9 bytes of backend log dropped']);
  });

  it('charges one message per line: a flood of empty lines does not get past the message budget', () => {
    const { lines, state } = logCapture(64 * 1024, 4);
    const stdio = createStdioState(state);
    writeOutput(stdio, 'stdout', new Uint8Array(4096).fill(10)); // 4096 empty lines > 4 messages
    expect(lines).toEqual([]);
    writeOutput(stdio, 'stdout', enc('later\n'));
    expect(lines).toEqual([]);
    flushOutput(stdio);
    endLogCall(state);
    expect(lines.map((l) => l.message)).toEqual(['log budget of 4 messages per call exceeded: 4097 messages (4102 bytes) of backend log dropped']);
    writeOutput(stdio, 'stdout', enc('a\nb\nc\nd\n'));
    expect(lines.slice(1).map((l) => l.message)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('streams: stdin is closed, stdout writes reach the log, check-write allows 64 KiB', () => {
    const { lines, state } = logCapture(1024, 100);
    const imports = stdioImports(createStdioState(state));
    const stdin = (imports['wasi:cli/stdin']!.getStdin as () => { read(): unknown })();
    let thrown: unknown;
    try {
      stdin.read();
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toEqual({ tag: 'closed' });
    const stdout = (imports['wasi:cli/stdout']!.getStdout as () => { write(b: Uint8Array): void; checkWrite(): bigint })();
    expect(stdout.checkWrite()).toBe(65536n);
    stdout.write(enc('hello\n'));
    expect(lines).toEqual([{ level: 'info', source: 'stdout', message: 'hello' }]);
  });
});

describe('files (host.read-file, host.list-files)', () => {
  let root: string;
  let version: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'warden-files-'));
    version = join(root, 'm', '1');
    mkdirSync(join(version, 'sub'), { recursive: true });
    writeFileSync(join(version, 'labels.txt'), 'cat\ndog\n');
    writeFileSync(join(version, 'sub', 'w.bin'), Buffer.alloc(100));
    writeFileSync(join(root, 'm', 'config.pbtxt'), 'secret');
    writeFileSync(join(root, 'outside.txt'), 'secret');
    symlinkSync(join(root, 'outside.txt'), join(version, 'escape'));
    symlinkSync('labels.txt', join(version, 'alias'));
    symlinkSync(join(root, 'm'), join(version, 'updir'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('reads files of the version directory, symbolic links inside it included', () => {
    const s = createFilesState(version, 1024);
    expect(Buffer.from(readFile(s, 'labels.txt')).toString()).toBe('cat\ndog\n');
    expect(readFile(s, 'sub/w.bin')).toHaveLength(100);
    expect(Buffer.from(readFile(s, 'alias')).toString()).toBe('cat\ndog\n');
  });

  it('refuses paths that are absolute, climb, or lead outside, before or after resolving links', () => {
    const s = createFilesState(version, 1024);
    expect(hostError(() => readFile(s, '../config.pbtxt'), 'invalid-arg')).toBe("read-file: '../config.pbtxt' may not contain '..' or empty segments");
    expect(hostError(() => readFile(s, 'sub/../../config.pbtxt'), 'invalid-arg')).toMatch(/may not contain '\.\.'/);
    expect(hostError(() => readFile(s, 'sub//w.bin'), 'invalid-arg')).toMatch(/empty segments/);
    expect(hostError(() => readFile(s, '/etc/passwd'), 'invalid-arg')).toBe("read-file: '/etc/passwd' must be relative to the model's version directory");
    expect(hostError(() => readFile(s, 'sub\\w.bin'), 'invalid-arg')).toMatch(/must be relative/);
    expect(hostError(() => readFile(s, 'C:x'), 'invalid-arg')).toMatch(/must be relative/);
    expect(hostError(() => readFile(s, 'a\0b'), 'invalid-arg')).toMatch(/must be relative/);
    expect(hostError(() => readFile(s, ''), 'invalid-arg')).toBe('read-file: empty or overlong path');
    expect(hostError(() => readFile(s, 'x'.repeat(4097)), 'invalid-arg')).toBe('read-file: empty or overlong path');
    expect(hostError(() => readFile(s, 'escape'), 'invalid-arg')).toBe("read-file: 'escape' leads outside the model's version directory");
    expect(hostError(() => readFile(s, 'updir/config.pbtxt'), 'invalid-arg')).toMatch(/leads outside/);
    expect(hostError(() => resolveModelFile(s, 'missing.txt'), 'not-found')).toBe("read-file: 'missing.txt' does not exist in the model's version directory");
  });

  it('refuses directories and files above the memory limit', () => {
    const s = createFilesState(version, 99);
    expect(hostError(() => readFile(s, 'sub'), 'invalid-arg')).toBe("read-file: 'sub' is not a regular file");
    expect(hostError(() => readFile(s, 'sub/w.bin'), 'unavailable')).toBe(
      "read-file: 'sub/w.bin' is 100 bytes, more than the instance's memory limit of 99 bytes",
    );
  });

  it('lists regular files and links to files inside, sorted; nothing without a version directory', () => {
    expect(listFiles(createFilesState(version, 1024))).toEqual(['alias', 'labels.txt', 'sub/w.bin']);
    const none = createFilesState(join(root, 'no-such-version'), 1024);
    expect(listFiles(none)).toEqual([]);
    expect(hostError(() => readFile(none, 'labels.txt'), 'not-found')).toBe('read-file: the model has no version directory');
  });
});

describe('files: no host path ever reaches the guest', () => {
  it('list-files of a version directory that went away or became a file: not-found, relative', () => {
    const root = mkdtempSync(join(tmpdir(), 'warden-files-gone-'));
    const version = join(root, 'm', '1');
    mkdirSync(join(version, 'sub'), { recursive: true });
    const s = createFilesState(version, 1024);
    rmSync(version, { recursive: true });
    expect(hostError(() => listFiles(s), 'not-found')).toBe("list-files: the model's version directory does not exist");
    writeFileSync(version, 'x');
    const msg = hostError(() => listFiles(s), 'not-found');
    expect(msg).not.toContain(root);
    rmSync(root, { recursive: true, force: true });
  });

  it("fileError builds its message from the code and the relative path only, never from Node's message", () => {
    const nodeError = (code: string | undefined) => Object.assign(new Error(`${code}: something, open '/srv/secret/tenant-a/m/1/w.bin'`), { code });
    const cases: [string | undefined, string, string][] = [
      ['EACCES', 'unavailable', "read-file: 'w.bin' cannot be read (permission denied)"],
      ['EPERM', 'unavailable', "read-file: 'w.bin' cannot be read (permission denied)"],
      ['ENOENT', 'not-found', "read-file: 'w.bin' does not exist in the model's version directory"],
      ['EISDIR', 'invalid-arg', "read-file: 'w.bin' is not a regular file"],
      ['EIO', 'internal', "read-file: 'w.bin' cannot be read (EIO)"],
      [undefined, 'internal', "read-file: 'w.bin' cannot be read"],
      ["/etc/x'", 'internal', "read-file: 'w.bin' cannot be read"],
    ];
    for (const [code, wit, message] of cases)
      expect(fileError('read-file', 'w.bin', nodeError(code)), String(code)).toEqual({ payload: { code: wit, message } });
    expect(fileError('list-files', 'sub', nodeError('EMFILE')).payload.message).toBe("list-files: 'sub' cannot be read (EMFILE)");
  });
});

describe('responses (host.send-response, send-final, is-cancelled)', () => {
  const outputs = [{ name: 'OUT', datatype: 'FP32' as const, dims: [2] }];
  const req = (handle: number): WireRequest => ({
    handle,
    id: '',
    correlationId: 0,
    flags: 0,
    priority: 0,
    timeoutUs: 0,
    batchSize: 1,
    inputs: [],
    requestedOutputs: ['OUT'],
    parameters: {},
  });
  const ok = (n = 2) => ({
    tag: 'ok' as const,
    val: { outputs: [{ name: 'OUT', datatype: 'fp32' as const, shape: BigInt64Array.of(BigInt(n)), data: new Uint8Array(4 * n) }], parameters: [] },
  });
  function state(decoupled: boolean, cancelled: number[] = []) {
    const sent: ResponseSend[] = [];
    const s = createResponsesState(
      { name: 'm', decoupled, maxBatchSize: 0 },
      outputs,
      (x) => sent.push(x),
      (i) => cancelled.includes(i),
    );
    return { s, sent };
  }

  it('a decoupled model streams responses; after the final, anything more for the request is refused and never sent', () => {
    const { s, sent } = state(true);
    beginExecute(s, [req(7)]);
    sendResponse(s, 7, ok(), false);
    sendResponse(s, 7, { tag: 'err', val: { code: 'invalid-arg', message: 'bad' } }, false);
    sendFinal(s, 7);
    expect(sent.map((x) => [x.final, x.response?.outputs[0]?.shape, x.error?.code])).toEqual([
      [false, [2], undefined],
      [false, undefined, 'INVALID_ARG'],
      [true, undefined, undefined],
    ]);
    expect(hostError(() => sendResponse(s, 7, ok(), false), 'invalid-arg')).toBe('request handle 7 already got its final response');
    expect(hostError(() => sendFinal(s, 7), 'invalid-arg')).toMatch(/already got its final response/);
    expect(sent).toHaveLength(3);
    // what execute returns for it is ignored too
    expect(finishExecute(s, [req(7)], [ok()])).toEqual([null]);
  });

  it('a non-decoupled model sends one final response only', () => {
    const { s, sent } = state(false);
    beginExecute(s, [req(1)]);
    expect(hostError(() => sendResponse(s, 1, ok(), false), 'unsupported')).toBe(
      "model 'm' is not decoupled: it may send only one response per request, and it must be final",
    );
    sendResponse(s, 1, ok(), true);
    expect(hostError(() => sendResponse(s, 1, ok(), true), 'invalid-arg')).toMatch(/already got its final response/);
    expect(sent).toHaveLength(1);
  });

  it('refuses unknown handles and responses that fail the checks (without finishing the request)', () => {
    const { s, sent } = state(true);
    beginExecute(s, [req(1)]);
    expect(hostError(() => sendFinal(s, 99), 'not-found')).toBe('request handle 99 is not an in-flight request of this instance');
    expect(hostError(() => sendResponse(s, 1, ok(3), true), 'invalid-arg')).toBe("output 'OUT' has shape [3], the model configuration expects [2]");
    sendFinal(s, 1);
    expect(sent).toEqual([{ handle: 1, final: true }]);
  });

  it('is-cancelled reads the flag of the request position; false for unknown handles', () => {
    const { s } = state(true, [1]);
    beginExecute(s, [req(10), req(11)]);
    expect([isCancelled(s, 10), isCancelled(s, 11), isCancelled(s, 12)]).toEqual([false, true, false]);
  });

  it('finishExecute: one result per request; missing entries are an error unless decoupled; then nothing is in flight', () => {
    const { s } = state(false);
    const reqs = [req(1), req(2), req(3), req(4)];
    beginExecute(s, reqs);
    sendResponse(s, 1, ok(), true);
    const results = finishExecute(s, reqs, [ok(), { tag: 'err', val: { code: 'not-found', message: 'nope' } }, ok(5)]);
    expect(results[0]).toBeNull();
    expect(results[1]).toEqual({ err: { code: 'NOT_FOUND', message: 'nope' } });
    expect(results[2]).toEqual({
      err: { code: 'INTERNAL', message: "backend of model 'm' produced an invalid response: output 'OUT' has shape [5], the model configuration expects [2]" },
    });
    expect(results[3]).toEqual({ err: { code: 'INTERNAL', message: "backend of model 'm' returned 3 responses for 4 requests" } });
    expect(hostError(() => sendFinal(s, 2), 'not-found')).toMatch(/not an in-flight request/);
    const d = state(true);
    beginExecute(d.s, [req(1)]);
    expect(finishExecute(d.s, [req(1)], [])).toEqual([null]);
  });
});

describe('deny-by-default WASI pieces', () => {
  it('environment is empty, exit traps, random is capped per call, clocks work', () => {
    const wasi = createWasi(createStdioState(logCapture(1, 1).state));
    const env = wasi['wasi:cli/environment']!;
    expect([(env.getEnvironment as () => unknown)(), (env.getArguments as () => unknown)(), (env.initialCwd as () => unknown)()]).toEqual([[], [], undefined]);
    expect(() => exit({ tag: 'err' })).toThrow(GuestExit);
    expect(() => (wasi['wasi:cli/exit']!.exitWithCode as (c: number) => void)(3)).toThrow(
      'the backend called wasi:cli/exit (3); sandboxed backends may not exit',
    );
    expect(randomBytes(16n)).toHaveLength(16);
    expect(randomBytes(BigInt(MAX_RANDOM_BYTES) * 4n)).toHaveLength(MAX_RANDOM_BYTES);
    const wall = (wasi['wasi:clocks/wall-clock']!.now as () => { seconds: bigint })();
    expect(Number(wall.seconds)).toBeCloseTo(Date.now() / 1000, -1);
    for (const t of ['terminal-stdin', 'terminal-stdout', 'terminal-stderr']) {
      const get = Object.values(wasi[`wasi:cli/${t}`]!)[0] as () => unknown;
      expect(get(), t).toBeUndefined();
    }
  });

  it('poll blocks until the soonest pollable is ready; an empty list traps', () => {
    const t0 = process.hrtime.bigint();
    const ready = poll([new Pollable(t0 + 20_000_000n), new Pollable(t0 + 5_000_000n)]);
    expect(Array.from(ready)).toEqual([1]);
    expect(process.hrtime.bigint() - t0).toBeGreaterThanOrEqual(5_000_000n);
    expect(Array.from(poll([new Pollable(undefined)]))).toEqual([0]);
    expect(() => poll([])).toThrow(GuestExit);
  });

  it('the WASI import object has exactly the WASI interfaces of the sandbox world', () => {
    const wasi = createWasi(createStdioState(logCapture(1, 1).state));
    expect(Object.keys(wasi).sort()).toEqual(ALLOWED_IMPORTS.filter((i) => i.startsWith('wasi:')).sort());
  });
});

describe('V8 import object', () => {
  const config: HostConfig = {
    model: { name: 'm', version: 1, configJson: '{}', versionPath: tmpdir(), decoupled: false, maxBatchSize: 0 },
    outputs: [],
    limits: { memoryBytes: 65536, executeMs: 1000, logBytes: 64, logMessages: 2 },
  };
  /** The worker's calls to other models, none of which these tests make. */
  const noCalls: InferenceImports = {
    infer: () => expect.unreachable(),
    start: () => expect.unreachable(),
    next: () => expect.unreachable(),
    cancel: () => expect.unreachable(),
  };

  it('holds each interface of the sandbox world, unversioned and versioned, as frozen objects of functions without prototypes', () => {
    const imports = buildImports(createHostState(config, { log: () => {}, send: () => {}, cancelledAt: () => false }), noCalls);
    const expected = ALLOWED_IMPORTS.flatMap((i) => [
      i,
      ...(i.startsWith('warden:') ? SUPPORTED_BACKEND_API_VERSIONS : ['0.2.12']).map((v) => `${i}@${v}`),
    ]).sort();
    expect(Object.keys(imports).sort()).toEqual(expected);
    expect(Object.getPrototypeOf(imports)).toBeNull();
    expect(Object.isFrozen(imports)).toBe(true);
    for (const [key, iface] of Object.entries(imports)) {
      expect(Object.getPrototypeOf(iface), key).toBeNull();
      expect(Object.isFrozen(iface), key).toBe(true);
      for (const [name, fn] of Object.entries(iface)) expect(typeof fn, `${key}.${name}`).toBe('function');
    }
    expect(Object.keys(imports['warden:backend/host']!).sort()).toEqual(['isCancelled', 'listFiles', 'log', 'readFile', 'sendFinal', 'sendResponse']);
  });

  /** jco's JavaScript name of a WIT name: `to-debug-string` → `toDebugString`, `input-stream` → `InputStream`. */
  const camel = (n: string) => n.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  const upper = (n: string) => camel(n).replace(/^[a-z]/, (c) => c.toUpperCase());

  it('supplies every function and resource SANDBOX_MEMBERS allows, by the name jco looks up, as own properties', () => {
    const imports = buildImports(createHostState(config, { log: () => {}, send: () => {}, cancelledAt: () => false }), noCalls);
    const own = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);
    for (const [iface, members] of Object.entries(SANDBOX_MEMBERS)) {
      const obj = imports[iface]!;
      for (const [name, kind] of Object.entries(members)) {
        const at = `${iface} ${name}`;
        if (kind === 'type') continue;
        if (kind === 'resource') {
          expect(own(obj, upper(name)), at).toBe(true);
          continue;
        }
        const m = /^\[(method|static|constructor)\]([a-z0-9-]+)(?:\.([a-z0-9-]+))?$/.exec(name);
        if (!m) {
          expect(own(obj, camel(name)), at).toBe(true);
          expect(typeof obj[camel(name)], at).toBe('function');
          continue;
        }
        const cls = obj[upper(m[2]!)] as { prototype: object } & Record<string, unknown>;
        expect(typeof cls, at).toBe('function');
        if (m[1] === 'method') expect(own(cls.prototype, camel(m[3]!)), at).toBe(true);
        if (m[1] === 'static') expect(own(cls, camel(m[3]!)), at).toBe(true);
      }
    }
  });

  it('resource classes inherit nothing: no Function constructor, no Object.prototype methods, still constructible', () => {
    const imports = buildImports(createHostState(config, { log: () => {}, send: () => {}, cancelledAt: () => false }), noCalls);
    const IoError = imports['wasi:io/error']!.Error as unknown as (new (msg: string) => { toDebugString(): string }) & Record<string, unknown>;
    expect(IoError.constructor).toBeUndefined();
    expect(IoError.toString).toBeUndefined();
    expect(IoError.call).toBeUndefined();
    const e = new IoError('boom');
    expect(e.toDebugString()).toBe('boom');
    expect(e instanceof IoError).toBe(true);
    expect((e as unknown as Record<string, unknown>).toString).toBeUndefined();
    expect(Object.isFrozen(IoError) && Object.isFrozen(IoError.prototype)).toBe(true);
    const host = imports['warden:backend/host']!;
    for (const name of ['toString', 'constructor', 'valueOf', 'hasOwnProperty', '__proto__']) expect(host[name], name).toBeUndefined();
    expect(imports['toString' as keyof typeof imports]).toBeUndefined();
  });

  it('binds host.log to the instance budget from the model limits', () => {
    const lines: LogLine[] = [];
    const host = createHostState(config, { log: (l) => lines.push(l), send: () => {}, cancelledAt: () => false });
    const hostLog = buildImports(host, noCalls)['warden:backend/host']!.log as (level: string, message: string) => void;
    for (let i = 0; i < 5; i++) hostLog('info', '');
    endCall(host);
    expect(lines.map((l) => l.source)).toEqual(['guest', 'guest', 'host']);
    expect(lines[2]!.message).toBe('log budget of 2 messages per call exceeded: 3 messages (0 bytes) of backend log dropped');
  });
});
