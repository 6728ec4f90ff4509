/**
 * The `warden:backend/inference` capability (host/src/backends/wasm/host/inference.ts) against a
 * fake data plane, and the chain rule the data plane applies (contract/bls.ts `checkChain`):
 * grants and the missing-model look-alike, versions, the owner's principal, the deadline passed
 * on, the in-flight and memory limits, the order of a stream's outcomes, the end of an execute
 * and the clients' cancellation.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { blsGrants, chainEntry, checkChain, MAX_BLS_DEPTH } from '../../../host/src/contract/bls.js';
import { TritonError } from '../../../host/src/contract/errors.js';
import type { ModelConfig } from '../../../host/src/contract/model-config.js';
import { modelNotFound, versionNotFound } from '../../../host/src/lifecycle/lifecycle.errors.js';
import type {
  CancellationSignal,
  InferenceRequest,
  InferenceRequestInit,
  InferenceServerHandle,
  Principal,
  ResponseSender,
} from '../../../host/src/contract/types.js';
import {
  beginCalls,
  cancelCall,
  createInferenceState,
  endCalls,
  nextOutcome,
  startCall,
  type CallOutcome,
  type CallRequest,
  type InferenceState,
} from '../../../host/src/backends/wasm/host/inference.js';

interface Seen {
  principal: Principal;
  model: string;
  init: InferenceRequestInit;
  sender: ResponseSender;
  signal: CancellationSignal;
}

/** A data plane that records each request and lets the test answer it; `simple` serves v2, `stream` is decoupled. */
function fakeServer(): { server: InferenceServerHandle; seen: Seen[] } {
  const seen: Seen[] = [];
  const server: InferenceServerHandle = {
    infer(principal, model, _version, init, sender, signal) {
      seen.push({ principal, model, init, sender, signal: signal! });
      return { model, version: 2, request: {} as InferenceRequest };
    },
    isModelReady: async () => true,
    inferenceTarget: (_p, model, version) => ({ version: version < 0 ? 2 : version, config: {} as ModelConfig, decoupled: model === 'stream' }),
  };
  return { server, seen };
}

const KEY = { namespace: 'acme', name: 'caller' };
const grantsOf = (p: Record<string, string>) =>
  blsGrants({ name: 'caller', parameters: Object.fromEntries(Object.entries(p).map(([k, v]) => [`bls_model:${k}`, { string_value: v }])) });

function state(opts: { grants?: Record<string, string>; maxInflight?: number; memoryBytes?: number } = {}) {
  const { server, seen } = fakeServer();
  const st = createInferenceState({
    server,
    key: KEY,
    grants: grantsOf(opts.grants ?? { simple: '*', stream: '*' }),
    maxInflight: opts.maxInflight ?? 16,
    memoryBytes: opts.memoryBytes ?? 1 << 20,
  });
  return { st, seen };
}

const call = (model: string, extra: Partial<CallRequest> = {}): CallRequest => ({
  model,
  version: -1,
  id: '',
  inputs: [],
  requestedOutputs: [],
  parameters: {},
  timeoutUs: 0,
  ...extra,
});
const request = (extra: Partial<InferenceRequest> = {}) => ({ cancelled: false, ...extra }) as InferenceRequest;
const bytes = (n: number) => ({ outputs: [{ name: 'OUT', datatype: 'UINT8' as const, shape: [n], data: new Uint8Array(n) }] });

/** Every outcome `next` gives for `handle` until the call's end. */
function drain(st: InferenceState, handle: number): CallOutcome[] {
  const out: CallOutcome[] = [];
  for (;;) {
    let got: CallOutcome | undefined;
    nextOutcome(st, handle, (o) => (got = o));
    if (!got) throw new Error('next would wait');
    out.push(got);
    if ('err' in got || got.ok === null) return out;
  }
}

afterEach(() => vi.useRealTimers());

