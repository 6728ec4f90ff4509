#!/usr/bin/env bash
# Developer helper (not used by CI): make a git worktree of this checkout at $1 on a new branch $2
# that reuses this checkout's node_modules (symlink; .gitignore ignores it) and copies its build
# outputs, so tests run there without `npm install` and without the 6-minute wasmtime cargo build.
# native/build is NOT copied: its CMake cache holds this checkout's absolute paths. Run
# `node scripts/build-native.mjs` in the worktree before native tests (cargo finds the copied
# native/rust/target up to date).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
dst="$1"; branch="$2"
git -C "$src" worktree add -q "$dst" -b "$branch"
ln -s "$src/node_modules" "$dst/node_modules"
cd "$src"
for p in build dist native/rust/target sample-backends/wasm/ts/dist sample-backends/wasm/ts/generated \
         test/fixtures/wasm/build wit/deps .venv model_repository/*_wasm/1 model_repository/*_native/1; do
  [ -e "$p" ] && mkdir -p "$dst/$(dirname "$p")" && cp -a "$p" "$dst/$p"
done
echo "worktree $dst on $branch (run: node scripts/build-native.mjs there before native tests)"
