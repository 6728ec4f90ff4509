/**
 * The handlers of `inference.GRPCInferenceService` (grpc_service.proto): a thin conversion of
 * each RPC onto the data plane (dataplane/server-api.ts `ServerApi`), exactly what the HTTP frontend
 * calls for the same operation. Errors leave through `ServerApi.publicError` (no host paths) and
 * status.ts (Triton's gRPC codes).
 */
import type { Metadata, sendUnaryData, ServerUnaryCall, UntypedHandleCall } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { modelConfigToJson } from '../../config/index.js';
import { TritonError } from '../../contract/errors.js';
import { type ServerApi } from '../../dataplane/server-api.js';
import { inferUnary } from '../../dataplane/inference.js';
import { SINGLE_USER, type CancellationSignal, type Principal } from '../../contract/types.js';
import {
  decodeFileDigest,
  FILE_DIGEST_PREFIX,
  fileDigestsOf,
  fileOverridePath,
  parseConfigOverride,
  type FileDigests,
  type FileOverrides,
} from '../../repository/overrides.js';
import { overQuotaDelay, type Admission } from '../admission.js';
import { callPrincipal } from './auth.js';
import { grpcCategoryOf, type GrpcRestrictions } from './restricted.js';
import { decodeModelInferRequest, encodeModelInferResponse, parseModelVersion, stripReserved } from './infer.js';
import type { ModelInferRequest } from './proto.js';
import { callSignal } from './cancel.js';
import { toServiceError } from './status.js';
import { handleStreamInfer } from './stream.js';
import type { ClientShm } from './shm.js';
import { traceContextFrom } from '../../trace/context.js';
import * as grpcErrors from './grpc.errors.js';
import { loadParameterUnknown, repositoryNameUnsupported } from '../repository-request.errors.js';

/** What the handlers need. */
export interface GrpcServiceContext {
  api: ServerApi;
  /** This frontend's admission (../admission.ts), counting in the data plane's one request rate. */
  admission: Admission;
  logger: Logger;
  /** Client shared memory (system regions), with the error given when it is off. */
  shm: ClientShm;
  /** Calls being handled (graceful shutdown waits for them). */
  calls: CallCount;
  /** `--grpc-restricted-protocol` (restricted.ts): checked after authentication. */
  restricted: GrpcRestrictions;
}

/** How many calls are being handled. */
export class CallCount {
  active = 0;
  begin(): void {
    this.active++;
  }
  end(): void {
    this.active--;
  }
}

type Req = Record<string, unknown>;
type Unary = (principal: Principal, req: Req, call: ServerUnaryCall<Req, unknown>) => unknown;

