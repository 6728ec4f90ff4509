/**
 * V8 sandbox worker: one per model instance. It may start ahead of need, as a spare (./spares.ts)
 * that runs nothing until the host's `init` message gives it its instance; then it instantiates
 * the component from the compiled core modules it was given (jco glue, async instantiation) with only the host's imports — the host
 * capabilities of ../host/ bound to this instance (./imports.ts) — creates the `model` and
 * `instance` resources, then runs `execute` for each message from the host.
 *
 * A trap (any exception out of the guest that is not a returned error) is reported and the
 * worker does nothing more: the host terminates it and starts a new one.
 *
 * The guest reaches JavaScript only through the import object (no prototypes, ./imports.ts) and
 * the glue jco generated for member names the load check allowed. As a last line behind both, the
 * worker closes the property paths to code generation before it loads the glue: the `constructor`
 * of every kind of function prototype (`Function`, async, generator, async generator) throws an
 * EvalError instead of compiling source. The worker gets no environment (`env: {}`) and the glue
 * is an ES module (no `require`).
 */
import { parentPort, receiveMessageOnPort } from 'node:worker_threads';
import { fromWitCallRequest, fromWitError, ResponseCheckError, toWitError, toWitRequest, toWitResponse } from '../convert.js';
import { createHostState, endCall } from '../host/index.js';
import { beginExecute, finishExecute } from '../host/responses.js';
import { GuestExit } from '../host/wasi/index.js';
import { flushOutput } from '../host/wasi/stdio.js';
import type { WireError, WireResponse, WireResult } from '../wire.js';
import type * as WitBackend from '../wit-types/interfaces/warden-backend-backend.js';
import type * as WitTypes from '../wit-types/interfaces/warden-backend-types.js';
import { lowerThisThreadPriority } from '../../../threads/priority.js';
import { buildImports, type InferenceImports } from './imports.js';
import { BACKEND_EXPORTS } from '../component-check.js';
import { witErr } from '../host/errors.js';
import type * as WitInference from '../wit-types/interfaces/warden-backend-inference.js';
import { closeCodeGeneration } from './realm.js';
import { CANCEL_SLOTS, type CallAnswer, type CallToHost, type FromWorker, type ToWorker, type WorkerInit } from './messages.js';

// A sandbox computes for one tenant; the event loop serves every tenant. Guest code runs at
// background priority, so a tenant keeping its sandboxes busy yields the core to the loop
// whenever both want it (DESIGN "Sandbox rules": one tenant's exhaustion must not reduce another's
// service beyond its share).
lowerThisThreadPriority();
const port = parentPort!;
/** The instance's data, from its `init` message (set once, before anything runs). */
let init: WorkerInit;
let cancelFlags: Int32Array;

function post(msg: FromWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(msg, transfer);
}

/** Buffers of a response's outputs to transfer (each output gets a buffer of its own). */
function transferListOf(resp: WireResponse | undefined): ArrayBuffer[] {
  if (!resp) return [];
  const out: ArrayBuffer[] = [];
  for (const t of resp.outputs) {
    // jco lifts every list<u8> into its own ArrayBuffer; copy anything that is only a view
    if (t.data.byteOffset !== 0 || t.data.byteLength !== t.data.buffer.byteLength || out.includes(t.data.buffer as ArrayBuffer))
      t.data = new Uint8Array(t.data);
    out.push(t.data.buffer as ArrayBuffer);
  }
  return out;
}

let host: ReturnType<typeof createHostState>;
let begun = false;

/**
 * Asks the host and waits for its answer (`warden:backend/inference`): the guest is synchronous, so
 * the worker blocks in `Atomics.wait` until the host has answered on the call channel. The host
 * ends a wait that outlives the execute deadline by terminating the worker.
 */
function callHost(call: CallToHost): CallAnswer {
  const { port, signal } = init.callChannel;
  const seen = new Int32Array(signal);
  post({ t: 'call', ...call });
  for (;;) {
    const before = Atomics.load(seen, 0);
    const got = receiveMessageOnPort(port);
    if (got) return got.message as CallAnswer;
    Atomics.wait(seen, 0, before);
  }
}

/** The host's `err` as the guest's (jco: a thrown `{ payload }` is the `err` of a `result`). */
function answerError(a: CallAnswer): never {
  const e = 'err' in a ? a.err : { code: 'INTERNAL' as const, message: 'malformed answer from the host' };
  throw { payload: toWitError(e) };
}

/** The guest's request, or its `invalid-arg` error. */
function callRequest(r: WitInference.InferenceRequest) {
  try {
    return fromWitCallRequest(r);
  } catch (e) {
    if (e instanceof ResponseCheckError) throw witErr('invalid-arg', e.message);
    throw e;
  }
}

