/**
 * The tenant backend kit end to end, per template language: `warden backend new` → `build` →
 * `test` (both engines) → `check` → `upload` to a server in multi-tenant mode → inference with the
 * tenant's token; and the kit's failures carrying the server's own error texts. Each template is
 * built once (beforeAll).
 */
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkComponent } from '../../host/src/backends/wasm/component-check.js';
import { ENGINE_NAMES } from '../../host/src/backends/wasm/engines.js';
import { BACKEND_API_VERSION, SUPPORTED_BACKEND_API_VERSIONS } from '../../host/src/backends/wasm/component-check.js';
import { fetchAs, PROJECT_ROOT } from '../helpers/repo.js';
import { startTenantServer, testTokens, type TenantServer } from '../helpers/servers.js';
import { backendOk, normalized, printedOutputs, runBackend, scratch, softmax } from './helpers.js';

const TOKENS = testTokens('acme');

/** Each template: its sample request and what its sample computes. */
const TEMPLATES = [
  { lang: 'ts', datatype: 'FP32', input: [1, 2, 3, 4], expected: softmax([1, 2, 3, 4]) },
  { lang: 'c', datatype: 'UINT8', input: [0, 64, 128, 255], expected: normalized([0, 64, 128, 255]) },
] as const;

let work: { dir: string; remove(): void };
let tenancy: TenantServer;
let url: string;
const project = (lang: string) => join(work.dir, `kit_${lang}`);

beforeAll(async () => {
  work = scratch('warden-kit-');
  for (const t of TEMPLATES) {
    await backendOk('new', `kit_${t.lang}`, '--lang', t.lang, '--dir', project(t.lang));
    await backendOk('build', project(t.lang));
  }
  const repo = join(work.dir, 'repo');
  mkdirSync(repo);
  tenancy = await startTenantServer(repo, [{ id: 'acme', token: TOKENS.acme }], { separateUploads: true });
  url = tenancy.server.httpUrl;
}, 300_000);

afterAll(async () => {
  await tenancy?.stop();
  work?.remove();
});

const inferAs = (token: string | undefined, model: string, datatype: string, data: number[]) =>
  fetchAs(token, 'POST', `${url}/v2/models/${model}/infer`, { inputs: [{ name: 'INPUT0', datatype, shape: [data.length], data }] });

