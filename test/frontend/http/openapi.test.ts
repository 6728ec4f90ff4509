/**
 * The OpenAPI description of the HTTP API (host/src/frontend/http/openapi/, served at
 * `GET /v2/openapi.json`, docs/architecture.md "The HTTP frontend") against the server's real answers: every documented
 * operation is called for a success and for an error answer, and each answer's status, media type
 * and body are checked against the document with Ajv (JSON Schema 2020-12, OpenAPI 3.1's
 * dialect). The test fails when an answer does not match, when a documented operation or status is
 * never seen, and when a route is registered without a description (the server does not start).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRoutes, openapiDocument } from '../../../host/src/frontend/http/openapi/document.js';
import { route } from '../../../host/src/frontend/http/routing.js';
import { restrictRoutes } from '../../../host/src/frontend/http/restricted.js';
import type { RunningServer } from '../../../host/src/server.js';
import { pythonEnvironment } from '../../backends/python/helpers.js';
import { toyRepo } from '../openai/helpers.js';
import { simpleRequest, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { startTestServer } from '../../helpers/servers.js';

const SHM = `/dev/shm/warden_openapi_${process.pid}`;
const KEY = { header: 'x-openapi-test', value: 'yes' };
const GROUPS = ['health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace', 'logging'] as const;
const pythonSkip = await pythonEnvironment();
const A = Array.from({ length: 16 }, (_, i) => i);

/** A JSON pointer segment inside a URI fragment. */
const segment = (s: string) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'));

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>> };

/** Checks answers against `doc` and records which operation answered which status. */
class Conformance {
  readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  /** `<method> <path>` → statuses seen. */
  readonly seen = new Map<string, Set<number>>();

  constructor(readonly doc: Doc) {
    this.ajv.addSchema(doc, 'openapi.json');
  }

  /** Call `method` `path` (the document's template, `{name}`s filled from `params`) on `base`; check and return the answer. */
  async call(base: string, method: 'get' | 'post', path: string, params: Record<string, string> = {}, init: RequestInit = {}) {
    const url = path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k]!));
    const res = await fetch(base + url, { method: method.toUpperCase(), ...init });
    const body = Buffer.from(await res.arrayBuffer());
    const op = this.doc.paths[path]?.[method];
    expect(op, `${method} ${path} is documented`).toBeDefined();
    const key = Object.hasOwn(op!.responses, String(res.status)) ? String(res.status) : 'default';
    const doc = op!.responses[key];
    expect(doc, `${method} ${path} documents status ${res.status}`).toBeDefined();
    const type = res.headers.get('content-type')?.split(';', 1)[0];
    if (body.length === 0) expect(doc!.content, `${method} ${path} ${res.status}: an empty body is documented`).toBeUndefined();
    else {
      expect(Object.keys(doc!.content ?? {}), `${method} ${path} ${res.status} documents ${type}`).toContain(type);
      if (type === 'application/json') {
        const pointer = ['paths', path, method, 'responses', key, 'content', 'application/json', 'schema'].map(segment).join('/');
        const validate = this.ajv.getSchema(`openapi.json#/${pointer}`)!;
        const json = JSON.parse(body.toString());
        expect(validate(json) ? [] : validate.errors, `${method} ${path} ${res.status}: ${body.toString().slice(0, 300)}`).toEqual([]);
      }
    }
    const ops = this.seen.get(`${method} ${path}`) ?? new Set();
    ops.add(res.status);
    this.seen.set(`${method} ${path}`, ops);
    return { status: res.status, body, type };
  }
}

