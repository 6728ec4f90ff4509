/**
 * The import object a V8 sandbox instantiates jco's glue with: the host capabilities of ../host/
 * bound to one instance's state, keyed as jco's glue looks them up. Plain objects only: the keys
 * are exactly the interfaces of the `sandbox` world (ALLOWED_IMPORTS), each unversioned and
 * versioned, and each interface object holds only its WIT functions.
 */
import { BACKEND_API_VERSION } from '../component-check.js';
import { listFiles, readFile } from '../host/files.js';
import type { HostState } from '../host/index.js';
import { log, type LogLevel } from '../host/log.js';
import { isCancelled, sendFinal, sendResponse } from '../host/responses.js';
import { createWasi } from '../host/wasi/index.js';
import type * as WitHost from '../wit-types/interfaces/warden-backend-host.js';
import type * as WitTypes from '../wit-types/interfaces/warden-backend-types.js';

/** WASI version the glue's versioned keys carry (the sandbox world's WIT deps). */
const WASI_VERSION = '0.2.12';

/** `warden:backend/host` bound to one instance's state (jco's camelCase function names). */
function hostInterface(host: HostState): Record<string, unknown> {
  return {
    log: (level: LogLevel, message: string) => log(host.log, level, message),
    sendResponse: (handle: number, response: WitHost.Result<WitTypes.Response, WitTypes.Error>, final: boolean) => sendResponse(host.responses, handle, response, final),
    sendFinal: (handle: number) => sendFinal(host.responses, handle),
    isCancelled: (handle: number) => isCancelled(host.responses, handle),
    readFile: (path: string) => readFile(host.files, path),
    listFiles: () => listFiles(host.files),
  };
}

/**
 * The import object for jco's `instantiate(getCoreModule, imports)`: every interface under its
 * unversioned key (what the glue asks for at run time) and its versioned key (what the `.d.ts`
 * names).
 */
export function buildImports(host: HostState): Record<string, Record<string, unknown>> {
  const unversioned: Record<string, Record<string, unknown>> = {
    'warden:backend/host': hostInterface(host),
    'warden:backend/types': {},
    ...createWasi(host.stdio),
  };
  const imports: Record<string, Record<string, unknown>> = { ...unversioned };
  for (const [k, v] of Object.entries(unversioned)) imports[`${k}@${k.startsWith('warden:') ? BACKEND_API_VERSION : WASI_VERSION}`] = v;
  return imports;
}
