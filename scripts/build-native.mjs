#!/usr/bin/env node
// Builds Warden's trusted native backend host (spec §6) from source, from `npm install`
// (scripts/build-all.mjs) or by hand:
//   native/build/Release/libtritonserver.so     the Triton C API host (SONAME libtritonserver.so)
//   native/build/Release/warden_native.node     the Node addon (RPATH $ORIGIN -> libtritonserver.so)
//   build/backends/<name>/libtriton_<name>.so   sample backends, where --backend-directory finds them
//   native/build/test-backends/<name>/...       failure-test backends (test/fixtures/native)
//   native/build/warden_native_driver           standalone driver (the ASan run builds its own)
// Needs cmake (>= 3.18) and a C/C++17 compiler; Node-API headers come from npm (node-api-headers,
// node-addon-api), so nothing is downloaded.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cmakeJs = join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
const args = [
  cmakeJs,
  'build',
  '--directory', join(root, 'native'),
  '--out', join(root, 'native', 'build'),
  '--parallel', '2',
  `--CDWARDEN_BACKEND_DIR=${join(root, 'build', 'backends')}`,
  `--CDWARDEN_TEST_BACKEND_DIR=${join(root, 'native', 'build', 'test-backends')}`,
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
