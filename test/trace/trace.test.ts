/**
 * Trace extension (spec §3.5): settings endpoints with Triton's shape and errors, the JSON trace
 * file with the request timestamps, and the OpenTelemetry mode's spans against a local OTLP/HTTP
 * collector stub.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT, getJson, postJson, simpleRequest, type TempRepo } from '../helpers/repo.js';
import { perTestServers } from '../helpers/servers.js';
import { parseCli } from '../../host/src/cli-options.js';
import { otlpUrl } from '../../host/src/trace/opentelemetry.js';
import { TraceManager } from '../../host/src/trace/trace-manager.js';
import { simpleInfer as grpcSimpleInfer, tritonGrpcClient, unaryCall } from '../helpers/grpc.js';
import { sleep, until } from '../helpers/wait.js';
import { pythonEnvironment } from '../backends/python/helpers.js';

const grpcSimple = () => grpcSimpleInfer(Array(16).fill(1), Array(16).fill(2));

const { repository, serve, defer } = perTestServers();

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'warden-trace-'));
  defer(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const infer = (url: string) => postJson(`${url}/v2/models/simple/infer`, simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)));

describe('trace settings', () => {
  it('GET returns the defaults; trace is advertised', async () => {
    const s = await serve(repository(), { loadModels: ['simple'] });
    expect((await getJson(`${s.httpUrl}/v2`)).json.extensions).toContain('trace');
    const g = await getJson(`${s.httpUrl}/v2/trace/setting`);
    expect(g.status).toBe(200);
    expect(g.json).toEqual({ trace_level: ['OFF'], trace_rate: '1000', trace_count: '-1', log_frequency: '0', trace_file: '', trace_mode: 'triton' });
  });

  it('POST updates global and per-model settings; model overrides fall back to global; null clears', async () => {
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file: '/tmp/never-written.json' } });
    const u = s.httpUrl;
    let r: { status: number; json: any } = await postJson(`${u}/v2/models/simple/trace/setting`, { trace_rate: '5' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ trace_level: ['OFF'], trace_rate: '5', trace_count: '-1', trace_file: '/tmp/never-written.json' });
    r = await postJson(`${u}/v2/trace/setting`, { trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '2' });
    expect(r.json).toMatchObject({ trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '2' });
    // The model keeps its own rate and follows the global level.
    r = await getJson(`${u}/v2/models/simple/trace/setting`);
    expect(r.json).toMatchObject({ trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: '5' });
    r = await postJson(`${u}/v2/models/simple/trace/setting`, { trace_rate: null });
    expect(r.json.trace_rate).toBe('2');
    r = await postJson(`${u}/v2/trace/setting`, { trace_level: ['OFF'] });
    expect(r.json.trace_level).toEqual(['OFF']);
  });

  // Triton tracer.cc UpdateTraceSettingInternal: a global field's fallback is the start-up setting
  // (global_default_), a model's is the global one; fields not named keep their values.
  it('clearing a global setting restores its start-up value, a model one falls back to the global one (HTTP and gRPC)', async () => {
    const startup = { trace_level: ['TIMESTAMPS'], trace_rate: '7', trace_count: '3', log_frequency: '2' };
    const s = await serve(repository(), { loadModels: ['simple'], grpcPort: 0, trace: { level: ['TIMESTAMPS'], rate: 7, count: 3, logFrequency: 2 } });
    const u = s.httpUrl;
    const changed = { trace_level: ['OFF'], trace_rate: '50', trace_count: '9', log_frequency: '4' };
    expect((await postJson(`${u}/v2/trace/setting`, changed)).json).toMatchObject(changed);
    const cleared = await postJson(`${u}/v2/trace/setting`, { trace_level: null, trace_rate: null, trace_count: null, log_frequency: null });
    expect(cleared.status).toBe(200);
    expect(cleared.json).toMatchObject(startup);
    // a model's cleared field follows the global value of now, not the start-up one
    expect((await postJson(`${u}/v2/trace/setting`, { trace_rate: '50' })).json.trace_rate).toBe('50');
    expect((await postJson(`${u}/v2/models/simple/trace/setting`, { trace_rate: '5', trace_count: '1' })).json).toMatchObject({
      trace_rate: '5',
      trace_count: '1',
    });
    // an empty body changes nothing
    expect((await postJson(`${u}/v2/models/simple/trace/setting`, {})).json).toMatchObject({ trace_rate: '5', trace_count: '1' });
    expect((await postJson(`${u}/v2/models/simple/trace/setting`, { trace_rate: null })).json).toMatchObject({ trace_rate: '50', trace_count: '1' });

    // gRPC: an empty value list clears
    const client = tritonGrpcClient(s.grpcUrl!);
    try {
      const value = (r: any, k: string) => r.res.settings[k].value;
      expect(
        value(await unaryCall(client, 'TraceSetting', { settings: { trace_rate: { value: ['60'] }, log_frequency: { value: ['8'] } } }), 'trace_rate'),
      ).toEqual(['60']);
      const g = await unaryCall(client, 'TraceSetting', { settings: { trace_rate: { value: [] }, log_frequency: { value: [] } } });
      expect([value(g, 'trace_rate'), value(g, 'log_frequency')]).toEqual([['7'], ['2']]);
      const m = await unaryCall(client, 'TraceSetting', { model_name: 'simple', settings: { trace_count: { value: [] } } });
      expect([value(m, 'trace_rate'), value(m, 'trace_count')]).toEqual([['7'], ['3']]);
    } finally {
      client.close();
    }
  });

  it("answers Triton's errors", async () => {
    const s = await serve(repository(), { loadModels: ['simple'] });
    const u = s.httpUrl;
    const cases: [unknown, number, RegExp][] = [
      [{ trace_file: 'x.json' }, 501, /^trace file location can not be updated through network protocol$/],
      [{ trace_level: ['OFF', 'TIMESTAMPS'] }, 400, /^Expect only one trace level 'OFF' is specified$/],
      [{ trace_rate: 'abc' }, 400, /^Unable to parse 'trace_rate', got: abc$/],
      [{ trace_count: '-2' }, 400, /^Unable to parse 'trace_count'. Expecting value >= -1, got:-2$/],
      [{ log_frequency: '99999999999' }, 400, /^Unable to parse 'log_frequency', value is out of range \[ 0, 4294967295 \], got: 99999999999$/],
    ];
    for (const [body, status, msg] of cases) {
      const r = await postJson(`${u}/v2/trace/setting`, body);
      expect([r.status, r.json.error]).toEqual([status, expect.stringMatching(msg)]);
    }
    const unknown = await getJson(`${u}/v2/models/nope/trace/setting`);
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toBe('Request for unknown model : nope');
    expect((await fetch(`${u}/v2/trace/setting`, { method: 'PUT' })).status).toBe(405);
  });
});

describe('trace output', () => {
  it("writes sampled requests' timestamps to trace_file in Triton's JSON format at shutdown", async () => {
    const file = join(tempDir(), 'trace.json');
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file, level: ['TIMESTAMPS'], rate: 2, count: -1 } });
    for (let i = 0; i < 4; i++) expect((await infer(s.httpUrl)).status).toBe(200);
    await s.stop();
    const entries = JSON.parse(readFileSync(file, 'utf8')) as any[];
    // rate 2: every second request, two entries per trace
    expect(entries).toHaveLength(4);
    const heads = entries.filter((e) => e.model_name !== undefined);
    expect(heads).toEqual([
      { id: 1, model_name: 'simple', model_version: 1 },
      { id: 2, model_name: 'simple', model_version: 1 },
    ]);
    for (const t of entries.filter((e) => e.timestamps !== undefined)) {
      const names = t.timestamps.map((x: any) => x.name);
      expect(names).toEqual(['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END']);
      const ns = t.timestamps.map((x: any) => BigInt(x.ns));
      // start → queue → compute phases in order; the final response goes out after compute output started
      for (let i = 1; i < 6; i++) expect(ns[i] >= ns[i - 1]).toBe(true);
      expect(ns[6] >= ns[4]).toBe(true);
    }
  });

  it('honours trace_count and log_frequency (files trace_file.<n>)', async () => {
    const file = join(tempDir(), 't.json');
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file, level: ['TIMESTAMPS'], rate: 1, count: 3, logFrequency: 2 } });
    for (let i = 0; i < 5; i++) expect((await infer(s.httpUrl)).status).toBe(200);
    // Written as the second trace completes (a turn of the event loop after its response).
    await until(() => existsSync(`${file}.0`), { within: 1000, every: 10, what: 'trace_file.0' });
    expect(JSON.parse(readFileSync(`${file}.0`, 'utf8'))).toHaveLength(4);
    expect((await getJson(`${s.httpUrl}/v2/trace/setting`)).json.trace_count).toBe('0');
    await s.stop();
    expect(JSON.parse(readFileSync(`${file}.1`, 'utf8'))).toHaveLength(2);
    expect(existsSync(`${file}.2`)).toBe(false);
  });

  it('traces nothing while the level is OFF', async () => {
    const file = join(tempDir(), 'off.json');
    const s = await serve(repository(), { loadModels: ['simple'], trace: { file, rate: 1 } });
    expect((await infer(s.httpUrl)).status).toBe(200);
    await s.stop();
    expect(existsSync(file)).toBe(false);
  });
});

/** The two-input INT32 [1,16] body of `simple`-shaped models (bls_wasm, bls_python). */
const pairBody = () => ({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(3) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array(16).fill(1) },
  ],
});
/** add_sub_ensemble's FP32 [16] body. */
const ensembleBody = () => ({
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [16], data: Array(16).fill(3) },
    { name: 'INPUT1', datatype: 'FP32', shape: [16], data: Array(16).fill(1) },
  ],
});

