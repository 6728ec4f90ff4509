/**
 * Namespaces endpoint by endpoint, on both protocols (DESIGN "Multi-tenancy"; docs/tenancy.md
 * "Namespaces"). Two tenants each upload a model called `m` that answers DIFFERENTLY: the same
 * sandboxed component (the preprocess sample: out = (v / 255 - mean) / std) with a different
 * `mean` parameter, and a different version (acme's is version 1, bob's version 2), so a request
 * routed to the other tenant's `m` gives a wrong value, version or config and fails the test.
 *
 * For every HTTP endpoint (metadata, ready, config, stats, infer, generate, generate_stream, trace
 * settings; unversioned and `/versions/{v}`; repository index, load, unload) and every gRPC RPC
 * (ModelInfer, ModelStreamInfer, ModelMetadata, ModelConfig, ModelReady, ModelStatistics,
 * Repository*): each tenant's own `m` gets its own answer, and the other tenant's model
 * (`only_acme`, seen by bob) answers exactly as a model that does not exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../host/src/server.js';
import { tritonGrpcClient, unaryCall, type TritonGrpcClient } from '../helpers/grpc.js';
import { fetchAs, PROJECT_ROOT, tempRepo, type TempRepo } from '../helpers/repo.js';
import { startTenantServer, type TenantServer } from '../helpers/servers.js';
import { ensureBuilt } from '../backends/wasm/helpers.js';

const TOKENS = { acme: 'acme-matrix-token-0123456789abcdefgh', bob: 'bob-matrix-token-0123456789abcdefghi' } as const;
type Who = keyof typeof TOKENS;
/** Each tenant's `m`: its version and its `mean` (out = v / 255 - mean, std 1). */
const OWN = { acme: { version: 1, mean: 0 }, bob: { version: 2, mean: 1 } } as const;
const PIXEL = [51, 102, 255];
const expected = (who: Who) => PIXEL.map((v) => v / 255 - OWN[who].mean);

let repo: TempRepo;
let tenancy: TenantServer;
let server: RunningServer;
let client: TritonGrpcClient;

const config = (mean: number) =>
  JSON.stringify({
    backend: 'wasm',
    max_batch_size: 0,
    input: [{ name: 'IMAGE', data_type: 'TYPE_UINT8', dims: [-1, -1, 3] }],
    output: [{ name: 'OUTPUT', data_type: 'TYPE_FP32', dims: [3, 1, 1] }],
    parameters: { mean: { string_value: `${mean},${mean},${mean}` }, std: { string_value: '1,1,1' } },
  });

const http = (who: Who, method: 'GET' | 'POST', path: string, body?: unknown) => fetchAs(TOKENS[who], method, `${server.httpUrl}${path}`, body);

const grpc = (who: Who, method: string, request: unknown) => unaryCall(client, method, request, TOKENS[who]);

function stream(who: Who, requests: unknown[]): Promise<{ got: { error_message?: string; infer_response?: any }[]; err?: ServiceError }> {
  const md = new Metadata();
  // grpc-js sends metadata keys lower case whatever the spelling (HTTP/2): the documented key works either way.
  md.set('Authorization', `Bearer ${TOKENS[who]}`);
  const s = (client as unknown as { ModelStreamInfer(md: Metadata): NodeJS.EventEmitter & { write(m: unknown): void; end(): void } }).ModelStreamInfer(md);
  const got: { error_message?: string; infer_response?: any }[] = [];
  s.on('data', (m) => got.push(m));
  return new Promise((resolve) => {
    s.on('error', (err: ServiceError) => resolve({ got, err }));
    s.on('end', () => resolve({ got }));
    for (const r of requests) s.write(r);
    s.end();
  });
}

const inferBody = { inputs: [{ name: 'IMAGE', datatype: 'UINT8', shape: [1, 1, 3], data: PIXEL }] };
const grpcInfer = (model: string, version = '') => ({
  model_name: model,
  model_version: version,
  inputs: [{ name: 'IMAGE', datatype: 'UINT8', shape: [1, 1, 3] }],
  raw_input_contents: [Buffer.from(PIXEL)],
});
const fp32 = (b: Uint8Array) => Array.from(new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));

