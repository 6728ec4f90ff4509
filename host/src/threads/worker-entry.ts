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
  return { script: `import(${JSON.stringify(tsxApi())}).then((m) => { m.register(); return import(${JSON.stringify(ts)}); })`, eval: true };
}

/**
 * tsx's register API as an absolute URL where this module can resolve it, so that a worker of a
 * process started from another working directory (e.g. `warden backend test` in a tenant's
 * project) finds it; the bare name where it cannot (the worker then resolves it from its cwd).
 */
function tsxApi(): string {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return 'tsx/esm/api';
  }
}