/** The trace file's heads (`{"id","model_name",...}` entries) and each id's timestamp names. */
function traceFile(file: string): { heads: any[]; stamps: Map<number, string[]> } {
  const entries = JSON.parse(readFileSync(file, 'utf8')) as any[];
  const stamps = new Map<number, string[]>();
  for (const e of entries.filter((x) => x.timestamps !== undefined))
    stamps.set(
      e.id,
      e.timestamps.map((t: any) => t.name),
    );
  return { heads: entries.filter((x) => x.model_name !== undefined), stamps };
}

const ALL_STAMPS = ['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END'];

const pythonSkip = await pythonEnvironment();

/** A temporary repository holding copies of the default repository's (model_repository/) `models`. */
function defaultModels(...models: string[]): TempRepo {
  const repo = repository([]);
  for (const m of models) cpSync(join(PROJECT_ROOT, 'model_repository', m), join(repo.path, m), { recursive: true });
  return repo;
}

describe('traces of nested requests (Triton mode: parent_id)', () => {
  // count 1: the caller takes the only sampled trace; its nested requests are traced as its children anyway.
  const traced = { level: ['TIMESTAMPS'] as ['TIMESTAMPS'], rate: 1, count: 1 };

  it('an ensemble request and its steps: each step trace carries the ensemble trace id as parent_id', async () => {
    const file = join(tempDir(), 'ensemble.json');
    const s = await serve(defaultModels('add_sub_wasm', 'addsub_onnx', 'add_sub_ensemble'), {
      loadModels: ['add_sub_wasm', 'addsub_onnx', 'add_sub_ensemble'],
      trace: { file, ...traced },
    });
    const r = await postJson(`${s.httpUrl}/v2/models/add_sub_ensemble/infer`, { id: 'e1', ...ensembleBody() });
    expect(r.status, r.text).toBe(200);
    // count spent: a later request, and its steps, are not traced
    expect((await postJson(`${s.httpUrl}/v2/models/add_sub_ensemble/infer`, ensembleBody())).status).toBe(200);
    await s.stop();
    const { heads, stamps } = traceFile(file);
    const top = heads.find((h) => h.model_name === 'add_sub_ensemble');
    expect(top).toEqual({ id: 1, model_name: 'add_sub_ensemble', model_version: 1, request_id: 'e1' });
    const steps = heads.filter((h) => h.model_name !== 'add_sub_ensemble').sort((a, b) => a.id - b.id);
    expect(steps).toEqual([
      { id: 2, model_name: 'add_sub_wasm', model_version: 1, request_id: 'e1', parent_id: 1 },
      { id: 3, model_name: 'addsub_onnx', model_version: 1, request_id: 'e1', parent_id: 1 },
    ]);
    for (const h of steps) expect(stamps.get(h.id)).toEqual(ALL_STAMPS);
  });

  it("only a trace of the same manager is a parent: a look-alike or another server's trace is sampled as any request's", () => {
    const tracer = new TraceManager({ level: ['TIMESTAMPS'], rate: 3, count: -1 });
    const other = new TraceManager({ level: ['TIMESTAMPS'], rate: 1, count: -1 });
    const foreign = other.sample('m', 1, '')!;
    expect(foreign).toBeDefined();
    // rate 3: the 1st and 2nd requests of the scope are not sampled, the 3rd is
    expect(tracer.sample('m', 1, '', undefined, { id: 1 })).toBeUndefined();
    expect(tracer.sample('m', 1, '', undefined, foreign)).toBeUndefined();
    const parent = tracer.sample('m', 1, '')!;
    expect(parent.parentTrace).toBeUndefined();
    // a child of a trace of its own: traced whatever the rate, with the parent's id
    const child = tracer.sample('n', 1, 'r', undefined, parent)!;
    expect(child.parentTrace).toBe(parent);
    expect(JSON.parse(`[${child.toJson()}]`)[0]).toEqual({ id: parent.id + 1, model_name: 'n', model_version: 1, request_id: 'r', parent_id: parent.id });
    // and the rate's count is untouched: the next two requests are not sampled, the third is
    expect([tracer.sample('m', 1, ''), tracer.sample('m', 1, ''), tracer.sample('m', 1, '')].map((t) => t !== undefined)).toEqual([false, false, true]);
  });

  it("a sandboxed model's BLS call (bls_wasm calls simple) is traced as the caller's child", async () => {
    const file = join(tempDir(), 'bls.json');
    const s = await serve(defaultModels('simple', 'bls_wasm'), { loadModels: ['simple', 'bls_wasm'], trace: { file, ...traced } });
    const r = await postJson(`${s.httpUrl}/v2/models/bls_wasm/infer`, pairBody());
    expect(r.status, r.text).toBe(200);
    await s.stop();
    const { heads, stamps } = traceFile(file);
    expect(heads.sort((a, b) => a.id - b.id)).toEqual([
      { id: 1, model_name: 'bls_wasm', model_version: 1 },
      { id: 2, model_name: 'simple', model_version: 1, parent_id: 1 },
    ]);
    expect(stamps.get(2)).toEqual(ALL_STAMPS);
  });

  it("an untraced request's BLS call is sampled as any request, with no parent_id", async () => {
    const file = join(tempDir(), 'untraced.json');
    // only simple traces (a model setting): bls_wasm's request is not traced, its call to simple is, on its own
    const s = await serve(defaultModels('simple', 'bls_wasm'), { loadModels: ['simple', 'bls_wasm'], trace: { file, rate: 1, count: -1 } });
    expect((await postJson(`${s.httpUrl}/v2/models/simple/trace/setting`, { trace_level: ['TIMESTAMPS'] })).status).toBe(200);
    expect((await postJson(`${s.httpUrl}/v2/models/bls_wasm/infer`, pairBody())).status).toBe(200);
    await s.stop();
    expect(traceFile(file).heads).toEqual([{ id: 1, model_name: 'simple', model_version: 1 }]);
  });

  it.skipIf(pythonSkip !== undefined)("a Python model's BLS call (bls_python calls simple) is traced as the caller's child", async () => {
    const file = join(tempDir(), 'bls-python.json');
    const repo = defaultModels('simple', 'bls_python');
    const s = await serve(repo, { loadModels: ['simple', 'bls_python'], cacheDir: join(repo.path, '.cache'), trace: { file, ...traced } });
    const r = await postJson(`${s.httpUrl}/v2/models/bls_python/infer`, pairBody());
    expect(r.status, r.text).toBe(200);
    await s.stop();
    const { heads } = traceFile(file);
    expect(heads.sort((a, b) => a.id - b.id)).toEqual([
      { id: 1, model_name: 'bls_python', model_version: 1 },
      { id: 2, model_name: 'simple', model_version: 1, parent_id: 1 },
    ]);
  });
});