describe('grants', () => {
  it('a model that is not granted, and a model with no grants at all, fail exactly as a missing model', () => {
    const { st } = state({ grants: { simple: '*' } });
    beginCalls(st, [request()], 1000);
    expect(() => startCall(st, call('secret'), true)).toThrow(modelNotFound('secret').message);
    const none = createInferenceState(undefined);
    beginCalls(none, [request()], 1000);
    expect(() => startCall(none, call('simple'), true)).toThrow(modelNotFound('simple').message);
  });

  it('a version grant admits only its versions: the missing-version text for others, the missing-model text when the server picks one', () => {
    const { st, seen } = state({ grants: { simple: '1,3' } });
    beginCalls(st, [request()], 1000);
    expect(() => startCall(st, call('simple', { version: 2 }), true)).toThrow(versionNotFound('simple', 2).message);
    // -1 resolves to version 2 here, which is not granted
    expect(() => startCall(st, call('simple'), true)).toThrow(modelNotFound('simple').message);
    startCall(st, call('simple', { version: 3 }), true);
    expect(seen.map((s) => s.init.version)).toEqual([3]);
  });

  it('a decoupled callee through infer is refused; start takes it', () => {
    const { st } = state();
    beginCalls(st, [request()], 1000);
    expect(() => startCall(st, call('stream'), false)).toThrow("model 'stream' is decoupled");
    expect(startCall(st, call('stream'), true)).toBeGreaterThan(0);
  });

  it('calls only during an execute', () => {
    const { st } = state();
    expect(() => startCall(st, call('simple'), true)).toThrow('models can be called only during execute');
  });

  it('malformed grants refuse the configuration', () => {
    expect(() => grantsOf({ simple: 'latest' })).toThrow("must be '*' or comma-separated version numbers");
    expect(() => grantsOf({ '../x': '*' })).toThrow('grants no valid model name');
    expect([...grantsOf({ 'a,b:c': '*' }).keys()]).toEqual(['a,b:c']);
  });
});

describe('the request the data plane gets', () => {
  it("is the owner's, with the execute's chain and at most the deadline's rest as its timeout", () => {
    const { st, seen } = state();
    beginCalls(st, [request({ blsChain: ['/outer'] }), request({ blsChain: ['/outer', 'beta/x'] })], 250);
    startCall(st, call('simple'), true);
    startCall(st, call('simple', { timeoutUs: 1000 }), true);
    startCall(st, call('simple', { timeoutUs: 10_000_000 }), true);
    expect(seen[0]!.principal).toEqual({ namespace: 'acme', role: 'tenant' });
    expect(seen[0]!.init.tenant).toBe('acme');
    expect(seen[0]!.init.blsChain).toEqual(['/outer', 'beta/x', 'acme/caller']);
    expect(seen[0]!.init.timeoutUs).toBeGreaterThan(0);
    expect(seen[0]!.init.timeoutUs).toBeLessThanOrEqual(250_000);
    expect(seen[1]!.init.timeoutUs).toBe(1000);
    expect(seen[2]!.init.timeoutUs).toBeLessThanOrEqual(250_000);
  });

  it('no call once the deadline passed', () => {
    vi.useFakeTimers();
    const { st } = state();
    beginCalls(st, [request()], 100);
    vi.advanceTimersByTime(150);
    expect(() => startCall(st, call('simple'), true)).toThrow('the calling execute reached its deadline');
  });
});

describe('limits', () => {
  it('at most bls_max_inflight calls per execute; a finished call frees its place', () => {
    const { st, seen } = state({ maxInflight: 2 });
    beginCalls(st, [request()], 1000);
    const a = startCall(st, call('simple'), true);
    startCall(st, call('simple'), true);
    const e = (() => {
      try {
        startCall(st, call('simple'), true);
      } catch (x) {
        return x as TritonError;
      }
    })();
    expect(e?.code).toBe('UNAVAILABLE');
    expect(e?.message).toBe('too many model calls in flight in this execute (at most 2)');
    seen[0]!.sender.send(bytes(4), true);
    expect(drain(st, a).map((o) => ('ok' in o ? (o.ok ? 'response' : 'end') : 'err'))).toEqual(['response', 'end']);
    expect(startCall(st, call('simple'), true)).toBeGreaterThan(0);
  });

  it("responses held for the guest stay within the instance's memory limit: the one past it fails and cancels its call", () => {
    const { st, seen } = state({ memoryBytes: 100 });
    beginCalls(st, [request()], 1000);
    const h = startCall(st, call('stream'), true);
    seen[0]!.sender.send(bytes(64), false);
    seen[0]!.sender.send(bytes(64), false);
    expect(seen[0]!.signal.aborted).toBe(true);
    const out = drain(st, h);
    expect(out).toHaveLength(2);
    expect(out[1]).toEqual({
      err: { code: 'UNAVAILABLE', message: "responses of the call to model 'stream' exceed the instance's memory limit of 100 bytes" },
    });
  });

  it('a response taken frees its bytes for the next', () => {
    const { st, seen } = state({ memoryBytes: 100 });
    beginCalls(st, [request()], 1000);
    const h = startCall(st, call('stream'), true);
    for (let i = 0; i < 5; i++) {
      seen[0]!.sender.send(bytes(64), false);
      let got: CallOutcome | undefined;
      nextOutcome(st, h, (o) => (got = o));
      expect(got && 'ok' in got && got.ok?.outputs[0]!.data.length).toBe(64);
    }
    expect(seen[0]!.signal.aborted).toBe(false);
  });
});

