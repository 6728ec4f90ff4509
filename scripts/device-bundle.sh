#!/usr/bin/env bash
# Packs what a bare GPU host without Node needs to run Warden's server and its HTTP / Python-GPU
# benchmarks (e.g. the lent H100 host, which has Python + torch + CUDA but no Node):
#   .cache/gpu/bundle.tar.xz  — this machine's `node` binary, the production dependency closure
#                               (less `binaryen`, which only the V8 engine's transpiler loads, and
#                               other platforms' ONNX Runtime binaries), autocannon's closure,
#                               dist/ and the native addon. ~52 MB; the device's carry limit is
#                               64 MiB with the tracked tree, so keep it lean.
# Run after `npm install` and `npx tsc -p tsconfig.json`. On the device, from the repo root
# (carry [".cache/gpu"]):
#   mkdir -p /x && tar -xJf .cache/gpu/bundle.tar.xz -C /x && cp -a /x/work-tree/. . && export PATH=/x/bin:$PATH
#   node scripts/http-cores.mjs 5 16,64 0,2x,4x 4
#   WARDEN_PYTHON=/opt/torch/.venv/bin/python BENCH_ONLY=python-gpu node dist/bench/run.js
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out=.cache/gpu
mkdir -p "$out"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/work-tree/native/build/Release"
cp "$(readlink -f "$(command -v node)")" "$stage/bin/node"
{
  npm ls --omit=dev --parseable --all 2>/dev/null | sed "s|^$root/||" | grep '^node_modules/'
  npm query '#autocannon, #autocannon *' 2>/dev/null | node -e 'for (const p of JSON.parse(require("fs").readFileSync(0))) console.log(p.location)'
} | grep -v '^node_modules/binaryen$' | sort -u > "$stage/list"
tar -cf - --exclude='onnxruntime-node/bin/napi-v6/darwin' --exclude='onnxruntime-node/bin/napi-v6/win32' \
  --exclude='onnxruntime-node/bin/napi-v6/linux/arm64' -T "$stage/list" | tar -xf - -C "$stage/work-tree"
cp -a dist "$stage/work-tree/"
cp native/build/Release/warden_native.node native/build/Release/libtritonserver.so "$stage/work-tree/native/build/Release/"
tar -C "$stage" -cf - bin work-tree | xz -T0 -6 > "$out/bundle.tar.xz"
ls -la "$out/bundle.tar.xz"
