/**
 * The Python build of `warden backend build` (docs/tenant-guide.md "Python"): componentize-py
 * (PyPI, pinned in ./tools.ts) embeds CPython, the project's `src/` modules and their imports,
 * pre-initialised at build time, into a component of the project's world. Two steps make it a
 * component the sandbox admits:
 *
 * - `--stub-wasi`: CPython's libc imports WASI filesystem and sockets, which the sandbox world
 *   does not have (DESIGN "Sandbox rules"); the build replaces every WASI import with a trapping
 *   stub, so the guest must not touch files, clocks or randomness at run time (the template
 *   sends stdout / stderr to `host.log` instead);
 * - the pre-initialisation interface componentize-py leaves exported (`exports`) is removed
 *   (./strip-export.ts): the server admits only the `warden:backend/backend` export.
 *
 * A build whose inputs did not change is skipped (the stamp beside `build/model.wasm`).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import * as err from './kit.errors.js';
import { witPath, type KitProject } from './project.js';
import { stripComponentExport } from './strip-export.js';
import { componentizePyCommand, COMPONENTIZE_PY_VERSION } from './tools.js';

/** componentize-py's export of its pre-initialisation functions. */
const INIT_EXPORT = 'exports';

/** Every file under `dir`, sorted, as paths relative to `root`. */
function filesUnder(dir: string, root: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== '__pycache__') out.push(...filesUnder(p, root));
    } else out.push(relative(root, p));
  }
  return out.sort();
}

/** componentize-py's output without its Rust backtrace lines (they say nothing to a tenant). */
function toolOutput(text: string): string {
  return text
    .split('\n')
    .filter((l) => !/^\s+\d+: /.test(l) && !/^\s+at /.test(l) && l.trim() !== 'Stack backtrace:')
    .join('\n');
}

/**
 * Builds `out` from the project's Python sources.
 * @returns false when the inputs had not changed since the last build (nothing was done)
 * @throws TritonError UNAVAILABLE when componentize-py is not installed, INVALID_ARG with its
 *   output when the build fails (a Python error at import time included)
 */
export function buildPython(project: KitProject, out: string): boolean {
  const { dir, manifest } = project;
  const tool = componentizePyCommand();
  const version = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0) {
    throw err.toolMissing(
      'componentize-py',
      `install it with 'pip install componentize-py==${COMPONENTIZE_PY_VERSION}' (Warden's .venv or your PATH)${version.error ? ` (${version.error.message})` : ''}`,
    );
  }
  const src = join(dir, 'src');
  const hash = createHash('sha256').update(`${version.stdout.trim()}\n${manifest.world}\n${manifest.sources.join(',')}\n`);
  for (const f of [...filesUnder(src, dir), ...filesUnder(witPath(dir), dir)]) hash.update(`${f}\n`).update(readFileSync(join(dir, f)));
  const stamp = hash.digest('hex');
  const stampFile = `${out}.stamp`;
  if (existsSync(out) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return false;
  mkdirSync(dirname(out), { recursive: true });
  const raw = join(dirname(out), 'componentize-py.wasm');
  const entry = manifest.sources[0]!.replace(/\.py$/, '');
  const args = ['-d', witPath(dir), '-w', manifest.world, 'componentize', '--stub-wasi', '-p', src, '-o', raw, entry];
  // no VIRTUAL_ENV: the component holds the project's src/ and the standard library, nothing of a venv
  const env = { ...process.env, VIRTUAL_ENV: '', PYTHONDONTWRITEBYTECODE: '1' };
  const r = spawnSync(tool, args, { cwd: dir, encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw err.toolMissing('componentize-py', r.error.message);
  if (r.status !== 0) throw err.buildFailed('componentize-py', toolOutput(`${r.stdout}${r.stderr}`));
  writeFileSync(out, stripComponentExport(readFileSync(raw), INIT_EXPORT));
  writeFileSync(stampFile, stamp);
  return true;
}
