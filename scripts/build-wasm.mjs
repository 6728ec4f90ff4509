#!/usr/bin/env node
// Builds Warden's sandboxed (WebAssembly component) artefacts from source:
//   - wit/deps/: the WASI 0.2.12 packages the `warden:backend` worlds refer to, taken from the
//     snapshot bundled with @bytecodealliance/jco;
//   - the sample backends in sample-backends/wasm/ (TypeScript guests through componentize-js,
//     C guests through @yowasp/clang + wit-bindgen's C bindings), written to
//     model_repository/<model>/1/model.wasm;
//   - the hostile test components of test/fixtures/wasm/ (into test/fixtures/wasm/build/).
// Every output is rebuilt only when its inputs changed (a stamp with the inputs' hash sits beside it).
//
// Usage: node scripts/build-wasm.mjs            build everything
//        node scripts/build-wasm.mjs --host-types   regenerate host/src/backends/wasm/wit-types/
//        node scripts/build-wasm.mjs --c-bindings   regenerate sample-backends/wasm/c/gen/ (needs `wit-bindgen` 0.63)
//
// Build-time only: preview2-shim runs the jco / componentize-js tools here, with `/` pre-opened
// (preview2-shim 0.26 stopped pre-opening it). Guests never see that shim.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const WIT_DIR = join(ROOT, 'wit');

let toolsPromise;
/** Loads the build tools once (after pre-opening `/` for preview2-shim). */
async function tools() {
  toolsPromise ??= (async () => {
    const fs = await import('@bytecodealliance/preview2-shim/filesystem');
    fs._setPreopens({ '/': '/' });
    const jco = await import('@bytecodealliance/jco');
    const transpile = await import('@bytecodealliance/jco-transpile');
    return { jco, transpile };
  })();
  return toolsPromise;
}

const log = (msg) => process.stdout.write(`[build-wasm] ${msg}\n`);

function hashOf(parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(typeof p === 'string' ? p : Buffer.from(p)).update('\0');
  return h.digest('hex');
}

function filesUnder(dir) {
  const out = [];
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out.sort();
}

/** Hash of a WIT package (its .wit files, not deps); default Warden's own wit/. */
function witHash(witPath = WIT_DIR) {
  return hashOf(filesUnder(witPath).filter((f) => !f.includes(`${join('wit', 'deps')}`)).flatMap((f) => [relative(ROOT, f), readFileSync(f)]));
}

function upToDate(out, hash) {
  const stamp = `${out}.stamp`;
  return existsSync(out) && existsSync(stamp) && readFileSync(stamp, 'utf8') === hash;
}

function writeOutput(out, bytes, hash) {
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, bytes);
  writeFileSync(`${out}.stamp`, hash);
}

/** WASI packages (jco's bundled 0.2.12 snapshot) that `wit/worlds.wit` needs to resolve. */
const WASI_DEPS = ['io', 'clocks', 'random', 'cli', 'filesystem', 'sockets'];

/** Fills wit/deps/ from jco's bundled WASI 0.2.12 WIT. Idempotent. */
export function prepareWitDeps() {
  const snapshot = join(ROOT, 'node_modules', '@bytecodealliance', 'jco', 'lib', 'wit', 'builtin', '0.2.12');
  for (const p of WASI_DEPS) {
    const src = join(snapshot, `wasi-${p}`, 'package.wit');
    const dst = join(WIT_DIR, 'deps', p, 'package.wit');
    const bytes = readFileSync(src);
    if (existsSync(dst) && readFileSync(dst).equals(bytes)) continue;
    mkdirSync(dirname(dst), { recursive: true });
    writeFileSync(dst, bytes);
  }
}

async function writeTree(files, outDir) {
  rmSync(outDir, { recursive: true, force: true });
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
  }
}

/** Host-side TypeScript types of the `sandbox` world (everything the host supplies + the backend export). */
export async function generateHostTypes(outDir = join(ROOT, 'host', 'src', 'backends', 'wasm', 'wit-types')) {
  prepareWitDeps();
  const { transpile } = await tools();
  const files = await transpile.generateHostTypes(WIT_DIR, { worldName: 'sandbox', outDir: `${outDir}/` });
  await writeTree(files, outDir);
  return outDir;
}

/** Guest-side TypeScript declarations (`declare module 'warden:backend/host@0.1.0'` ...) for TS samples. */
export async function generateGuestTypes(outDir) {
  prepareWitDeps();
  const { transpile } = await tools();
  const files = await transpile.generateGuestTypes(WIT_DIR, { worldName: 'sandboxed-backend-with-clocks', outDir: `${outDir}/` });
  await writeTree(files, outDir);
  return outDir;
}

