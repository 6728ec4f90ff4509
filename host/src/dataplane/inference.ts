/**
 * Inference on the data plane (spec §1.8–§1.13, §3.6): the serving version of a request, its
 * admission (a tenant's in-flight quota, an ensemble request's budget charged to the caller's
 * request rate), classification, cancellation, and the per-request duties run once at the final
 * response (release of the tenant's slot and of input memory the host does not own); and the
 * unary call of every frontend (inferUnary: exactly one response, its tensors released on every path).
 */
import { TritonError, cancelled } from '../contract/errors.js';
import type { ModelConfig } from '../contract/model-config.js';
import type {
  CancellationSignal,
  InferenceRequest,
  InferenceRequestInit,
  InferenceResponse,
  InferenceServerHandle,
  Principal,
  ResponseSender,
  SubmittedRequest,
  Tensor,
} from '../contract/types.js';
import { checkChain } from '../contract/bls.js';
import { EnsembleBudget, ensembleLimitsFor, type EnsembleLimits } from '../ensemble/budget.js';
import { TenantRequestRate } from '../tenancy/request-rate.js';
import type { TenantConfig } from '../tenancy/types.js';
import { ClassificationSender, checkClassification } from './classification.js';
import type { ModelNames } from './model-names.js';
import { inflightQuota, responseCountNotOne } from './inference.errors.js';

/** Facts about the version that would serve a request, for decoding it (config, decoupled). */
export interface InferenceTarget {
  readonly name: string;
  /** The version that serves now (-1 resolved to the highest ready version). */
  readonly version: number;
  readonly config: ModelConfig;
  readonly decoupled: boolean;
  /** An ensemble's least cost per request (composing inferences, nesting depth); undefined for any other model. */
  readonly ensemble?: { readonly inferences: number; readonly depth: number };
}

/** Release the memory owners of tensors that carry one (see {@link Tensor.owner}). */
export function releaseTensors(tensors: readonly Tensor[]): void {
  for (const t of tensors) t.owner?.release();
}

/**
 * Wraps the caller's sender so that the data plane's per-request duties run exactly once, at the
 * final response: detach from the caller's cancellation signal, give back the tenant's in-flight
 * slot, release request inputs the host does not own. While the request is pending, an abort of
 * the signal marks it cancelled.
 */
class RequestGuard implements ResponseSender {
  private done = false;
  private request: InferenceRequest | undefined;
  constructor(
    private readonly downstream: ResponseSender,
    private readonly inputs: readonly Tensor[],
    private readonly signal: CancellationSignal | undefined,
    private readonly release: (() => void) | undefined,
  ) {}
  /** The signal's listener (one per request). */
  private readonly onAbort = (): void => {
    if (this.request) this.request.cancelled = true;
  };
  /** Called once the request is queued (a backend may already have answered inside submit). */
  attach(request: InferenceRequest): void {
    this.request = request;
    if (!this.done && this.signal) this.signal.addEventListener('abort', this.onAbort, { once: true });
  }
  send(response: InferenceResponse | null, final: boolean): void {
    this.downstream.send(response, final);
    if (final) this.finish();
  }
  sendError(error: TritonError, final: boolean): void {
    this.downstream.sendError(error, final);
    if (final) this.finish();
  }
  private finish(): void {
    if (this.done) return;
    this.done = true;
    if (this.request && this.signal) this.signal.removeEventListener('abort', this.onAbort);
    this.release?.();
    releaseTensors(this.inputs);
  }
}

export class Inference {
  /** Inference requests of each tenant queued or executing (for `max_inflight`). */
  private readonly inflight = new Map<string, number>();
  /**
   * Each tenant's request rate: the one count every frontend admits requests with (HTTP routes,
   * the `/infer` fast path, gRPC), and that an ensemble request is charged its composing
   * inferences on.
   */
  readonly requestRate = new TenantRequestRate();

  /**
   * @param ensembleLimits server-wide caps of one ensemble request (a tenant's quotas may lower
   *   them; ensemble/budget.ts); undefined = none
   */
  constructor(
    private readonly names: ModelNames,
    private readonly ensembleLimits: EnsembleLimits | undefined,
  ) {}

  /**
   * What a frontend needs to decode a request for `name` / `version` before calling
   * {@link infer}: the serving version's config and transaction policy.
   * @throws TritonError NOT_FOUND / UNAVAILABLE
   */
  inferenceTarget(principal: Principal, name: string, version: number): InferenceTarget {
    const mv = this.names.version(principal, name, version);
    return { name, version: mv.version, config: mv.config, decoupled: mv.decoupled, ensemble: mv.ensembleCost };
  }

