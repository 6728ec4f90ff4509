/**
 * Warden's own build pieces the kit reuses instead of copying them: scripts/build-wasm.mjs
 * (componentize-js for TypeScript guests, clang + jco for C guests; the same code that builds
 * Warden's samples) and the files a new project takes from Warden's tree.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as BuildWasm from '../../../scripts/build-wasm.mjs';
import { PROJECT_ROOT } from '../project.js';

/** Warden's WIT package (the server's `sandbox` world). */
export const WARDEN_WIT = join(PROJECT_ROOT, 'wit');
/** The templates of `warden backend new`, one folder per language. */
export const TEMPLATES = join(PROJECT_ROOT, 'sample-backends', 'kit');
/** The TypeScript samples' helpers and WIT declarations. */
export const TS_SAMPLES = join(PROJECT_ROOT, 'sample-backends', 'wasm', 'ts');
/** The C samples' helpers and wit-bindgen bindings. */
export const C_SAMPLES = join(PROJECT_ROOT, 'sample-backends', 'wasm', 'c');

/** scripts/build-wasm.mjs, loaded at run time from the install (it is not part of dist/). */
export function buildWasm(): Promise<typeof BuildWasm> {
  return import(pathToFileURL(join(PROJECT_ROOT, 'scripts', 'build-wasm.mjs')).href) as Promise<typeof BuildWasm>;
}

/**
 * componentize-py, pinned (PyPI; test/compat/venv.ts installs it into Warden's `.venv` with the
 * other Python pins): it builds Python guests (docs/tenant-guide.md "Python").
 */
export const COMPONENTIZE_PY_VERSION = '0.25.1';

/** The componentize-py a Python build runs: Warden's `.venv`'s, else the one on PATH. */
export function componentizePyCommand(): string {
  const inVenv = join(PROJECT_ROOT, '.venv', 'bin', 'componentize-py');
  return existsSync(inVenv) ? inVenv : 'componentize-py';
}
