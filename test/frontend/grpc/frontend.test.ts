/**
 * The gRPC frontend driven by a raw grpc-js client (no Python needed): hostile requests get
 * Triton's status codes and leave the server serving; errors carry no host paths; messages over
 * the input limit are refused before they are buffered; tenancy by bearer-token metadata
 * (UNAUTHENTICATED, namespaces, admin-only settings, the per-tenant rate); the frontend never
 * imports the model manager.
 */
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { perTestServers, serverPerSuite, startTestServer, tenantServerPerSuite, testTokens } from '../../helpers/servers.js';
import { int32s, simpleInfer, tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../../helpers/grpc.js';
import { PROJECT_ROOT, postJson, simpleRequest, tempRepo, type TempRepo } from '../../helpers/repo.js';
import { executed, JsBackendResolver, REPEAT_CONFIG } from '../../helpers/js-backend.js';
import { sleep, until } from '../../helpers/wait.js';

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array(16).fill(2);

describe('single-user gRPC frontend', () => {
  const suite = serverPerSuite(async () => {
    const repo = tempRepo(['simple']);
    repo.write('broken/config.pbtxt', 'name: "broken"\nbackend: "onnxruntime"\nmax_batch_size: 0\n');
    repo.write(
      'ens_simple/config.pbtxt',
      'platform: "ensemble"\nmax_batch_size: 8\ninput { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }\ninput { name: "B" data_type: TYPE_INT32 dims: [ 16 ] }\n' +
        'output { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] }\n' +
        'ensemble_scheduling { step { model_name: "simple" model_version: -1 input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } output_map { key: "OUTPUT0" value: "SUM" } } }\n',
    );
    mkdirSync(join(repo.path, 'ens_simple', '1'), { recursive: true });
    return { repo, opts: { loadModels: ['simple'], grpcPort: 0, maxInputSize: 1 << 20 } };
  });

  it('infers through raw contents and typed contents alike', async () => {
    const raw = await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B, { id: 'x1' }));
    expect(raw.err).toBeUndefined();
    expect(raw.res.id).toBe('x1');
    expect(raw.res.outputs.map((o: { name: string; shape: string[] }) => [o.name, o.shape])).toEqual([
      ['OUTPUT0', ['1', '16']],
      ['OUTPUT1', ['1', '16']],
    ]);
    expect(int32s(raw.res.raw_output_contents[0])).toEqual(A.map((x, i) => x + B[i]));
    const typed = await unaryCall(suite.client, 'ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: A } },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: B } },
      ],
    });
    expect(int32s(typed.res.raw_output_contents[1])).toEqual(A.map((x, i) => x - B[i]));
  });

  it('hostile requests: the right status, a clear message, the server still serves', async () => {
    const cases: [string, Record<string, unknown>, status, RegExp][] = [
      // Triton's infer_handler.cc text: raw contents are taken in order, the second input finds none.
      [
        'raw contents count',
        { ...simpleInfer(A, B), raw_input_contents: [Buffer.alloc(64)] },
        status.INVALID_ARGUMENT,
        /^unable to find data for input tensor 'INPUT1' for model 'simple' in request\.$/,
      ],
      [
        'bad datatype',
        {
          ...simpleInfer(A, B),
          inputs: [
            { name: 'INPUT0', datatype: 'INT33', shape: [1, 16] },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
          ],
        },
        status.INVALID_ARGUMENT,
        /invalid datatype/,
      ],
      [
        'negative dim',
        {
          ...simpleInfer(A, B),
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
          ],
        },
        status.INVALID_ARGUMENT,
        /non-negative/,
      ],
      [
        'overflowing shape',
        {
          ...simpleInfer(A, B),
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: ['4611686018427387904', '4'] },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
          ],
        },
        status.INVALID_ARGUMENT,
        /./,
      ],
      ['byte size mismatch', { ...simpleInfer(A, B), raw_input_contents: [Buffer.alloc(60), Buffer.alloc(64)] }, status.INVALID_ARGUMENT, /byte size/],
      [
        'typed count mismatch',
        { model_name: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: [1] } }] },
        status.INVALID_ARGUMENT,
        /number of elements/,
      ],
      [
        'FP16 as typed contents',
        { model_name: 'simple', inputs: [{ name: 'INPUT0', datatype: 'FP16', shape: [1], contents: { fp32_contents: [1] } }] },
        status.INVALID_ARGUMENT,
        /raw_input_contents/,
      ],
      [
        'raw and typed at once',
        {
          ...simpleInfer(A, B),
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: A } },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
          ],
        },
        status.INVALID_ARGUMENT,
        /^contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'$/,
      ],
      ['reserved parameter', simpleInfer(A, B, { parameters: { triton_x: { bool_param: true } } }), status.INVALID_ARGUMENT, /reserved/],
      [
        'bad empty-final flag',
        simpleInfer(A, B, { parameters: { triton_enable_empty_final_response: { int64_param: 1 } } }),
        status.INVALID_ARGUMENT,
        /expected bool_param/,
      ],
      ['duplicate outputs', simpleInfer(A, B, { outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }] }), status.INVALID_ARGUMENT, /already exists/],
      [
        'shm while disabled',
        {
          ...simpleInfer(A, B),
          raw_input_contents: [],
          inputs: [
            {
              name: 'INPUT0',
              datatype: 'INT32',
              shape: [1, 16],
              parameters: { shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { int64_param: 64 } },
            },
          ],
        },
        status.UNIMPLEMENTED,
        /--allow-client-shm/,
      ],
      ['unknown version string', simpleInfer(A, B, { model_version: '../1' }), status.INVALID_ARGUMENT, /version/],
      ['unknown model', simpleInfer(A, B, { model_name: '../../etc/passwd' }), status.NOT_FOUND, /unknown model/],
    ];
    for (const [what, req, code, msg] of cases) {
      const r = await unaryCall(suite.client, 'ModelInfer', req);
      expect(r.err?.code, what).toBe(code);
      expect(r.err?.details, what).toMatch(msg);
    }
    // Over the input limit (1 MiB here): refused by grpc-js before the message is buffered.
    const big = await unaryCall(suite.client, 'ModelInfer', { ...simpleInfer(A, B), raw_input_contents: [Buffer.alloc(2 << 20), Buffer.alloc(64)] });
    expect(big.err?.code).toBe(status.RESOURCE_EXHAUSTED);
    // Repository: path escapes in file overrides, named repositories, hostile names.
    const esc = await unaryCall(suite.client, 'RepositoryModelLoad', {
      model_name: 'x',
      parameters: { 'file:../../evil': { bytes_param: Buffer.from('x') }, config: { string_param: '{}' } },
    });
    expect(esc.err?.code).toBe(status.INVALID_ARGUMENT);
    const b64 = await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'x', parameters: { 'file:1/model.onnx': { string_param: 'AAAA' } } });
    expect(b64.err?.details).toMatch(/bytes_param/);
    const named = await unaryCall(suite.client, 'RepositoryIndex', { repository_name: 'other' });
    expect(named.err?.code).toBe(status.UNIMPLEMENTED);
    const name = await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: '../simple' });
    expect(name.err?.code).toBe(status.INVALID_ARGUMENT);
    expect(readdirSync(join(suite.repo.path, '..')).some((f) => f === 'evil')).toBe(false);
    // Still serving.
    const ok = await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B));
    expect(int32s(ok.res.raw_output_contents[0])).toEqual(A.map((x, i) => x + B[i]));
  });

  it('a failed load names no host path', async () => {
    const r = await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'broken' });
    expect(r.err?.code).toBeDefined();
    expect(r.err?.details).not.toContain(suite.repo.path);
    expect(r.err?.details).not.toContain(PROJECT_ROOT);
    const idx = await unaryCall(suite.client, 'RepositoryIndex', {});
    expect(JSON.stringify(idx.res)).not.toContain(suite.repo.path);
  });

  it("stream errors are error_message responses, or the stream's status with triton_grpc_error: true", async () => {
    const open = (md: Metadata) => {
      const s = (
        suite.client as unknown as { ModelStreamInfer(md: Metadata): NodeJS.EventEmitter & { write(m: unknown): void; end(): void } }
      ).ModelStreamInfer(md);
      const got: { error_message?: string; infer_response?: { id: string } }[] = [];
      s.on('data', (m) => got.push(m));
      const done = new Promise<ServiceError | undefined>((resolve) => {
        s.on('error', (e: ServiceError) => resolve(e));
        s.on('end', () => resolve(undefined));
      });
      return { s, got, done };
    };
    const plain = open(new Metadata());
    plain.s.write(simpleInfer(A, B, { model_name: 'nope', id: 'e1' }));
    plain.s.write(simpleInfer(A, B, { id: 'ok1' }));
    plain.s.end();
    expect(await plain.done).toBeUndefined();
    expect(plain.got.map((m) => [m.infer_response?.id, m.error_message || ''])).toEqual([
      ['e1', "Request for unknown model: 'nope' is not found"],
      ['ok1', ''],
    ]);
    const md = new Metadata();
    md.set('triton_grpc_error', 'true');
    const strict = open(md);
    strict.s.write(simpleInfer(A, B, { model_name: 'nope' }));
    const err = await strict.done;
    expect(err?.code).toBe(status.NOT_FOUND);
    expect(err?.details).toBe("Request for unknown model: 'nope' is not found");
  });

  it('RepositoryModelUnload with unload_dependents also unloads the ensembles using the model', async () => {
    const ready = async (m: string) => (await unaryCall(suite.client, 'ModelReady', { name: m })).res?.ready === true;
    expect((await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'ens_simple' })).err).toBeUndefined();
    expect(await ready('ens_simple')).toBe(true);
    const bad = await unaryCall(suite.client, 'RepositoryModelUnload', { model_name: 'simple', parameters: { unload_dependents: { string_param: 'yes' } } });
    expect(bad.err?.details).toBe("'unload_dependents' must be a bool_param");
    expect(await ready('simple')).toBe(true); // refused: nothing unloaded
    const r = await unaryCall(suite.client, 'RepositoryModelUnload', { model_name: 'simple', parameters: { unload_dependents: { bool_param: true } } });
    expect(r.err).toBeUndefined();
    expect(await ready('simple')).toBe(false);
    expect(await ready('ens_simple')).toBe(false);
    expect((await unaryCall(suite.client, 'RepositoryModelLoad', { model_name: 'simple' })).err).toBeUndefined();
  });

  it('a cancelled stream cancels its requests and the server stays up', async () => {
    const stream = (suite.client as unknown as { ModelStreamInfer(): NodeJS.EventEmitter & { write(m: unknown): void; cancel(): void } }).ModelStreamInfer();
    stream.on('error', () => undefined);
    const got: unknown[] = [];
    stream.on('data', (m) => got.push(m));
    for (let i = 0; i < 20; i++) stream.write(simpleInfer(A, B, { id: `c${i}` }));
    stream.cancel();
    await sleep(200);
    const ok = await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B));
    expect(int32s(ok.res.raw_output_contents[0])).toEqual(A.map((x, i) => x + B[i]));
  });
});