/** One unary RPC: admit (unless `open`: the health calls), run, map errors to Triton's gRPC statuses. */
function unary(ctx: GrpcServiceContext, fn: Unary, open = false) {
  return (call: ServerUnaryCall<Req, unknown>, done: sendUnaryData<unknown>): void => {
    ctx.calls.begin();
    void (async () => {
      try {
        const principal = open ? SINGLE_USER : await callPrincipal(ctx.admission, call);
        const refusal = ctx.restricted.refusal(call.getPath(), call.metadata);
        if (refusal) throw refusal;
        done(null, await fn(principal, call.request, call));
      } catch (e) {
        if (!(e instanceof TritonError)) ctx.logger.error({ err: e }, 'unhandled error in gRPC handler');
        // Over-quota answers are held back, as over HTTP (../admission.ts).
        await overQuotaDelay(e);
        done(toServiceError(ctx.api.publicError(e)) as never, null);
      } finally {
        ctx.calls.end();
      }
    })();
  };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function namedRepository(req: Req): void {
  if (str(req.repository_name) !== '') throw repositoryNameUnsupported();
}

type RepoParam = { parameter_choice?: string; bool_param?: boolean; int64_param?: string; string_param?: string; bytes_param?: Buffer };

/**
 * `RepositoryModelLoad` parameters: `config` (JSON text), `file:<version>/<path>` (raw bytes) and
 * Warden's `file_sha256:<version>/<path>` (the file's SHA-256 as hex text, docs/tenancy.md
 * "Uploads by digest").
 */
function loadOptions(model: string, params: Record<string, RepoParam>): { configOverride?: unknown; files: FileOverrides; fileDigests: FileDigests } {
  let configOverride: unknown;
  const files: FileOverrides = new Map();
  const digests: [string, string][] = [];
  for (const [key, p] of Object.entries(params)) {
    if (key === 'config') {
      if (p.parameter_choice !== 'string_param') throw grpcErrors.parameterKind("the 'config' parameter", 'string_param');
      configOverride = parseConfigOverride(model, p.string_param ?? '');
    } else if (key.startsWith('file:')) {
      if (p.parameter_choice !== 'bytes_param') throw grpcErrors.parameterKind(`file override '${key}'`, 'bytes_param');
      files.set(fileOverridePath(key), new Uint8Array(p.bytes_param ?? Buffer.alloc(0)));
    } else if (key.startsWith(FILE_DIGEST_PREFIX)) {
      if (p.parameter_choice !== 'string_param') throw grpcErrors.parameterKind(`file digest '${key}'`, 'string_param');
      digests.push(decodeFileDigest(key, p.string_param));
    } else {
      throw loadParameterUnknown(key);
    }
  }
  return { configOverride, files, fileDigests: fileDigestsOf(digests, files) };
}

/** A log setting as `LogSettingsResponse.SettingValue`. */
function logValue(v: unknown): Record<string, unknown> {
  if (typeof v === 'boolean') return { bool_param: v };
  if (typeof v === 'number') return { uint32_param: v };
  return { string_param: String(v) };
}

/** The `LogSettingsRequest` map as the logging extension's JSON body. */
function logBody(
  settings: Record<string, { parameter_choice?: string; bool_param?: boolean; uint32_param?: number; string_param?: string }>,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) {
    body[k] = v.parameter_choice === undefined ? null : (v[v.parameter_choice as 'bool_param' | 'uint32_param' | 'string_param'] ?? null);
  }
  return body;
}

/** The `TraceSettingRequest` map as the trace extension's JSON body (an empty list clears). */
function traceBody(settings: Record<string, { value: string[] }>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) body[k] = v.value.length === 0 ? null : k === 'trace_level' ? v.value : v.value[0];
  return body;
}

function traceResponse(json: Record<string, unknown>): { settings: Record<string, { value: string[] }> } {
  const settings: Record<string, { value: string[] }> = {};
  for (const [k, v] of Object.entries(json)) settings[k] = { value: Array.isArray(v) ? v.map(String) : [String(v)] };
  return { settings };
}

