/**
 * BLS (spec §7.2 `InferenceRequest.exec` / `async_exec` / `exec(decoupled=True)`): a request a
 * Python model makes on another model runs through Warden's data plane
 * (`ModelLoadContext.server.infer`, the normal scheduler of the target: ONNX, native, wasm, Python)
 * with the owner's principal; its responses go back to the stub as `bls_response` messages with
 * the tensors in the stub's in arena. Errors (unknown model, bad input, the target's failures)
 * reach the model as `TritonError`s on the response.
 */
import type { Logger } from 'pino';
import { asTritonError, type TritonError } from '../../contract/errors.js';
import * as errors from './python.errors.js';
import { fileOverridePath, parseConfigOverride } from '../../repository/overrides.js';
import { extendChain, soleParentTrace } from '../../contract/bls.js';
import type { InferenceRequest, InferenceServerHandle, ModelKey, ParameterValue, Principal, ResponseSender } from '../../contract/types.js';
import type { Region } from './shm.js';
import type { StubProcess } from './stub.js';
import { readTensors, writeTensors } from './wire.js';

/** Most file overrides one `pb_utils.load_model` call may pass. */
export const MAX_LOAD_FILES = 4096;

/** Largest number of BLS requests one stub may have outstanding. */
export const MAX_BLS_INFLIGHT = 1024;

const errorWire = (e: TritonError) => ({ code: e.code, message: e.message });

/** The BLS calls of one stub process; {@link abortAll} when the process ends. */
export class BlsBridge {
  private readonly pending = new Map<number, AbortController>();

  constructor(
    private readonly server: InferenceServerHandle,
    private readonly principal: Principal,
    private readonly logger: Logger,
    /** The calling model: the last entry of each call's chain (contract/bls.ts). */
    private readonly key?: ModelKey,
  ) {}

  /**
   * Handle a `bls` message from `stub`. Never throws: failures become the call's error response.
   * @param waiting the requests of the model not yet answered: the call extends their call chains
   *   (contract/bls.ts), so that a call back into this model, directly or through others, is
   *   refused instead of waiting on itself
   */
  handle(stub: StubProcess, msg: Record<string, unknown>, waiting: Iterable<InferenceRequest> = []): void {
    const cid = Number(msg.cid);
    const reply = (body: Record<string, unknown>) => stub.send({ op: 'bls_response', cid, ...body });
    const fail = (e: unknown) => reply({ final: true, error: errorWire(asTritonError(e)) });
    const regions: Region[] = [];
    let inputs;
    try {
      inputs = readTensors(stub.arenas, msg.inputs, regions);
    } catch (e) {
      fail(e);
      return;
    } finally {
      stub.freeOut(regions);
    }
    if (this.pending.size >= MAX_BLS_INFLIGHT) {
      fail(new Error(`too many BLS requests in flight (${MAX_BLS_INFLIGHT})`));
      return;
    }
    const abort = new AbortController();
    this.pending.set(cid, abort);
    let done = false;
    const finish = () => {
      done = true;
      this.pending.delete(cid);
    };
    const sender: ResponseSender = {
      send: (response, final) => {
        if (done) return;
        if (final) finish();
        if (!stub.alive) return;
        try {
          const written: Region[] = [];
          const outputs = response ? writeTensors(stub.arenas, response.outputs, written) : [];
          reply({ final, outputs, ...(response?.parameters ? { parameters: response.parameters } : {}) });
        } catch (e) {
          reply({ final, error: errorWire(asTritonError(e)) });
        }
        response?.outputs.forEach((t) => t.owner?.release());
      },
      sendError: (error, final) => {
        if (done) return;
        if (final) finish();
        reply({ final, error: errorWire(error) });
      },
    };
    const corr = msg.correlation_id;
    const requests = [...waiting];
    try {
      const target = this.server.inferenceTarget?.(this.principal, String(msg.model ?? ''), Number.isSafeInteger(msg.version) ? Number(msg.version) : -1);
      if (target?.decoupled && msg.decoupled !== true) {
        throw errors.blsDecoupled(String(msg.model));
      }
      this.server.infer(
        this.principal,
        String(msg.model ?? ''),
        Number.isSafeInteger(msg.version) ? Number(msg.version) : -1,
        {
          id: String(msg.id ?? ''),
          model: String(msg.model ?? ''),
          version: Number.isSafeInteger(msg.version) ? Number(msg.version) : -1,
          tenant: this.principal.namespace,
          inputs,
          requestedOutputs: Array.isArray(msg.requested_outputs) ? msg.requested_outputs.map(String) : [],
          parameters: (typeof msg.parameters === 'object' && msg.parameters !== null ? msg.parameters : {}) as Record<string, ParameterValue>,
          correlationId: typeof corr === 'string' || (typeof corr === 'number' && Number.isSafeInteger(corr)) ? corr : 0,
          flags: Number(msg.flags) | 0,
          priority: 0,
          timeoutUs: Math.max(0, Number(msg.timeout) || 0),
          ...(this.key ? { blsChain: extendChain(requests, this.key) } : {}),
          parentTrace: soleParentTrace(requests),
        },
        sender,
        abort.signal,
      );
    } catch (e) {
      finish();
      fail(e);
    }
  }