/** A `jstest` echo model `name` (INT32 [1] in and out) with `count` instances and one parameter. */
function writeJsModel(repo: TempRepo, name: string, count: number, param: string, value: string): void {
  repo.addModel(
    name,
    `name: "${name}"\nbackend: "jstest"\nmax_batch_size: 0\ninput [{ name: "INPUT0", data_type: TYPE_INT32, dims: [ 1 ] }]\noutput [{ name: "OUTPUT0", data_type: TYPE_INT32, dims: [ 1 ] }]\ninstance_group [{ kind: KIND_CPU, count: ${count} }]\nparameters { key: "${param}" value: { string_value: "${value}" } }\n`,
  );
}

const perTest = perTestServers();

/** A gRPC client of a server on `repo` with the in-process `jstest` backend (client and server closed after the test). */
async function jsClient(repo: TempRepo): Promise<TritonGrpcClient> {
  const server = await perTest.serve(repo, { modelControlMode: 'none', grpcPort: 0, backendResolvers: [new JsBackendResolver()] });
  const client = tritonGrpcClient(server.grpcUrl!);
  perTest.defer(() => client.close());
  return client;
}

describe('cancellation', () => {
  it('a unary call whose deadline passes while queued is dropped, never executed (CANCELED in the statistics)', async () => {
    const repo = perTest.repository([]);
    writeJsModel(repo, 'slow', 1, 'delay_ms', '400');
    const client = await jsClient(repo);
    const one = (id: string) => ({
      model_name: 'slow',
      id,
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1] }],
      raw_input_contents: [Buffer.from(Int32Array.of(5).buffer)],
    });
    const before = executed.filter((e) => e.model === 'slow').length;
    const first = unaryCall(client, 'ModelInfer', one('first'));
    await until(() => executed.filter((e) => e.model === 'slow').length > before, { what: 'the first request executing' });
    const md = new Metadata();
    const late = await new Promise<ServiceError | null>((resolve) =>
      (client as unknown as Record<string, (...args: unknown[]) => void>).ModelInfer(
        one('late'),
        md,
        { deadline: Date.now() + 100 },
        (e: ServiceError | null) => resolve(e),
      ),
    );
    expect(late?.code).toBe(status.DEADLINE_EXCEEDED);
    expect((await first).res.id).toBe('first');
    await sleep(500);
    expect(executed.filter((e) => e.model === 'slow').length - before).toBe(1);
    const stats = await unaryCall(client, 'ModelStatistics', { name: 'slow' });
    expect(stats.res.model_stats[0].inference_stats.fail.count).toBe('1');
  });
});

