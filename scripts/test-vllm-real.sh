#!/usr/bin/env bash
# Runs the vLLM bridge against real vLLM (test/backends/python/vllm-real.test.ts) on a host where vLLM can be
# installed (a CUDA GPU). Usage: scripts/test-vllm-real.sh [python-with-vllm]
#   - with an argument: that interpreter (it must import vllm and numpy);
#   - without: creates .venv-vllm with `pip install vllm numpy` (needs network and a GPU build).
# WARDEN_VLLM_MODEL picks the model (default facebook/opt-125m, downloaded from the Hugging Face Hub).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:-}"
if [ -z "$py" ]; then
  [ -x .venv-vllm/bin/python ] || python3 -m venv .venv-vllm
  .venv-vllm/bin/python -m pip install --quiet vllm numpy
  py=.venv-vllm/bin/python
fi
"$py" -c 'import vllm, numpy; print("vllm", vllm.__version__)'
WARDEN_PYTHON="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")" npx vitest run test/backends/python/vllm-real.test.ts
