/**
 * Sandbox worker: one per model instance. Instantiates the component from the compiled core
 * modules it was given (jco glue, async instantiation) with only the host's imports — the
 * `warden:backend/host` functions below and the deny-by-default WASI of ./wasi.ts — creates
 * the `model` and `instance` resources, then runs `execute` for each message from the host.
 *
 * A trap (any exception out of the guest that is not a returned error) is reported and the
 * worker does nothing more: the host terminates it and starts a new one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fromWitError, fromWitResponse, ResponseCheckError, toWitRequest, type ResponseCheckContext } from './convert.js';
import type { FromWorker, ToWorker, WireError, WireRequest, WireResponse, WireResult, WorkerInit } from './protocol.js';
import { CANCEL_SLOTS } from './protocol.js';
import { createWasi, GuestExit } from './wasi.js';
import type * as WitBackend from './wit-types/interfaces/warden-backend-backend.js';
import type * as WitTypes from './wit-types/interfaces/warden-backend-types.js';

const init = workerData as WorkerInit;
const port = parentPort!;
const cancelFlags = new Int32Array(init.cancelFlags);
const outputs = new Map(init.outputs.map((o) => [o.name, o]));

function post(msg: FromWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(msg, transfer);
}

// ------------------------------------------------------------------------------ log budget

let logBudget = init.limits.logBytes;
let logDropped = 0;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8');

function resetLogBudget(): void {
  if (logDropped > 0) {
    post({ t: 'log', level: 'warn', source: 'host', message: `log budget of ${init.limits.logBytes} bytes per call exceeded: ${logDropped} bytes of backend log dropped` });
  }
  logBudget = init.limits.logBytes;
  logDropped = 0;
}

function guestLog(level: 'info' | 'warn' | 'error' | 'verbose', source: 'guest' | 'stdout' | 'stderr', message: string, byteLength: number): void {
  if (byteLength > logBudget) {
    logDropped += byteLength;
    logBudget = 0;
    return;
  }
  logBudget -= byteLength;
  post({ t: 'log', level, source, message });
}

const pendingOutput: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' };
function outputSink(stream: 'stdout' | 'stderr', bytes: Uint8Array): void {
  if (bytes.length > logBudget) {
    logDropped += bytes.length;
    logBudget = 0;
    return;
  }
  logBudget -= bytes.length;
  const text = pendingOutput[stream] + decoder.decode(bytes, { stream: true });
  const lines = text.split('\n');
  pendingOutput[stream] = lines.pop()!;
  for (const line of lines) post({ t: 'log', level: stream === 'stderr' ? 'warn' : 'info', source: stream, message: line });
}
function flushOutput(): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    if (pendingOutput[stream]) post({ t: 'log', level: stream === 'stderr' ? 'warn' : 'info', source: stream, message: pendingOutput[stream] });
    pendingOutput[stream] = '';
  }
}

// ------------------------------------------------------------------------------ requests in flight

interface InFlight {
  request: WireRequest;
  index: number;
  final: boolean;
  check: ResponseCheckContext;
}
let inFlight = new Map<number, InFlight>();

/** Error value for an import returning `result<_, error>` (jco: a thrown non-Error object). */
function witErr(code: WitTypes.ErrorCode, message: string): { payload: WitTypes.Error } {
  return { payload: { code, message } };
}

function transferListOf(resp: WireResponse | undefined): ArrayBuffer[] {
  if (!resp) return [];
  const out: ArrayBuffer[] = [];
  for (const t of resp.outputs) {
    // jco lifts every list<u8> into its own ArrayBuffer; copy anything that is only a view
    if (t.data.byteOffset !== 0 || t.data.byteLength !== t.data.buffer.byteLength || out.includes(t.data.buffer as ArrayBuffer)) t.data = new Uint8Array(t.data);
    out.push(t.data.buffer as ArrayBuffer);
  }
  return out;
}

function lookup(handle: number): InFlight {
  const f = inFlight.get(handle);
  if (!f) throw witErr('not-found', `request handle ${handle} is not an in-flight request of this instance`);
  if (f.final) throw witErr('invalid-arg', `request handle ${handle} already got its final response`);
  return f;
}

