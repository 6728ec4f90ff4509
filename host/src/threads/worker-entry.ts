/**
 * Where a backend's worker thread starts: the compiled `<name>.js` next to the calling module, or
 * (running from the TypeScript sources, e.g. under vitest) a bootstrap that registers tsx and
 * imports `<name>.ts`. Used by every part that runs work on `worker_threads`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** `script` and `eval` for `new Worker(script, { eval })`. */
export interface WorkerEntry {
  script: URL | string;
  eval: boolean;
}

/**
 * @param base `import.meta.url` of the module that owns the worker.
 * @param name The worker module's file name without extension (e.g. `'worker'`).
 */
export function workerEntry(base: string, name: string): WorkerEntry {
  const js = new URL(`./${name}.js`, base);
  if (existsSync(fileURLToPath(js))) return { script: js, eval: false };
  const ts = new URL(`./${name}.ts`, base).href;
  return { script: `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(ts)}); })`, eval: true };
}
