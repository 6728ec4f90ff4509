/**
 * Load-time check of an uploaded component against the `sandbox` world of `warden:backend`
 * (wit/worlds.wit): the first thing done with a component, before jco or V8 see it.
 *
 * The component's top-level imports must all be in the allow-list ({@link ALLOWED_IMPORTS}:
 * `warden:backend/{types,host,inference}` at a served version — `inference` from `0.1.1` on — and
 * the deny-by-default WASI subset, any `0.2.x`), and its only export must be
 * `warden:backend/backend` at a served version. Anything else — `wasi:filesystem`,
 * `wasi:sockets`, `wasi:http`, bare function imports, core-module imports — is refused with an
 * INVALID_ARG error naming the import.
 *
 * Every *member* of every imported interface (each function, `[method]`, `[static]` and
 * `[constructor]` name, each type) must also be one the `sandbox` world defines for that
 * interface ({@link SANDBOX_MEMBERS}), with the same kind: jco's glue looks imported members up
 * by name in the host's import object, so a name the world does not define (e.g.
 * `[static]error.constructor`, which JavaScript would resolve to the `Function` constructor) must
 * never reach it.
 */
import * as err from './sandbox.errors.js';
import { binaryKind, Reader, sections, WasmFormatError } from './binary.js';

import { BACKEND_API_VERSION, BACKEND_INTERFACE_SINCE, olderVersion, SUPPORTED_BACKEND_API_VERSIONS } from '../../contract/backend-api.js';

export { BACKEND_API_VERSION, SUPPORTED_BACKEND_API_VERSIONS };
/** The one export a sandboxed backend must have (as the current version names it). */
export const BACKEND_EXPORT = `warden:backend/backend@${BACKEND_API_VERSION}`;
/** That export as each served version names it: a component has exactly one of them. */
export const BACKEND_EXPORTS: readonly string[] = Object.freeze(SUPPORTED_BACKEND_API_VERSIONS.map((v) => `warden:backend/backend@${v}`));
/** The supported versions as error texts name them, e.g. `warden:backend@0.1.0`. */
const SUPPORTED_TEXT = SUPPORTED_BACKEND_API_VERSIONS.map((v) => `warden:backend@${v}`).join(', ');

/** What a member of an imported interface is: a function, a resource type, or another type. */
export type MemberKind = 'func' | 'resource' | 'type';

/**
 * The members of each interface of the `sandbox` world, exactly as a component names them in its
 * import's instance type (WASI as of 0.2.12; `warden:backend` 0.1.1). A component may import any
 * subset; anything else is refused. A test checks this table against a component generated from
 * the world in wit/worlds.wit, and that the V8 import object supplies every function and resource.
 */
