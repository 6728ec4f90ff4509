/**
 * A tenant backend project as `warden backend new` makes it (docs/tenant-guide.md): the manifest
 * `warden-backend.json` and where each part of the project lives. The project folder is also a
 * model directory: `config.pbtxt` beside `1/model.wasm`, so `warden backend test` loads it the way
 * the server loads an upload.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as err from './kit.errors.js';

/** The manifest's file name. */
export const MANIFEST = 'warden-backend.json';

/** Guest languages the kit scaffolds and builds. */
export const LANGUAGES = ['ts', 'c', 'py', 'rust'] as const;
export type Language = (typeof LANGUAGES)[number];

/** What `warden-backend.json` holds. */
export interface Manifest {
  /** The model name (default name of the upload). */
  name: string;
  lang: Language;
  /** Version of the `warden:backend` WIT package in `wit/` (e.g. `0.1.0`). */
  wit: string;
  /** The world of `wit/` the component targets (`sandboxed-backend`, `sandboxed-backend-with-clocks`, `sandboxed-backend-with-inference`). */
  world: string;
  /** ts: the entry module (under `src/`); c: the C sources; py: the entry module first, then the others; rust: the crate's sources (all under `src/`). */
  sources: string[];
}

/** A project on disk: its folder and manifest. */
export interface KitProject {
  dir: string;
  manifest: Manifest;
}

/** Model names the kit accepts (a subset of what the load API accepts, safe as a folder name). */
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The component a build writes and an upload sends (`<version>/model.wasm`, version 1). */
export const componentPath = (dir: string): string => join(dir, '1', 'model.wasm');
/** The model configuration of the project. */
export const configPath = (dir: string): string => join(dir, 'config.pbtxt');
/** The pinned WIT package. */
export const witPath = (dir: string): string => join(dir, 'wit');

/**
 * Reads the project in `dir` (default the working directory).
 * @throws TritonError NOT_FOUND without a manifest, INVALID_ARG for a malformed one
 */
export function readProject(dir = '.'): KitProject {
  const abs = resolve(dir);
  const file = join(abs, MANIFEST);
  if (!existsSync(file)) throw err.projectMissing(abs);
  let m: Partial<Manifest>;
  try {
    m = JSON.parse(readFileSync(file, 'utf8')) as Partial<Manifest>;
  } catch (e) {
    throw err.projectInvalid(file, (e as Error).message);
  }
  if (typeof m.name !== 'string' || !NAME_RE.test(m.name)) throw err.projectInvalid(file, `"name" must be a model name, got ${JSON.stringify(m.name)}`);
  if (!LANGUAGES.includes(m.lang as Language)) throw err.projectInvalid(file, `"lang" must be one of ${LANGUAGES.join(', ')}`);
  if (typeof m.wit !== 'string' || typeof m.world !== 'string') throw err.projectInvalid(file, '"wit" and "world" must be strings');
  if (!Array.isArray(m.sources) || m.sources.length === 0 || !m.sources.every((s) => typeof s === 'string' && /^[\w.-]+$/.test(s))) {
    throw err.projectInvalid(file, '"sources" must list file names under src/');
  }
  return { dir: abs, manifest: m as Manifest };
}

/** Writes the manifest of a new project. */
export function writeManifest(dir: string, manifest: Manifest): void {
  writeFileSync(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
}

/** The `package warden:backend@X;` version declared by the WIT package in `dir`, if any. */
export function witPackageVersion(dir: string): string | undefined {
  const worlds = join(dir, 'worlds.wit');
  if (!existsSync(worlds)) return undefined;
  return /^package\s+warden:backend@([0-9A-Za-z.+-]+);/m.exec(readFileSync(worlds, 'utf8'))?.[1];
}
