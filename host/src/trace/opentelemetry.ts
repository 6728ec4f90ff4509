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
 */
import { ROOT_CONTEXT, trace, type Context, type HrTime, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
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
    });
    this.tracer = this.provider.getTracer('warden');
    this.offsetNs = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)) - process.hrtime.bigint();
  }

  private wall(ns: bigint): HrTime {
    const t = ns + this.offsetNs;
    return [Number(t / 1_000_000_000n), Number(t % 1_000_000_000n)];
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
    const attributes = { model_name: t.model, model_version: t.version, request_id: t.requestId, trace_id: t.id };
    const top = this.tracer.startSpan('InferRequest', { startTime: this.wall(start) }, t.parent ?? ROOT_CONTEXT);
    const model = this.tracer.startSpan(t.model, { startTime: this.wall(start), attributes }, trace.setSpan(ROOT_CONTEXT, top));
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
    top.end(this.wall(end));
  }

  /** Send what is queued and stop (server shutdown). Export errors are the SDK's to log. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}
