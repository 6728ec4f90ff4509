/**
 * The data plane (host/src/dataplane/server-api.ts): in-process inference through `server.api`, the
 * server handle backends get at load (BLS-style calls), the origin and key resolvers and backends
 * see, cancellation by AbortSignal, release of tensor memory the host does not own, and the rule
 * that nothing under frontend/ reaches past the data plane (test/project/import-rules.test.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inferAndCollect } from '../../host/src/dataplane/inference.js';
import { emptyRequestInit } from '../../host/src/dataplane/request-parameters.js';
import {
  SINGLE_USER,
  type Backend,
  type BackendModel,
  type BackendResolveRequest,
  type BackendResolver,
  type InferenceRequest,
  type ModelLoadContext,
  type ModelOrigin,
  type ResponseSender,
  type Tensor,
} from '../../host/src/contract/types.js';
import type { RunningServer } from '../../host/src/server.js';
import { startTestServer } from '../helpers/servers.js';
import { PROJECT_ROOT, postJson, tempRepo, type TempRepo } from '../helpers/repo.js';
import { tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../helpers/grpc.js';
import { TritonError } from '../../host/src/contract/errors.js';
import { inferUnary } from '../../host/src/dataplane/inference.js';
import { sleep } from '../helpers/wait.js';

/** What the test backend saw: load contexts, executed request ids, output releases. */
const seen = { loads: [] as { name: string; namespace: string; origin: ModelOrigin }[], executed: [] as string[], outputReleases: 0 };

/**
 * `backend: "dptest"`: OUTPUT0 = INPUT0. Parameters: `delay_ms` (hold the instance), `owned`
 * (outputs carry a memory owner), `forward_to` (answer by inferring on that model in-process,
 * through the load context's server handle), `responses` (answer a non-decoupled request with
 * this many responses instead of one: the last one final, a flags-only final for 0),
 * `then_error` (after the responses, a final error instead of a final response).
 */
class DataPlaneBackend implements Backend {
  readonly name = 'dptest';
  async loadModel(ctx: ModelLoadContext): Promise<BackendModel> {
    seen.loads.push({ name: ctx.key.name, namespace: ctx.key.namespace, origin: ctx.origin });
    const p = (k: string) => ctx.config.parameters[k]?.string_value;
    const delay = Number(p('delay_ms') ?? '0');
    const owned = p('owned') === 'true';
    const forwardTo = p('forward_to');
    const count = Number(p('responses') ?? '1');
    const thenError = p('then_error');
    return {
      async createInstance() {
        return {
          async execute(requests: InferenceRequest[], senders: ResponseSender[]) {
            for (const r of requests) seen.executed.push(r.id);
            if (delay) await sleep(delay);
            for (const [i, r] of requests.entries()) {
              const s = senders[i]!;
              const input = r.inputs[0]!;
              if (forwardTo) {
                const init = { ...emptyRequestInit(forwardTo, -1), inputs: [{ ...input }] };
                inferAndCollect(ctx.server, SINGLE_USER, forwardTo, -1, init).then(
                  ({ responses }) => s.send({ outputs: responses[0]!.outputs }, true),
                  (e) => s.sendError(e, true),
                );
                continue;
              }
              const output = (): Tensor => {
                const out: Tensor = { name: 'OUTPUT0', datatype: input.datatype, shape: input.shape, data: input.data.slice() };
                if (owned) out.owner = { release: () => void seen.outputReleases++ };
                return out;
              };
              for (let n = 1; n <= count; n++) s.send({ outputs: [output()] }, n === count && !thenError);
              if (thenError) s.sendError(new TritonError('INVALID_ARG', thenError), true);
              else if (count === 0) s.send(null, true);
            }
          },
          async finalize() {},
        };
      },
      async finalize() {},
    };
  }
  async finalize() {}
}

/** Serves `dptest` models; records every resolve request it is asked about (any backend). */
class DataPlaneResolver implements BackendResolver {
  private readonly backend = new DataPlaneBackend();
  readonly asked: { name: string; origin: ModelOrigin }[] = [];
  async resolve({ config, key, origin }: BackendResolveRequest) {
    this.asked.push({ name: key.name, origin });
    return config.backend === 'dptest' ? this.backend : undefined;
  }
  async finalizeAll() {}
}

const config = (params: Record<string, string> = {}) => `
backend: "dptest"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]
${Object.entries(params)
  .map(([k, v]) => `parameters { key: "${k}" value: { string_value: "${v}" } }`)
  .join('\n')}
`;

const int32Tensor = (values: number[]): Tensor => ({
  name: 'INPUT0',
  datatype: 'INT32',
  shape: [values.length],
  data: new Uint8Array(Int32Array.from(values).buffer),
});

let repo: TempRepo;
let server: RunningServer;
let client: TritonGrpcClient;
const resolver = new DataPlaneResolver();