beforeAll(async () => {
  await ensureBuilt();
  repo = tempRepo();
  const quotas = { requests_per_second: 1000, burst: 1000 };
  const tenants = [
    { id: 'acme', token: TOKENS.acme, quotas },
    { id: 'bob', token: TOKENS.bob, quotas },
  ];
  ({ server } = tenancy = await startTenantServer(repo, tenants, { grpcPort: 0, separateUploads: true }));
  client = tritonGrpcClient(server.grpcUrl!);
  const wasm = readFileSync(join(PROJECT_ROOT, 'model_repository', 'preprocess_wasm', '1', 'model.wasm')).toString('base64');
  const upload = async (who: Who, model: string) => {
    const r = await http(who, 'POST', `/v2/repository/models/${model}/load`, {
      parameters: { config: config(OWN[who].mean), [`file:${OWN[who].version}/model.wasm`]: wasm },
    });
    expect(r.status, `${who} uploads ${model}: ${r.text}`).toBe(200);
  };
  await upload('acme', 'm');
  await upload('bob', 'm');
  await upload('acme', 'only_acme');
}, 120_000);

afterAll(async () => {
  client?.close();
  await tenancy?.stop();
  repo?.cleanup();
});

describe('each tenant gets its own m (HTTP)', () => {
  it.each(['acme', 'bob'] as const)('%s: infer, generate and generate_stream compute with its own parameters, on its own version', async (who) => {
    const v = OWN[who].version;
    const other = v === 1 ? 2 : 1;
    for (const prefix of ['/v2/models/m', `/v2/models/m/versions/${v}`]) {
      const infer = await http(who, 'POST', `${prefix}/infer`, inferBody);
      expect(infer.status, infer.text).toBe(200);
      expect(infer.json.model_version).toBe(String(v));
      infer.json.outputs[0].data.forEach((x: number, i: number) => expect(x).toBeCloseTo(expected(who)[i]!, 5));
      const gen = await http(who, 'POST', `${prefix}/generate`, { IMAGE: PIXEL });
      expect(gen.status, gen.text).toBe(200);
      expect(gen.json.model_version).toBe(String(v));
      (gen.json.OUTPUT as number[]).forEach((x, i) => expect(x).toBeCloseTo(expected(who)[i]!, 5));
      const sse = await http(who, 'POST', `${prefix}/generate_stream`, { IMAGE: PIXEL });
      expect(sse.status).toBe(200);
      const event = JSON.parse(
        sse.text
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
      );
      expect(event.model_version).toBe(String(v));
      (event.OUTPUT as number[]).forEach((x, i) => expect(x).toBeCloseTo(expected(who)[i]!, 5));
    }
    // the other tenant's version of `m` does not exist for this tenant
    const wrongVersion = await http(who, 'POST', `/v2/models/m/versions/${other}/infer`, inferBody);
    expect(wrongVersion.status).toBeGreaterThanOrEqual(400);
  });

  it.each(['acme', 'bob'] as const)('%s: metadata, ready, config, stats and the index show its own m', async (who) => {
    const v = OWN[who].version;
    const other = v === 1 ? 2 : 1;
    expect((await http(who, 'GET', '/v2/models/m')).json.versions).toEqual([String(v)]);
    expect((await http(who, 'GET', `/v2/models/m/versions/${v}`)).status).toBe(200);
    expect((await http(who, 'GET', `/v2/models/m/versions/${v}/ready`)).status).toBe(200);
    expect((await http(who, 'GET', `/v2/models/m/versions/${other}/ready`)).status).toBe(400);
    for (const path of ['/v2/models/m/config', `/v2/models/m/versions/${v}/config`]) {
      expect((await http(who, 'GET', path)).json.parameters.mean.string_value, path).toBe(`${OWN[who].mean},${OWN[who].mean},${OWN[who].mean}`);
    }
    for (const path of ['/v2/models/m/stats', `/v2/models/m/versions/${v}/stats`]) {
      const stats = (await http(who, 'GET', path)).json.model_stats;
      expect(
        stats.map((s: { version: string }) => s.version),
        path,
      ).toEqual([String(v)]);
    }
    const index = (await http(who, 'POST', '/v2/repository/index', {})).json as { name: string; version: string }[];
    expect(index.filter((e) => e.name === 'm').map((e) => e.version)).toEqual([String(v)]);
    expect(index.map((e) => e.name).includes('only_acme')).toBe(who === 'acme');
  });
});