  /**
   * Validate and queue one request. Responses (one final for ordinary models, any number then a
   * final for decoupled ones) go to `sender`. When `signal` aborts before the final response, the
   * request is marked cancelled: a queued request is then dropped with CANCELLED, an executing
   * one may be stopped by its backend (`TRITONBACKEND_RequestIsCancelled`).
   * Inputs that carry a memory owner are released after the final response.
   * @throws TritonError synchronously — NOT_FOUND / UNAVAILABLE (model), INVALID_ARG (request does
   *   not match the config), UNAVAILABLE (queue full), CANCELLED (already aborted); nothing was
   *   queued and no response will be sent.
   */
  infer(
    principal: Principal,
    name: string,
    version: number,
    init: InferenceRequestInit,
    sender: ResponseSender,
    signal?: CancellationSignal,
  ): SubmittedRequest {
    const mv = this.names.version(principal, name, version);
    if (signal?.aborted) throw cancelled();
    // A backend's call (BLS) or a step of an ensemble it called: no recursion, bounded depth.
    if (init.blsChain !== undefined) checkChain(init.blsChain, this.names.keyOf(principal, name), name);
    init.tenant = principal.caller ?? principal.namespace;
    if (mv.config.platform === 'ensemble' && init.ensemble === undefined && this.ensembleLimits !== undefined) {
      // A client's ensemble request: one budget for it and every ensemble nested in it
      // (ensemble/budget.ts), checked against the least the request costs before any step runs,
      // and its composing inferences charged to the caller's request rate.
      const caller = this.names.tenantOf(principal);
      const budget = new EnsembleBudget(ensembleLimitsFor(this.ensembleLimits, caller?.quotas), `ensemble '${name}'`);
      if (mv.ensembleCost) {
        budget.afford(mv.ensembleCost);
        if (caller) this.requestRate.admit(caller, mv.ensembleCost.inferences);
      }
      init.ensemble = { budget, depth: 0 };
    }
    if (init.classification !== undefined && init.classification.size > 0) {
      checkClassification(mv.config, init.classification);
      sender = new ClassificationSender(sender, mv.config, mv.files.labels, init.classification);
    }
    // An ensemble's steps are charged to the ensemble's caller (DESIGN "Multi-tenancy").
    const tenant = principal.caller !== undefined ? this.names.callerTenant(principal.caller) : this.names.tenantOf(principal);
    const needsHook = signal !== undefined || tenant !== undefined || init.inputs.some((t) => t.owner !== undefined);
    if (!needsHook) {
      const request = mv.submit(init, sender);
      return { model: name, version: mv.version, request };
    }
    const release = tenant && (!principal.within || principal.caller !== undefined) ? this.takeInflight(tenant) : undefined;
    const guard = new RequestGuard(sender, init.inputs, signal, release);
    let request;
    try {
      request = mv.submit(init, guard);
    } catch (e) {
      release?.();
      throw e;
    }
    guard.attach(request);
    return { model: name, version: mv.version, request };
  }

  /**
   * Count one request against the tenant's `max_inflight` (queued + executing).
   * @returns the release, to call once at the final response
   * @throws AccessError `exhausted` when the tenant is at its quota
   */
  private takeInflight(tenant: TenantConfig): () => void {
    const n = this.inflight.get(tenant.id) ?? 0;
    if (n >= tenant.quotas.max_inflight) {
      throw inflightQuota(tenant.id, n);
    }
    this.inflight.set(tenant.id, n + 1);
    return () => {
      const m = (this.inflight.get(tenant.id) ?? 1) - 1;
      if (m <= 0) this.inflight.delete(tenant.id);
      else this.inflight.set(tenant.id, m);
    };
  }
}

/** Everything one request produced, in order, once its final response arrived. */
export interface CollectedResponses {
  /** The version that served the request. */
  version: number;
  responses: InferenceResponse[];
}

/**
 * Infer and gather every response until the final one (what a unary frontend call, an ensemble
 * step or a BLS call needs). `onResponse` sees each response as it arrives (streaming).
 * @returns a promise of the responses, whose output tensors the caller then owns (release them:
 *   {@link releaseTensors}); it rejects with the request's first error (validation errors included:
 *   they reject rather than throw), and then the outputs of every response collected before the
 *   error have been released
 */
