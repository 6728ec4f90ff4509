/**
 * Request tracing, Triton's trace extension (spec §3.5): global settings and per-model overrides
 * (`GET|POST /v2[/models/{m}]/trace/setting`), sampling by rate and count, and the output of the
 * trace mode: `triton` writes the JSON trace file Triton writes (an array of
 * `{"id","model_name","model_version"}` entries followed by `{"id","timestamps":[{"name","ns"},
 * ...]}` entries; monotonic ns); `opentelemetry` exports spans over OTLP/HTTP
 * (`opentelemetry.ts`).
 *
 * Off the hot path when disabled: a model version asks {@link TraceManager.active} (one boolean)
 * before anything else. Timestamps recorded: REQUEST_START, QUEUE_START, COMPUTE_START,
 * COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END, REQUEST_END (what the scheduler's
 * execution record and the response path measure). TENSORS level is accepted and reported but
 * records timestamps only.
 *
 * A request made on behalf of a traced one (an ensemble step, a backend's BLS call;
 * `InferenceRequest.parentTrace`) is traced too, whatever the rate and count, as its child:
 * Triton's child traces (core `InferenceTrace::SpawnChildTrace`), whose trace file head carries
 * `"parent_id"` (server `tracer.cc`), and whose OpenTelemetry spans hang under the parent's.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import * as err from './trace-settings.errors.js';
import { trace, type Context, type SpanContext } from '@opentelemetry/api';
import type { TraceContextCarrier, TraceRef } from '../contract/types.js';
import { clientContext } from './context.js';
import { OpenTelemetryTraceExporter, type FinishedTrace, type OpenTelemetryOptions } from './opentelemetry.js';

export type TraceLevel = 'TIMESTAMPS' | 'TENSORS';

/** Startup trace settings (`--trace-config`, `--trace-*`). */
export interface TraceOptions {
  file?: string;
  /** Empty = OFF. */
  level?: TraceLevel[];
  rate?: number;
  /** -1 = unlimited. */
  count?: number;
  logFrequency?: number;
  mode?: 'triton' | 'opentelemetry';
  /** `--trace-config opentelemetry,<setting>=<value>` (used in `opentelemetry` mode). */
  opentelemetry?: OpenTelemetryOptions;
  /** Settings the parser could not use (reported by the CLI). */
  ignored?: string[];
}

/** One setting set; absent fields of a model's override fall back to the global ones. */
interface Setting {
  level?: TraceLevel[];
  rate?: number;
  count?: number;
  logFrequency?: number;
}

/** The settings JSON of the trace extension: strings and string arrays. */
export interface TraceSettingsJson {
  trace_level: string[];
  trace_rate: string;
  trace_count: string;
  log_frequency: string;
  trace_file: string;
  trace_mode: string;
}

/** Timestamp names Triton records, in the order they happen. */
export type TraceTimestamp = 'REQUEST_START' | 'QUEUE_START' | 'COMPUTE_START' | 'COMPUTE_INPUT_END' | 'COMPUTE_OUTPUT_START' | 'COMPUTE_END' | 'REQUEST_END';

const ORDER: readonly TraceTimestamp[] = [
  'REQUEST_START',
  'QUEUE_START',
  'COMPUTE_START',
  'COMPUTE_INPUT_END',
  'COMPUTE_OUTPUT_START',
  'COMPUTE_END',
  'REQUEST_END',
];

/** Where a trace sits among others: its client's span, its parent trace, its own span ids. */
interface TraceLinks {
  /** The client's span (OpenTelemetry mode, trace context propagation), which the exported spans continue. */
  parent?: Context;
  /** The trace of the request this one was made on behalf of (a child trace). */
  parentTrace?: RequestTrace;
  /** OpenTelemetry mode: the model span's ids, drawn at sampling (children name it as their parent). */
  span?: SpanContext;
}