// ---------------------------------------------------------------------------------------------
// TypeScript guests (componentize-js 0.23, all StarlingMonkey WASI features disabled)

const TS_DIR = join(ROOT, 'sample-backends', 'wasm', 'ts');

/** Type-checks and compiles the TypeScript samples to JS (sample-backends/wasm/ts/dist/). */
function compileTsGuests() {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(TS_DIR, 'tsconfig.json')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`tsc failed for ${TS_DIR}`);
}

/**
 * Componentizes one JS module (ESM, single file or relative imports) against a world of
 * `warden:backend`. No StarlingMonkey WASI feature is enabled unless listed in `features` (only
 * hostile fixtures do that), so the component imports only what its world names. `witPath` is
 * the WIT package (with its deps/) to build against: Warden's wit/ by default, a tenant
 * project's pinned copy for `warden backend build` (host/src/kit/).
 */
export async function componentizeJs({ source, world, out, features = [], witPath = WIT_DIR }) {
  const hash = hashOf([witHash(witPath), ...filesUnder(dirname(source)).filter((f) => f.endsWith('.js')).flatMap((f) => [f, readFileSync(f)]), world, ...features, 'componentize-js-0.23']);
  if (upToDate(out, hash)) return false;
  if (witPath === WIT_DIR) prepareWitDeps();
  await tools();
  const { componentize } = await import('@bytecodealliance/componentize-js');
  const { component } = await componentize({
    sourcePath: source,
    witPath,
    worldName: world,
    disableFeatures: ['stdio', 'random', 'clocks', 'http', 'fetch-event'].filter((f) => !features.includes(f)),
  });
  writeOutput(out, component, hash);
  return true;
}

// ---------------------------------------------------------------------------------------------
// C guests (@yowasp/clang for wasm32, wasi-libc only for malloc/memcpy: no WASI import remains)

const C_DIR = join(ROOT, 'sample-backends', 'wasm', 'c');
const C_GEN = join(C_DIR, 'gen');

/**
 * wit-bindgen's arguments for the committed C bindings: the widest guest world
 * (`sandboxed-backend-with-inference`: host, clocks, random, inference) under the name
 * `sandboxed-backend`, so that every C guest includes `sandboxed_backend.h`; a component imports
 * only the functions its code calls, and `buildC`'s `world` says which world it is checked against.
 */
const C_BINDINGS_ARGS = ['c', WIT_DIR, '--world', 'sandboxed-backend-with-inference', '--rename-world', 'sandboxed-backend', '--no-object-file'];