describe('each tenant gets its own m (gRPC)', () => {
  it.each(['acme', 'bob'] as const)('%s: ModelInfer and ModelStreamInfer compute with its own parameters', async (who) => {
    const v = String(OWN[who].version);
    for (const version of ['', v]) {
      const r = await grpc(who, 'ModelInfer', grpcInfer('m', version));
      expect(r.err, r.err?.details).toBeUndefined();
      expect(r.res.model_version).toBe(v);
      fp32(r.res.raw_output_contents[0]).forEach((x, i) => expect(x).toBeCloseTo(expected(who)[i]!, 5));
    }
    const s = await stream(who, [grpcInfer('m'), grpcInfer('m', v)]);
    expect(s.err).toBeUndefined();
    expect(s.got).toHaveLength(2);
    for (const m of s.got) {
      expect(m.error_message ?? '').toBe('');
      expect(m.infer_response.model_version).toBe(v);
      fp32(m.infer_response.raw_output_contents[0]).forEach((x, i) => expect(x).toBeCloseTo(expected(who)[i]!, 5));
    }
  });

  it.each(['acme', 'bob'] as const)('%s: ModelMetadata, ModelConfig, ModelReady, ModelStatistics, RepositoryIndex show its own m', async (who) => {
    const v = String(OWN[who].version);
    const other = v === '1' ? '2' : '1';
    expect((await grpc(who, 'ModelMetadata', { name: 'm' })).res.versions).toEqual([v]);
    expect((await grpc(who, 'ModelConfig', { name: 'm', version: v })).res.config.parameters.mean.string_value).toBe(
      `${OWN[who].mean},${OWN[who].mean},${OWN[who].mean}`,
    );
    expect((await grpc(who, 'ModelReady', { name: 'm', version: v })).res.ready).toBe(true);
    expect((await grpc(who, 'ModelReady', { name: 'm', version: other })).res.ready).toBe(false);
    const stats = (await grpc(who, 'ModelStatistics', { name: 'm' })).res.model_stats;
    expect(stats.map((s: { version: string }) => s.version)).toEqual([v]);
    const index = (await grpc(who, 'RepositoryIndex', {})).res.models as { name: string; version: string }[];
    expect(index.filter((e) => e.name === 'm').map((e) => e.version)).toEqual([v]);
    expect(index.map((e) => e.name).includes('only_acme')).toBe(who === 'acme');
  });
});

