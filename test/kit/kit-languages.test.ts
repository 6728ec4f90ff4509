/**
 * The kit's Python and Rust templates end to end, as test/kit/kit.test.ts does for TypeScript and
 * C: `warden backend new` → `build` → `test` → `check` → `upload` to a server in multi-tenant
 * mode → inference with the tenant's token. Each skips, saying why, when its toolchain cannot be
 * installed here: componentize-py from PyPI (into Warden's .venv, pinned), Rust's wasm32-wasip2
 * standard library (`rustup target add wasm32-wasip2`) and crates.io for wit-bindgen. A Rust
 * build without the toolchain fails with a message naming what is missing (tested always).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_API_VERSION, checkComponent } from '../../host/src/backends/wasm/component-check.js';
import { rustToolchainProblem, RUST_TARGET } from '../../host/src/kit/build-rust.js';
import { ensureComponentizePy } from '../compat/venv.js';
import { fetchAs } from '../helpers/repo.js';
import { startTenantServer, testTokens, type TenantServer } from '../helpers/servers.js';
import { backendOk, printedOutputs, runBackend, scratch } from './helpers.js';

const TOKENS = testTokens('acme');
const TEXT = 'Hello, sandboxed world! Hello again.';

let work: { dir: string; remove(): void };
let tenancy: TenantServer;
const project = (lang: string) => join(work.dir, `kit_${lang}`);

beforeAll(async () => {
  work = scratch('warden-kit-langs-');
  const repo = join(work.dir, 'repo');
  mkdirSync(repo);
  tenancy = await startTenantServer(repo, [{ id: 'acme', token: TOKENS.acme }], { separateUploads: true });
}, 120_000);

afterAll(async () => {
  await tenancy?.stop();
  work?.remove();
});

const infer = (model: string, input: Record<string, unknown>) =>
  fetchAs(TOKENS.acme, 'POST', `${tenancy.server.httpUrl}/v2/models/${model}/infer`, { inputs: [input] });

/** Why the Python template cannot be built here, or undefined (componentize-py installed at its pin). */
const pythonSkip = await ensureComponentizePy().then(
  (r) => (r.ok ? undefined : r.reason),
  (e: Error) => `componentize-py could not be installed: ${e.message}`,
);
if (pythonSkip) console.warn(`skipping the Python template: ${pythonSkip}`);