describe('stream response order', () => {
  it("a non-decoupled model's answers come in request order though instances finish out of order; a decoupled model's as produced", async () => {
    const repo = perTest.repository([]);
    writeJsModel(repo, 'sleepy', 3, 'delay_from_input', 'true');
    repo.addModel('repeat', `name: "repeat"\n${REPEAT_CONFIG}`);
    const client = await jsClient(repo);
    const stream = (client as unknown as { ModelStreamInfer(): NodeJS.EventEmitter & { write(m: unknown): void; end(): void } }).ModelStreamInfer();
    const got: string[] = [];
    stream.on('data', (m: { error_message?: string; infer_response?: { id: string } }) =>
      got.push(`${m.infer_response?.id}${m.error_message ? ' error' : ''}`),
    );
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    const sleepy = (id: string, ms: number) => ({
      model_name: 'sleepy',
      id,
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1] }],
      raw_input_contents: [Buffer.from(Int32Array.of(ms).buffer)],
    });
    stream.write(sleepy('slow', 300));
    stream.write(sleepy('fast', 1));
    stream.write({ ...sleepy('missing', 1), model_name: 'nope' });
    stream.write({
      model_name: 'repeat',
      id: 'rep',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [2] }],
      raw_input_contents: [Buffer.from(Int32Array.of(7, 8).buffer)],
    });
    stream.write(sleepy('last', 1));
    stream.end();
    await ended;
    // The decoupled model's two responses do not wait for 'slow'; every other answer does.
    expect(got).toEqual(['rep', 'rep', 'slow', 'fast', 'missing error', 'last']);
  });
});