export const SANDBOX_MEMBERS: Readonly<Record<string, Readonly<Record<string, MemberKind>>>> = deepFreeze({
  'warden:backend/types': {
    'request-handle': 'type',
    'data-type': 'type',
    tensor: 'type',
    'parameter-value': 'type',
    parameter: 'type',
    response: 'type',
    'error-code': 'type',
    error: 'type',
    'correlation-id': 'type',
    'request-flags': 'type',
    request: 'type',
  },
  'warden:backend/host': {
    'log-level': 'type',
    'request-handle': 'type',
    response: 'type',
    error: 'type',
    log: 'func',
    'send-response': 'func',
    'send-final': 'func',
    'is-cancelled': 'func',
    'read-file': 'func',
    'list-files': 'func',
  },
  'warden:backend/inference': {
    error: 'type',
    tensor: 'type',
    parameter: 'type',
    response: 'type',
    'call-handle': 'type',
    'inference-request': 'type',
    infer: 'func',
    start: 'func',
    next: 'func',
    cancel: 'func',
  },
  'wasi:clocks/monotonic-clock': {
    instant: 'type',
    duration: 'type',
    pollable: 'type',
    now: 'func',
    resolution: 'func',
    'subscribe-instant': 'func',
    'subscribe-duration': 'func',
  },
  'wasi:clocks/wall-clock': { datetime: 'type', now: 'func', resolution: 'func' },
  'wasi:random/random': { 'get-random-bytes': 'func', 'get-random-u64': 'func' },
  'wasi:random/insecure': { 'get-insecure-random-bytes': 'func', 'get-insecure-random-u64': 'func' },
  'wasi:random/insecure-seed': { 'insecure-seed': 'func' },
  'wasi:io/error': { error: 'resource', '[method]error.to-debug-string': 'func' },
  'wasi:io/poll': { pollable: 'resource', '[method]pollable.ready': 'func', '[method]pollable.block': 'func', poll: 'func' },
  'wasi:io/streams': {
    'input-stream': 'resource',
    'output-stream': 'resource',
    error: 'type',
    'stream-error': 'type',
    pollable: 'type',
    '[method]input-stream.read': 'func',
    '[method]input-stream.blocking-read': 'func',
    '[method]input-stream.skip': 'func',
    '[method]input-stream.blocking-skip': 'func',
    '[method]input-stream.subscribe': 'func',
    '[method]output-stream.check-write': 'func',
    '[method]output-stream.write': 'func',
    '[method]output-stream.blocking-write-and-flush': 'func',
    '[method]output-stream.flush': 'func',
    '[method]output-stream.blocking-flush': 'func',
    '[method]output-stream.subscribe': 'func',
    '[method]output-stream.write-zeroes': 'func',
    '[method]output-stream.blocking-write-zeroes-and-flush': 'func',
    '[method]output-stream.splice': 'func',
    '[method]output-stream.blocking-splice': 'func',
  },
  'wasi:cli/environment': { 'get-environment': 'func', 'get-arguments': 'func', 'initial-cwd': 'func' },
  'wasi:cli/exit': { exit: 'func', 'exit-with-code': 'func' },
  'wasi:cli/stdin': { 'input-stream': 'type', 'get-stdin': 'func' },
  'wasi:cli/stdout': { 'output-stream': 'type', 'get-stdout': 'func' },
  'wasi:cli/stderr': { 'output-stream': 'type', 'get-stderr': 'func' },
  'wasi:cli/terminal-input': { 'terminal-input': 'resource' },
  'wasi:cli/terminal-output': { 'terminal-output': 'resource' },
  'wasi:cli/terminal-stdin': { 'terminal-input': 'type', 'get-terminal-stdin': 'func' },
  'wasi:cli/terminal-stdout': { 'terminal-output': 'type', 'get-terminal-stdout': 'func' },
  'wasi:cli/terminal-stderr': { 'terminal-output': 'type', 'get-terminal-stderr': 'func' },
});

function deepFreeze<T extends Record<string, Record<string, MemberKind>>>(t: T): T {
  const out = Object.create(null) as T;
  for (const [k, v] of Object.entries(t)) (out as Record<string, unknown>)[k] = Object.freeze(Object.assign(Object.create(null) as object, v));
  return Object.freeze(out);
}

/** The kind the sandbox world gives member `name` of interface `iface` (unversioned), or undefined. */
export function sandboxMemberKind(iface: string, name: string): MemberKind | undefined {
  const members = Object.prototype.hasOwnProperty.call(SANDBOX_MEMBERS, iface) ? SANDBOX_MEMBERS[iface] : undefined;
  return members && Object.prototype.hasOwnProperty.call(members, name) ? members[name] : undefined;
}

/**
 * Interfaces the host supplies: the imports of the `sandbox` world, without versions
 * (`warden:` interfaces a served version, `wasi:` interfaces any `@0.2.x`). A test checks this
 * list against the world in wit/worlds.wit.
 */
export const ALLOWED_IMPORTS: readonly string[] = Object.freeze(Object.keys(SANDBOX_MEMBERS));

/** Sort byte of an extern descriptor / export (component binary format). */
const SORT_NAMES: Record<number, string> = { 0x00: 'core module', 0x01: 'func', 0x02: 'value', 0x03: 'type', 0x04: 'component', 0x05: 'instance' };

/**
 * One member of an imported interface: an export declaration of the import's instance type.
 * `kind` is 'func', 'resource' (a `sub resource` type), 'type' (an `eq` type), or 'instance',
 * 'component', 'core module' for members no interface of the sandbox world has.
 */
export interface ComponentMember {
  name: string;
  kind: string;
}

/** One top-level import or export of a component. */
export interface ComponentItem {
  name: string;
  /** 'instance', 'func', 'type', 'resource', 'component', 'core module'. */
  kind: string;
  /**
   * Instance imports only: the members its instance type declares, or undefined if the type is
   * not an instance type of the component's own type section (the check then refuses it).
   */
  members?: ComponentMember[];
}

/** The top-level imports and exports of a component binary. */
export interface ComponentSurface {
  imports: ComponentItem[];
  exports: ComponentItem[];
}

/** Deepest nesting of component / instance types read (adversarial nesting ends here). */
const MAX_TYPE_DEPTH = 16;

