#!/usr/bin/env node
// Runs after `npm install` (scripts/build-all.mjs): the default environment of Warden's Python
// backend, `.venv/` in the project root (gitignored), with numpy pinned to NUMPY_VERSION of
// host/src/backends/python/environment.ts — the same venv and pin the compatibility suite
// (test/compat/venv.ts) adds tritonclient to. Python models use it unless $WARDEN_PYTHON or a
// model's EXECUTION_ENV_PATH says otherwise.
//
// Never fails the install: without python3 or PyPI, it warns; Python models then fail to load
// with "No module named 'numpy'" and every other model is served.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { NUMPY_VERSION } = await import(pathToFileURL(join(root, 'dist', 'host', 'src', 'backends', 'python', 'environment.js')).href);
const venv = join(root, '.venv');
const python = join(venv, 'bin', 'python');
const run = (cmd, args) => spawnSync(cmd, args, { cwd: root, encoding: 'utf8', env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
const warn = (msg) => process.stderr.write(`[build-python] ${msg}\n`);

const have = existsSync(python) ? run(python, ['-c', 'import numpy; print(numpy.__version__)']) : undefined;
if (have?.status === 0 && have.stdout.trim() === NUMPY_VERSION) {
  process.stdout.write(`[build-python] .venv has numpy ${NUMPY_VERSION}\n`);
  process.exit(0);
}
if (!existsSync(python)) {
  const py3 = process.env.WARDEN_PYTHON ?? 'python3';
  const mk = run(py3, ['-m', 'venv', venv]);
  if (mk.status !== 0) {
    warn(`'${py3} -m venv .venv' failed; Python models will not load until numpy is available:\n${mk.stderr ?? mk.error}`);
    process.exit(0);
  }
}
const pip = run(python, ['-m', 'pip', 'install', '--quiet', '--timeout', '30', '--retries', '2', `numpy==${NUMPY_VERSION}`]);
if (pip.status !== 0) warn(`pip install numpy==${NUMPY_VERSION} failed; Python models will not load until numpy is available:\n${pip.stderr}`);
else process.stdout.write(`[build-python] .venv: numpy ${NUMPY_VERSION}\n`);