/** One sampled request's trace. */
export class RequestTrace implements TraceRef {
  private readonly stamps: { name: TraceTimestamp; ns: bigint }[] = [];
  /** The client's span (OpenTelemetry mode, trace context propagation), which the exported spans continue. */
  readonly parent?: Context;
  /** A child trace's parent (Triton's `parent_id`). */
  readonly parentTrace?: RequestTrace;
  /** OpenTelemetry mode: the ids its model span gets. */
  readonly span?: SpanContext;
  constructor(
    /** The manager that sampled it (a child is traced only by its parent's). */
    readonly sink: TraceManager,
    readonly id: number,
    readonly model: string,
    readonly version: number,
    readonly requestId: string,
    links: TraceLinks = {},
  ) {
    this.parent = links.parent;
    this.parentTrace = links.parentTrace;
    this.span = links.span;
  }
  /** Record a timestamp (monotonic ns). */
  stamp(name: TraceTimestamp, ns: bigint): void {
    this.stamps.push({ name, ns });
  }
  /**
   * REQUEST_END: the final response went out. The trace goes to the file a turn of the event loop
   * later, once the execution that produced the response has reported its compute timestamps
   * (a backend answers inside execute, before the scheduler's execution record).
   */
  end(ns: bigint): void {
    this.stamp('REQUEST_END', ns);
    setImmediate(() => this.sink.collect(this));
  }
  /** The trace as exporters see it: timestamps in Triton's order. */
  finished(): FinishedTrace {
    const order = (n: TraceTimestamp) => ORDER.indexOf(n);
    const timestamps = [...this.stamps].sort((a, b) => order(a.name) - order(b.name));
    return {
      id: this.id,
      model: this.model,
      version: this.version,
      requestId: this.requestId,
      timestamps,
      parent: this.parent,
      parentId: this.parentTrace?.id,
      span: this.span,
      parentSpan: this.parentTrace?.span,
    };
  }
  /** The two JSON entries Triton writes for a trace (`parent_id` for a child, after `request_id`); timestamps in Triton's order. */
  toJson(): string {
    const head: Record<string, unknown> = { id: this.id, model_name: this.model, model_version: this.version };
    if (this.requestId) head.request_id = this.requestId;
    if (this.parentTrace) head.parent_id = this.parentTrace.id;
    const ts = this.finished()
      .timestamps.map((s) => `{"name":"${s.name}","ns":${s.ns}}`)
      .join(',');
    return `${JSON.stringify(head)},{"id":${this.id},"timestamps":[${ts}]}`;
  }
}

const LEVELS: readonly string[] = ['OFF', 'TIMESTAMPS', 'TENSORS'];
const U32_MAX = 4294967295;
const I32_MAX = 2147483647;

/** Parse a decimal setting string as std::stoi does for Triton's messages (whole string digits). */
function parseIntSetting(key: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'string') throw err.settingNotString(key, value);
  if (!/^\s*[-+]?\d+/.test(value)) throw err.settingNotInteger(key, value);
  const n = parseInt(value, 10);
  if (key === 'trace_count' && n < min && n >= -I32_MAX - 1) throw err.traceCountTooSmall(min, value);
  if (n < min || n > max) throw err.settingOutOfRange(key, min, max, value);
  return n;
}

/** Global and per-model trace settings, the sampler, and the trace file writer. */
export class TraceManager {
  private global: Required<Setting>;
  /** The start-up settings: clearing a global setting (`null`) restores its value here (Triton `tracer.cc` global_default_). */
  private readonly startup: Required<Setting>;
  private readonly models = new Map<string, Setting>();
  /** Requests seen per setting scope (global, or a model with its own rate), for sampling. */
  private readonly seen = new Map<string, number>();
  private readonly file: string;
  private nextId = 1;
  private pending: string[] = [];
  private fileIndex = 0;
  /** The `opentelemetry` mode's exporter; undefined in `triton` mode. */
  private readonly otel?: OpenTelemetryTraceExporter;
  /** True while some scope traces (a level other than OFF): the hot path's one check. */
  active = false;