/** Regenerates the committed C bindings with wit-bindgen (0.63). */
export function generateCBindings() {
  prepareWitDeps();
  const r = spawnSync('wit-bindgen', [...C_BINDINGS_ARGS, '--out-dir', C_GEN], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('wit-bindgen c failed (is wit-bindgen-cli 0.63 installed? `cargo install wit-bindgen-cli --version 0.63.0`)');
}

/** Checks the committed C bindings against the WIT when wit-bindgen is installed; true if checked. */
export function checkCBindings() {
  const probe = spawnSync('wit-bindgen', ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0) return false;
  prepareWitDeps();
  const r = spawnSync('wit-bindgen', [...C_BINDINGS_ARGS, '--out-dir', C_GEN, '--check'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sample-backends/wasm/c/gen/ is stale for wit/: run node scripts/build-wasm.mjs --c-bindings\n${r.stderr}`);
  return true;
}

/**
 * Compiles C sources (paths relative to `srcDir`, plus the generated bindings) to a core
 * module with clang (wasm32-wasip1 reactor, SIMD), then makes it a component of `world`.
 * `defines` are extra `-D` flags (used by the hostile fixtures). `witPath`, `genDir` (the
 * wit-bindgen bindings) and `headerDir` (the `.h` files) default to Warden's own; a tenant
 * project built by `warden backend build` (host/src/kit/) passes its pinned copies.
 */
export async function buildC({ srcDir, sources, world = 'sandboxed-backend', out, defines = [], extraFiles = {}, witPath = WIT_DIR, genDir = C_GEN, headerDir = C_DIR }) {
  const tree = {};
  const inputs = [witHash(witPath), world, ...defines, 'clang-wasm32-O2-simd128'];
  const add = (name, bytes) => {
    tree[name] = bytes;
    inputs.push(name, bytes);
  };
  for (const f of readdirSync(genDir)) add(f, readFileSync(join(genDir, f)));
  for (const f of readdirSync(headerDir)) if (f.endsWith('.h')) add(f, readFileSync(join(headerDir, f)));
  for (const s of sources) add(s, readFileSync(existsSync(join(srcDir, s)) ? join(srcDir, s) : join(C_DIR, s)));
  for (const [n, b] of Object.entries(extraFiles)) add(n, b);
  const hash = hashOf(inputs);
  if (upToDate(out, hash)) return false;
  const { runClang } = await import('@yowasp/clang');
  const args = ['clang', '--target=wasm32-wasip1', '-mexec-model=reactor', '-O2', '-msimd128', '-std=c11',
    '-Wall', '-Werror', '-Wno-unused-function', ...defines.map((d) => `-D${d}`), '-o', 'out.wasm', ...sources, 'sandboxed_backend.c'];
  let result;
  try {
    result = await runClang(args, tree, { stdout: null, fetchProgress: () => {} });
  } catch (e) {
    throw new Error(`clang failed for ${sources.join(' ')}: ${e.message}`);
  }
  const core = result['out.wasm'];
  const mod = await WebAssembly.compile(core);
  const wasiImports = WebAssembly.Module.imports(mod).filter((i) => !i.module.startsWith('[export]') && !i.module.startsWith('warden:'));
  if (wasiImports.length > 0) {
    throw new Error(`${sources.join(' ')} imports ${wasiImports.map((i) => `${i.module}.${i.name}`).join(', ')}: C guests must not call WASI`);
  }
  if (witPath === WIT_DIR) prepareWitDeps();
  const { jco } = await tools();
  const embedded = await jco.componentEmbed({ binary: core, witPath, world });
  const component = await jco.componentNew(embedded);
  writeOutput(out, component, hash);
  return true;
}

/** Makes a component from WebAssembly text (component-model WAT), e.g. a tiny hostile fixture. */
export async function buildWat({ wat, out }) {
  const hash = hashOf([wat, 'wat']);
  if (upToDate(out, hash)) return false;
  const { jco } = await tools();
  writeOutput(out, await jco.parse(wat), hash);
  return true;
}

// ---------------------------------------------------------------------------------------------
// What `npm install` builds

/** Sample backends served from model_repository/: [model, builder]. */
export function sampleTargets() {
  const repo = join(ROOT, 'model_repository');
  const js = (name) => join(TS_DIR, 'dist', `${name}.js`);
  return [
    ['identity_wasm', () => componentizeJs({ source: js('identity'), world: 'sandboxed-backend', out: join(repo, 'identity_wasm', '1', 'model.wasm') })],
    ['add_sub_wasm', () => componentizeJs({ source: js('add_sub'), world: 'sandboxed-backend', out: join(repo, 'add_sub_wasm', '1', 'model.wasm') })],
    ['repeat_wasm', () => componentizeJs({ source: js('repeat'), world: 'sandboxed-backend-with-clocks', out: join(repo, 'repeat_wasm', '1', 'model.wasm') })],
    ['preprocess_wasm', () => buildC({ srcDir: C_DIR, sources: ['preprocess.c', 'warden_guest.c'], out: join(repo, 'preprocess_wasm', '1', 'model.wasm') })],
    // one component, two models: calls `simple` (bls_wasm) or streams from `repeat_native` (bls_stream_wasm, decoupled)
    ...['bls_wasm', 'bls_stream_wasm'].map((model) => [
      model,
      () => buildC({ srcDir: C_DIR, sources: ['bls.c', 'warden_guest.c'], world: 'sandboxed-backend-with-inference', out: join(repo, model, '1', 'model.wasm') }),
    ]),
  ];
}

/** Builds the hostile fixtures (test/fixtures/wasm/build/), via test/fixtures/wasm/fixtures.mjs. */
export async function buildFixtures() {
  const list = join(ROOT, 'test', 'fixtures', 'wasm', 'fixtures.mjs');
  if (!existsSync(list)) return;
  const { fixtureTargets } = await import(pathToFileURL(list).href);
  for (const [name, build] of fixtureTargets({ buildC, buildWat, componentizeJs, ROOT })) {
    if (await build()) log(`fixture ${name}`);
  }
}

export async function buildAll() {
  prepareWitDeps();
  checkCBindings();
  await generateGuestTypes(join(TS_DIR, 'generated'));
  compileTsGuests();
  for (const [name, build] of sampleTargets()) {
    const t = Date.now();
    if (await build()) log(`${name}: built in ${Date.now() - t} ms`);
    else log(`${name}: up to date`);
  }
  await buildFixtures();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = process.argv[2];
  try {
    if (arg === '--host-types') log(`host types written to ${relative(ROOT, await generateHostTypes())}`);
    else if (arg === '--c-bindings') generateCBindings();
    else if (arg === '--fixtures') await buildFixtures();
    else await buildAll();
  } catch (e) {
    process.stderr.write(`[build-wasm] ${e.stack ?? e}\n`);
    process.exit(1);
  }
}
