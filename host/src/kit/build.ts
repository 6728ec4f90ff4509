/**
 * `warden backend build [dir]`: the project's component at `1/model.wasm`, built against the
 * project's pinned wit/ by Warden's own build code (scripts/build-wasm.mjs): TypeScript through
 * `tsc` then componentize-js (no StarlingMonkey WASI feature enabled, so the component imports
 * only what its world names); C through clang for wasm32 (@yowasp/clang, the compiler Warden's
 * C samples use), then jco's component embedding; Python through componentize-py
 * (./build-python.ts); Rust through cargo for wasm32-wasip2 and the wit-bindgen crate
 * (./build-rust.ts). Intermediate files go to `build/`; a build whose inputs did not change is
 * skipped (the stamp beside `build/model.wasm`; cargo's own fingerprints for Rust).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../project.js';
import * as err from './kit.errors.js';
import { supportedWitVersions } from './versions.js';
import { componentPath, witPackageVersion, witPath, type KitProject } from './project.js';
import { buildWasm } from './tools.js';
import { buildPython } from './build-python.js';
import { buildRust } from './build-rust.js';

/** What a build did. */
export interface BuildResult {
  /** `1/model.wasm` of the project. */
  component: string;
  bytes: number;
  /** False when the inputs had not changed since the last build. */
  rebuilt: boolean;
  ms: number;
}

/**
 * Checks that the project's wit/ declares the version its manifest pins and that this Warden
 * serves it.
 * @throws TritonError INVALID_ARG otherwise
 */
export function checkPinnedWit(project: KitProject): void {
  const have = witPackageVersion(witPath(project.dir));
  if (have === undefined) throw err.projectInvalid(witPath(project.dir), 'no worlds.wit declaring package warden:backend@<version>');
  if (have !== project.manifest.wit)
    throw err.projectInvalid(witPath(project.dir), `declares warden:backend@${have}, warden-backend.json pins ${project.manifest.wit}`);
  if (!supportedWitVersions().includes(have)) throw err.witVersionUnsupported(have, supportedWitVersions());
}

/** Compiles the TypeScript sources to `build/` with the project's tsconfig.json. */
function compileTs(dir: string): void {
  const tsc = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir, encoding: 'utf8' });
  if (r.error) throw err.toolMissing('typescript', r.error.message);
  if (r.status !== 0) throw err.buildFailed('tsc', `${r.stdout}${r.stderr}`);
}

/**
 * Builds the project's component.
 * @throws TritonError INVALID_ARG for a compile error (the compiler's output in the message) or a
 *   wit/ this Warden does not serve, UNAVAILABLE when a build tool is not installed
 */
export async function buildProject(project: KitProject): Promise<BuildResult> {
  const t0 = performance.now();
  checkPinnedWit(project);
  const { dir, manifest } = project;
  const out = join(dir, 'build', 'model.wasm');
  const tools = await buildWasm();
  let rebuilt: boolean;
  if (manifest.lang === 'ts') {
    compileTs(dir);
    const entry = join(dir, 'build', manifest.sources[0]!.replace(/\.ts$/, '.js'));
    try {
      rebuilt = await tools.componentizeJs({ source: entry, world: manifest.world, out, witPath: witPath(dir) });
    } catch (e) {
      const msg = (e as Error).message;
      if (/Cannot find (package|module) '@bytecodealliance\/componentize-js'/.test(msg)) {
        throw err.toolMissing('@bytecodealliance/componentize-js', "run 'npm install' in Warden's folder (it is a development dependency)");
      }
      throw err.buildFailed('componentize-js', msg);
    }
  } else if (manifest.lang === 'py') {
    rebuilt = buildPython(project, out);
  } else if (manifest.lang === 'rust') {
    rebuilt = buildRust(project, out);
  } else {
    const src = join(dir, 'src');
    try {
      rebuilt = await tools.buildC({
        srcDir: src,
        sources: manifest.sources,
        world: manifest.world,
        out,
        witPath: witPath(dir),
        genDir: join(src, 'gen'),
        headerDir: src,
      });
    } catch (e) {
      throw err.buildFailed('the C build', (e as Error).message);
    }
  }
  const component = componentPath(dir);
  mkdirSync(dirname(component), { recursive: true });
  if (rebuilt || !sameFile(out, component)) copyFileSync(out, component);
  return { component, bytes: statSync(component).size, rebuilt, ms: performance.now() - t0 };
}

function sameFile(a: string, b: string): boolean {
  try {
    return readFileSync(a).equals(readFileSync(b));
  } catch {
    return false;
  }
}