/** The implementation object for `server.addService`. */
export function grpcHandlers(ctx: GrpcServiceContext): Record<string, UntypedHandleCall> {
  const { api, shm } = ctx;
  const u = (fn: Unary, open = false) => unary(ctx, fn, open) as UntypedHandleCall;
  const handlers: Record<string, UntypedHandleCall> = {
    ServerLive: u(() => ({ live: api.isLive() }), true),
    ServerReady: u(() => ({ ready: api.isReady() }), true),
    ModelReady: u(async (p, r) => ({ ready: await modelReady(api, p, str(r.name), parseModelVersion(str(r.version))) })),
    ServerMetadata: u(() => api.serverMetadata()),
    ModelMetadata: u((p, r) => {
      const m = api.modelMetadata(p, str(r.name), parseModelVersion(str(r.version)));
      return {
        ...m,
        inputs: m.inputs.map((t) => ({ ...t, shape: t.shape.map(String) })),
        outputs: m.outputs.map((t) => ({ ...t, shape: t.shape.map(String) })),
      };
    }),
    ModelConfig: u((p, r) => ({ config: JSON.parse(modelConfigToJson(api.modelConfig(p, str(r.name), parseModelVersion(str(r.version))))) })),
    ModelStatistics: u((p, r) => api.modelStatistics(p, str(r.name) || undefined, parseModelVersion(str(r.version)))),
    RepositoryIndex: u(async (p, r) => {
      namedRepository(r);
      return { models: await api.repositoryIndex(p, r.ready === true) };
    }),
    RepositoryModelLoad: u(async (p, r) => {
      namedRepository(r);
      const model = str(r.model_name);
      const options = loadOptions(model, (r.parameters ?? {}) as Record<string, RepoParam>);
      const tenant = api.tenantConfig(p);
      if (tenant)
        api.uploadRate.admit(
          tenant,
          [...options.files.values()].reduce((n, f) => n + f.length, 0),
        );
      await api.loadModel(p, model, options);
      return {};
    }),
    RepositoryModelUnload: u(async (p, r) => {
      namedRepository(r);
      const params = (r.parameters ?? {}) as Record<string, RepoParam>;
      const del = params.delete_files;
      if (del !== undefined && del.parameter_choice !== 'bool_param') throw grpcErrors.parameterKind("'delete_files'", 'bool_param');
      const deps = params.unload_dependents;
      if (deps !== undefined && deps.parameter_choice !== 'bool_param') throw grpcErrors.parameterKind("'unload_dependents'", 'bool_param');
      await api.unloadModel(p, str(r.model_name), { deleteFiles: del?.bool_param === true, unloadDependents: deps?.bool_param === true });
      return {};
    }),
    LogSettings: u((p, r) => {
      const body = logBody((r.settings ?? {}) as never);
      const s = Object.keys(body).length > 0 ? api.updateLogSettings(p, body) : api.logSettings(p);
      return { settings: Object.fromEntries(Object.entries(s).map(([k, v]) => [k, logValue(v)])) };
    }),
    TraceSetting: u((p, r) => {
      const model = str(r.model_name) || undefined;
      const body = traceBody((r.settings ?? {}) as never);
      return traceResponse(
        (Object.keys(body).length > 0 ? api.updateTraceSettings(p, model, body) : api.traceSettings(p, model)) as unknown as Record<string, unknown>,
      );
    }),
    SystemSharedMemoryStatus: u((p, r) => shm.status(p, str(r.name))),
    SystemSharedMemoryRegister: u((p, r) =>
      shm.register(p, str(r.name), str(r.key), (r.offset as string | undefined) ?? 0, (r.byte_size as string | undefined) ?? 0),
    ),
    SystemSharedMemoryUnregister: u((p, r) => shm.unregister(p, str(r.name))),
    // As Triton built without GPUs (server grpc_server.cc): no CUDA regions, register refused.
    CudaSharedMemoryStatus: u((p, r) => shm.cudaStatus(p, str(r.name))),
    CudaSharedMemoryRegister: u((_p, r) => shm.cudaRegister(str(r.name))),
    CudaSharedMemoryUnregister: u(() => shm.cudaUnregister()),
    ModelInfer: u((p, r, call) => modelInfer(ctx, p, r as unknown as ModelInferRequest, callSignal(call), call.metadata)),
    ModelStreamInfer: ((call: Parameters<typeof handleStreamInfer>[1]) => handleStreamInfer(ctx, call)) as UntypedHandleCall,
  };
  // Every RPC belongs to a --grpc-restricted-protocol group: an unclassified one fails the start.
  for (const rpc of Object.keys(handlers)) grpcCategoryOf(rpc);
  return handlers;
}

/** `ModelReady`: Triton's core answers "not ready" (no error) for a model it does not know. */
async function modelReady(api: ServerApi, principal: Principal, name: string, version: number): Promise<boolean> {
  try {
    return await api.isModelReady(principal, name, version);
  } catch (e) {
    if (e instanceof TritonError && e.code === 'NOT_FOUND') return false;
    throw e;
  }
}

/** `ModelInfer`: one request, one response (the data plane's inferUnary; decoupled models answer UNSUPPORTED, as Triton's unary call). */
async function modelInfer(
  ctx: GrpcServiceContext,
  principal: Principal,
  req: ModelInferRequest,
  signal: CancellationSignal,
  metadata: Metadata,
): Promise<unknown> {
  const model = req.model_name ?? '';
  const access = ctx.shm.access(principal);
  try {
    return await inferUnary(
      ctx.api,
      principal,
      model,
      parseModelVersion(req.model_version),
      {
        decoupled: grpcErrors.inferDecoupled,
        request: (target) => {
          const decoded = decodeModelInferRequest(stripReserved(req), model, target.version, access, () => ctx.shm.disabledError());
          decoded.init.traceContext = traceContextFrom((name) => metadata.get(name)[0]);
          return decoded;
        },
        answer: (response, version, { init, shmOutputs }) => {
          ctx.shm.writeOutputs(access, response, shmOutputs);
          return encodeModelInferResponse(model, version, init.id, response, shmOutputs);
        },
      },
      signal,
    );
  } finally {
    // The regions this request used stay registered until here (dataplane/shared-memory.ts).
    access?.release();
  }
}
