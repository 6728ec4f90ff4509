/**
 * Triton's in-process inference API for native backends (spec §6.4), the host side: every
 * `TRITONSERVER_ServerInferAsync`, `TRITONSERVER_ServerModelIsReady` / `...Metadata` /
 * `...Config`, `TRITONSERVER_ServerLoadModel[WithParameters]` and `...UnloadModel[AndDependents]`
 * a backend makes arrives here (native/src/addon/server.cc) on the JS thread and goes through the
 * data plane ({@link InferenceServerHandle}, i.e. `ServerApi`) with the calling model's own
 * principal ({@link ownerPrincipal}) — so a native backend reaches exactly the models its model
 * could reach in an ensemble: ONNX, wasm, native, Python, decoupled ones included.
 */
import type { Logger } from 'pino';
import { modelConfigToJson } from '../../config/json.js';
import { ERROR_CODES, TritonError } from '../../contract/errors.js';
import * as errors from './native.errors.js';
import { ownerPrincipal } from '../../contract/load-context.js';
import { extendChain, soleParentTrace } from '../../contract/bls.js';
import type {
  InferenceRequest,
  InferenceRequestInit,
  InferenceResponse,
  InferenceServerHandle,
  ModelKey,
  ModelLoadContext,
  ParameterValue,
  Principal,
  ResponseSender,
  Tensor,
} from '../../contract/types.js';
import { decodeFileOverride, parseConfigOverride } from '../../repository/overrides.js';
import type { DataType } from '../../contract/datatypes.js';
import type { NativeAddon } from '../../platform/addon.js';
import { resolveRawInputs, type BridgeInput } from './raw-input.js';

/** Hook kinds as server.cc numbers them: infer, cancel, then WARDEN_ServerQuery + 2. */
const enum Kind {
  Infer = 0,
  Cancel = 1,
  ModelReady = 2,
  ModelMetadata = 3,
  ModelConfig = 4,
  LoadModel = 5,
  UnloadModel = 6,
  UnloadModelAndDependents = 7,
  ModelTransaction = 8,
}

/** A request as server.cc hands it over (inputs already copied out of the backend's buffers). */
interface InferPayload {
  token: number;
  model: string;
  version: number;
  id: string;
  correlationId: number | bigint | string;
  flags: number;
  priority: number;
  timeoutUs: number;
  /** `raw`: added with TRITONSERVER_InferenceRequestAddRawInput (datatype and shape unset). */
  inputs: { name: string; datatype: DataType; shape: number[]; data: Uint8Array; raw?: boolean }[];
  outputs: string[];
  /** [key0, value0, key1, value1, ...] (INT beyond 2^53 as bigint) */
  params: ParameterValue[];
}

interface QueryPayload {
  token: number;
  model: string;
  version: number;
  /** LoadModel: {"config": "...", "files": {"file:<path>": "<base64>"}} */
  params?: string;
}

/** What one model's in-process calls run as. */
export interface Owner {
  server: InferenceServerHandle;
  principal: Principal;
  logger: Logger;
  /**
   * The calling model and the requests it holds unanswered: its calls extend their call chains
   * and continue the one traced among them (contract/bls.ts), as Python and sandboxed calls do.
   */
  caller?: { key: ModelKey; waiting: () => Iterable<InferenceRequest> };
}

/** The addon's error convention: `tritonCode` carries the TRITONSERVER_Error_Code. */
export function addonError(e: unknown): Error {
  const err = e instanceof TritonError ? e : new TritonError('INTERNAL', e instanceof Error ? e.message : String(e));
  return Object.assign(new Error(err.message), { tritonCode: ERROR_CODES.indexOf(err.code) });
}

function flatParameters(p: Record<string, ParameterValue> | undefined): ParameterValue[] | undefined {
  if (!p) return undefined;
  const flat: ParameterValue[] = [];
  for (const [k, v] of Object.entries(p)) flat.push(k, v);
  return flat;
}

/**
 * Where one model's in-process calls go: hook `kind` (Kind numbering) with its payload as
 * server.cc builds it; answers as the addon's server handler does (result string, undefined, a
 * promise of either, or a thrown Error with `tritonCode`).
 */