beforeAll(async () => {
  repo = tempRepo();
  const model = (name: string, params?: Record<string, string>) => {
    repo.addModel(name, config(params));
  };
  model('echo');
  model('owned', { owned: 'true' });
  model('slow', { delay_ms: '150' });
  model('forward', { forward_to: 'echo' });
  model('none', { responses: '0' });
  model('twice', { owned: 'true', responses: '2' });
  model('fails_late', { owned: 'true', then_error: 'the model failed after a response' });
  server = await startTestServer(repo, {
    loadModels: ['*'],
    grpcPort: 0,
    backendResolvers: [resolver],
  });
  client = tritonGrpcClient(server.grpcUrl!);
});
afterAll(async () => {
  client?.close();
  await server?.stop();
  repo?.cleanup();
});

describe('in-process inference through the data plane', () => {
  it('infers without any frontend and reports the version that served', async () => {
    const init = { ...emptyRequestInit('echo', -1), id: 'in-process', inputs: [int32Tensor([1, 2, 3, 4])] };
    const { version, responses } = await inferAndCollect(server.api, SINGLE_USER, 'echo', -1, init);
    expect(version).toBe(1);
    expect(Array.from(new Int32Array(responses[0]!.outputs[0]!.data.slice().buffer))).toEqual([1, 2, 3, 4]);
  });

  it('an unknown model is NOT_FOUND, thrown synchronously, nothing queued', () => {
    const sender = { send: () => expect.fail('no response expected'), sendError: () => expect.fail('no error response expected') };
    expect(() => server.api.infer(SINGLE_USER, 'nope', -1, emptyRequestInit('nope', -1), sender)).toThrow(/unknown model: 'nope'/);
  });

  it('a backend infers on another model through the server handle of its load context (BLS)', async () => {
    const r = await postJson(`${server.httpUrl}/v2/models/forward/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [4], data: [7, 8, 9, 10] }] });
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].data).toEqual([7, 8, 9, 10]);
  });
});

describe('tensor memory the host does not own', () => {
  it('request inputs are released once, after the final response', async () => {
    let released = 0;
    let releasedBeforeFinal = -1;
    const input = { ...int32Tensor([5, 6, 7, 8]), owner: { release: () => void released++ } };
    await new Promise<void>((resolve, reject) => {
      server.api.infer(
        SINGLE_USER,
        'echo',
        -1,
        { ...emptyRequestInit('echo', -1), inputs: [input] },
        {
          send(_r, final) {
            if (final) {
              releasedBeforeFinal = released;
              resolve();
            }
          },
          sendError: (e) => reject(e),
        },
      );
    });
    expect(releasedBeforeFinal).toBe(0);
    expect(released).toBe(1);
  });

  it('response outputs are released once by the HTTP frontend after encoding', async () => {
    const before = seen.outputReleases;
    const r = await postJson(`${server.httpUrl}/v2/models/owned/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [4], data: [1, 1, 2, 3] }] });
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].data).toEqual([1, 1, 2, 3]);
    expect(seen.outputReleases - before).toBe(1);
  });
});

describe('exactly one response per unary call, its tensors released on every path', () => {
  const body = { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [4], data: [1, 2, 3, 4] }] };
  const grpcBody = (model: string) => ({
    model_name: model,
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: ['4'] }],
    raw_input_contents: [Buffer.from(Int32Array.from([1, 2, 3, 4]).buffer)],
  });
  /** Output releases while `fn` runs. */
  const releasesOf = async (fn: () => Promise<unknown>) => {
    const before = seen.outputReleases;
    await fn();
    return seen.outputReleases - before;
  };

  it('HTTP /infer (fast path and Fastify): two responses are INTERNAL and both are released', async () => {
    for (const url of [`${server.httpUrl}/v2/models/twice/infer`, `${server.httpUrl}/v2/models/twice/infer?via=fastify`]) {
      let r: Awaited<ReturnType<typeof postJson>> | undefined;
      expect(await releasesOf(async () => (r = await postJson(url, body))), url).toBe(2);
      expect([r!.status, r!.json.error]).toEqual([500, 'expected a single response, got 2']);
    }
  });

  it('HTTP /infer: no response at all is INTERNAL', async () => {
    const r = await postJson(`${server.httpUrl}/v2/models/none/infer`, body);
    expect([r.status, r.json.error]).toEqual([500, 'expected a single response, got 0']);
  });

  it('gRPC ModelInfer: two responses are INTERNAL and both are released; none is INTERNAL', async () => {
    let r: Awaited<ReturnType<typeof unaryCall>> | undefined;
    expect(await releasesOf(async () => (r = await unaryCall(client, 'ModelInfer', grpcBody('twice'))))).toBe(2);
    expect([r!.err?.code, r!.err?.details]).toEqual([13, 'expected a single response, got 2']);
    const none = await unaryCall(client, 'ModelInfer', grpcBody('none'));
    expect([none.err?.code, none.err?.details]).toEqual([13, 'expected a single response, got 0']);
  });

  it('HTTP /generate: two responses are refused with its own text, both released', async () => {
    let r: Awaited<ReturnType<typeof postJson>> | undefined;
    expect(await releasesOf(async () => (r = await postJson(`${server.httpUrl}/v2/models/twice/generate`, { INPUT0: [1, 2, 3, 4] })))).toBe(2);
    expect(r!.status).toBe(400);
    expect(r!.json.error).toMatch(/^generate expects model to produce exactly 1 response/);
  });

  it('a response followed by an error: the error is answered and the response released (HTTP and gRPC)', async () => {
    let r: Awaited<ReturnType<typeof postJson>> | undefined;
    expect(await releasesOf(async () => (r = await postJson(`${server.httpUrl}/v2/models/fails_late/infer`, body)))).toBe(1);
    expect([r!.status, r!.json.error]).toEqual([400, 'the model failed after a response']);
    let g: Awaited<ReturnType<typeof unaryCall>> | undefined;
    expect(await releasesOf(async () => (g = await unaryCall(client, 'ModelInfer', grpcBody('fails_late'))))).toBe(1);
    expect(g!.err?.details).toBe('the model failed after a response');
  });

  it('inferUnary releases the response when encoding it throws, and refuses a decoupled target only when asked', async () => {
    const call = {
      request: () => ({ init: { ...emptyRequestInit('owned', -1), inputs: [int32Tensor([1, 2, 3, 4])] } }),
      answer: () => {
        throw new TritonError('INTERNAL', 'encoding failed');
      },
    };
    let rejected: unknown;
    expect(await releasesOf(() => inferUnary(server.api, SINGLE_USER, 'owned', -1, call).catch((e) => void (rejected = e)))).toBe(1);
    expect(rejected).toMatchObject({ code: 'INTERNAL', message: 'encoding failed' });
    const answered = await inferUnary(server.api, SINGLE_USER, 'owned', -1, { ...call, answer: (res, version) => [res.outputs.length, version] });
    expect(answered).toEqual([1, 1]);
  });
});