describe.each(TEMPLATES)('the $lang template', (t) => {
  it('new writes a self-contained project with the WIT package pinned at the version the server serves', () => {
    const dir = project(t.lang);
    const manifest = JSON.parse(readFileSync(join(dir, 'warden-backend.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: `kit_${t.lang}`, lang: t.lang, wit: BACKEND_API_VERSION });
    expect(readFileSync(join(dir, 'wit', 'worlds.wit'), 'utf8')).toContain(`package warden:backend@${BACKEND_API_VERSION};`);
    for (const f of ['config.pbtxt', 'input.json', 'README.md', 'wit/deps/io/package.wit']) expect(existsSync(join(dir, f)), f).toBe(true);
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toContain(`kit_${t.lang}`);
  });

  it('build wrote 1/model.wasm, a component the server accepts; building again with nothing changed is a no-op', async () => {
    const wasm = readFileSync(join(project(t.lang), '1', 'model.wasm'));
    expect(checkComponent(wasm).exports.map((e) => e.name)).toEqual([`warden:backend/backend@${BACKEND_API_VERSION}`]);
    const again = await backendOk('build', project(t.lang));
    expect(again.stdout).toMatch(/^1\/model\.wasm is up to date/);
  });

  it.each(ENGINE_NAMES)("test runs the sample request on the %s engine: the sample's outputs, times and memory", async (engine) => {
    const r = await backendOk('test', project(t.lang), '--input', join(project(t.lang), 'input.json'), '--engine', engine, '--runs', '2');
    const [out] = printedOutputs(r.stdout);
    expect(out).toMatchObject({ name: 'OUTPUT0', datatype: 'FP32', shape: [4] });
    out!.data.forEach((v, i) => expect(v).toBeCloseTo(t.expected[i]!, 6));
    expect(r.stderr).toMatch(new RegExp(`^engine ${engine}: load [\\d.]+ ms, start [\\d.]+ ms, execute [\\d.]+ ms \\(median of 2`));
    expect(r.stderr).toMatch(/memory: [\d.]+ MiB reserved \(memory_limit_bytes \d+ per linear memory\), process peak RSS/);
  });

  it("check passes the server's load-time checks and reports the limits the server would apply", async () => {
    const r = await backendOk('check', project(t.lang));
    expect(r.stdout).toContain("passes the server's load-time checks");
    expect(r.stdout).toContain(`exports: warden:backend/backend@${BACKEND_API_VERSION}`);
    expect(r.stdout).toMatch(/limits: 1 linear memory × \d+ bytes, execute 10000 ms/);
  });

  it("upload loads it on a multi-tenant server with the tenant's token; inference there gives what test gave", async () => {
    const model = `up_${t.lang}`;
    const r = await backendOk('upload', project(t.lang), '--url', url, '--token', TOKENS.acme, '--model', model);
    expect(r.stdout).toContain(`loaded model '${model}'`);
    const res = await inferAs(TOKENS.acme, model, t.datatype, [...t.input]);
    expect(res.status, res.text).toBe(200);
    (res.json.outputs[0].data as number[]).forEach((v, i) => expect(v).toBeCloseTo(t.expected[i]!, 6));
    // the tenant's namespace: without its token the model is not there
    expect((await inferAs(undefined, model, t.datatype, [...t.input])).status).toBe(401);
  });
});

it('a C project for the world with calls to other models builds, and check sees its inference import (docs/tenant-guide.md "Calling other models")', async () => {
  const dir = join(work.dir, 'kit_bls');
  cpSync(project('c'), dir, { recursive: true });
  const manifestFile = join(dir, 'warden-backend.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  writeFileSync(
    manifestFile,
    JSON.stringify({ ...manifest, name: 'kit_bls', world: 'sandboxed-backend-with-inference', sources: ['bls.c', 'warden_guest.c'] }),
  );
  copyFileSync(join(PROJECT_ROOT, 'sample-backends', 'wasm', 'c', 'bls.c'), join(dir, 'src', 'bls.c'));
  await backendOk('build', dir);
  const r = await backendOk('check', dir);
  expect(r.stdout).toContain("passes the server's load-time checks");
  expect(r.stdout).toContain(`warden:backend/inference@${BACKEND_API_VERSION}`);
}, 120_000);

it("test runs on the engine the model's `engine` parameter names unless --engine says otherwise; an unknown one is the server's error", async () => {
  const dir = join(work.dir, 'engine-param');
  cpSync(project('c'), dir, { recursive: true });
  const config = readFileSync(join(dir, 'config.pbtxt'), 'utf8');
  const withEngine = (engine: string) =>
    writeFileSync(join(dir, 'config.pbtxt'), `${config}parameters {\n  key: "engine"\n  value: { string_value: "${engine}" }\n}\n`);
  const input = join(dir, 'input.json');
  withEngine('wasmtime');
  expect((await backendOk('test', dir, '--input', input)).stderr).toMatch(/^engine wasmtime:/);
  expect((await backendOk('test', dir, '--input', input, '--engine', 'v8')).stderr).toMatch(/^engine v8:/);
  withEngine('gpu');
  const bad = await runBackend('test', dir, '--input', input);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toBe("error: model 'kit_c': parameter engine must be one of v8, wasmtime, got 'gpu'\n");
});

describe("the kit's failures carry the server's error texts", () => {
  it('test of a request the guest refuses: exit 1 with the error the server answers for the same request', async () => {
    const dir = project('ts');
    const empty = join(work.dir, 'empty.json');
    writeFileSync(empty, JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [0], datatype: 'FP32', data: [] }] }));
    const local = await runBackend('test', dir, '--input', empty);
    expect(local.code).toBe(1);
    expect(local.stderr).toContain('INPUT0 is empty');
    await backendOk('upload', dir, '--url', url, '--token', TOKENS.acme, '--model', 'refuses');
    const remote = await inferAs(TOKENS.acme, 'refuses', 'FP32', []);
    expect(remote.status).toBe(400);
    expect(local.stderr).toBe(`error: ${remote.json.error}\n`);
  });

  it('check and upload of a component the server refuses: the same text from both', async () => {
    const dir = join(work.dir, 'broken');
    cpSync(project('c'), dir, { recursive: true });
    // a core module, not a component: what a C build without the component step gives
    writeFileSync(join(dir, '1', 'model.wasm'), Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]));
    const local = await runBackend('check', dir);
    expect(local.code).toBe(1);
    const remote = await runBackend('upload', dir, '--url', url, '--token', TOKENS.acme, '--model', 'kit_c');
    expect(remote.code).toBe(1);
    expect(local.stderr).toContain('core WebAssembly module, not a component');
    expect(remote.stderr).toBe(local.stderr);
  });

  it("upload with an unknown token: exit 1 with the server's 401 text", async () => {
    const r = await runBackend('upload', project('c'), '--url', url, '--token', 'not-a-token-of-this-server-0000000');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: .*(authentication|token)/i);
  });

  it('build refuses a project pinned at a WIT version this server does not serve, naming the ones it does', async () => {
    const dir = join(work.dir, 'future');
    cpSync(project('c'), dir, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(dir, 'warden-backend.json'), 'utf8'));
    writeFileSync(join(dir, 'warden-backend.json'), JSON.stringify({ ...manifest, wit: '1.0.0' }));
    const worlds = join(dir, 'wit', 'worlds.wit');
    writeFileSync(worlds, readFileSync(worlds, 'utf8').replace(`warden:backend@${BACKEND_API_VERSION}`, 'warden:backend@1.0.0'));
    const r = await runBackend('build', dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: the project's wit/ declares warden:backend version 1.0.0; this Warden builds and serves version ${SUPPORTED_BACKEND_API_VERSIONS.join(', ')}\n`,
    );
  });

  it('new refuses a folder that is not empty and a name the load API would refuse; usage errors exit 2', async () => {
    const taken = await runBackend('new', 'again', '--lang', 'ts', '--dir', project('ts'));
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('already exists and is not empty');
    const bad = await runBackend('new', '../escape', '--lang', 'c', '--dir', join(work.dir, 'x'));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("'../escape' is not a usable model name");
    expect((await runBackend('new', 'x', '--lang', 'cobol')).code).toBe(2);
    expect((await runBackend('test', project('ts'))).code).toBe(2);
    const missing = await runBackend('build', work.dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('is not a backend project');
  });
});