export function inferAndCollect(
  server: InferenceServerHandle,
  principal: Principal,
  name: string,
  version: number,
  init: InferenceRequestInit,
  signal?: CancellationSignal,
  onResponse?: (r: InferenceResponse) => void,
): Promise<CollectedResponses> {
  return new Promise((resolve, reject) => {
    // A backend may answer inside infer(); `out.version` is filled in before any reader runs
    // (promise reactions run after this synchronous code).
    const out: CollectedResponses = { version, responses: [] };
    let error: TritonError | undefined;
    const fail = (e: unknown): void => {
      for (const r of out.responses) releaseTensors(r.outputs);
      out.responses.length = 0;
      reject(e);
    };
    const sender: ResponseSender = {
      send(response, final) {
        if (response) {
          out.responses.push(response);
          onResponse?.(response);
        }
        if (final) {
          if (error) fail(error);
          else resolve(out);
        }
      },
      sendError(e, final) {
        error ??= e;
        if (final) fail(error);
      },
    };
    try {
      out.version = server.infer(principal, name, version, init, sender, signal).version;
    } catch (e) {
      fail(e);
    }
  });
}

/** What {@link inferUnary} needs of the server: the serving version's facts, and `infer`. */
export type UnaryServer = Omit<InferenceServerHandle, 'inferenceTarget'> & {
  inferenceTarget(principal: Principal, name: string, version: number): InferenceTarget;
  /**
   * Load a model this replica does not serve but the shared upload store holds (ServerApi's);
   * true when it was loaded now. Absent = never.
   */
  loadOnDemand?(principal: Principal, name: string): Promise<boolean>;
};

/**
 * How one frontend's unary call builds its request and encodes its one response
 * ({@link inferUnary}). `R` is what the frontend decoded: the request, plus what it needs to
 * encode the response (output formats, shared-memory placements).
 */
export interface UnaryCall<R extends { init: InferenceRequestInit }, T> {
  /**
   * The refusal of a decoupled model, worded as the frontend's Triton counterpart words it
   * (HTTP `/infer`, gRPC ModelInfer); absent = a decoupled model is served too, and must then
   * answer exactly once (HTTP `/generate`).
   */
  decoupled?: () => TritonError;
  /** Build the request for the version that serves (decode with its config). May throw or reject. */
  request(target: InferenceTarget): R | Promise<R>;
  /**
   * Encode the one response. Its output tensors are released once this returns, throws or
   * settles (so an encoding on another thread still reads them).
   * @param version the version that served
   */
  answer(response: InferenceResponse, version: number, request: R): T | Promise<T>;
  /** The error for a count of responses other than one (default: {@link responseCountNotOne}). */
  countError?: (count: number) => TritonError;
}

/**
 * One request, exactly one response: the unary skeleton of every frontend call (HTTP `/infer` and
 * `/generate`, gRPC ModelInfer). Resolves the target (`version` -1: the model's policy), refuses a
 * decoupled model when the call says so, builds the request, infers, and hands the one response to
 * `call.answer`. Tensor ownership has its one owner here: every response's outputs are released on
 * every path — after the answer, and on a wrong response count or any error (the inputs are the
 * data plane's, released after the final response).
 * @returns what `call.answer` returns
 * @throws TritonError NOT_FOUND / UNAVAILABLE (model), `call.decoupled()`, what `call.request`
 *   throws, the request's error, `call.countError` (or INTERNAL) for a count other than one, what
 *   `call.answer` throws
 */
export async function inferUnary<R extends { init: InferenceRequestInit }, T>(
  server: UnaryServer,
  principal: Principal,
  name: string,
  version: number,
  call: UnaryCall<R, T>,
  signal?: CancellationSignal,
): Promise<T> {
  let target: InferenceTarget;
  try {
    target = server.inferenceTarget(principal, name, version);
  } catch (e) {
    // A tenant model stored by another replica is loaded here first (DESIGN "Multi-tenancy").
    if (!(e instanceof TritonError && e.code === 'NOT_FOUND' && (await server.loadOnDemand?.(principal, name)))) throw e;
    target = server.inferenceTarget(principal, name, version);
  }
  if (target.decoupled && call.decoupled) throw call.decoupled();
  const built = call.request(target);
  const request = built instanceof Promise ? await built : built;
  const { version: served, responses } = await inferAndCollect(server, principal, name, target.version, request.init, signal);
  if (responses.length !== 1) {
    for (const r of responses) releaseTensors(r.outputs);
    throw (call.countError ?? responseCountNotOne)(responses.length);
  }
  const response = responses[0]!;
  try {
    const answer = call.answer(response, served, request);
    return answer instanceof Promise ? await answer : answer;
  } finally {
    releaseTensors(response.outputs);
  }
}