describe('shutdown', () => {
  it('stop() waits for requests being handled, not for an open idle stream', async () => {
    const repo = tempRepo(['simple']);
    const server = await startTestServer(repo, {
      loadModels: ['simple'],
      grpcPort: 0,
      exitTimeoutSecs: 30,
    });
    const client = tritonGrpcClient(server.grpcUrl!);
    try {
      const stream = (client as unknown as { ModelStreamInfer(): NodeJS.EventEmitter & { write(m: unknown): void } }).ModelStreamInfer();
      stream.on('error', () => undefined);
      const first = new Promise((r) => stream.once('data', r));
      stream.write(simpleInfer(A, B, { id: 's' }));
      expect(await first).toMatchObject({ infer_response: { id: 's' } });
      const t0 = Date.now();
      await server.stop();
      // the stream stays open (never half-closed by the client): stop() must not wait 30 s for it
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      client.close();
      repo.cleanup();
    }
  });
});

describe('multi-tenant gRPC frontend', () => {
  const TOKENS = testTokens('acme', 'bob', 'flood', 'streamer', 'mixed', 'ops');
  const suite = tenantServerPerSuite(async () => ({
    repo: tempRepo(['simple']),
    tenants: [
      { id: 'acme', token: TOKENS.acme, shared_models: ['simple'] },
      { id: 'bob', token: TOKENS.bob },
      { id: 'flood', token: TOKENS.flood, shared_models: ['simple'], quotas: { requests_per_second: 2, burst: 2 } },
      { id: 'streamer', token: TOKENS.streamer, shared_models: ['simple'], quotas: { requests_per_second: 2, burst: 2 } },
      // a window of burst / requests_per_second = 4 s: the test's four requests fall in one
      { id: 'mixed', token: TOKENS.mixed, shared_models: ['simple'], quotas: { requests_per_second: 0.5, burst: 2 } },
      { id: 'ops', role: 'admin', token: TOKENS.ops },
    ],
    opts: { loadModels: ['*'], grpcPort: 0 },
  }));

  it('no or a wrong token is UNAUTHENTICATED; health needs none', async () => {
    expect((await unaryCall(suite.client, 'ServerLive', {})).res.live).toBe(true);
    expect((await unaryCall(suite.client, 'ServerReady', {})).res.ready).toBe(true);
    const none = await unaryCall(suite.client, 'ModelMetadata', { name: 'simple' });
    expect(none.err?.code).toBe(status.UNAUTHENTICATED);
    const wrong = await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B), 'not-a-token-at-all-xxxxxxxxxxxxxx');
    expect(wrong.err?.code).toBe(status.UNAUTHENTICATED);
    expect(wrong.err?.details).toBe('invalid or expired token');
  });

  it('namespaces: a shared model for acme, unknown for bob; operator settings are admin-only', async () => {
    const acme = await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B), TOKENS.acme);
    expect(int32s(acme.res.raw_output_contents[0])).toEqual(A.map((x, i) => x + B[i]));
    const bob = await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B), TOKENS.bob);
    expect(bob.err?.code).toBe(status.NOT_FOUND);
    expect((await unaryCall(suite.client, 'ModelReady', { name: 'simple' }, TOKENS.bob)).res.ready).toBe(false);
    const log = await unaryCall(suite.client, 'LogSettings', { settings: { log_info: { bool_param: false } } }, TOKENS.acme);
    expect(log.err?.code).toBe(status.PERMISSION_DENIED);
    expect((await unaryCall(suite.client, 'LogSettings', {}, TOKENS.ops)).res.settings.log_info).toMatchObject({ bool_param: true });
    const load = await unaryCall(
      suite.client,
      'RepositoryModelLoad',
      { model_name: 'native', parameters: { config: { string_param: '{"backend":"identity"}' } } },
      TOKENS.bob,
    );
    // Nothing by that name in bob's namespace: tritonserver's answer to a load it cannot poll.
    expect([load.err?.code, load.err?.details]).toEqual([status.INTERNAL, "failed to load 'native', failed to poll from model repository"]);
  });

  it("a tenant's request rate is limited over gRPC as over HTTP (RESOURCE_EXHAUSTED)", async () => {
    const codes: (number | undefined)[] = [];
    for (let i = 0; i < 4; i++) codes.push((await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B), TOKENS.flood)).err?.code);
    expect(codes.slice(0, 2)).toEqual([undefined, undefined]);
    expect(codes.slice(2)).toEqual([status.RESOURCE_EXHAUSTED, status.RESOURCE_EXHAUSTED]);
    // the admin is not limited, and others are unaffected
    expect((await unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B), TOKENS.acme)).err).toBeUndefined();
  });

  it('a tenant using HTTP and gRPC together gets its request rate once, not once per protocol', async () => {
    const http = () => postJson(`${suite.server.httpUrl}/v2/models/simple/infer`, simpleRequest('INT32', A, B), { authorization: `Bearer ${TOKENS.mixed}` });
    const grpc = () => unaryCall(suite.client, 'ModelInfer', simpleInfer(A, B), TOKENS.mixed);
    expect((await http()).status).toBe(200);
    expect((await grpc()).err).toBeUndefined();
    // the burst of 2 is spent, one request on each protocol
    const overHttp = await http();
    expect([overHttp.status, overHttp.json.error]).toEqual([429, "tenant 'mixed' exceeded its request rate (requests_per_second 0.5, burst 2)"]);
    const overGrpc = await grpc();
    expect([overGrpc.err?.code, overGrpc.err?.details]).toEqual([
      status.RESOURCE_EXHAUSTED,
      "tenant 'mixed' exceeded its request rate (requests_per_second 0.5, burst 2)",
    ]);
  });

  it('on a stream every request is authenticated and counted against the rate; bad credentials end the stream', async () => {
    const open = (token: string) => {
      const md = new Metadata();
      md.set('authorization', `Bearer ${token}`);
      const s = (
        suite.client as unknown as { ModelStreamInfer(md: Metadata): NodeJS.EventEmitter & { write(m: unknown): void; end(): void } }
      ).ModelStreamInfer(md);
      const got: { infer_response?: { id: string }; error_message?: string }[] = [];
      s.on('data', (m) => got.push(m));
      const done = new Promise<ServiceError | undefined>((resolve) => {
        s.on('error', (e: ServiceError) => resolve(e));
        s.on('end', () => resolve(undefined));
      });
      return { s, got, done };
    };
    const a = open(TOKENS.streamer);
    for (let i = 0; i < 4; i++) a.s.write(simpleInfer(A, B, { id: `r${i}` }));
    a.s.end();
    expect(await a.done).toBeUndefined();
    const ok = a.got.filter((m) => m.error_message === '' || m.error_message === undefined).map((m) => m.infer_response!.id);
    const limited = a.got.filter((m) => m.error_message);
    expect(ok).toEqual(['r0', 'r1']);
    expect(limited.map((m) => m.infer_response!.id).sort()).toEqual(['r2', 'r3']);
    expect(limited[0]!.error_message).toMatch(/exceeded its request rate/);
    const bad = open('not-a-token-at-all-xxxxxxxxxxxxxx');
    bad.s.write(simpleInfer(A, B));
    const err = await bad.done;
    expect(err?.code).toBe(status.UNAUTHENTICATED);
    expect(bad.got).toEqual([]);
  });
});

describe('layering', () => {
  it('nothing under frontend/grpc imports the model manager or model objects', () => {
    const dir = join(PROJECT_ROOT, 'host', 'src', 'frontend', 'grpc');
    for (const f of readdirSync(dir)) {
      const text = readFileSync(join(dir, f), 'utf8');
      expect(text, f).not.toMatch(/repository-manager|core\/model\.js/);
    }
  });
});
