/**
 * OpenTelemetry export of request traces: Triton's `--trace-config mode=opentelemetry` (spec §3.5;
 * Triton's trace guide, "OpenTelemetry trace support"), through the OpenTelemetry JS SDK: a
 * BatchSpanProcessor and the OTLP/HTTP exporter (JSON) to `url`.
 *
 * Each traced request becomes Triton's minimal span tree:
 * - a top-level span `InferRequest` (REQUEST_START to REQUEST_END, or COMPUTE_END if later),
 * - its child, the model span named after the model, with events REQUEST_START, QUEUE_START and
 *   REQUEST_END and attributes `model_name`, `model_version`, `request_id`, `trace_id`,
 * - the model span's child `compute` (COMPUTE_START to COMPUTE_END) with events COMPUTE_START,
 *   COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END.
 * Timestamps are Warden's monotonic ns moved onto the wall clock (OpenTelemetry uses the real-time
 * clock), with one offset taken when the exporter starts, so the intervals are exact.
 *
 * A request that carried a client's W3C trace context (`traceparent` / `tracestate`, context.ts)
 * has its `InferRequest` span made a child of the client's span, in the client's trace.
 *
 * A request made on behalf of a traced one (an ensemble step, a backend's BLS call: a child trace)
 * has no `InferRequest` span: its model span is a child of the parent's model span, in the
 * parent's trace (Triton server `tracer.cc`, `TraceManager::Trace::StartSpan`). Spans are built
 * when a trace finishes, and a child finishes before its parent, so every trace's model-span ids
 * are drawn when it is sampled ({@link OpenTelemetryTraceExporter.assign}) and its model span is
 * given them when built.
 */
import { ROOT_CONTEXT, TraceFlags, trace, type Context, type HrTime, type SpanContext, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator, type IdGenerator } from '@opentelemetry/sdk-trace-base';
import type { TraceTimestamp } from './trace-manager.js';

/** `--trace-config opentelemetry,<setting>=<value>` settings (defaults as Triton's). */
export interface OpenTelemetryOptions {
  /** OTLP/HTTP traces endpoint; `host:port/path` gets `http://`. Default `http://localhost:4318/v1/traces`. */
  url?: string;
  /** Resource attributes (`resource=key=value`); default `service.name=triton-inference-server`. */
  resource?: Record<string, string>;
  /** `bsp_max_queue_size`, default 2048. */
  bspMaxQueueSize?: number;
  /** `bsp_schedule_delay` in ms, default 5000. */
  bspScheduleDelayMs?: number;
  /** `bsp_max_export_batch_size`, default 512 (at most the queue size). */
  bspMaxExportBatchSize?: number;
}

/** What one finished trace gives the exporter. */
export interface FinishedTrace {
  id: number;
  model: string;
  version: number;
  requestId: string;
  /** Monotonic ns (`process.hrtime.bigint()`), in Triton's order. */
  timestamps: readonly { name: TraceTimestamp; ns: bigint }[];
  /** The client's span, if it sent a valid trace context (context.ts): `InferRequest`'s parent. */
  parent?: Context;
  /** A child trace's parent's id (Triton's `parent_id`); undefined for a request of its own. */
  parentId?: number;
  /** The model span's trace and span ids, drawn when the trace was sampled ({@link OpenTelemetryTraceExporter.assign}). */
  span?: SpanContext;
  /** A child trace's parent's model span ({@link span} of the parent): the child's model span's parent, instead of an `InferRequest` span. */
  parentSpan?: SpanContext;
}

/**
 * The SDK's random ids, except the next trace id / span id when one is preset: how a span gets
 * the ids drawn for it in advance. `startSpan` is synchronous, so a preset is consumed by the very
 * span started after it is set (the SDK draws the span id first, then the trace id of a root span).
 */
class PresetIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  nextTraceId: string | undefined;
  nextSpanId: string | undefined;
  generateTraceId(): string {
    const id = this.nextTraceId ?? this.random.generateTraceId();
    this.nextTraceId = undefined;
    return id;
  }
  generateSpanId(): string {
    const id = this.nextSpanId ?? this.random.generateSpanId();
    this.nextSpanId = undefined;
    return id;
  }
}

const MODEL_EVENTS: readonly TraceTimestamp[] = ['REQUEST_START', 'QUEUE_START', 'REQUEST_END'];
const COMPUTE_EVENTS: readonly TraceTimestamp[] = ['COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END'];

