/**
 * The Rust build of `warden backend build` (docs/tenant-guide.md "Rust"): `cargo build --release
 * --target wasm32-wasip2` of the project's crate (the `wit-bindgen` crate makes the bindings of
 * `wit/` at compile time; the target's linker makes the component). The target's standard
 * library is a rustup component (`rustup target add wasm32-wasip2`): without it the build says
 * so and stops. Cargo's own fingerprints make a build with nothing changed cheap.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as err from './kit.errors.js';
import type { KitProject } from './project.js';

/** The Rust target a guest is built for: its std links a component directly. */
export const RUST_TARGET = 'wasm32-wasip2';

/** The crate name the template's Cargo.toml declares (its cdylib is `guest.wasm`). */
const CRATE = 'guest';

/**
 * What is missing to build a Rust guest here, or undefined when cargo and the wasm32-wasip2
 * standard library are installed.
 */
export function rustToolchainProblem(): string | undefined {
  const cargo = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
  if (cargo.error || cargo.status !== 0) return 'cargo is not installed (install Rust with rustup: https://rustup.rs)';
  const sysroot = spawnSync('rustc', ['--print', 'sysroot'], { encoding: 'utf8' });
  if (sysroot.error || sysroot.status !== 0) return 'rustc is not installed (install Rust with rustup: https://rustup.rs)';
  const std = join(sysroot.stdout.trim(), 'lib', 'rustlib', RUST_TARGET, 'lib');
  if (!existsSync(std)) return `the Rust standard library for ${RUST_TARGET} is not installed (${std} is missing): run 'rustup target add ${RUST_TARGET}'`;
  return undefined;
}

/**
 * Builds `out` from the project's crate.
 * @returns whether the component changed
 * @throws TritonError UNAVAILABLE naming what is missing (cargo, the wasm32-wasip2 standard
 *   library), INVALID_ARG with cargo's output when the build fails (crates.io unreachable included)
 */
export function buildRust(project: KitProject, out: string): boolean {
  const problem = rustToolchainProblem();
  if (problem) throw err.toolMissing(`the Rust toolchain for ${RUST_TARGET}`, problem);
  const { dir } = project;
  const r = spawnSync('cargo', ['build', '--release', '--target', RUST_TARGET], { cwd: dir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw err.toolMissing('cargo', r.error.message);
  if (r.status !== 0) throw err.buildFailed('cargo build', `${r.stdout}${r.stderr}`);
  const built = join(dir, 'target', RUST_TARGET, 'release', `${CRATE}.wasm`);
  if (!existsSync(built)) throw err.buildFailed('cargo build', `no ${built} after the build (is the crate's name still '${CRATE}', crate-type cdylib?)`);
  const changed = !existsSync(out) || !readFileSync(out).equals(readFileSync(built));
  if (changed) {
    mkdirSync(dirname(out), { recursive: true });
    copyFileSync(built, out);
  }
  return changed;
}