describe('outcomes', () => {
  it("a decoupled callee's stream in order, then the end; a waiting next gets the next one when it arrives", () => {
    const { st, seen } = state();
    beginCalls(st, [request()], 1000);
    const h = startCall(st, call('stream'), true);
    const got: CallOutcome[] = [];
    nextOutcome(st, h, (o) => got.push(o));
    expect(got).toEqual([]);
    seen[0]!.sender.send(bytes(1), false);
    expect(got).toHaveLength(1);
    seen[0]!.sender.send(bytes(2), false);
    seen[0]!.sender.send(null, true);
    const rest = drain(st, h);
    expect(rest.map((o) => ('ok' in o && o.ok ? o.ok.outputs[0]!.data.length : 'end'))).toEqual([2, 'end']);
    let after: CallOutcome | undefined;
    nextOutcome(st, h, (o) => (after = o));
    expect(after).toEqual({ err: { code: 'INVALID_ARG', message: `no call ${h} in flight in this execute` } });
  });

  it('an error response ends the call', () => {
    const { st, seen } = state();
    beginCalls(st, [request()], 1000);
    const h = startCall(st, call('stream'), true);
    seen[0]!.sender.sendError(new TritonError('INTERNAL', 'boom'), false);
    seen[0]!.sender.send(bytes(1), false); // after the end: dropped
    expect(drain(st, h)).toEqual([{ err: { code: 'INTERNAL', message: 'boom' } }]);
  });

  it('cancel ends a call and aborts its request; an unknown handle is ignored', () => {
    const { st, seen } = state();
    beginCalls(st, [request()], 1000);
    const h = startCall(st, call('simple'), true);
    cancelCall(st, h);
    cancelCall(st, 12345);
    expect(seen[0]!.signal.aborted).toBe(true);
  });
});

describe('the end of an execute and the clients', () => {
  it('the end of the execute cancels every call in flight', () => {
    const { st, seen } = state();
    beginCalls(st, [request()], 1000);
    startCall(st, call('simple'), true);
    startCall(st, call('stream'), true);
    endCalls(st);
    expect(seen.map((s) => s.signal.aborted)).toEqual([true, true]);
    expect(() => startCall(st, call('simple'), true)).toThrow('only during execute');
  });

  it("once every request of the execute is cancelled by its client, the execute's calls are", () => {
    vi.useFakeTimers();
    const { st, seen } = state();
    const reqs = [request(), request()];
    beginCalls(st, reqs, 10_000);
    startCall(st, call('simple'), true);
    reqs[0]!.cancelled = true;
    vi.advanceTimersByTime(100);
    expect(seen[0]!.signal.aborted).toBe(false);
    reqs[1]!.cancelled = true;
    vi.advanceTimersByTime(100);
    expect(seen[0]!.signal.aborted).toBe(true);
    endCalls(st);
  });
});

describe('the chain rule of the data plane', () => {
  const key = { namespace: 'acme', name: 'a' };
  it('a model already waiting on the chain is refused (recursion, through ensembles too)', () => {
    expect(() => checkChain([chainEntry(key)], key, 'a')).toThrow("call to model 'a' refused: the model is already on this call chain (recursion)");
    expect(() => checkChain(['acme/b'], key, 'a')).not.toThrow();
    // the operator's `a` is another model than acme's
    expect(() => checkChain(['/a'], key, 'a')).not.toThrow();
  });

  it(`a chain of ${MAX_BLS_DEPTH} models goes no deeper`, () => {
    const chain = Array.from({ length: MAX_BLS_DEPTH }, (_, i) => `acme/m${i}`);
    expect(() => checkChain(chain.slice(1), key, 'a')).not.toThrow();
    expect(() => checkChain(chain, key, 'a')).toThrow(`calls nest at most ${MAX_BLS_DEPTH} models deep`);
  });
});