export interface ServerCallHandler {
  handle(kind: number, payload: unknown): string | undefined | Promise<string | undefined>;
  /** TRITONSERVER_InferenceRequestCancel of in-flight request `token` (ignored if not ours). */
  cancel(token: number): void;
  /** In-process requests submitted and not yet answered FINAL. */
  readonly inflightRequests: number;
}

/**
 * One model's in-process calls on the data plane as `owner` (its own principal); responses of its
 * requests go to `respond` (the addon's serverRespond in-process; the backend-host process's
 * channel for an isolated model).
 */
export class ServerCalls implements ServerCallHandler {
  private readonly inflight = new Map<number, AbortController>();

  constructor(
    private readonly owner: Owner,
    private readonly respond: (token: number, response: object | null, final: boolean) => void,
  ) {}

  get inflightRequests(): number {
    return this.inflight.size;
  }

  cancel(token: number): void {
    this.inflight.get(token)?.abort();
  }

  /** Abort every request in flight (the caller is gone). */
  cancelAll(): void {
    for (const a of this.inflight.values()) a.abort();
  }

  handle(kind: number, payload: unknown): string | undefined | Promise<string | undefined> {
    if (kind === Kind.Infer) return this.infer(payload as InferPayload);
    const q = payload as QueryPayload;
    const { server, principal } = this.owner;
    switch (kind) {
      case Kind.ModelReady:
        // Triton: an unknown model is simply not ready
        return server.isModelReady(principal, q.model, q.version).then(String, () => 'false');
      case Kind.ModelMetadata:
        if (!server.modelMetadata) throw errors.metadataUnavailable();
        return JSON.stringify(server.modelMetadata(principal, q.model, q.version));
      case Kind.ModelConfig:
        if (!server.modelConfig) throw errors.configUnavailable();
        return modelConfigToJson(server.modelConfig(principal, q.model, q.version));
      case Kind.ModelTransaction:
        // TRITONSERVER_ServerModelTransactionProperties: Triton's txn flags of the model.
        if (!server.modelConfig) throw errors.configUnavailable();
        return server.modelConfig(principal, q.model, q.version).model_transaction_policy?.decoupled ? 'decoupled' : 'one_to_one';
      case Kind.LoadModel:
        return this.load(q).catch((e) => Promise.reject(addonError(e)));
      case Kind.UnloadModel:
      case Kind.UnloadModelAndDependents:
        if (!server.unloadModel) throw errors.modelControlUnavailable();
        return server
          .unloadModel(principal, q.model, { unloadDependents: kind === Kind.UnloadModelAndDependents })
          .then(() => undefined)
          .catch((e) => Promise.reject(addonError(e)));
      default:
        throw errors.unknownCall(kind);
    }
  }

  private async load(q: QueryPayload): Promise<undefined> {
    if (!this.owner.server.loadModel) throw errors.modelControlUnavailable();
    let configOverride: unknown;
    const files = new Map<string, Uint8Array>();
    if (q.params !== undefined) {
      const p = JSON.parse(q.params) as { config?: string; files: Record<string, string> };
      if (p.config !== undefined) configOverride = parseConfigOverride(q.model, p.config);
      for (const [key, value] of Object.entries(p.files)) {
        const [path, data] = decodeFileOverride(key, value);
        files.set(path, data);
      }
    }
    await this.owner.server.loadModel(this.owner.principal, q.model, { configOverride, files: files.size > 0 ? files : undefined });
    return undefined;
  }