/** Primitive value type codes (`primvaltype`: bool .. string, error-context). */
const PRIMITIVE_TYPES = new Set([0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x7a, 0x79, 0x78, 0x77, 0x76, 0x75, 0x74, 0x73, 0x64]);

/** Reads a vector: a u32 count, then `read` that many times. */
function readVec(r: Reader, read: () => void): void {
  const n = r.uleb();
  for (let i = 0; i < n; i++) read();
}

/** Reads `T?` (0x00 | 0x01 T). */
function readOptional(r: Reader, read: () => void): void {
  const flag = r.byte();
  if (flag === 0x01) read();
  else if (flag !== 0x00) throw new WasmFormatError(`bad optional flag 0x${flag.toString(16)}`);
}

/** Reads an `importname'` / `exportname'` (0x00 name | 0x01 name [version suffix]). */
function readExternName(r: Reader): string {
  const form = r.byte();
  if (form !== 0x00 && form !== 0x01) throw new WasmFormatError(`unknown extern name form 0x${form.toString(16)}`);
  const name = r.name();
  if (form === 0x01) r.name(); // version suffix (component-model 'vs'), informational
  return name;
}

/** An `externdesc`: its kind name and, for func / component / instance, its type index. */
interface ExternDesc {
  kind: string;
  typeIndex?: number;
}

/** Reads an `externdesc`. A type is 'resource' if bound `sub resource`, else 'type'. */
function readExternDesc(r: Reader): ExternDesc {
  const tag = r.byte();
  switch (tag) {
    case 0x00: {
      const core = r.byte();
      if (core !== 0x11) throw new WasmFormatError(`bad core module extern descriptor 0x${core.toString(16)}`);
      r.uleb();
      return { kind: 'core module' };
    }
    case 0x01:
    case 0x04:
    case 0x05:
      return { kind: SORT_NAMES[tag]!, typeIndex: r.uleb() };
    case 0x03: {
      const bound = r.byte();
      if (bound === 0x00) {
        r.uleb();
        return { kind: 'type' };
      }
      if (bound === 0x01) return { kind: 'resource' };
      throw new WasmFormatError(`bad type bound 0x${bound.toString(16)}`);
    }
    case 0x02:
      throw new WasmFormatError('value imports/exports are not supported');
    default:
      throw new WasmFormatError(`unknown extern descriptor 0x${tag.toString(16)}`);
  }
}

/** Reads a `valtype`: a primitive code (one negative SLEB byte) or a type index. */
function readValType(r: Reader): void {
  const b = r.byte();
  if (b >= 0x40 && b < 0x80) {
    if (!PRIMITIVE_TYPES.has(b)) throw new WasmFormatError(`unknown value type 0x${b.toString(16)}`);
    return;
  }
  r.pos--;
  r.uleb();
}

/** Reads the rest of a `defvaltype` whose first byte was `tag`. */
function readDefValType(r: Reader, tag: number): void {
  if (PRIMITIVE_TYPES.has(tag)) return;
  switch (tag) {
    case 0x72: // record
      return readVec(r, () => {
        r.name();
        readValType(r);
      });
    case 0x71: // variant
      return readVec(r, () => {
        r.name();
        readOptional(r, () => readValType(r));
        const refines = r.byte();
        if (refines === 0x01) r.uleb();
        else if (refines !== 0x00) throw new WasmFormatError(`bad variant case 0x${refines.toString(16)}`);
      });
    case 0x70: // list
    case 0x6b: // option
      return readValType(r);
    case 0x67: // fixed-size list
      readValType(r);
      r.uleb();
      return;
    case 0x6f: // tuple
      return readVec(r, () => readValType(r));
    case 0x6e: // flags
    case 0x6d: // enum
      return readVec(r, () => void r.name());
    case 0x6a: // result
      readOptional(r, () => readValType(r));
      readOptional(r, () => readValType(r));
      return;
    case 0x69: // own
    case 0x68: // borrow
      r.uleb();
      return;
    case 0x66: // stream
    case 0x65: // future
      return readOptional(r, () => readValType(r));
    default:
      throw new WasmFormatError(`unknown type 0x${tag.toString(16)}`);
  }
}

/** Reads an `alias`; returns its sort byte (0x03 = type). */
function readAlias(r: Reader): number {
  const sort = r.byte();
  if (sort === 0x00) r.byte(); // core sort
  const target = r.byte();
  if (target === 0x00 || target === 0x01) {
    r.uleb();
    r.name();
  } else if (target === 0x02) {
    r.uleb();
    r.uleb();
  } else {
    throw new WasmFormatError(`unknown alias target 0x${target.toString(16)}`);
  }
  return sort;
}