/** A local OTLP/HTTP collector stub: records every JSON export request posted to /v1/traces. */
async function otlpCollector(): Promise<{ url: string; exports: any[]; paths: string[] }> {
  const exports: any[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      exports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  defer(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  return { url: `127.0.0.1:${port}/v1/traces`, exports, paths };
}

describe('OpenTelemetry trace mode (--trace-config mode=opentelemetry)', () => {
  it("exports Triton's span tree (InferRequest > model > compute) with the timestamps as events, over OTLP/HTTP", async () => {
    const collector = await otlpCollector();
    const s = await serve(repository(), {
      loadModels: ['simple'],
      trace: {
        mode: 'opentelemetry',
        level: ['TIMESTAMPS'],
        rate: 1,
        count: 2,
        opentelemetry: { url: collector.url, resource: { 'deployment.environment': 'test' }, bspScheduleDelayMs: 50 },
      },
    });
    expect((await getJson(`${s.httpUrl}/v2/trace/setting`)).json.trace_mode).toBe('opentelemetry');
    for (let i = 0; i < 3; i++) expect((await infer(s.httpUrl)).status).toBe(200);
    await s.stop(); // sends what is still queued
    expect(collector.paths.every((p) => p === 'POST /v1/traces application/json')).toBe(true);
    const resourceSpans = collector.exports.flatMap((e) => e.resourceSpans);
    const attrs = (list: any[]) => Object.fromEntries(list.map((a: any) => [a.key, Object.values(a.value)[0]]));
    for (const rs of resourceSpans) {
      expect(attrs(rs.resource.attributes)).toMatchObject({ 'service.name': 'triton-inference-server', 'deployment.environment': 'test' });
    }
    const spans = resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans));
    // count 2: two traced requests, three spans each
    expect(spans.map((x: any) => x.name).sort()).toEqual(['InferRequest', 'InferRequest', 'compute', 'compute', 'simple', 'simple']);
    for (const top of spans.filter((x: any) => x.name === 'InferRequest')) {
      const model = spans.find((x: any) => x.name === 'simple' && x.parentSpanId === top.spanId);
      expect(model, 'the model span is a child of the top-level span').toBeDefined();
      expect(model.traceId).toBe(top.traceId);
      const a = attrs(model.attributes);
      expect([a.model_name, Number(a.model_version), a.request_id]).toEqual(['simple', 1, '']);
      expect(Number(a.trace_id)).toBeGreaterThan(0);
      expect(model.events.map((e: any) => e.name)).toEqual(['REQUEST_START', 'QUEUE_START', 'REQUEST_END']);
      const compute = spans.find((x: any) => x.name === 'compute' && x.parentSpanId === model.spanId);
      expect(compute, 'the compute span is a child of the model span').toBeDefined();
      expect(compute.events.map((e: any) => e.name)).toEqual(['COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END']);
      // Wall-clock ns; the request span encloses the compute span; events lie within their span.
      const ns = (v: string) => BigInt(v);
      expect(ns(model.startTimeUnixNano) <= ns(compute.startTimeUnixNano)).toBe(true);
      expect(ns(compute.endTimeUnixNano) <= ns(model.endTimeUnixNano)).toBe(true);
      for (const e of compute.events)
        expect(ns(e.timeUnixNano) >= ns(compute.startTimeUnixNano) && ns(e.timeUnixNano) <= ns(compute.endTimeUnixNano)).toBe(true);
      const wallMs = Number(ns(top.startTimeUnixNano) / 1_000_000n);
      expect(Math.abs(wallMs - Date.now())).toBeLessThan(60_000);
    }
  });

  it("continues a client's W3C trace context (HTTP header, gRPC metadata, through a front-end thread) whatever the rate; a malformed one is no trace", async () => {
    const collector = await otlpCollector();
    // rate 0, as Triton's guide suggests to trace only requests that carry a context
    const s = await serve(repository(), {
      loadModels: ['simple'],
      grpcPort: 0,
      // every HTTP connection lands on the front-end thread, which hands a traced request to the main thread whole
      httpThreads: 1,
      httpMainListener: false,
      trace: { mode: 'opentelemetry', level: ['TIMESTAMPS'], rate: 0, count: -1, opentelemetry: { url: collector.url, bspScheduleDelayMs: 50 } },
    });
    // no accept-encoding other than identity: a plain request the thread would claim for its ring
    const ctx = (trace: string, span: string) => ({ traceparent: `00-${trace}-${span}-01`, tracestate: 'vendor=x', 'accept-encoding': 'identity' });
    const HTTP = ['4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7'] as const;
    const GRPC = ['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331'] as const;
    const GENERATE = ['5bf92f3577b34da6a3ce929d0e0e4737', '10f067aa0ba902b8'] as const;
    for (let i = 0; i < 4; i++)
      expect((await postJson(`${s.httpUrl}/v2/models/simple/infer`, simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)), ctx(...HTTP))).status).toBe(
        200,
      );
    expect((await infer(s.httpUrl)).status).toBe(200); // no context: rate 0, no trace
    const gen = await postJson(`${s.httpUrl}/v2/models/simple/generate`, { INPUT0: Array(16).fill(1), INPUT1: Array(16).fill(2) }, ctx(...GENERATE));
    expect(gen.status, gen.text).toBe(200);
    for (const bad of ['00-00000000000000000000000000000000-00f067aa0ba902b7-01', 'garbage', `00-${HTTP[0]}-${HTTP[1]}-01`.padEnd(300, 'x')]) {
      expect(
        (await postJson(`${s.httpUrl}/v2/models/simple/infer`, simpleRequest('INT32', Array(16).fill(1), Array(16).fill(2)), { traceparent: bad })).status,
      ).toBe(200);
    }
    const client = tritonGrpcClient(s.grpcUrl!);
    try {
      const r = await unaryCall(client, 'ModelInfer', grpcSimple(), undefined, ctx(...GRPC));
      expect(r.err).toBeUndefined();
    } finally {
      client.close();
    }
    await s.stop();
    const spans = collector.exports.flatMap((e) => e.resourceSpans).flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans));
    const tops = spans.filter((x: any) => x.name === 'InferRequest');
    // the 4 /infer requests, the /generate one and the gRPC one: each the child of the client's span, in its trace
    expect(tops.map((t: any) => [t.traceId, t.parentSpanId]).sort()).toEqual(
      [...Array(4).fill([HTTP[0], HTTP[1]]), [GENERATE[0], GENERATE[1]], [GRPC[0], GRPC[1]]].sort(),
    );
    for (const top of tops) {
      const model = spans.find((x: any) => x.name === 'simple' && x.parentSpanId === top.spanId);
      expect(model?.traceId).toBe(top.traceId);
      expect(top.traceState).toBe('vendor=x');
    }
  });

  it("a traced request's nested requests (ensemble steps, a sandboxed BLS call) have their model spans under the caller's, in its trace, whatever the rate", async () => {
    const collector = await otlpCollector();
    // rate 0: only requests with a client context are sampled; their nested requests are traced as their children
    const s = await serve(defaultModels('simple', 'bls_wasm', 'add_sub_wasm', 'addsub_onnx', 'add_sub_ensemble'), {
      loadModels: ['simple', 'bls_wasm', 'add_sub_wasm', 'addsub_onnx', 'add_sub_ensemble'],
      trace: { mode: 'opentelemetry', level: ['TIMESTAMPS'], rate: 0, count: -1, opentelemetry: { url: collector.url, bspScheduleDelayMs: 50 } },
    });
    const CLIENT = ['6bf92f3577b34da6a3ce929d0e0e4738', '20f067aa0ba902b9'] as const;
    const header = { traceparent: `00-${CLIENT[0]}-${CLIENT[1]}-01` };
    expect((await postJson(`${s.httpUrl}/v2/models/add_sub_ensemble/infer`, ensembleBody(), header)).status).toBe(200);
    expect(
      (await postJson(`${s.httpUrl}/v2/models/bls_wasm/infer`, pairBody(), { traceparent: `00-${CLIENT[0].replace('6', '7')}-${CLIENT[1]}-01` })).status,
    ).toBe(200);
    expect((await postJson(`${s.httpUrl}/v2/models/bls_wasm/infer`, pairBody())).status).toBe(200); // no context: nothing traced
    await s.stop();
    const spans = collector.exports.flatMap((e) => e.resourceSpans).flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans));
    const attrs = (x: any) => Object.fromEntries(x.attributes.map((a: any) => [a.key, Object.values(a.value)[0]]));
    const named = (name: string) => spans.filter((x: any) => x.name === name);
    // one InferRequest per client request; nested requests have none of their own
    expect(
      named('InferRequest')
        .map((t: any) => [t.traceId, t.parentSpanId])
        .sort(),
    ).toEqual(
      [
        [CLIENT[0], CLIENT[1]],
        [CLIENT[0].replace('6', '7'), CLIENT[1]],
      ].sort(),
    );
    const [ensemble] = named('add_sub_ensemble');
    const [caller] = named('bls_wasm');
    expect(named('add_sub_ensemble')).toHaveLength(1);
    expect(named('bls_wasm')).toHaveLength(1);
    for (const [child, parent] of [
      [named('add_sub_wasm'), ensemble],
      [named('addsub_onnx'), ensemble],
      [named('simple'), caller],
    ]) {
      expect(child).toHaveLength(1);
      expect(child[0].traceId).toBe(parent.traceId);
      expect(child[0].parentSpanId, `${child[0].name} under ${parent.name}`).toBe(parent.spanId);
      expect(Number(attrs(child[0]).trace_parent_id)).toBe(Number(attrs(parent).trace_id));
      // its compute span under its own model span
      expect(spans.find((x: any) => x.name === 'compute' && x.parentSpanId === child[0].spanId)).toBeDefined();
    }
    expect(ensemble.traceId).toBe(CLIENT[0]);
    expect(Number(attrs(ensemble).trace_parent_id)).toBe(0);
  });

  it('an unreachable collector costs nothing but the spans: requests succeed and shutdown stays bounded', async () => {
    const s = await serve(repository(), {
      loadModels: ['simple'],
      // Port 9 (discard) on loopback refuses connections.
      trace: { mode: 'opentelemetry', level: ['TIMESTAMPS'], rate: 1, opentelemetry: { url: 'http://127.0.0.1:9/v1/traces', bspScheduleDelayMs: 10 } },
    });
    for (let i = 0; i < 3; i++) expect((await infer(s.httpUrl)).status).toBe(200);
    await sleep(100); // an export attempt fails in the background
    expect((await infer(s.httpUrl)).status).toBe(200);
    const t0 = Date.now();
    await s.stop();
    expect(Date.now() - t0).toBeLessThan(8_000);
  });

  it("the CLI takes Triton's opentelemetry settings; unknown ones are warned about", () => {
    const r = parseCli([
      '--model-repository=/m',
      '--trace-config=mode=opentelemetry',
      '--trace-config=opentelemetry,url=collector:4318/v1/traces',
      '--trace-config=opentelemetry,resource=service.name=warden',
      '--trace-config=opentelemetry,resource=a=b=c',
      '--trace-config=opentelemetry,bsp_max_queue_size=10',
      '--trace-config=opentelemetry,bsp_schedule_delay=0',
      '--trace-config=opentelemetry,bsp_max_export_batch_size=5',
      '--trace-config=opentelemetry,colour=blue',
    ]);
    expect(r.trace).toMatchObject({
      mode: 'opentelemetry',
      opentelemetry: {
        url: 'collector:4318/v1/traces',
        resource: { 'service.name': 'warden', a: 'b=c' },
        bspMaxQueueSize: 10,
        bspScheduleDelayMs: 0,
        bspMaxExportBatchSize: 5,
      },
    });
    expect(r.notes.ignoredFlags).toEqual(['--trace-config=opentelemetry,colour=blue']);
    expect(() => parseCli(['--model-repository=/m', '--trace-config=opentelemetry,bsp_max_queue_size=-1'])).toThrow(/expects an integer >= 1/);
    expect(() => parseCli(['--model-repository=/m', '--trace-config=opentelemetry,resource=novalue'])).toThrow(/expects <key>=<value>/);
    expect(otlpUrl('collector:4318/v1/traces')).toBe('http://collector:4318/v1/traces');
    expect(otlpUrl(undefined)).toBe('http://localhost:4318/v1/traces');
  });
});
