/**
 * Global setup of the integration tier (test/tiers.ts): makes sure the build artefacts those tests
 * load exist. `npm install` builds them (scripts/build-all.mjs); in a checkout where it did not
 * (`npm ci --ignore-scripts`, a cleaned build/), the missing part is built here, once, before any
 * test starts, by the same script. Artefacts older than their native sources are reported, not
 * rebuilt (`node scripts/build-native.mjs` rebuilds them): a test run never starts a rebuild
 * of a tree someone is editing. The unit tier needs none of this and has no global setup.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../host/src/project.js';

interface Part {
  what: string;
  script: string;
  /** Paths (relative to the project root) that must exist and, for folders, not be empty. */
  outputs: string[];
  /** Sources whose newest file must not be newer than the newest output file (the last build). */
  sources?: string[];
}

const PARTS: readonly Part[] = [
  {
    what: 'native Triton API host, addon and backends',
    script: 'scripts/build-native.mjs',
    outputs: ['native/build/Release/warden_native.node', 'native/build/Release/libtritonserver.so', 'build/backends', 'native/build/test-backends'],
    sources: ['native/src', 'native/include', 'native/CMakeLists.txt', 'native/rust'],
  },
  { what: 'sandboxed sample backends and test components', script: 'scripts/build-wasm.mjs', outputs: ['test/fixtures/wasm/build'] },
];

const present = (p: string): boolean => existsSync(p) && (!statSync(p).isDirectory() || readdirSync(p).length > 0);

/** Newest modification time (ms) of the files under `p`, build outputs (`target/`) left out. */
function newest(p: string): number {
  if (!existsSync(p)) return 0;
  const s = statSync(p);
  if (!s.isDirectory()) return s.mtimeMs;
  let t = 0;
  for (const e of readdirSync(p)) if (e !== 'target' && e !== 'build') t = Math.max(t, newest(join(p, e)));
  return t;
}

/** Builds the missing parts. @throws Error when a part's build fails. */
export default function setup(): void {
  for (const part of PARTS) {
    const outputs = part.outputs.map((o) => join(PROJECT_ROOT, o));
    if (outputs.every(present)) {
      if (!part.sources) continue;
      const built = Math.max(...outputs.filter((o) => statSync(o).isFile()).map((o) => statSync(o).mtimeMs));
      const changed = Math.max(...part.sources.map((s) => newest(join(PROJECT_ROOT, s))));
      if (changed > built) process.stderr.write(`[global-setup] ${part.what}: sources changed since the build; \`node ${part.script}\` rebuilds it\n`);
      continue;
    }
    process.stderr.write(`[global-setup] ${part.what} not built: node ${part.script}\n`);
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, part.script)], { cwd: PROJECT_ROOT, stdio: 'inherit' });
    if (r.status !== 0 || !outputs.every(present)) throw new Error(`building the ${part.what} failed (node ${part.script}); npm install builds every artefact`);
  }
}
