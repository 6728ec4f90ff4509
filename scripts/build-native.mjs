#!/usr/bin/env node
// Builds Warden's trusted native backend host (spec §6) from source, from `npm install`
// (scripts/build-all.mjs) or by hand:
//   native/build/Release/libtritonserver.so     the Triton C API host (SONAME libtritonserver.so)
//   native/build/Release/warden_native.node     the Node addon (RPATH $ORIGIN -> libtritonserver.so)
//   build/backends/<name>/libtriton_<name>.so   sample backends, where --backend-directory finds them
//   native/build/test-backends/<name>/...       failure-test backends (test/fixtures/native)
//   native/build/warden_native_driver           standalone driver (the ASan run, test/backends/native/asan.test.ts,
//                                               builds its own with -DWARDEN_ASAN=ON)
//   native/rust/target/release/libwarden_native_rs.a   the Rust engines, linked into the addon: the
//                                               Cargo workspace native/rust (crates ffi, wasmtime-engine,
//                                               ort-engine, and warden-native-rs, the one staticlib that
//                                               carries their C ABIs); `cargo build --release --locked`
// Needs cmake (>= 3.18), a C/C++17 compiler and cargo (Rust >= 1.95; crates from crates.io, pinned
// by native/rust/Cargo.lock); Node-API headers come from npm (node-api-headers, node-addon-api).
// native/README.md describes the layout.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareWitDeps } from './build-wasm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// The Rust engines first: the addon links them. The wasmtime engine's bindings come from wit/ (+ the
// WASI deps). A failure fails the whole build (and so `npm install`): the engines are not optional.
prepareWitDeps();
const workspace = join(root, 'native', 'rust');
const cargoArgs = ['build', '--release', '--locked', '--manifest-path', join(workspace, 'Cargo.toml'), '-p', 'warden-native-rs'];
if (!process.argv.includes('--verbose')) cargoArgs.push('--quiet');
const cargo = spawnSync('cargo', cargoArgs, { cwd: workspace, stdio: 'inherit', env: { ...process.env, CARGO_TARGET_DIR: join(workspace, 'target') } });
if (cargo.status !== 0) {
  process.stderr.write(`[build-native] cargo build of the Rust engines (native/rust) failed${cargo.error ? ` (${cargo.error.message})` : ''}; Rust >= 1.95 (cargo) is required\n`);
  process.exit(cargo.status ?? 1);
}
const rustLib = join(workspace, 'target', 'release', 'libwarden_native_rs.a');
// libuv's header (the addon's JS-thread wake-up, native/src/addon/js_wake.h, is a uv_async_t):
// node-api-headers has none, but every Node distribution (official tarballs, Debian/nodesource
// packages, nvm, Docker images) ships <prefix>/include/node/uv.h beside the binary.
const nodeInclude = join(dirname(dirname(process.execPath)), 'include', 'node');
if (!existsSync(join(nodeInclude, 'uv.h'))) {
  process.stderr.write(`[build-native] ${join(nodeInclude, 'uv.h')} not found: the addon needs the libuv header that Node distributions ship in <prefix>/include/node\n`);
  process.exit(1);
}
const cmakeJs = join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
const args = [
  cmakeJs,
  'build',
  '--directory', join(root, 'native'),
  '--out', join(root, 'native', 'build'),
  '--parallel', '2',
  `--CDWARDEN_BACKEND_DIR=${join(root, 'build', 'backends')}`,
  `--CDWARDEN_TEST_BACKEND_DIR=${join(root, 'native', 'build', 'test-backends')}`,
  `--CDWARDEN_RUST_LIB=${rustLib}`,
  `--CDWARDEN_NODE_INCLUDE=${nodeInclude}`,
];
if (!process.argv.includes('--verbose')) args.push('--log-level', 'warn');
const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
if (r.status !== 0) {
  process.stderr.write('[build-native] cmake-js build failed; cmake and a C++17 compiler are required\n');
  process.exit(r.status ?? 1);
}
// The sample models' version directories (Triton needs one; the libraries live in build/backends).
for (const model of ['identity_native', 'add_sub_native', 'repeat_native']) {
  mkdirSync(join(root, 'model_repository', model, '1'), { recursive: true });
}