describe.skipIf(pythonSkip !== undefined)('the py template (componentize-py)', () => {
  /** What the template's own transform gives for TEXT, run by CPython outside the sandbox. */
  let expected: number[];

  beforeAll(async () => {
    await backendOk('new', 'kit_py', '--lang', 'python', '--dir', project('py'));
    await backendOk('build', project('py'));
    const r = spawnSync(
      'python3',
      ['-c', `import sys; sys.path.insert(0, 'src'); from tokenize_text import tokenize; print(tokenize(${JSON.stringify(TEXT)}, 30522))`],
      {
        cwd: project('py'),
        encoding: 'utf8',
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expected = JSON.parse(r.stdout) as number[];
    expect(expected.length).toBe(8);
  }, 600_000);

  it('new writes the project (python is an alias of py); build made a component the server accepts; a second build is a no-op', async () => {
    const manifest = JSON.parse(readFileSync(join(project('py'), 'warden-backend.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: 'kit_py', lang: 'py', wit: BACKEND_API_VERSION, sources: ['app.py', 'backend.py', 'tokenize_text.py'] });
    for (const f of ['README.md', 'config.pbtxt', 'input.json', 'src/app.py', 'src/backend.py', 'wit/worlds.wit'])
      expect(existsSync(join(project('py'), f)), f).toBe(true);
    const surface = checkComponent(readFileSync(join(project('py'), '1', 'model.wasm')));
    expect(surface.exports.map((e) => e.name)).toEqual([`warden:backend/backend@${BACKEND_API_VERSION}`]);
    // --stub-wasi: no WASI import at all (filesystem and sockets are not in the sandbox world)
    expect(surface.imports.map((i) => i.name)).toEqual([`warden:backend/types@${BACKEND_API_VERSION}`, `warden:backend/host@${BACKEND_API_VERSION}`]);
    expect((await backendOk('build', project('py'))).stdout).toMatch(/^1\/model\.wasm is up to date/);
  });

  it("test runs the sample on the engine its config names (wasmtime): the same ids as CPython's", async () => {
    const r = await backendOk('test', project('py'), '--input', join(project('py'), 'input.json'), '--runs', '2');
    const [out] = printedOutputs(r.stdout);
    expect(out).toEqual({ name: 'TOKEN_IDS', datatype: 'INT64', shape: [8], data: expected });
    expect(r.stderr).toMatch(/^engine wasmtime: load [\d.]+ ms, start [\d.]+ ms, execute [\d.]+ ms \(median of 2/);
    expect(r.stderr).toMatch(/memory: 32\.0 MiB reserved/);
  });

  it("on the v8 engine it does not load: Node 20's V8 refuses its extended constant expressions", async () => {
    const r = await runBackend('test', project('py'), '--input', join(project('py'), 'input.json'), '--engine', 'v8');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/does not compile: WebAssembly\.compile\(\): opcode i32\.add is not allowed in constant expressions/);
  });

  it("check passes the server's load-time checks; upload serves it to the tenant with the same ids", async () => {
    expect((await backendOk('check', project('py'))).stdout).toMatch(/limits: 1 linear memory × 33554432 bytes, execute 10000 ms/);
    await backendOk('upload', project('py'), '--url', tenancy.server.httpUrl, '--token', TOKENS.acme, '--model', 'tok');
    const res = await infer('tok', { name: 'TEXT', datatype: 'BYTES', shape: [1], data: [TEXT] });
    expect(res.status, res.text).toBe(200);
    expect(res.json.outputs).toEqual([{ name: 'TOKEN_IDS', datatype: 'INT64', shape: [8], data: expected }]);
    // an empty text has no tokens
    const bad = await infer('tok', { name: 'TEXT', datatype: 'BYTES', shape: [1], data: [''] });
    expect(bad.status, bad.text).toBe(200);
    expect(bad.json.outputs[0].shape).toEqual([0]);
    // the model wrote its log line through host.log; `warden backend log` reads it back
    const log = await backendOk('log', project('py'), '--url', tenancy.server.httpUrl, '--token', TOKENS.acme, '--model', 'tok');
    expect(log.stdout).toMatch(/^\d+ \S+ v1 info guest: tok: vocab_size 30522, lowercase True$/m);
  }, 300_000);
});

const rustSkip = rustToolchainProblem();
if (rustSkip) console.warn(`skipping the Rust template: ${rustSkip}`);

describe.skipIf(rustSkip !== undefined)('the rust template (wit-bindgen, wasm32-wasip2)', () => {
  const input = [3, 4, 0, 0];
  const expected = [0.6, 0.8, 0, 0];

  beforeAll(async () => {
    await backendOk('new', 'kit_rust', '--lang', 'rust', '--dir', project('rust'));
    await backendOk('build', project('rust'));
  }, 900_000);

  it('build made a component the server accepts', () => {
    const surface = checkComponent(readFileSync(join(project('rust'), '1', 'model.wasm')));
    expect(surface.exports.map((e) => e.name)).toEqual([`warden:backend/backend@${BACKEND_API_VERSION}`]);
  });

  it.each(['v8', 'wasmtime'])('test runs the sample on the %s engine', async (engine) => {
    const r = await backendOk('test', project('rust'), '--input', join(project('rust'), 'input.json'), '--engine', engine);
    const [out] = printedOutputs(r.stdout);
    expect(out).toMatchObject({ name: 'OUTPUT0', datatype: 'FP32', shape: [4] });
    const x = [1, 2, 3, 4];
    const n = Math.hypot(...x);
    out!.data.forEach((v, i) => expect(v).toBeCloseTo(x[i]! / n, 6));
  });

  it('upload serves it to the tenant', async () => {
    await backendOk('upload', project('rust'), '--url', tenancy.server.httpUrl, '--token', TOKENS.acme, '--model', 'l2');
    const res = await infer('l2', { name: 'INPUT0', datatype: 'FP32', shape: [4], data: input });
    expect(res.status, res.text).toBe(200);
    (res.json.outputs[0].data as number[]).forEach((v, i) => expect(v).toBeCloseTo(expected[i]!, 6));
  }, 300_000);
});

it("log of a model the tenant does not have: exit 1 with the server's missing-model text", async () => {
  const r = await runBackend('log', '--url', tenancy.server.httpUrl, '--token', TOKENS.acme, '--model', 'nope');
  expect(r.code).toBe(1);
  expect(r.stderr).toBe("error: Request for unknown model: 'nope' is not found\n");
});

it('a Rust build without cargo on PATH fails naming what is missing', async () => {
  const dir = join(work.dir, 'kit_rust_nopath');
  await backendOk('new', 'nopath', '--lang', 'rust', '--dir', dir);
  const saved = process.env.PATH;
  process.env.PATH = join(work.dir, 'empty-bin');
  try {
    const r = await runBackend('build', dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: the Rust toolchain for ${RUST_TARGET} is not installed: cargo is not installed (install Rust with rustup: https://rustup.rs)\n`,
    );
  } finally {
    process.env.PATH = saved;
  }
});