describe('cancellation by AbortSignal', () => {
  it('an already aborted signal: CANCELLED, thrown, nothing queued', () => {
    const ac = new AbortController();
    ac.abort();
    const sender = { send: () => expect.fail('no response expected'), sendError: () => expect.fail('no error response expected') };
    const init = { ...emptyRequestInit('echo', -1), id: 'pre-aborted', inputs: [int32Tensor([1, 2, 3, 4])] };
    expect(() => server.api.infer(SINGLE_USER, 'echo', -1, init, sender, ac.signal)).toThrow(/cancelled/);
    expect(seen.executed).not.toContain('pre-aborted');
  });

  it('a queued request whose caller aborts is dropped with CANCELLED, never executed; the others run', async () => {
    const run = (id: string, signal?: AbortSignal) =>
      inferAndCollect(server.api, SINGLE_USER, 'slow', -1, { ...emptyRequestInit('slow', -1), id, inputs: [int32Tensor([1, 2, 3, 4])] }, signal);
    const first = run('holds-the-instance');
    const ac = new AbortController();
    const second = run('gone-before-dispatch', ac.signal);
    const third = run('runs-after');
    ac.abort();
    await expect(first).resolves.toMatchObject({ version: 1 });
    await expect(second).rejects.toMatchObject({ code: 'CANCELLED' });
    await expect(third).resolves.toMatchObject({ version: 1 });
    expect(seen.executed).toContain('holds-the-instance');
    expect(seen.executed).toContain('runs-after');
    expect(seen.executed).not.toContain('gone-before-dispatch');
  });
});

describe('origin-aware loading', () => {
  it('models from the repository are loaded with origin "repository", in the operator namespace', () => {
    const echo = seen.loads.find((l) => l.name === 'echo')!;
    expect(echo.namespace).toBe('');
    expect(echo.origin).toEqual({ kind: 'repository', repository: repo.path });
  });

  it('models loaded with file overrides reach resolvers and backends with origin "upload"', async () => {
    const model = readFileSync(join(PROJECT_ROOT, 'third_party', 'triton-examples', 'addsub_onnx', '1', 'model.onnx')).toString('base64');
    const io = (n: string) => ({ name: n, data_type: 'TYPE_FP32', dims: [16] });
    const config = JSON.stringify({ platform: 'onnxruntime_onnx', input: [io('INPUT0'), io('INPUT1')], output: [io('OUTPUT0'), io('OUTPUT1')] });
    const r = await postJson(`${server.httpUrl}/v2/repository/models/uploaded/load`, { parameters: { config, 'file:1/model.onnx': model } });
    expect(r.status, r.text).toBe(200);
    const digest = createHash('sha256').update(Buffer.from(model, 'base64')).digest('hex');
    // the upload store's digest of each file it wrote travels with the origin (the backend need not hash it again)
    expect(resolver.asked.filter((a) => a.name === 'uploaded').at(-1)!.origin).toEqual({
      kind: 'upload',
      tenant: '',
      digests: new Map([['1/model.onnx', digest]]),
    });
    expect(resolver.asked.filter((a) => a.name === 'echo').at(-1)!.origin).toEqual({ kind: 'repository', repository: repo.path });
  });
});
