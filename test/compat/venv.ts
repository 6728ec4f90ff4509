/**
 * The Python environment the compatibility suite drives Warden with: `.venv/` in the project
 * root (gitignored) holding NVIDIA's official client `tritonclient[http,grpc]`, KServe's own client
 * (`kserve`, for `kserve.InferenceRESTClient`) and numpy, pinned. One venv for both clients:
 * the whole install (kserve pulls fastapi, grpcio, kubernetes, pandas, ...) took 43 s on the
 * 2-core dev machine.
 *
 * Idempotent and fast when present: one `python -c` that imports the client and prints the
 * installed versions (~0.3 s). Otherwise `python3 -m venv .venv` + `pip install` of the pins.
 * Concurrent callers (several vitest workers) serialise on a lock directory.
 *
 * The suite may skip ONLY when PyPI cannot be reached: a failed install is followed by a probe
 * of the package index; if the index answers, the failure is real and is thrown.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Pinned versions (looked up with `pip index versions`; newest at the time of writing). */
export const TRITONCLIENT_VERSION = '2.73.0';
/** numpy: the Python backend's pin (its default environment is this same .venv). */
export { NUMPY_VERSION } from '../../host/src/backends/python/environment.js';
import { NUMPY_VERSION } from '../../host/src/backends/python/environment.js';
/** componentize-py, which builds the kit's Python guests (host/src/kit/build-python.ts): {@link ensureComponentizePy}. */
export { COMPONENTIZE_PY_VERSION } from '../../host/src/kit/tools.js';
import { COMPONENTIZE_PY_VERSION } from '../../host/src/kit/tools.js';
/** KServe's Python SDK (PyPI `kserve`): its `InferenceRESTClient` speaks the Open Inference Protocol. */
export const KSERVE_VERSION = '0.21.0';

/** Project root (this file is `test/compat/venv.ts`). */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const VENV_DIR = join(PROJECT_ROOT, '.venv');
export const VENV_PYTHON = join(VENV_DIR, 'bin', 'python');

export type VenvStatus = { ok: true; python: string; tritonclient: string; numpy: string; kserve: string } | { ok: false; reason: string };

export { exec, indexReachable, withLock } from '../../tools/pip.js';
import { exec, indexReachable, withLock } from '../../tools/pip.js';

interface Versions {
  tritonclient: string;
  numpy: string;
  kserve: string;
}

/** Versions importable from the venv, or undefined if the venv is missing or broken. */
async function installedVersions(python: string): Promise<Versions | undefined> {
  if (!existsSync(python)) return undefined;
  const r = await exec(
    python,
    [
      '-c',
      // kserve is not imported here: its generated protos and tritonclient.grpc's both define the
      // `inference.*` messages, so one process cannot import both (each compat script imports one).
      'import importlib.metadata as m, importlib.util as u, numpy, tritonclient.http, tritonclient.grpc; ' +
        'assert u.find_spec("kserve"); ' +
        'print(m.version("tritonclient"), numpy.__version__, m.version("kserve"))',
    ],
    60_000,
  );
  if (r.code !== 0) return undefined;
  const [tritonclient, numpy, kserve] = r.out.trim().split(/\s+/).slice(-3);
  return tritonclient && numpy && kserve ? { tritonclient, numpy, kserve } : undefined;
}

