/**
 * The two test tiers (README "Tests"), chosen by what a test file starts, never by its folder:
 * - `unit`: files that start nothing — no server, no child process, no worker thread, no native
 *   addon or sandbox engine, no socket — and need none of the build artefacts: config, scheduler,
 *   queue, tenancy parsing, codecs, the layer rules. Seconds (`npm run test:unit`).
 * - `integration`: every other file (servers, engines, CLI subprocesses, compatibility suites).
 * A file is `integration` when it, or a test helper it imports (relative imports under test/,
 * followed), imports or calls one of {@link STARTS}. vitest.config.ts makes one project per
 * tier, so `npm test` runs every file exactly once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Import specifiers (tested against the whole specifier) and calls that start something. */
const STARTS: readonly RegExp[] = [
  // processes, threads, sockets
  /^node:(child_process|worker_threads|net|http|https|http2|dgram|cluster)$/,
  /^(undici|@grpc\/grpc-js|@grpc\/proto-loader|grpc-health-check)$/,
  // the server, the CLI, the backends (engines, workers, the native addon), front-end thread and codec pools
  /\/host\/src\/(server|cli)\.js$/,
  /\/host\/src\/(backends|platform|threads)\//,
  /\/host\/src\/frontend\/(http\/(codec|threads)\/pool|grpc\/server)\.js$/,
  // test helpers that start servers, engines, clients or venvs
  /(^|\/)helpers\/(servers|http-matrix|grpc|grpc-health)\.js$/,
  /(^|\/)(wasm|native|python)\/helpers\.js$/,
  /(^|\/)compat\/(harness|venv)\.js$/,
];
const CALLS = /\b(fetch|startServer|new Worker)\(/;

/** `import … from 'x'`, `import 'x'`, `import('x')`, `export … from 'x'`. */
const SPECIFIER = /\b(?:from|import)\s*\(?\s*'([^']+)'/g;
/** `import type … from 'x'` and `export type … from 'x'`: erased, they start nothing. */
const TYPE_ONLY = /\b(?:import|export)\s+type\b[^;]*?\bfrom\s*'[^']+'/g;

/** Why `file` (absolute) is not a unit test: the first import or call of {@link STARTS} found, or undefined. */
export function startsSomething(file: string, seen = new Set<string>()): string | undefined {
  if (seen.has(file)) return undefined;
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined; // a helper that resolves elsewhere (a .js file, a folder) starts nothing here
  }
  const call = CALLS.exec(text);
  if (call) return `${relative(ROOT, file)} calls ${call[1]}(`;
  for (const m of text.replace(TYPE_ONLY, '').matchAll(SPECIFIER)) {
    const spec = m[1]!;
    if (STARTS.some((re) => re.test(spec))) return `${relative(ROOT, file)} imports ${spec}`;
    if (!spec.startsWith('.')) continue;
    const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
    if (!target.startsWith(join(ROOT, 'test') + '/')) continue; // host/src modules are judged by what the test does with them
    const why = startsSomething(target, seen);
    if (why) return why;
  }
  return undefined;
}

/** Every test file under test/ (paths relative to the project root, `/`-separated), sorted. */
export function testFiles(): string[] {
  return (readdirSync(join(ROOT, 'test'), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.test.ts') && !f.split('/').includes('node_modules'))
    .map((f) => `test/${f}`)
    .sort();
}

/** The test files of each tier (relative to the project root); together, every test file once. */
export function testTiers(): { unit: string[]; integration: string[] } {
  const unit: string[] = [];
  const integration: string[] = [];
  for (const f of testFiles()) (startsSomething(join(ROOT, f)) ? integration : unit).push(f);
  return { unit, integration };
}
