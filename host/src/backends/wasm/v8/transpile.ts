/**
 * Turns a validated component into jco glue + core modules (`jco transpile`, async
 * instantiation), cached on disk by the component's SHA-256 so a model version is transpiled once
 * per content, across loads and restarts.
 *
 * Cache layout: `<cacheDir>/<sha256>/` holding `component.js` (the glue), `*.core*.wasm`,
 * a `package.json` marking the folder as ESM, and `meta.json` (written last: a folder without it
 * is incomplete and is rebuilt). Folders are built under a temporary name and renamed into place.
 */
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { internal, invalidArg } from '../../../core/errors.js';

/** What the cache holds for one component. */
export interface TranspiledComponent {
  /** SHA-256 of the component bytes (hex). */
  hash: string;
  /** Folder with the glue and the core modules. */
  dir: string;
  /** Absolute path of the glue ES module. */
  gluePath: string;
  /** Core module file names, as the glue asks for them via `getCoreModule(name)`. */
  coreModules: string[];
}

interface Meta {
  jco: string;
  coreModules: string[];
}

/** Bumped when the transpile options change, so old cache entries are not reused. */
const CACHE_FORMAT = 'jco-transpile-0.15/async/v1';

const inFlight = new Map<string, Promise<TranspiledComponent>>();

/**
 * Returns the transpiled form of a component, from the cache or by running jco.
 * Call only with a component that passed `checkComponent`.
 * @param hash SHA-256 of `component` (hex): the cache key
 * @throws TritonError INVALID_ARG if jco cannot transpile it (the component is malformed or
 *   uses something jco does not support), INTERNAL if the cache cannot be written.
 */
export async function transpileCached(component: Uint8Array, cacheDir: string, what: string, hash: string): Promise<TranspiledComponent> {
  const pending = inFlight.get(hash);
  if (pending) return pending;
  const p = doTranspile(component, hash, cacheDir, what).finally(() => inFlight.delete(hash));
  inFlight.set(hash, p);
  return p;
}

async function readCached(dir: string, hash: string): Promise<TranspiledComponent | undefined> {
  try {
    const meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as Meta;
    if (meta.jco !== CACHE_FORMAT) return undefined;
    if (!meta.coreModules.every((m) => existsSync(join(dir, m)))) return undefined;
    return { hash, dir, gluePath: join(dir, 'component.js'), coreModules: meta.coreModules };
  } catch {
    return undefined;
  }
}

async function doTranspile(component: Uint8Array, hash: string, cacheDir: string, what: string): Promise<TranspiledComponent> {
  const dir = join(cacheDir, hash);
  const cached = await readCached(dir, hash);
  if (cached) return cached;

  const { transpileBytes } = await import('@bytecodealliance/jco-transpile');
  let files: Record<string, Uint8Array>;
  try {
    ({ files } = await transpileBytes(component, {
      name: 'component',
      instantiation: 'async',
      nodejsCompat: false,
      tlaCompat: false,
      base64Cutoff: 0,
      emitTypescriptDeclarations: false,
      minify: false,
      optimize: false,
      validLiftingOptimization: false,
      outDir: '',
    }));
  } catch (e) {
    throw invalidArg(`${what}: jco cannot transpile this component: ${(e as Error).message ?? e}`);
  }
  const glue = files['component.js'];
  if (!glue) throw internal(`${what}: jco produced no component.js`);
  // With async instantiation every import comes through the `imports` argument; glue that
  // imports modules by itself would reach outside the sandbox's import object.
  if (/^\s*import\s[^(]/m.test(new TextDecoder().decode(glue))) {
    throw internal(`${what}: transpiled glue contains static imports; refusing to run it`);
  }
  const coreModules = Object.keys(files).filter((f) => f.endsWith('.wasm')).sort();

  const tmp = join(cacheDir, `.tmp-${hash}-${process.pid}-${Date.now()}`);
  try {
    await mkdir(tmp, { recursive: true });
    for (const [name, bytes] of Object.entries(files)) {
      if (name.includes('/') || name.includes('\\') || name.startsWith('.')) throw internal(`${what}: unexpected transpiled file name '${name}'`);
      await writeFile(join(tmp, name), bytes);
    }
    await writeFile(join(tmp, 'package.json'), '{"type":"module"}\n');
    await writeFile(join(tmp, 'meta.json'), JSON.stringify({ jco: CACHE_FORMAT, coreModules } satisfies Meta));
    await rm(dir, { recursive: true, force: true });
    try {
      await rename(tmp, dir);
    } catch (e) {
      // another process renamed the same content into place first
      const other = await readCached(dir, hash);
      if (other) return other;
      throw e;
    }
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    if ((e as { code?: string }).code) throw internal(`${what}: cannot write the transpile cache in ${cacheDir}: ${(e as Error).message}`);
    throw e;
  }
  return { hash, dir, gluePath: join(dir, 'component.js'), coreModules };
}

/** Removes cache folders not in `keep` (hashes). Used by tests and by explicit cleanup. */
export async function pruneCache(cacheDir: string, keep: Set<string>): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(cacheDir);
  } catch {
    return;
  }
  await Promise.all(entries.filter((e) => !keep.has(e)).map((e) => rm(join(cacheDir, e), { recursive: true, force: true })));
}