/** Overrides, for testing the install / skip decision on a scratch venv. */
export interface VenvOptions {
  /** Default: `<project root>/.venv`. */
  venvDir?: string;
  /** Default: the pinned tritonclient[http,grpc], numpy and kserve. */
  tritonclient?: string;
  numpy?: string;
  kserve?: string;
  /** Extra environment for python / pip (e.g. PIP_INDEX_URL); also used by the index probe. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Make sure the venv (default `.venv/`) holds tritonclient[http,grpc]==TRITONCLIENT_VERSION,
 * numpy==NUMPY_VERSION and kserve==KSERVE_VERSION. Returns `{ok: false, reason}` only when the install failed AND the
 * package index is unreachable; throws on any other failure (no python3, venv creation failed,
 * pip refused although the index answers). The interpreter used to create the venv is
 * `$WARDEN_PYTHON` or `python3`.
 */
export async function ensureCompatVenv(opts: VenvOptions = {}): Promise<VenvStatus> {
  const venvDir = opts.venvDir ?? VENV_DIR;
  const python = join(venvDir, 'bin', 'python');
  const env = opts.env ?? {};
  const want: Versions = {
    tritonclient: opts.tritonclient ?? TRITONCLIENT_VERSION,
    numpy: opts.numpy ?? NUMPY_VERSION,
    kserve: opts.kserve ?? KSERVE_VERSION,
  };
  const matches = (v?: Versions) => v !== undefined && v.tritonclient === want.tritonclient && v.numpy === want.numpy && v.kserve === want.kserve;

  const quick = await installedVersions(python);
  if (matches(quick)) return { ok: true, python, ...quick! };

  return withLock(venvDir, async () => {
    const again = await installedVersions(python);
    if (matches(again)) return { ok: true, python, ...again! };

    if (!existsSync(python)) {
      const python3 = process.env.WARDEN_PYTHON ?? 'python3';
      const mk = await exec(python3, ['-m', 'venv', venvDir], 120_000, env);
      if (mk.code !== 0) throw new Error(`\`${python3} -m venv ${venvDir}\` failed:\n${mk.out}`);
    }
    const requirements = [`tritonclient[http,grpc]==${want.tritonclient}`, `numpy==${want.numpy}`, `kserve==${want.kserve}`];
    const pip = await exec(python, ['-m', 'pip', 'install', '--quiet', '--timeout', '30', '--retries', '2', ...requirements], 8 * 60_000, env);
    if (pip.code !== 0) {
      const probe = await indexReachable(env);
      if (!probe.reachable) {
        return {
          ok: false,
          reason: `PyPI is unreachable (${probe.url}: ${probe.error}); cannot install ${requirements.join(' ')} into ${venvDir}`,
        };
      }
      throw new Error(`pip install ${requirements.join(' ')} failed although ${probe.url} is reachable:\n${pip.out}`);
    }
    const after = await installedVersions(python);
    if (!matches(after)) {
      throw new Error(`after pip install, ${venvDir} has ${JSON.stringify(after)}; wanted ${JSON.stringify(want)}`);
    }
    return { ok: true, python, ...after! };
  });
}

/**
 * Make sure `.venv/` (made by {@link ensureCompatVenv}) holds componentize-py at
 * {@link COMPONENTIZE_PY_VERSION}, for the kit's Python template. Returns `{ok: false, reason}`
 * only when the install failed AND the package index is unreachable; throws on any other failure.
 */
export async function ensureComponentizePy(): Promise<{ ok: true; command: string } | { ok: false; reason: string }> {
  const venv = await ensureCompatVenv();
  if (!venv.ok) return venv;
  const command = join(VENV_DIR, 'bin', 'componentize-py');
  const version = async () => (await exec(command, ['--version'], 60_000, {})).out.trim();
  const want = `componentize-py ${COMPONENTIZE_PY_VERSION}`;
  if (existsSync(command) && (await version()) === want) return { ok: true, command };
  return withLock(VENV_DIR, async () => {
    if (existsSync(command) && (await version()) === want) return { ok: true as const, command };
    const requirement = `componentize-py==${COMPONENTIZE_PY_VERSION}`;
    const pip = await exec(VENV_PYTHON, ['-m', 'pip', 'install', '--quiet', '--timeout', '30', '--retries', '2', requirement], 8 * 60_000, {});
    if (pip.code !== 0) {
      const probe = await indexReachable({});
      if (!probe.reachable)
        return { ok: false as const, reason: `PyPI is unreachable (${probe.url}: ${probe.error}); cannot install ${requirement} into ${VENV_DIR}` };
      throw new Error(`pip install ${requirement} failed although ${probe.url} is reachable:\n${pip.out}`);
    }
    const got = await version();
    if (got !== want) throw new Error(`after pip install, ${command} says '${got}'; wanted '${want}'`);
    return { ok: true as const, command };
  });
}
