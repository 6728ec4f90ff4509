#!/usr/bin/env node
// Lints native/ (`npm run lint:native`): fails on the first check that reports anything.
//   rustfmt        `cargo fmt --all --check` over the Cargo workspace native/rust (rustfmt.toml)
//   clippy         `cargo clippy --workspace --all-targets --locked -- -D warnings`: the
//                  workspace's [workspace.lints] and each crate's
//                  #![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
//   clang-format   `clang-format --dry-run --Werror` (native/.clang-format) over the C/C++ files of
//                  native/src, native/include and native/test; the binary comes from the npm
//                  package `clang-format`, so every machine checks with the same version
// Clippy shares native/rust/target with scripts/build-native.mjs (its first run checks every
// dependency once). Fix formatting with `cargo fmt --all` in native/rust and
// `npx clang-format -i --style=file <files>`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareWitDeps } from './build-wasm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const workspace = join(root, 'native', 'rust');
const cargoEnv = { ...process.env, CARGO_TARGET_DIR: join(workspace, 'target') };

/** C/C++ sources and headers under `dir`, recursively. */
function cppFiles(dir) {
  const out = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...cppFiles(p));
    else if (/\.(c|cc|cpp|h|hpp)$/.test(d.name)) out.push(p);
  }
  return out.sort();
}

function run(name, cmd, args, opts = {}) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  const s = (Number(process.hrtime.bigint() - t0) / 1e9).toFixed(1);
  if (r.status !== 0) {
    process.stderr.write(`[lint-native] ${name} failed${r.error ? ` (${r.error.message})` : ''} after ${s} s\n`);
    process.exit(r.status || 1);
  }
  process.stdout.write(`[lint-native] ${name}: clean (${s} s)\n`);
}

run('rustfmt', 'cargo', ['fmt', '--all', '--check'], { cwd: workspace, env: cargoEnv });
// the wasmtime engine's bindgen! reads wit/ and the WASI packages it imports (wit/deps)
prepareWitDeps();
run('clippy', 'cargo', ['clippy', '--quiet', '--workspace', '--all-targets', '--locked', '--', '-D', 'warnings'], { cwd: workspace, env: cargoEnv });
const clangFormat = createRequire(import.meta.url)('clang-format').getNativeBinary();
const files = ['src', 'include', 'test'].flatMap((d) => cppFiles(join(root, 'native', d)));
run(`clang-format (${files.length} files)`, clangFormat, ['--dry-run', '--Werror', '--style=file', ...files.map((f) => relative(root, f))], { cwd: root });