function sendResponse(handle: number, response: WitBackend.Result<WitTypes.Response, WitTypes.Error>, final: boolean): void {
  const f = lookup(handle);
  if (!init.model.decoupled && !final) {
    throw witErr('unsupported', `model '${init.model.name}' is not decoupled: it may send only one response per request, and it must be final`);
  }
  if (response.tag === 'err') {
    f.final ||= final;
    post({ t: 'send', handle, error: fromWitError(response.val), final });
    return;
  }
  let wire: WireResponse;
  try {
    wire = fromWitResponse(response.val, f.check);
  } catch (e) {
    if (e instanceof ResponseCheckError) throw witErr('invalid-arg', e.message);
    throw e;
  }
  f.final ||= final;
  post({ t: 'send', handle, response: wire, final }, transferListOf(wire));
}

function sendFinal(handle: number): void {
  const f = lookup(handle);
  f.final = true;
  post({ t: 'send', handle, final: true });
}

function isCancelled(handle: number): boolean {
  const f = inFlight.get(handle);
  return f !== undefined && f.index < CANCEL_SLOTS && Atomics.load(cancelFlags, f.index) !== 0;
}

// ------------------------------------------------------------------------------ version-directory files

const versionRoot = (() => {
  try {
    return realpathSync(init.model.versionPath);
  } catch {
    return undefined;
  }
})();

function resolveModelFile(path: string): string {
  if (typeof path !== 'string' || path === '' || path.length > 4096) throw witErr('invalid-arg', 'read-file: empty or overlong path');
  if (path.startsWith('/') || path.includes('\\') || path.includes('\0') || /^[A-Za-z]:/.test(path)) {
    throw witErr('invalid-arg', `read-file: '${path}' must be relative to the model's version directory`);
  }
  if (path.split('/').some((seg) => seg === '..' || seg === '')) throw witErr('invalid-arg', `read-file: '${path}' may not contain '..' or empty segments`);
  if (!versionRoot) throw witErr('not-found', 'read-file: the model has no version directory');
  let real: string;
  try {
    real = realpathSync(join(versionRoot, ...path.split('/')));
  } catch {
    throw witErr('not-found', `read-file: '${path}' does not exist in the model's version directory`);
  }
  if (real !== versionRoot && !real.startsWith(versionRoot + sep)) {
    throw witErr('invalid-arg', `read-file: '${path}' leads outside the model's version directory`);
  }
  return real;
}

function readModelFile(path: string): Uint8Array {
  const real = resolveModelFile(path);
  const st = statSync(real);
  if (!st.isFile()) throw witErr('invalid-arg', `read-file: '${path}' is not a regular file`);
  if (st.size > init.limits.memoryBytes) {
    throw witErr('unavailable', `read-file: '${path}' is ${st.size} bytes, more than the instance's memory limit of ${init.limits.memoryBytes} bytes`);
  }
  return readFileSync(real);
}

function listModelFiles(): string[] {
  if (!versionRoot) return [];
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 32 || out.length > 10_000) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (e.isFile() || (e.isSymbolicLink() && safeFile(p))) out.push(relative(versionRoot, p).split(sep).join('/'));
    }
  };
  const safeFile = (p: string) => {
    try {
      const real = realpathSync(p);
      return real.startsWith(versionRoot + sep) && lstatSync(real).isFile();
    } catch {
      return false;
    }
  };
  try {
    walk(versionRoot, 0);
  } catch (e) {
    throw witErr('internal', `list-files: ${(e as Error).message}`);
  }
  return out.sort();
}

// ------------------------------------------------------------------------------ imports

