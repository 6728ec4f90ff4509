/**
 * Which Python runs a model's stub (spec §7):
 *
 * - `parameters { key: "EXECUTION_ENV_PATH" value { string_value: "..." } }` in the model config,
 *   as Triton: a directory holding `bin/python` (a virtualenv or an unpacked conda env), or a
 *   `.tar.gz` packed env (conda-pack), unpacked once into `<cache>/python-envs/<sha256>/`.
 *   `$$TRITON_MODEL_DIRECTORY` is replaced by the model's directory.
 * - otherwise `$WARDEN_PYTHON`, else the project's `.venv/bin/python` (created by `npm install`
 *   with numpy {@link NUMPY_VERSION}), else `python3` on the PATH.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { ModelConfig } from '../../contract/model-config.js';
import * as errors from './python.errors.js';
import { PYTHON_DIR } from './stub.js';

/** numpy pinned for the default environment (the same pin as the compatibility suite's venv). */
export const NUMPY_VERSION = '2.4.6';

/** The project root (PYTHON_DIR is `<root>/host/python`). */
const PROJECT_ROOT = resolve(PYTHON_DIR, '..', '..');
/** `<root>/.venv`: the default environment `npm install` creates. */
export const DEFAULT_VENV = join(PROJECT_ROOT, '.venv');

/** The interpreter for models without EXECUTION_ENV_PATH. */
export function defaultPython(): string {
  if (process.env.WARDEN_PYTHON) return process.env.WARDEN_PYTHON;
  const venv = join(DEFAULT_VENV, 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

/**
 * The interpreter of a model: from EXECUTION_ENV_PATH, else {@link defaultPython}.
 * @param cacheDir where packed envs are unpacked
 * @throws TritonError INVALID_ARG if the path holds no `bin/python` or the archive cannot be unpacked
 */
export function pythonFor(config: ModelConfig, modelPath: string, cacheDir: string): string {
  const raw = config.parameters.EXECUTION_ENV_PATH?.string_value;
  if (raw === undefined || raw === '') return defaultPython();
  let p = raw.replaceAll('$$TRITON_MODEL_DIRECTORY', modelPath);
  if (!isAbsolute(p)) p = resolve(modelPath, p);
  let dir = p;
  if (/\.(tar\.gz|tgz)$/.test(p)) {
    if (!existsSync(p)) throw errors.envArchiveMissing(config.name);
    const digest = createHash('sha256').update(readFileSync(p)).digest('hex').slice(0, 32);
    dir = join(cacheDir, 'python-envs', digest);
    if (!existsSync(join(dir, 'bin', 'python'))) {
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      // tar refuses absolute names and `..` members by default (GNU tar).
      const r = spawnSync('tar', ['-xzf', p, '-C', tmp], { stdio: 'pipe' });
      if (r.status !== 0) {
        rmSync(tmp, { recursive: true, force: true });
        throw errors.envArchiveUnpack(config.name, String(r.stderr));
      }
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
    }
  }
  const python = join(dir, 'bin', 'python');
  try {
    if (statSync(python).isFile()) return python;
  } catch {
    /* below */
  }
  throw errors.envNoPython(config.name);
}