describe('the OpenAPI description against the server', () => {
  let repo: TempRepo;
  let broken: TempRepo;
  let server: RunningServer;
  let restricted: RunningServer;
  let c: Conformance;
  beforeAll(async () => {
    repo = toyRepo({ extra: ['simple'] });
    if (pythonSkip) repo.remove('toy_llm');
    writeFileSync(SHM, Buffer.alloc(128));
    server = await startTestServer(repo, { loadModels: ['*'], allowClientShm: true, cacheDir: `${repo.path}/.cache` });
    // Every group restricted (403 without the header), and not ready (a model that fails to load).
    broken = tempRepo(['simple']);
    broken.addModel('broken', 'backend: "no_such_backend"');
    restricted = await startTestServer(broken, {
      loadModels: ['*'],
      httpRestrictedApis: Object.fromEntries(GROUPS.map((g) => [g, KEY])),
    });
    const res = await fetch(`${server.httpUrl}/v2/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    c = new Conformance((await res.json()) as Doc);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await restricted?.stop();
    repo?.cleanup();
    broken?.cleanup();
    rmSync(SHM, { force: true });
  });

  const json = (body: unknown): RequestInit => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const models = [
    ['/v2/models/{model}', { model: 'simple' }],
    ['/v2/models/{model}/versions/{version}', { model: 'simple', version: '1' }],
  ] as const;

  it('answers every Triton route as documented, success and error', async () => {
    const s = server.httpUrl;
    await c.call(s, 'get', '/v2/health/live');
    await c.call(s, 'get', '/v2/health/ready');
    await c.call(s, 'get', '/v2');
    await c.call(s, 'get', '/v2/openapi.json');
    await c.call(s, 'get', '/v2/models/stats');
    await c.call(s, 'get', '/v2/logging');
    await c.call(s, 'post', '/v2/logging', {}, json({ log_verbose_level: 0 }));
    expect((await c.call(s, 'post', '/v2/logging', {}, json({ log_file: 'x' }))).status).toBe(501);
    await c.call(s, 'get', '/v2/trace/setting');
    await c.call(s, 'post', '/v2/trace/setting', {}, json({ trace_rate: '1000' }));
    for (const [base, params] of models) {
      const missing = { ...params, model: 'nope' };
      for (const suffix of ['', '/config', '/stats', '/log']) {
        expect((await c.call(s, 'get', base + suffix, params)).status).toBe(200);
        expect((await c.call(s, 'get', base + suffix, missing)).status).toBeGreaterThanOrEqual(400);
      }
      await c.call(s, 'get', `${base}/ready`, params);
      expect((await c.call(s, 'get', `${base}/ready`, missing)).status).toBe(400);
      const infer = simpleRequest('INT32', A, A);
      expect((await c.call(s, 'post', `${base}/infer`, params, json(infer))).type).toBe('application/json');
      const binary = { ...infer, outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }] };
      expect((await c.call(s, 'post', `${base}/infer`, params, json(binary))).type).toBe('application/octet-stream');
      expect((await c.call(s, 'post', `${base}/infer`, params, json({ inputs: 1 }))).status).toBeGreaterThanOrEqual(400);
      expect((await c.call(s, 'post', `${base}/infer`, missing, json(infer))).status).toBe(404);
      const generate = { INPUT0: A, INPUT1: A };
      expect((await c.call(s, 'post', `${base}/generate`, params, json(generate))).status).toBe(200);
      expect((await c.call(s, 'post', `${base}/generate`, missing, json(generate))).status).toBe(404);
      expect((await c.call(s, 'post', `${base}/generate_stream`, params, json(generate))).type).toBe('text/event-stream');
      expect((await c.call(s, 'post', `${base}/generate_stream`, missing, json(generate))).status).toBe(404);
    }
    // After the inferences above, a version's statistics carry Warden's latency percentiles (validated against the schema by call).
    const stats = JSON.parse((await c.call(s, 'get', '/v2/models/{model}/versions/{version}/stats', { model: 'simple', version: '1' })).body.toString());
    expect(stats.model_stats[0].latency_percentiles_us.request.count).toBeGreaterThanOrEqual(2);
    await c.call(s, 'get', '/v2/models/{model}/trace/setting', { model: 'simple' });
    expect((await c.call(s, 'get', '/v2/models/{model}/trace/setting', { model: 'nope' })).status).toBe(400);
    await c.call(s, 'post', '/v2/models/{model}/trace/setting', { model: 'simple' }, json({ trace_rate: null }));
    await c.call(s, 'get', '/v2/models/{model}/versions/{version}/trace/setting', { model: 'simple', version: '1' });
    await c.call(s, 'post', '/v2/models/{model}/versions/{version}/trace/setting', { model: 'simple', version: '1' }, json({ trace_count: '-1' }));

    await c.call(s, 'post', '/v2/repository/index', {}, json({ ready: true }));
    expect((await c.call(s, 'post', '/v2/repository/index', {}, json({ ready: 1 }))).status).toBe(400);
    expect((await c.call(s, 'post', '/v2/repository/models/{model}/load', { model: 'simple' })).status).toBe(200);
    expect((await c.call(s, 'post', '/v2/repository/models/{model}/load', { model: 'nope' })).status).toBeGreaterThanOrEqual(400);
    await c.call(s, 'post', '/v2/repository/models/{model}/unload', { model: 'nope' });
    expect((await c.call(s, 'post', '/v2/repository/models/{model}/unload', { model: 'nope' }, json({ parameters: { unload_dependents: 1 } }))).status).toBe(
      400,
    );
    for (const path of ['/v2/repository/{repo}/index', '/v2/repository/{repo}/models/{model}/load', '/v2/repository/{repo}/models/{model}/unload'])
      expect((await c.call(s, 'post', path, { repo: 'r', model: 'simple' })).status).toBe(501);

    const region = { region: 'r0' };
    const sys = '/v2/systemsharedmemory';
    expect((await c.call(s, 'post', `${sys}/region/{region}/register`, region, json({ key: SHM.slice('/dev/shm'.length), byte_size: 64 }))).status).toBe(200);
    expect((await c.call(s, 'post', `${sys}/region/{region}/register`, region, json({ key: 1 }))).status).toBe(400);
    await c.call(s, 'get', `${sys}/status`);
    await c.call(s, 'get', `${sys}/region/{region}/status`, region);
    await c.call(s, 'post', `${sys}/region/{region}/unregister`, region);
    expect((await c.call(s, 'get', `${sys}/region/{region}/status`, region)).status).toBe(404);
    await c.call(s, 'post', `${sys}/unregister`);
    const cuda = '/v2/cudasharedmemory';
    await c.call(s, 'get', `${cuda}/status`);
    expect((await c.call(s, 'get', `${cuda}/region/{region}/status`, region)).status).toBe(404);
    await c.call(s, 'post', `${cuda}/register`);
    await c.call(s, 'post', `${cuda}/region/{region}/register`, region, json({ byte_size: 4 }));
    await c.call(s, 'post', `${cuda}/unregister`);
    await c.call(s, 'post', `${cuda}/region/{region}/unregister`, region);

    // The OpenAI-compatible API (toy_llm needs the Python backend's environment).
    await c.call(s, 'get', '/v1/models');
    expect((await c.call(s, 'get', '/v1/models/{model}', { model: 'nope' })).status).toBe(404);
    expect((await c.call(s, 'post', '/v1/completions', {}, json({ model: 'simple', prompt: 'a' }))).status).toBe(400);
    expect((await c.call(s, 'post', '/v1/chat/completions', {}, json({ model: 'nope', messages: [] }))).status).toBeGreaterThanOrEqual(400);
    if (!pythonSkip) {
      await c.call(s, 'get', '/v1/models/{model}', { model: 'toy_llm' });
      const messages = [{ role: 'user', content: 'hi there' }];
      for (const stream of [false, true]) {
        expect((await c.call(s, 'post', '/v1/completions', {}, json({ model: 'toy_llm', prompt: 'hi there', max_tokens: 3, stream }))).status).toBe(200);
        expect((await c.call(s, 'post', '/v1/chat/completions', {}, json({ model: 'toy_llm', messages, max_tokens: 3, stream }))).status).toBe(200);
      }
      // With log probabilities (the answers' `logprobs` objects).
      expect((await c.call(s, 'post', '/v1/completions', {}, json({ model: 'toy_llm', prompt: 'hi there', max_tokens: 3, logprobs: 2 }))).status).toBe(200);
      const chat = { model: 'toy_llm', messages, max_tokens: 3, logprobs: true, top_logprobs: 2 };
      expect((await c.call(s, 'post', '/v1/chat/completions', {}, json(chat))).status).toBe(200);
    }
  });

  it('answers every route of a restricted group 403 as documented, and 400 while not ready', async () => {
    const r = restricted.httpUrl;
    for (const [path, item] of Object.entries(c.doc.paths))
      for (const method of Object.keys(item) as ('get' | 'post')[]) {
        const params = { model: 'simple', version: '1', region: 'r0', repo: 'r' };
        expect((await c.call(r, method, path, params)).status, `${method} ${path}`).toBe(403);
      }
    const headers = { [KEY.header]: KEY.value };
    expect((await c.call(r, 'get', '/v2/health/ready', {}, { headers })).status).toBe(400);
  });

  it('is an OpenAPI 3.1 document whose every schema compiles (every $ref resolves)', () => {
    const doc = c.doc as Doc & { openapi: string; components: { schemas: Record<string, unknown> } };
    expect(doc.openapi).toBe('3.1.0');
    for (const name of Object.keys(doc.components.schemas))
      expect(c.ajv.getSchema(`openapi.json#/components/schemas/${segment(name)}`), name).toBeTypeOf('function');
    for (const [path, item] of Object.entries(c.doc.paths))
      for (const [method, op] of Object.entries(item as Record<string, { requestBody?: { content: Record<string, unknown> } }>))
        for (const type of Object.keys(op.requestBody?.content ?? {})) {
          const pointer = ['paths', path, method, 'requestBody', 'content', type, 'schema'].map(segment).join('/');
          expect(c.ajv.getSchema(`openapi.json#/${pointer}`), `${method} ${path} ${type}`).toBeTypeOf('function');
        }
  });

  it('describes exactly the operations served, each seen with every documented status, a success and an error', () => {
    const served = Object.entries(c.doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m} ${path}`));
    expect([...c.seen.keys()].sort()).toEqual([...served].sort());
    // Success answers Warden cannot give here: CUDA shared memory has no GPU; a named repository is unsupported.
    const noSuccess = new Set([
      'post /v2/cudasharedmemory/register',
      'post /v2/cudasharedmemory/region/{region}/register',
      'get /v2/cudasharedmemory/region/{region}/status',
    ]);
    for (const p of ['/v2/repository/{repo}/index', '/v2/repository/{repo}/models/{model}/load', '/v2/repository/{repo}/models/{model}/unload'])
      noSuccess.add(`post ${p}`);
    if (pythonSkip) for (const p of ['get /v1/models/{model}', 'post /v1/completions', 'post /v1/chat/completions']) noSuccess.add(p);
    for (const [op, statuses] of c.seen) {
      const [method, path] = op.split(' ') as ['get' | 'post', string];
      const documented = Object.keys(c.doc.paths[path]![method]!.responses).filter((k) => k !== 'default');
      for (const status of documented) expect([...statuses].map(String), `${op} answered ${status}`).toContain(status);
      if (!noSuccess.has(op))
        expect(
          [...statuses].some((s) => s < 300),
          `${op} answered a success`,
        ).toBe(true);
      expect(
        [...statuses].some((s) => s >= 400),
        `${op} answered an error`,
      ).toBe(true);
    }
  });
});

describe('describing routes', () => {
  it('refuses a route registered without a description, and a described method with no handler', async () => {
    const app = Fastify();
    restrictRoutes(app, undefined);
    describeRoutes(app);
    expect(() => app.get('/v2/undocumented', async () => 'x')).toThrow(/no OpenAPI description/);
    expect(() => route(app, '/v2', { GET: undefined })).toThrow(/described but not handled/);
    expect(() => route(app, '/v2', { GET: () => 1, POST: () => 2 })).toThrow(/handled but not described/);
    route(app, '/v2/health/live', { GET: () => 1 });
    const doc = openapiDocument(app) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(['/v2/health/live']);
    await app.close();
  });
});