const host = {
  log: (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => {
    guestLog(level, 'guest', message, encoder.encode(message).length);
  },
  sendResponse,
  sendFinal,
  isCancelled,
  readFile: readModelFile,
  listFiles: listModelFiles,
};

function buildImports(): Record<string, Record<string, unknown>> {
  const unversioned: Record<string, Record<string, unknown>> = {
    'warden:backend/host': host,
    'warden:backend/types': {},
    ...createWasi(outputSink),
  };
  const imports: Record<string, Record<string, unknown>> = { ...unversioned };
  // jco's glue asks for unversioned keys at run time; supply the versioned ones too
  for (const [k, v] of Object.entries(unversioned)) imports[`${k}@${k.startsWith('warden:') ? '0.1.0' : '0.2.12'}`] = v;
  return imports;
}

// ------------------------------------------------------------------------------ life cycle

interface GuestBackend {
  Model: { create(ctx: WitBackend.ModelContext): object };
  Instance: { create(model: object, ctx: WitBackend.InstanceContext): { execute(reqs: WitTypes.Request[]): WitBackend.Result<WitTypes.Response, WitTypes.Error>[] } };
}

/**
 * The `err` of a `result` returned by the guest, as jco throws it: a ComponentError carrying it
 * as `payload`, or the error record itself. Anything else thrown (Error instances) is a trap.
 */
function guestError(e: unknown): WireError | undefined {
  if (!e || typeof e !== 'object') return undefined;
  if (Object.prototype.hasOwnProperty.call(e, 'payload')) return fromWitError((e as { payload: unknown }).payload);
  if (!(e instanceof Error) && 'code' in e && 'message' in e) return fromWitError(e);
  return undefined;
}

function trapMessage(e: unknown): string {
  if (e instanceof GuestExit) return e.message;
  if (e instanceof RangeError && /call stack/i.test(e.message)) return `stack overflow (${e.message})`;
  if (e instanceof Error && e.name === 'RuntimeError') return `wasm trap: ${e.message.replace(/^wasm trap: /, '')}`;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

let instance: ReturnType<GuestBackend['Instance']['create']> | undefined;
let trapped = false;

function trap(e: unknown, during: 'create' | 'execute'): void {
  trapped = true;
  flushOutput();
  post({ t: 'trap', message: trapMessage(e), during });
}

async function start(): Promise<void> {
  const t0 = performance.now();
  let exports: Record<string, unknown>;
  try {
    const glue = (await import(init.glueUrl)) as {
      instantiate(getCoreModule: (name: string) => WebAssembly.Module, imports: unknown): Promise<Record<string, unknown>>;
    };
    exports = await glue.instantiate((name) => {
      const m = init.modules[name];
      if (!m) throw new Error(`no core module '${name}'`);
      return m;
    }, buildImports());
  } catch (e) {
    trap(e, 'create');
    return;
  }
  const backend = (exports['warden:backend/backend@0.1.0'] ?? exports['backend']) as GuestBackend | undefined;
  if (!backend?.Model?.create || !backend.Instance?.create) {
    post({ t: 'create-error', error: { code: 'INVALID_ARG', message: 'the component does not export the model and instance resources of warden:backend/backend' } });
    return;
  }
  try {
    const model = backend.Model.create({ name: init.model.name, version: BigInt(init.model.version), config: init.model.configJson });
    instance = backend.Instance.create(model, { name: init.instance.name, kind: init.instance.kind, deviceId: init.instance.deviceId });
  } catch (e) {
    const err = guestError(e);
    flushOutput();
    resetLogBudget();
    if (err) post({ t: 'create-error', error: err });
    else trap(e, 'create');
    return;
  }
  flushOutput();
  resetLogBudget();
  post({ t: 'ready', startMs: performance.now() - t0 });
}

function execute(msg: Extract<ToWorker, { t: 'exec' }>): void {
  if (trapped || !instance) return;
  inFlight = new Map();
  msg.requests.forEach((request, index) => {
    inFlight.set(request.handle, {
      request,
      index,
      final: false,
      check: { outputs, maxBatchSize: init.model.maxBatchSize, batchSize: request.batchSize, requestedOutputs: request.requestedOutputs },
    });
  });
  const witRequests = msg.requests.map(toWitRequest);
  const computeStartNs = process.hrtime.bigint();
  let returned: WitBackend.Result<WitTypes.Response, WitTypes.Error>[];
  try {
    returned = instance.execute(witRequests);
  } catch (e) {
    trap(e, 'execute');
    return;
  }
  const computeEndNs = process.hrtime.bigint();
  const results: WireResult[] = [];
  const transfer: ArrayBuffer[] = [];
  msg.requests.forEach((req, i) => {
    const f = inFlight.get(req.handle)!;
    const entry = Array.isArray(returned) ? returned[i] : undefined;
    if (f.final) {
      results.push(null);
    } else if (entry === undefined) {
      results.push(
        init.model.decoupled
          ? null
          : { err: { code: 'INTERNAL', message: `backend of model '${init.model.name}' returned ${Array.isArray(returned) ? returned.length : 0} responses for ${msg.requests.length} requests` } },
      );
    } else if (entry.tag === 'err') {
      results.push({ err: fromWitError(entry.val) });
    } else {
      try {
        const wire = fromWitResponse(entry.val, f.check);
        transfer.push(...transferListOf(wire));
        results.push({ ok: wire });
      } catch (e) {
        if (!(e instanceof ResponseCheckError)) throw e;
        results.push({ err: { code: 'INTERNAL', message: `backend of model '${init.model.name}' produced an invalid response: ${e.message}` } });
      }
    }
  });
  inFlight = new Map();
  flushOutput();
  resetLogBudget();
  post({ t: 'done', seq: msg.seq, results, computeStartNs, computeEndNs }, transfer);
}

port.on('message', (msg: ToWorker) => {
  if (msg.t === 'exec') execute(msg);
});

void start();
