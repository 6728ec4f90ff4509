#!/usr/bin/env node
// Builds Warden's trusted native backend host (spec §6) from source, from `npm install`
// (scripts/build-all.mjs) or by hand:
//   native/build/Release/libtritonserver.so     the Triton C API host (SONAME libtritonserver.so)
//   native/build/Release/warden_native.node     the Node addon (RPATH $ORIGIN -> libtritonserver.so)
//   build/backends/<name>/libtriton_<name>.so   sample backends, where --backend-directory finds them
//   native/build/test-backends/<name>/...       failure-test backends (test/fixtures/native)
//   native/build/warden_native_driver           standalone driver (the ASan run builds its own)
//   native/wasmtime/target/release/libwarden_wasmtime.a   the wasmtime sandbox engine (Rust, linked
//                                                into the addon; `cargo build --release --locked`)
// Needs cmake (>= 3.18), a C/C++17 compiler and cargo (Rust >= 1.95; crates from crates.io, pinned
// by native/wasmtime/Cargo.lock); Node-API headers come from npm (node-api-headers, node-addon-api).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareWitDeps } from './build-wasm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// The wasmtime engine first: the addon links it. Its bindings come from wit/ (+ the WASI deps).
// A failure fails the whole build (and so `npm install`): the engine is not optional.
prepareWitDeps();
const crate = join(root, 'native', 'wasmtime');
const cargoArgs = ['build', '--release', '--locked', '--manifest-path', join(crate, 'Cargo.toml')];
if (!process.argv.includes('--verbose')) cargoArgs.push('--quiet');
const cargo = spawnSync('cargo', cargoArgs, { cwd: crate, stdio: 'inherit', env: { ...process.env, CARGO_TARGET_DIR: join(crate, 'target') } });
if (cargo.status !== 0) {
  process.stderr.write(`[build-native] cargo build of the wasmtime engine failed${cargo.error ? ` (${cargo.error.message})` : ''}; Rust >= 1.95 (cargo) is required\n`);
  process.exit(cargo.status ?? 1);
}
const wasmtimeLib = join(crate, 'target', 'release', 'libwarden_wasmtime.a');
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
  `--CDWARDEN_WASMTIME_LIB=${wasmtimeLib}`,
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
