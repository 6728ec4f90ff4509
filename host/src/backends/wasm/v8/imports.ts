/**
 * The import object a V8 sandbox instantiates jco's glue with: the host capabilities of ../host/
 * bound to one instance's state, keyed as jco's glue looks them up. The keys are exactly the
 * interfaces of the `sandbox` world (ALLOWED_IMPORTS), each unversioned and versioned, and each
 * interface object holds only its WIT functions and resource classes.
 *
 * Nothing in it inherits anything: jco's glue resolves an imported member by name (`const { x } =
 * imports[iface]`, `Resource.staticName(...)`, `rsc.methodName()`), and a name that resolved
 * through a JavaScript prototype chain would hand the guest `Object.prototype.toString`, the
 * `Function` constructor and the like. So the import object and every interface object have no
 * prototype and are frozen, and each resource class and its `prototype` have no prototype either
 * (statics and methods are own properties only). `checkComponent` already refuses members the
 * sandbox world does not define; this is the second line.
 */
import { SUPPORTED_BACKEND_API_VERSIONS } from '../component-check.js';
import { listFiles, readFile } from '../host/files.js';
import type { HostState } from '../host/index.js';
import { log, type LogLevel } from '../host/log.js';
import { isCancelled, sendFinal, sendResponse } from '../host/responses.js';
import { createWasi } from '../host/wasi/index.js';
import type * as WitHost from '../wit-types/interfaces/warden-backend-host.js';
import type * as WitTypes from '../wit-types/interfaces/warden-backend-types.js';
import type * as WitInference from '../wit-types/interfaces/warden-backend-inference.js';

/** WASI version the glue's versioned keys carry (the sandbox world's WIT deps). */
const WASI_VERSION = '0.2.12';

/** `warden:backend/host` bound to one instance's state (jco's camelCase function names). */
function hostInterface(host: HostState): Record<string, unknown> {
  return {
    log: (level: LogLevel, message: string) => log(host.log, level, message),
    sendResponse: (handle: number, response: WitHost.Result<WitTypes.Response, WitTypes.Error>, final: boolean) =>
      sendResponse(host.responses, handle, response, final),
    sendFinal: (handle: number) => sendFinal(host.responses, handle),
    isCancelled: (handle: number) => isCancelled(host.responses, handle),
    readFile: (path: string) => readFile(host.files, path),
    listFiles: () => listFiles(host.files),
  };
}

/** A frozen copy of `entries` (own enumerable properties) without a prototype. */
function bare<T>(entries: Record<string, T>): Readonly<Record<string, T>> {
  const out = Object.create(null) as Record<string, T>;
  for (const k of Object.keys(entries)) out[k] = entries[k]!;
  return Object.freeze(out);
}

/** Resource classes jco's glue reaches (UpperCamelCase keys): sealed in place, once. */
const sealed = new WeakSet<object>();

/**
 * Cuts a resource class off the prototype chain: the class itself (no `constructor`, `call`,
 * `bind`, `toString` from `Function.prototype`) and its `prototype` (no `toString`, `valueOf`,
 * `constructor` lookups past its own methods from `Object.prototype`), then freezes both. The class
 * still constructs, and `instanceof` still works (ordinary instance check).
 */
export function sealResourceClass(cls: abstract new (...args: never[]) => unknown): void {
  if (sealed.has(cls)) return;
  Object.setPrototypeOf(cls.prototype, null);
  Object.setPrototypeOf(cls, null);
  Object.freeze(cls.prototype);
  Object.freeze(cls);
  sealed.add(cls);
}

/** One interface object: resource classes sealed, the object bare and frozen. */
function interfaceObject(members: Record<string, unknown>): Readonly<Record<string, unknown>> {
  for (const [name, v] of Object.entries(members)) {
    if (typeof v === 'function' && /^[A-Z]/.test(name)) sealResourceClass(v as abstract new () => unknown);
  }
  return bare(members);
}

/** `warden:backend/inference` as the worker implements it (./worker.ts: each call waits for the host). */
export interface InferenceImports {
  infer(request: WitInference.InferenceRequest): WitTypes.Response;
  start(request: WitInference.InferenceRequest): number;
  next(call: number): WitTypes.Response | undefined;
  cancel(call: number): void;
}

/**
 * The import object for jco's `instantiate(getCoreModule, imports)`: every interface under its
 * unversioned key (what the glue asks for at run time) and its versioned keys (what the `.d.ts`
 * names, for every served `warden:backend` version); no prototypes anywhere, frozen.
 */
export function buildImports(host: HostState, inference: InferenceImports): Readonly<Record<string, Readonly<Record<string, unknown>>>> {
  const unversioned: Record<string, Record<string, unknown>> = {
    'warden:backend/host': hostInterface(host),
    'warden:backend/types': {},
    'warden:backend/inference': {
      infer: (r: WitInference.InferenceRequest) => inference.infer(r),
      start: (r: WitInference.InferenceRequest) => inference.start(r),
      next: (call: number) => inference.next(call),
      cancel: (call: number) => inference.cancel(call),
    },
    ...createWasi(host.stdio),
  };
  const imports: Record<string, Readonly<Record<string, unknown>>> = {};
  for (const [k, v] of Object.entries(unversioned)) {
    const iface = interfaceObject(v);
    imports[k] = iface;
    const versions = k.startsWith('warden:') ? SUPPORTED_BACKEND_API_VERSIONS : [WASI_VERSION];
    for (const version of versions) imports[`${k}@${version}`] = iface;
  }
  return bare(imports);
}