  /** Submit on the data plane; throws (synchronously, to ServerInferAsync) what `infer` throws. */
  private infer(p: InferPayload): undefined {
    const { server, principal, logger } = this.owner;
    const params: Record<string, ParameterValue> = {};
    for (let i = 0; i + 1 < p.params.length; i += 2) params[String(p.params[i])] = p.params[i + 1]!;
    let inputs: Tensor[] = p.inputs as BridgeInput[];
    if (p.inputs.some((t) => t.raw)) {
      if (!server.modelConfig) throw errors.rawInputsNeedConfig();
      inputs = resolveRawInputs(p.inputs as BridgeInput[], server.modelConfig(principal, p.model, p.version));
    }
    const init: InferenceRequestInit = {
      id: p.id,
      model: p.model,
      version: p.version,
      tenant: principal.namespace,
      inputs,
      requestedOutputs: p.outputs,
      parameters: params,
      correlationId: p.correlationId,
      flags: p.flags,
      priority: p.priority,
      timeoutUs: p.timeoutUs,
    };
    const caller = this.owner.caller;
    if (caller) {
      const waiting = [...caller.waiting()];
      init.blsChain = extendChain(waiting, caller.key);
      init.parentTrace = soleParentTrace(waiting);
    }
    const abort = new AbortController();
    const target = { model: p.model, version: p.version };
    const respond = (response: object | null, final: boolean): void => {
      if (final) this.inflight.delete(p.token);
      try {
        this.respond(p.token, response, final);
      } catch (e) {
        logger.error({ err: e, request: p.id }, 'in-process response could not be handed to the backend');
      }
    };
    const sender: ResponseSender = {
      send: (r: InferenceResponse | null, final: boolean) =>
        respond(r === null ? null : { ...target, outputs: r.outputs, params: flatParameters(r.parameters) }, final),
      sendError: (e: TritonError, final: boolean) => respond({ ...target, error: { code: ERROR_CODES.indexOf(e.code), message: e.message } }, final),
    };
    this.inflight.set(p.token, abort);
    try {
      const submitted = server.infer(principal, p.model, p.version, init, sender, abort.signal);
      target.version = submitted.version;
    } catch (e) {
      this.inflight.delete(p.token);
      throw e;
    }
    return undefined;
  }
}

/**
 * One per process (the native host is): maps each loaded native model ("owner") to where its
 * backend's in-process calls go ({@link ServerCalls} on this process's data plane by default).
 */
export class NativeServerBridge {
  private readonly owners = new Map<number, ServerCallHandler>();
  private nextOwner = 1;
  private open = false;

  constructor(private readonly addon: NativeAddon) {}

  /**
   * The owner id a model's TRITONSERVER_Server reports (WARDEN_ModelDesc.server_owner): its calls
   * run as {@link ownerPrincipal}(ctx.key) on `ctx.server`, or go to `handler` when given (a
   * backend-host process forwards them to Warden). Opens the bridge on first use.
   */
  register(ctx: Pick<ModelLoadContext, 'key' | 'server' | 'logger'>, handler?: ServerCallHandler, waiting?: () => Iterable<InferenceRequest>): number {
    const id = this.nextOwner++;
    const caller = waiting ? { key: ctx.key, waiting } : undefined;
    this.owners.set(
      id,
      handler ??
        new ServerCalls({ server: ctx.server, principal: ownerPrincipal(ctx.key), logger: ctx.logger, caller }, (t, r, f) => this.addon.serverRespond(t, r, f)),
    );
    if (!this.open) {
      this.addon.setServerHandler((kind, owner, payload) => this.handle(kind, owner, payload));
      this.open = true;
    }
    return id;
  }

  /** The model was finalized: its later calls fail with UNAVAILABLE. Closes the bridge after the last. */
  unregister(owner: number): void {
    this.owners.delete(owner);
    if (this.owners.size === 0 && this.open) {
      this.open = false;
      this.addon.closeServerBridge();
    }
  }

  /** In-process requests backends submitted that have not had their final response. */
  get inflightRequests(): number {
    let n = 0;
    for (const h of this.owners.values()) n += h.inflightRequests;
    return n;
  }

  private handle(kind: number, ownerId: number, payload: unknown): string | undefined | Promise<string | undefined> {
    if (kind === Kind.Cancel) {
      // Tokens are unique in the process (libtritonserver.so numbers them).
      for (const h of this.owners.values()) h.cancel((payload as QueryPayload).token);
      return undefined;
    }
    try {
      const owner = this.owners.get(ownerId);
      if (!owner) throw errors.callerUnloaded();
      return owner.handle(kind, payload);
    } catch (e) {
      throw addonError(e);
    }
  }
}

let bridge: NativeServerBridge | undefined;

/** The process's bridge (created with the addon on first use). */
export function nativeServerBridge(addon: NativeAddon): NativeServerBridge {
  bridge ??= new NativeServerBridge(addon);
  return bridge;
}