const inference: InferenceImports = {
  start(r) {
    const a = callHost({ fn: 'start', request: callRequest(r), decoupled: true });
    if ('ok' in a && typeof a.ok === 'number') return a.ok;
    return answerError(a);
  },
  next(call) {
    const a = callHost({ fn: 'next', handle: call });
    if (!('ok' in a) || typeof a.ok === 'number') return answerError(a);
    return a.ok === null ? undefined : toWitResponse(a.ok);
  },
  cancel(call) {
    post({ t: 'call', fn: 'cancel', handle: call });
  },
  infer(r) {
    const a = callHost({ fn: 'infer', request: callRequest(r) });
    if ('ok' in a && a.ok !== null && typeof a.ok === 'object') return toWitResponse(a.ok);
    return answerError(a);
  },
};

/** Takes the instance's data (the worker may have waited for it as a spare), then starts the guest. */
function begin(given: WorkerInit): void {
  begun = true;
  init = given;
  cancelFlags = new Int32Array(init.cancelFlags);
  host = createHostState(init, {
    log: (line) => post({ t: 'log', ...line }),
    send: (s) => post({ t: 'send', ...s }, transferListOf(s.response)),
    cancelledAt: (index) => index < CANCEL_SLOTS && Atomics.load(cancelFlags, index) !== 0,
  });
  void start();
}

// ------------------------------------------------------------------------------ life cycle

interface GuestBackend {
  Model: { create(ctx: WitBackend.ModelContext): object };
  Instance: {
    create(model: object, ctx: WitBackend.InstanceContext): { execute(reqs: WitTypes.Request[]): WitBackend.Result<WitTypes.Response, WitTypes.Error>[] };
  };
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
  flushOutput(host.stdio);
  post({ t: 'trap', message: trapMessage(e), during });
}

/**
 * `WebAssembly.instantiate` for the glue's core instances that counts the linear memories they
 * define: the instance's memory reservation covers `init.maxMemories` (each core module once),
 * and a component that instantiates a module again to get more memory is refused (a trap at
 * start-up).
 */
function countingInstantiate(): (module: WebAssembly.Module, imports: WebAssembly.Imports) => Promise<WebAssembly.Instance> {
  const memoriesOf = new Map<WebAssembly.Module, number>(Object.entries(init.modules).map(([name, m]) => [m, init.memoryCounts[name] ?? 0]));
  let created = 0;
  return (module, imports) => {
    const n = memoriesOf.get(module);
    if (n === undefined) return Promise.reject(new Error('the glue instantiated a core module the host did not compile'));
    created += n;
    if (created > init.maxMemories) {
      return Promise.reject(
        new Error(
          `the component creates more than the ${init.maxMemories} linear memories its core modules define (a core module instantiated more than once); refused`,
        ),
      );
    }
    return WebAssembly.instantiate(module, imports);
  };
}

async function start(): Promise<void> {
  const t0 = performance.now();
  closeCodeGeneration();
  let exports: Record<string, unknown>;
  try {
    const glue = (await import(init.glueUrl)) as {
      instantiate(
        getCoreModule: (name: string) => WebAssembly.Module,
        imports: unknown,
        instantiateCore: (module: WebAssembly.Module, imports: WebAssembly.Imports) => Promise<WebAssembly.Instance>,
      ): Promise<Record<string, unknown>>;
    };
    exports = await glue.instantiate(
      (name) => {
        const m = Object.prototype.hasOwnProperty.call(init.modules, name) ? init.modules[name] : undefined;
        if (!m) throw new Error(`no core module '${name}'`);
        return m;
      },
      buildImports(host, inference),
      countingInstantiate(),
    );
  } catch (e) {
    trap(e, 'create');
    return;
  }
  // the export under the served version the component names (checked at load), or jco's short name
  const name = BACKEND_EXPORTS.find((n) => n in exports);
  const backend = (name !== undefined ? exports[name] : exports['backend']) as GuestBackend | undefined;
  if (!backend?.Model?.create || !backend.Instance?.create) {
    post({
      t: 'create-error',
      error: { code: 'INVALID_ARG', message: 'the component does not export the model and instance resources of warden:backend/backend' },
    });
    return;
  }
  try {
    const model = backend.Model.create({ name: init.model.name, version: BigInt(init.model.version), config: init.model.configJson });
    instance = backend.Instance.create(model, { name: init.instance.name, kind: init.instance.kind, deviceId: init.instance.deviceId });
  } catch (e) {
    const err = guestError(e);
    endCall(host);
    if (err) post({ t: 'create-error', error: err });
    else trap(e, 'create');
    return;
  }
  endCall(host);
  post({ t: 'ready', startMs: performance.now() - t0 });
}

function execute(msg: Extract<ToWorker, { t: 'exec' }>): void {
  if (trapped || !instance) return;
  beginExecute(host.responses, msg.requests);
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
  const results: WireResult[] = finishExecute(host.responses, msg.requests, returned);
  const transfer = results.flatMap((r) => (r && 'ok' in r ? transferListOf(r.ok) : []));
  endCall(host);
  post({ t: 'done', seq: msg.seq, results, computeStartNs, computeEndNs }, transfer);
}

port.on('message', (msg: ToWorker) => {
  if (msg.t === 'exec') execute(msg);
  // one init, ever: a worker serves one instance (a spare has run nothing before it)
  else if (msg.t === 'init' && !begun) begin(msg.init);
});