  /** `pb_utils.is_model_ready`: whether the owner can infer on `model` (version -1 = any) now. */
  isModelReady(model: string, version: number): Promise<boolean> {
    try {
      return this.server.isModelReady(this.principal, model, version).catch(() => false); // unknown to this owner
    } catch {
      return Promise.resolve(false);
    }
  }

  /**
   * `pb_utils.load_model` / `unload_model` / `is_model_ready` (spec §7.2): the repository API's own
   * path (`InferenceServerHandle.loadModel` / `unloadModel`, explicit model-control mode only, the
   * same errors as `POST /v2/repository/models/<m>/load|unload`) with the owner's principal, so a
   * model can load nothing its owner could not. `files` (`[key, offset, size]` in the stub's out
   * arena) are `file:<version>/<path>` overrides checked as the HTTP load API checks them; the
   * upload admission then refuses Python and native code. An unload answers once the model stops
   * taking requests, so a model may unload itself from `execute`. Answers the stub with
   * `query_response` `{value}` or `{error}`; never throws.
   */
  control(stub: StubProcess, msg: Record<string, unknown>): void {
    const cid = msg.cid;
    const model = String(msg.model ?? '');
    const regions: Region[] = [];
    let work: Promise<unknown>;
    try {
      if (msg.op === 'is_model_ready') {
        work = this.isModelReady(model, Number.isSafeInteger(msg.version) ? Number(msg.version) : -1);
      } else if (msg.op === 'unload_model') {
        if (!this.server.unloadModel) throw errors.modelControlUnavailable();
        work = this.server.unloadModel(this.principal, model, { unloadDependents: msg.unload_dependents === true });
      } else {
        if (!this.server.loadModel) throw errors.modelControlUnavailable();
        const wire = Array.isArray(msg.files) ? (msg.files as unknown[]) : [];
        // Bounded before anything is read: a buggy stub could name one large region many times.
        if (wire.length > MAX_LOAD_FILES) throw errors.loadTooManyFiles(model, MAX_LOAD_FILES);
        const total = wire.reduce<number>((n, f) => n + (Array.isArray(f) && Number.isSafeInteger(f[2]) ? Number(f[2]) : 0), 0);
        if (total > stub.arenas.limitBytes) throw errors.loadFilesTooLarge(model, total, stub.arenas.limitBytes);
        const files = new Map<string, Uint8Array>();
        for (const f of wire) {
          if (!Array.isArray(f) || f.length !== 3) throw errors.loadFileMalformed(model);
          const [key, offset, size] = f as [unknown, number, number];
          regions.push({ offset, size });
          if (typeof key !== 'string' || !key.startsWith('file:')) throw errors.loadParameterUnknown(model, String(key));
          files.set(fileOverridePath(key), stub.arenas.read({ offset, size }));
        }
        const config = typeof msg.config === 'string' && msg.config !== '' ? parseConfigOverride(model, msg.config) : undefined;
        work = this.server.loadModel(this.principal, model, { configOverride: config, files: files.size > 0 ? files : undefined });
      }
    } catch (e) {
      work = Promise.reject(e);
    } finally {
      stub.freeOut(regions);
    }
    work.then(
      (value) => stub.send({ op: 'query_response', cid, value: value ?? true }),
      (e) => stub.send({ op: 'query_response', cid, error: asTritonError(e).message }),
    );
  }

  /** Cancel every outstanding call (the stub is gone). */
  abortAll(): void {
    for (const a of this.pending.values()) a.abort();
    this.pending.clear();
  }
}
