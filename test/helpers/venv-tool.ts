/**
 * A Python tool pinned from PyPI into its own virtual environment under the project (gitignored),
 * installed on first use: the object-store emulators of the repository tests (moto for `s3://`,
 * gcp-storage-emulator for `gs://`). Tests may skip only when PyPI cannot be reached (the install
 * then fails and the index does not answer); any other failure is thrown.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { exec, indexReachable, PROJECT_ROOT, withLock } from '../compat/venv.js';

/** One pinned tool. */
export interface VenvTool {
  /** Directory name under the project root (`.venv-s3`). */
  readonly venv: string;
  /** The distribution's name on PyPI (`moto`). */
  readonly distribution: string;
  readonly version: string;
  /** Extras to install (`s3,server`), if any. */
  readonly extras?: string;
}

/** `<project>/<venv>/bin/<name>`. */
export const venvBin = (tool: VenvTool, name: string): string => join(PROJECT_ROOT, tool.venv, 'bin', name);

/** `{ ok: false, reason }` only when PyPI is unreachable. @throws Error on any other install failure */
export async function ensureVenvTool(tool: VenvTool): Promise<{ ok: true } | { ok: false; reason: string }> {
  const venv = join(PROJECT_ROOT, tool.venv);
  const python = venvBin(tool, 'python');
  const installed = async () =>
    existsSync(python) &&
    (await exec(python, ['-c', `import importlib.metadata as m; print(m.version(${JSON.stringify(tool.distribution)}))`], 60_000)).out.trim() === tool.version;
  if (await installed()) return { ok: true };
  return withLock(venv, async () => {
    if (await installed()) return { ok: true };
    if (!existsSync(python)) {
      const mk = await exec(process.env.WARDEN_PYTHON ?? 'python3', ['-m', 'venv', venv], 120_000);
      if (mk.code !== 0) throw new Error(`python3 -m venv ${tool.venv} failed:\n${mk.out}`);
    }
    const req = `${tool.distribution}${tool.extras ? `[${tool.extras}]` : ''}==${tool.version}`;
    const pip = await exec(python, ['-m', 'pip', 'install', '--quiet', '--timeout', '30', '--retries', '2', req], 8 * 60_000);
    if (pip.code !== 0) {
      const probe = await indexReachable({}, tool.distribution);
      if (!probe.reachable) return { ok: false, reason: `PyPI is unreachable (${probe.url}: ${probe.error}); cannot install ${req}` };
      throw new Error(`pip install ${req} failed although ${probe.url} is reachable:\n${pip.out}`);
    }
    if (!(await installed())) throw new Error(`after pip install, ${tool.venv} has no ${tool.distribution} ${tool.version}`);
    return { ok: true };
  });
}
