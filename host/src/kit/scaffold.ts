/**
 * `warden backend new <name> --lang ts|c|py|rust [--dir D]`: a self-contained project outside Warden's
 * tree (docs/tenant-guide.md), from the language's template (sample-backends/kit/<lang>/) plus
 * what it needs from Warden: the WIT package pinned at the version this server implements
 * (wit/, with the WASI deps), and the guest helpers and bindings Warden's own samples use.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BACKEND_API_VERSION } from '../contract/backend-api.js';
import * as err from './kit.errors.js';
import { NAME_RE, witPath, writeManifest, type KitProject, type Language, type Manifest } from './project.js';
import { buildWasm, C_SAMPLES, COMPONENTIZE_PY_VERSION, TEMPLATES, TS_SAMPLES, WARDEN_WIT } from './tools.js';

/** What each language's project builds from (files under `src/`) and the world it targets. */
const LAYOUT: Record<Language, Pick<Manifest, 'sources' | 'world'>> = {
  ts: { sources: ['model.ts'], world: 'sandboxed-backend' },
  c: { sources: ['normalize.c', 'warden_guest.c'], world: 'sandboxed-backend' },
  py: { sources: ['app.py', 'backend.py', 'tokenize_text.py'], world: 'sandboxed-backend' },
  rust: { sources: ['lib.rs'], world: 'sandboxed-backend' },
};

/** Copies the template folder `from` to `to`, replacing `{{key}}` in every file. */
function copyTemplate(from: string, to: string, vars: Record<string, string>): void {
  mkdirSync(to, { recursive: true });
  for (const e of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, e.name);
    const dst = join(to, e.name);
    if (e.isDirectory()) copyTemplate(src, dst, vars);
    else writeFileSync(dst, fill(readFileSync(src, 'utf8'), vars));
  }
}

/** `text` with every `{{key}}` of `vars` replaced. */
function fill(text: string, vars: Record<string, string>): string {
  return text.replace(/\{\{(\w+)\}\}/g, (all, k: string) => vars[k] ?? all);
}

/** Copies Warden's WIT package (the `.wit` files, README and WASI deps) into `to`. */
async function copyWit(to: string): Promise<void> {
  if (!existsSync(join(WARDEN_WIT, 'deps'))) (await buildWasm()).prepareWitDeps();
  cpSync(WARDEN_WIT, to, { recursive: true });
}

/**
 * Makes the project `name` in `dir` (default `./<name>`).
 * @returns the new project
 * @throws TritonError INVALID_ARG for a bad name or a folder that exists and is not empty
 */
export async function newProject(name: string, lang: Language, dir?: string): Promise<KitProject> {
  if (!NAME_RE.test(name)) throw err.nameInvalid(name);
  const abs = resolve(dir ?? name);
  if (existsSync(abs) && (!statSync(abs).isDirectory() || readdirSync(abs).length > 0)) throw err.projectExists(abs);
  const vars = { name, wit: BACKEND_API_VERSION, componentize_py: COMPONENTIZE_PY_VERSION };
  copyTemplate(join(TEMPLATES, lang), abs, vars);
  // the tritonclient script that sends input.json as a tenant: the same for every language
  writeFileSync(join(abs, 'infer.py'), fill(readFileSync(join(TEMPLATES, 'infer.py'), 'utf8'), vars));
  await copyWit(witPath(abs));
  if (lang === 'ts') {
    cpSync(join(TS_SAMPLES, 'guest.ts'), join(abs, 'src', 'guest.ts'));
    const types = join(TS_SAMPLES, 'generated');
    if (existsSync(types)) cpSync(types, join(abs, 'types'), { recursive: true });
    else await (await buildWasm()).generateGuestTypes(join(abs, 'types'));
  } else if (lang === 'c') {
    for (const f of ['warden_guest.c', 'warden_guest.h']) cpSync(join(C_SAMPLES, f), join(abs, 'src', f));
    cpSync(join(C_SAMPLES, 'gen'), join(abs, 'src', 'gen'), { recursive: true });
  }
  // py: componentize-py writes the bindings at each build; rust: wit-bindgen's macro reads wit/
  const manifest: Manifest = { name, lang, wit: BACKEND_API_VERSION, ...LAYOUT[lang] };
  writeManifest(abs, manifest);
  return { dir: abs, manifest };
}