  constructor(
    opts: TraceOptions = {},
    private readonly logger?: Logger,
  ) {
    this.file = opts.file ?? '';
    if (opts.mode === 'opentelemetry') this.otel = new OpenTelemetryTraceExporter(opts.opentelemetry);
    this.startup = { level: opts.level ?? [], rate: opts.rate ?? 1000, count: opts.count ?? -1, logFrequency: opts.logFrequency ?? 0 };
    this.global = { ...this.startup };
    this.refresh();
  }

  private effective(model?: string): Required<Setting> {
    const o = model === undefined ? undefined : this.models.get(model);
    const g = this.global;
    return o ? { level: o.level ?? g.level, rate: o.rate ?? g.rate, count: o.count ?? g.count, logFrequency: o.logFrequency ?? g.logFrequency } : g;
  }

  /** Called with {@link active} whenever a settings update may have changed it. */
  private readonly activeListeners: ((active: boolean) => void)[] = [];

  /** Registers `listener` for changes of {@link active} (the native data path serves only while no scope traces). */
  onActiveChange(listener: (active: boolean) => void): void {
    this.activeListeners.push(listener);
  }

  private refresh(): void {
    const was = this.active;
    this.active = this.global.level.length > 0 || [...this.models.values()].some((s) => s.level !== undefined && s.level.length > 0);
    if (was !== this.active) for (const l of this.activeListeners) l(this.active);
  }

  /** The settings JSON (spec §3.5) of the server, or of `model`. */
  settings(model?: string): TraceSettingsJson {
    const s = this.effective(model);
    return {
      trace_level: s.level.length === 0 ? ['OFF'] : LEVELS.filter((l) => s.level.includes(l as TraceLevel)),
      trace_rate: String(s.rate),
      trace_count: String(s.count),
      log_frequency: String(s.logFrequency),
      trace_file: this.file,
      trace_mode: this.otel ? 'opentelemetry' : 'triton',
    };
  }

  /**
   * Apply a POST body (Triton's checks and messages, server `http_server.cc` HandleTrace and
   * `tracer.cc` UpdateTraceSettingInternal). `null` clears a field: a model's override is dropped
   * (the global value applies again), a global field gets its start-up value back. Fields the body
   * does not name keep their values (an empty body changes nothing).
   * @throws TritonError UNSUPPORTED for trace_file, INVALID_ARG for bad values
   */
  update(body: unknown, model?: string): TraceSettingsJson {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw err.traceSettingsNotObject();
    const b = body as Record<string, unknown>;
    if ('trace_file' in b) throw err.traceFileNotUpdatable();
    const next: Setting = model === undefined ? { ...this.global } : { ...(this.models.get(model) ?? {}) };
    const clear = (k: keyof Setting) => {
      if (model === undefined) (next as Record<keyof Setting, unknown>)[k] = k === 'level' ? [...this.startup.level] : this.startup[k];
      else delete next[k];
    };
    if ('trace_level' in b) {
      const v = b.trace_level;
      if (v === null) clear('level');
      else {
        if (!Array.isArray(v)) throw err.traceJsonType('array');
        let level: TraceLevel[] | undefined;
        for (const x of v) {
          if (typeof x !== 'string') throw err.traceJsonType('string');
          if (x === 'OFF') {
            if (v.length !== 1) throw err.traceLevelOffNotAlone();
            level = [];
          } else if (x === 'TIMESTAMPS' || x === 'TENSORS') {
            level = [...new Set([...(level ?? []), x as TraceLevel])];
          }
        }
        if (level !== undefined) next.level = level;
      }
    }
    if ('trace_rate' in b) {
      if (b.trace_rate === null) clear('rate');
      else next.rate = parseIntSetting('trace_rate', b.trace_rate, 0, U32_MAX);
    }
    if ('trace_count' in b) {
      if (b.trace_count === null) clear('count');
      else next.count = parseIntSetting('trace_count', b.trace_count, -1, I32_MAX);
    }
    if ('log_frequency' in b) {
      if (b.log_frequency === null) clear('logFrequency');
      else next.logFrequency = parseIntSetting('log_frequency', b.log_frequency, 0, U32_MAX);
    }
    if (model === undefined) this.global = next as Required<Setting>;
    else if (Object.keys(next).length === 0) this.models.delete(model);
    else this.models.set(model, next);
    this.seen.delete(model ?? '');
    this.refresh();
    return this.settings(model);
  }