/**
 * Reads the declarations of a component type (`componentdecl`s) or an instance type
 * (`instancedecl`s); returns the export declarations (for an instance type: its members).
 */
function readDecls(r: Reader, depth: number, component: boolean): ComponentMember[] {
  if (depth > MAX_TYPE_DEPTH) throw new WasmFormatError(`component types nested deeper than ${MAX_TYPE_DEPTH}`);
  const members: ComponentMember[] = [];
  readVec(r, () => {
    const tag = r.byte();
    switch (tag) {
      case 0x00:
        // core module types inside component-level types: no toolchain for sandboxed backends
        // emits them, and reading them is not worth the risk of misreading
        throw new WasmFormatError('core types inside component or instance types are not supported');
      case 0x01:
        readDefType(r, depth);
        return;
      case 0x02:
        readAlias(r);
        return;
      case 0x03:
        if (!component) throw new WasmFormatError('import declaration inside an instance type');
        readExternName(r);
        readExternDesc(r);
        return;
      case 0x04: {
        const name = readExternName(r);
        members.push({ name, kind: readExternDesc(r).kind });
        return;
      }
      default:
        throw new WasmFormatError(`unknown declaration 0x${tag.toString(16)} in a component or instance type`);
    }
  });
  return members;
}

/** Reads a `type` (`deftype`); returns its members if it is an instance type. */
function readDefType(r: Reader, depth: number): ComponentMember[] | undefined {
  const tag = r.byte();
  switch (tag) {
    case 0x40: // func
    case 0x43: // async func
      readVec(r, () => {
        r.name();
        readValType(r);
      });
      {
        const results = r.byte();
        if (results === 0x00) readValType(r);
        else if (results === 0x01)
          readVec(r, () => {
            r.name();
            readValType(r);
          });
        else throw new WasmFormatError(`bad function result list 0x${results.toString(16)}`);
      }
      return undefined;
    case 0x41:
      readDecls(r, depth + 1, true);
      return undefined;
    case 0x42:
      return readDecls(r, depth + 1, false);
    case 0x3f: // resource
    case 0x3e: {
      // resource with an async destructor callback
      const rep = r.byte();
      if (rep !== 0x7f) throw new WasmFormatError(`bad resource representation 0x${rep.toString(16)}`);
      if (tag === 0x3f) readOptional(r, () => void r.uleb());
      else {
        r.uleb();
        readOptional(r, () => void r.uleb());
      }
      return undefined;
    }
    default:
      readDefValType(r, tag);
      return undefined;
  }
}

/**
 * Lists a component's top-level imports (section 10) and exports (section 11), and for each
 * instance import the members its instance type declares. Follows the top-level type index space
 * (type definitions, type aliases, type imports and type exports, in section order) to find each
 * import's instance type.
 * @throws WasmFormatError for a malformed binary, a core module, or type constructs the check
 *   does not read (core types inside component types, value imports).
 */
export function componentSurface(bytes: Uint8Array): ComponentSurface {
  const kind = binaryKind(bytes);
  if (kind === 'module') throw new WasmFormatError('this is a core WebAssembly module, not a component (make one with `jco new` / wasm-tools component new)');
  if (kind !== 'component') throw new WasmFormatError('not a WebAssembly component (bad magic or version)');
  const out: ComponentSurface = { imports: [], exports: [] };
  /** The top-level type index space: an instance type's members, or undefined for any other type. */
  const types: (ComponentMember[] | undefined)[] = [];
  for (const s of sections(bytes)) {
    const r = new Reader(bytes, s.contentStart, s.end);
    switch (s.id) {
      case 6: // aliases
        readVec(r, () => {
          if (readAlias(r) === 0x03) types.push(undefined);
        });
        break;
      case 7: // types
        readVec(r, () => types.push(readDefType(r, 0)));
        break;
      case 10: // imports
        readVec(r, () => {
          const name = readExternName(r);
          const desc = readExternDesc(r);
          const item: ComponentItem = { name, kind: desc.kind };
          if (desc.kind === 'type' || desc.kind === 'resource') types.push(undefined);
          if (desc.kind === 'instance') item.members = types[desc.typeIndex!];
          out.imports.push(item);
        });
        break;
      case 11: // exports
        readVec(r, () => {
          const name = readExternName(r);
          const sort = r.byte();
          if (sort === 0x00) r.byte(); // core sort
          r.uleb(); // index
          const hasType = r.byte();
          if (hasType === 0x01) readExternDesc(r);
          else if (hasType !== 0x00) throw new WasmFormatError('bad export type ascription');
          if (sort === 0x03) types.push(undefined); // an exported type is a new type index
          out.exports.push({ name, kind: SORT_NAMES[sort] ?? `sort 0x${sort.toString(16)}` });
        });
        break;
      default:
        continue;
    }
    if (!r.done) throw new WasmFormatError(`trailing bytes in section ${s.id}`);
  }
  return out;
}