/** Triton's default OTLP/HTTP endpoint. */
export const DEFAULT_OTLP_URL = 'http://localhost:4318/v1/traces';

/** The endpoint URL: Triton documents `host:port`, so a URL without a scheme gets `http://`. */
export function otlpUrl(url: string | undefined): string {
  if (!url) return DEFAULT_OTLP_URL;
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`;
}

/** Exports finished request traces as OpenTelemetry spans. */
export class OpenTelemetryTraceExporter {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly ids = new PresetIds();
  /** Wall-clock ns minus monotonic ns, taken once. */
  private readonly offsetNs: bigint;
  readonly url: string;

  constructor(opts: OpenTelemetryOptions = {}) {
    this.url = otlpUrl(opts.url);
    const maxQueueSize = opts.bspMaxQueueSize ?? 2048;
    const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: this.url }), {
      maxQueueSize,
      scheduledDelayMillis: opts.bspScheduleDelayMs ?? 5000,
      maxExportBatchSize: Math.min(opts.bspMaxExportBatchSize ?? 512, maxQueueSize),
    });
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'triton-inference-server', ...(opts.resource ?? {}) }),
      spanProcessors: [processor],
      idGenerator: this.ids,
    });
    this.tracer = this.provider.getTracer('warden');
    this.offsetNs = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)) - process.hrtime.bigint();
  }

  private wall(ns: bigint): HrTime {
    const t = ns + this.offsetNs;
    return [Number(t / 1_000_000_000n), Number(t % 1_000_000_000n)];
  }

  /**
   * The ids a sampled trace's model span will have: in `parent`'s trace (a parent trace's model
   * span, or the client's span), with its sampled flag, or in a new sampled trace.
   */
  assign(parent?: SpanContext): SpanContext {
    const spanId = this.ids.generateSpanId();
    if (parent) return { traceId: parent.traceId, spanId, traceFlags: parent.traceFlags, traceState: parent.traceState };
    return { traceId: this.ids.generateTraceId(), spanId, traceFlags: TraceFlags.SAMPLED };
  }

  /** Turn one finished trace into its spans (ended; the batch processor sends them). */
  export(t: FinishedTrace): void {
    const at = new Map(t.timestamps.map((s) => [s.name, s.ns]));
    if (t.timestamps.length === 0) return;
    const all = t.timestamps.map((s) => s.ns);
    const start = at.get('REQUEST_START') ?? all.reduce((a, b) => (b < a ? b : a));
    // The final response may leave inside the backend's execute, before COMPUTE_END is taken:
    // the request's spans end with the later of the two, so they enclose their compute span.
    const end = all.reduce((a, b) => (b > a ? b : a));
    const attributes = { model_name: t.model, model_version: t.version, request_id: t.requestId, trace_id: t.id, trace_parent_id: t.parentId ?? 0 };
    // A child trace continues its parent's model span; any other trace gets its own InferRequest
    // span (in the client's trace, or in the trace drawn for it at sampling).
    let top;
    let modelParent: Context;
    if (t.parentSpan) modelParent = trace.setSpanContext(ROOT_CONTEXT, t.parentSpan);
    else {
      this.ids.nextTraceId = t.span?.traceId;
      top = this.tracer.startSpan('InferRequest', { startTime: this.wall(start) }, t.parent ?? ROOT_CONTEXT);
      this.ids.nextTraceId = undefined;
      modelParent = trace.setSpan(ROOT_CONTEXT, top);
    }
    this.ids.nextSpanId = t.span?.spanId;
    const model = this.tracer.startSpan(t.model, { startTime: this.wall(start), attributes }, modelParent);
    this.ids.nextSpanId = undefined;
    for (const name of MODEL_EVENTS) {
      const ns = at.get(name);
      if (ns !== undefined) model.addEvent(name, this.wall(ns));
    }
    const cStart = at.get('COMPUTE_START');
    const cEnd = at.get('COMPUTE_END');
    if (cStart !== undefined && cEnd !== undefined) {
      const compute = this.tracer.startSpan('compute', { startTime: this.wall(cStart), attributes }, trace.setSpan(ROOT_CONTEXT, model));
      for (const name of COMPUTE_EVENTS) {
        const ns = at.get(name);
        if (ns !== undefined) compute.addEvent(name, this.wall(ns));
      }
      compute.end(this.wall(cEnd));
    }
    model.end(this.wall(end));
    top?.end(this.wall(end));
  }

  /** Send what is queued and stop (server shutdown). Export errors are the SDK's to log. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}