  /**
   * Whether to trace this request of `model` (call only when {@link active}): every `rate`-th
   * request of its scope is traced while the scope's count lasts. In `opentelemetry` mode a request
   * with a valid client trace context is traced whatever the rate and count (and uses none of the
   * count), as Triton does; its spans continue the client's trace. A request made on behalf of a
   * request this manager traces (`InferenceRequest.parentTrace`) is traced whatever its
   * model's settings, rate and count (and uses none of the count), as its child: Triton spawns a
   * child trace from the parent's, never samples it.
   */
  sample(model: string, version: number, requestId: string, context?: TraceContextCarrier, parentTrace?: TraceRef): RequestTrace | undefined {
    // Only a trace of this manager's own making is a parent (never a look-alike object).
    if (parentTrace instanceof RequestTrace && parentTrace.sink === this) {
      const span = this.otel && parentTrace.span ? this.otel.assign(parentTrace.span) : undefined;
      return new RequestTrace(this, this.nextId++, model, version, requestId, { parentTrace, span });
    }
    const own = this.models.get(model);
    const s = this.effective(model);
    const parent = this.otel && context && s.level.length > 0 ? clientContext(context) : undefined;
    if (parent) return new RequestTrace(this, this.nextId++, model, version, requestId, { parent, span: this.otel!.assign(trace.getSpanContext(parent)) });
    if (s.level.length === 0 || s.rate === 0 || s.count === 0) return undefined;
    const scope = own?.rate !== undefined || own?.count !== undefined ? model : '';
    const n = (this.seen.get(scope) ?? 0) + 1;
    this.seen.set(scope, n);
    if (n % s.rate !== 0) return undefined;
    if (s.count > 0) {
      if (own?.count !== undefined) own.count--;
      else this.global.count--;
      if (this.effective(model).count === 0) this.refresh();
    }
    return new RequestTrace(this, this.nextId++, model, version, requestId, { span: this.otel?.assign() });
  }

  /** A finished trace: exported (opentelemetry), or kept until the next write (log_frequency traces, or shutdown). */
  collect(t: RequestTrace): void {
    if (this.otel) {
      try {
        this.otel.export(t.finished());
      } catch (e) {
        this.logger?.error({ err: e }, 'failed to export a trace to OpenTelemetry');
      }
      return;
    }
    if (!this.file) return;
    this.pending.push(t.toJson());
    const freq = this.effective(t.model).logFrequency;
    if (freq > 0 && this.pending.length >= freq) this.writeIndexed();
  }

  private writeIndexed(): void {
    const entries = this.pending;
    this.pending = [];
    this.write(`${this.file}.${this.fileIndex++}`, entries);
  }

  private write(path: string, entries: string[]): void {
    try {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, `[${entries.join(',')}]`);
    } catch (e) {
      this.logger?.error({ err: e, file: path }, 'failed to write the trace file');
    }
  }

  /** Write what was collected (server shutdown): to `trace_file`, or its next index with log_frequency. */
  flush(): void {
    if (!this.file || this.pending.length === 0) return;
    if (this.global.logFrequency > 0) return this.writeIndexed();
    // log_frequency 0: one JSON array in trace_file, rewritten with everything collected so far.
    this.written.push(...this.pending);
    this.pending = [];
    this.write(this.file, this.written);
  }
  /** Entries already in trace_file (log_frequency 0). */
  private written: string[] = [];

  /**
   * Server shutdown: write the trace file, or send the spans still queued for OpenTelemetry
   * (waiting at most `timeoutMs` for an unreachable collector).
   */
  async shutdown(timeoutMs = 5000): Promise<void> {
    this.flush();
    if (!this.otel) return;
    try {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()));
      await Promise.race([this.otel.shutdown(), late]);
      clearTimeout(timer);
    } catch (e) {
      this.logger?.error({ err: e }, 'failed to send the last traces to OpenTelemetry');
    }
  }
}