describe("another tenant's model answers exactly as a model that does not exist", () => {
  const THEIRS = 'only_acme';
  const ABSENT = 'no_such_mdl'; // as long as THEIRS
  const same = (theirs: string, absent: string, what: string) => expect(theirs.replaceAll(THEIRS, 'X'), what).toBe(absent.replaceAll(ABSENT, 'X'));

  it('over HTTP: every per-model endpoint, with and without /versions/1, and the repository extension', async () => {
    const probes: [string, 'GET' | 'POST', string, unknown?][] = [
      ['metadata', 'GET', ''],
      ['ready', 'GET', '/ready'],
      ['config', 'GET', '/config'],
      ['stats', 'GET', '/stats'],
      ['trace', 'GET', '/trace/setting'],
      ['infer', 'POST', '/infer', inferBody],
      ['generate', 'POST', '/generate', { IMAGE: PIXEL }],
      ['generate_stream', 'POST', '/generate_stream', { IMAGE: PIXEL }],
    ];
    for (const [what, method, suffix, body] of probes) {
      for (const versions of ['', '/versions/1']) {
        const theirs = await http('bob', method, `/v2/models/${THEIRS}${versions}${suffix}`, body);
        const absent = await http('bob', method, `/v2/models/${ABSENT}${versions}${suffix}`, body);
        expect(theirs.status, `${what}${versions}`).toBe(absent.status);
        expect(theirs.status, `${what}${versions}`).toBeGreaterThanOrEqual(400);
        same(theirs.text, absent.text, `${what}${versions}`);
      }
    }
    // The repository extension acts on bob's own namespace: loading without files finds nothing of
    // bob's; unloading unloads nothing of acme's.
    const load = [await http('bob', 'POST', `/v2/repository/models/${THEIRS}/load`, {}), await http('bob', 'POST', `/v2/repository/models/${ABSENT}/load`, {})];
    expect(load[0]!.status).toBe(load[1]!.status);
    expect(load[0]!.status).toBeGreaterThanOrEqual(400);
    same(load[0]!.text, load[1]!.text, 'load');
    const unload = [
      await http('bob', 'POST', `/v2/repository/models/${THEIRS}/unload`, {}),
      await http('bob', 'POST', `/v2/repository/models/${ABSENT}/unload`, {}),
    ];
    expect(unload[0]!.status).toBe(unload[1]!.status);
    same(unload[0]!.text, unload[1]!.text, 'unload');
    expect((await http('acme', 'POST', `/v2/models/${THEIRS}/infer`, inferBody)).status).toBe(200);
    const stats = (await http('bob', 'GET', '/v2/models/stats')).json.model_stats.map((s: { name: string }) => s.name);
    expect(stats).toEqual(['m']);
  });

  it('over gRPC: every model RPC, with and without version 1, the stream and the repository RPCs', async () => {
    const probes: [string, (name: string, version: string) => unknown][] = [
      ['ModelMetadata', (name, version) => ({ name, version })],
      ['ModelConfig', (name, version) => ({ name, version })],
      ['ModelStatistics', (name, version) => ({ name, version })],
      ['ModelInfer', (name, version) => grpcInfer(name, version)],
    ];
    for (const [method, req] of probes) {
      for (const version of ['', '1']) {
        const theirs = await grpc('bob', method, req(THEIRS, version));
        const absent = await grpc('bob', method, req(ABSENT, version));
        expect(theirs.err, `${method} ${version}`).toBeDefined();
        expect(theirs.err!.code, `${method} ${version}`).toBe(absent.err!.code);
        same(theirs.err!.details, absent.err!.details, `${method} ${version}`);
      }
    }
    for (const version of ['', '1']) {
      const theirs = await grpc('bob', 'ModelReady', { name: THEIRS, version });
      const absent = await grpc('bob', 'ModelReady', { name: ABSENT, version });
      expect(theirs.res).toEqual(absent.res);
      expect(theirs.res.ready).toBe(false);
    }
    const s = await stream('bob', [grpcInfer(THEIRS), grpcInfer(ABSENT)]);
    expect(s.err).toBeUndefined();
    expect(s.got).toHaveLength(2);
    expect(s.got[0]!.error_message).toBeTruthy();
    same(s.got[0]!.error_message!, s.got[1]!.error_message!, 'ModelStreamInfer');
    const load = [await grpc('bob', 'RepositoryModelLoad', { model_name: THEIRS }), await grpc('bob', 'RepositoryModelLoad', { model_name: ABSENT })];
    expect(load[0]!.err?.code).toBe(load[1]!.err?.code);
    expect(load[0]!.err?.code).not.toBe(status.OK);
    same(load[0]!.err!.details, load[1]!.err!.details, 'RepositoryModelLoad');
    const unload = [await grpc('bob', 'RepositoryModelUnload', { model_name: THEIRS }), await grpc('bob', 'RepositoryModelUnload', { model_name: ABSENT })];
    expect(unload[0]!.err?.code).toBe(unload[1]!.err?.code);
    expect((await grpc('acme', 'ModelInfer', grpcInfer(THEIRS))).err).toBeUndefined();
    const index = (await grpc('bob', 'RepositoryIndex', {})).res.models.map((e: { name: string }) => e.name);
    expect(index).toEqual(['m']);
  });
});

describe("one tenant's unload leaves the other's m alone", () => {
  it("acme unloads its m over gRPC: bob's m keeps its own answer; acme's m is gone until acme reloads it", async () => {
    expect((await grpc('acme', 'RepositoryModelUnload', { model_name: 'm' })).err).toBeUndefined();
    const gone = await http('acme', 'POST', '/v2/models/m/infer', inferBody);
    expect(gone.status).toBe(404);
    // (whether an unloaded own model reads "has no available versions" or "is not found" is the
    // namespace rule's business; here it only must not be bob's)
    expect(gone.json.error).toMatch(/^Request for unknown model: 'm' (has no available versions|is not found)$/);
    const bob = await http('bob', 'POST', '/v2/models/m/infer', inferBody);
    expect(bob.json.model_version).toBe('2');
    bob.json.outputs[0].data.forEach((x: number, i: number) => expect(x).toBeCloseTo(expected('bob')[i]!, 5));
    expect((await grpc('acme', 'RepositoryModelLoad', { model_name: 'm' })).err).toBeUndefined();
    const back = await grpc('acme', 'ModelInfer', grpcInfer('m'));
    expect(back.res.model_version).toBe('1');
    fp32(back.res.raw_output_contents[0]).forEach((x, i) => expect(x).toBeCloseTo(expected('acme')[i]!, 5));
  });
});
