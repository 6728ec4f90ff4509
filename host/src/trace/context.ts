/**
 * OpenTelemetry context propagation (Triton's trace guide, "OpenTelemetry Context Propagation"):
 * the W3C Trace Context a client sends as `traceparent` / `tracestate` HTTP headers or gRPC
 * metadata. In `opentelemetry` trace mode a request that carries a valid one is traced whatever the
 * trace rate and count, and its `InferRequest` span is a child of the client's span. Parsing and
 * validation are @opentelemetry/core's W3C propagator's; this module only bounds what is kept.
 */
import { ROOT_CONTEXT, type Context, defaultTextMapGetter, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { TraceContextCarrier } from '../contract/types.js';

/** Longest `traceparent` kept (version 00 is 55 characters; later versions may add fields). */
const MAX_TRACEPARENT = 256;
/** Longest `tracestate` kept (W3C: 32 list members, 512 characters is what vendors must propagate). */
const MAX_TRACESTATE = 512;

const propagator = new W3CTraceContextPropagator();

/**
 * The trace context of a request, from a header / metadata lookup (`get(name)`: the value, or the
 * first of several), or undefined when there is none or it is too long to be one.
 */
export function traceContextFrom(get: (name: string) => unknown): TraceContextCarrier | undefined {
  const first = (v: unknown) => (Array.isArray(v) ? v[0] : v);
  const traceparent = first(get('traceparent'));
  if (typeof traceparent !== 'string' || traceparent.length > MAX_TRACEPARENT) return undefined;
  const tracestate = first(get('tracestate'));
  return typeof tracestate === 'string' && tracestate.length <= MAX_TRACESTATE ? { traceparent, tracestate } : { traceparent };
}

/**
 * The OpenTelemetry context a request's spans continue (the client's span), or undefined when
 * `carrier` is no valid W3C trace context (a malformed `traceparent`, zero ids).
 */
export function clientContext(carrier: TraceContextCarrier): Context | undefined {
  const context = propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  return trace.getSpanContext(context) === undefined ? undefined : context;
}