const INTERFACE_NAME = /^([a-z][a-z0-9-]*:[a-z][a-z0-9-]*\/[a-z][a-z0-9-]*)(?:@(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?)?$/;

const ALLOWED_SUMMARY = `sandboxed backends may import only warden:backend/{types,host,inference} (${SUPPORTED_TEXT}) and the WASI clocks, random, io and cli interfaces of the sandbox world`;

/** Why `item` is not an allowed import (the whole error message), or undefined if it is. */
function importRefusal(item: ComponentItem, what: string): string | undefined {
  const refuse = (why: string) => `${what} imports '${item.name}' (${why}); ${ALLOWED_SUMMARY}`;
  if (item.kind !== 'instance') return refuse(`a ${item.kind} import`);
  const m = INTERFACE_NAME.exec(item.name);
  if (!m) return refuse('not an interface of the sandbox world');
  const [, iface, major, minor, patch] = m;
  if (!ALLOWED_IMPORTS.includes(iface!)) return refuse('not in the sandbox world');
  if (iface!.startsWith('warden:')) {
    const version = `${major}.${minor}.${patch}`;
    if (!SUPPORTED_BACKEND_API_VERSIONS.includes(version)) return refuse(`this host serves ${SUPPORTED_TEXT}`);
    const since = BACKEND_INTERFACE_SINCE[iface!];
    if (since !== undefined && olderVersion(version, since)) return refuse(`${iface} is part of warden:backend from ${since} on`);
  } else if (major !== '0' || minor !== '2') {
    return refuse('this host implements WASI 0.2.x');
  }
  if (!item.members) return refuse('its type is not an instance type of the component, so its functions cannot be checked');
  for (const member of item.members) {
    const want = sandboxMemberKind(iface!, member.name);
    if (want === member.kind) continue;
    const why = want === undefined ? `${iface} has no such function or type in the sandbox world` : `a ${member.kind} here, a ${want} in the sandbox world`;
    return `${what} imports '${member.name}' from '${item.name}' (${why}); sandboxed backends may import only the functions and types the sandbox world defines`;
  }
  return undefined;
}

/**
 * Checks a component against the `sandbox` world; returns its surface.
 * @throws TritonError INVALID_ARG naming the first refused import or imported member, a missing
 *   or extra export, or saying why the binary is not a component.
 */
export function checkComponent(bytes: Uint8Array, what = 'model.wasm'): ComponentSurface {
  const surface = refusingMalformed(what, () => componentSurface(bytes));
  return checkSurface(surface, what);
}

/**
 * What `parse` returns; a binary it finds malformed is refused naming `what`.
 * @throws TritonError INVALID_ARG (componentMalformed) for a WasmFormatError; anything else `parse` throws
 */
export function refusingMalformed<T>(what: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof WasmFormatError) throw err.componentMalformed(what, e.message);
    throw e;
  }
}

/**
 * Checks a component's surface (as {@link componentSurface} read it, e.g. recorded earlier)
 * against the `sandbox` world as this host defines it now; returns it.
 * @throws TritonError INVALID_ARG as {@link checkComponent}
 */
export function checkSurface(surface: ComponentSurface, what = 'model.wasm'): ComponentSurface {
  for (const item of surface.imports) {
    const refusal = importRefusal(item, what);
    if (refusal !== undefined) throw err.componentRefused(refusal);
  }
  const backend = surface.exports.filter((e) => BACKEND_EXPORTS.includes(e.name) && e.kind === 'instance');
  if (backend.length !== 1) {
    const other = surface.exports.find((e) => e.name.startsWith('warden:backend/backend@'));
    if (other) throw err.componentBackendVersion(what, other.name, SUPPORTED_TEXT);
    throw err.componentNoBackend(what, BACKEND_EXPORT);
  }
  const extra = surface.exports.find((e) => e.name !== backend[0]!.name);
  if (extra) throw err.componentExtraExport(what, extra.name, backend[0]!.name);
  return surface;
}
