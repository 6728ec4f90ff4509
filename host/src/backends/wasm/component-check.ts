/**
 * Load-time check of an uploaded component against the `sandbox` world of `warden:backend`
 * (wit/worlds.wit): the first thing done with a component, before jco or V8 see it.
 *
 * The component's top-level imports must all be in the allow-list ({@link ALLOWED_IMPORTS}:
 * `warden:backend/{types,host}@0.1.0` and the deny-by-default WASI subset, any `0.2.x`), and its
 * only export must be `warden:backend/backend@0.1.0`. Anything else — `wasi:filesystem`,
 * `wasi:sockets`, `wasi:http`, bare function imports, core-module imports — is refused with an
 * INVALID_ARG error naming the import.
 */
import { invalidArg, TritonError } from '../../core/errors.js';
import { binaryKind, Reader, sections, WasmFormatError } from './binary.js';

/** Version of the backend API this host implements. */
export const BACKEND_API_VERSION = '0.1.0';
/** The one export a sandboxed backend must have. */
export const BACKEND_EXPORT = `warden:backend/backend@${BACKEND_API_VERSION}`;

/**
 * Interfaces the host supplies: the imports of the `sandbox` world, without versions
 * (`warden:` interfaces must be `@0.1.0`, `wasi:` interfaces any `@0.2.x`). A test checks this
 * list against the world in wit/worlds.wit.
 */
export const ALLOWED_IMPORTS: readonly string[] = [
  'warden:backend/types',
  'warden:backend/host',
  'wasi:clocks/monotonic-clock',
  'wasi:clocks/wall-clock',
  'wasi:random/random',
  'wasi:random/insecure',
  'wasi:random/insecure-seed',
  'wasi:io/error',
  'wasi:io/poll',
  'wasi:io/streams',
  'wasi:cli/environment',
  'wasi:cli/exit',
  'wasi:cli/stdin',
  'wasi:cli/stdout',
  'wasi:cli/stderr',
  'wasi:cli/terminal-input',
  'wasi:cli/terminal-output',
  'wasi:cli/terminal-stdin',
  'wasi:cli/terminal-stdout',
  'wasi:cli/terminal-stderr',
];

/** Sort byte of an extern descriptor / export (component binary format). */
const SORT_NAMES: Record<number, string> = { 0x00: 'core module', 0x01: 'func', 0x02: 'value', 0x03: 'type', 0x04: 'component', 0x05: 'instance' };

/** One top-level import or export of a component. */
export interface ComponentItem {
  name: string;
  /** 'instance', 'func', 'type', 'component', 'core module', 'value'. */
  kind: string;
}

/** The top-level imports and exports of a component binary. */
export interface ComponentSurface {
  imports: ComponentItem[];
  exports: ComponentItem[];
}

/** Reads an `importname'` / `exportname'` (0x00 name | 0x01 name [version suffix]). */
function readExternName(r: Reader): string {
  const form = r.byte();
  if (form !== 0x00 && form !== 0x01) throw new WasmFormatError(`unknown extern name form 0x${form.toString(16)}`);
  const name = r.name();
  if (form === 0x01) r.name(); // version suffix (component-model 'vs'), informational
  return name;
}

/** Reads an `externdesc` and returns its kind name. */
function readExternDesc(r: Reader): string {
  const tag = r.byte();
  switch (tag) {
    case 0x00: {
      const core = r.byte();
      if (core !== 0x11) throw new WasmFormatError(`bad core module extern descriptor 0x${core.toString(16)}`);
      r.uleb();
      return 'core module';
    }
    case 0x01:
    case 0x04:
    case 0x05:
      r.uleb();
      return SORT_NAMES[tag]!;
    case 0x03: {
      const bound = r.byte();
      if (bound === 0x00) r.uleb();
      else if (bound !== 0x01) throw new WasmFormatError(`bad type bound 0x${bound.toString(16)}`);
      return 'type';
    }
    case 0x02:
      throw new WasmFormatError('value imports/exports are not supported');
    default:
      throw new WasmFormatError(`unknown extern descriptor 0x${tag.toString(16)}`);
  }
}

/**
 * Lists a component's top-level imports (section 10) and exports (section 11).
 * @throws WasmFormatError for a malformed binary or a core module.
 */
export function componentSurface(bytes: Uint8Array): ComponentSurface {
  const kind = binaryKind(bytes);
  if (kind === 'module') throw new WasmFormatError('this is a core WebAssembly module, not a component (make one with `jco new` / wasm-tools component new)');
  if (kind !== 'component') throw new WasmFormatError('not a WebAssembly component (bad magic or version)');
  const out: ComponentSurface = { imports: [], exports: [] };
  for (const s of sections(bytes)) {
    if (s.id !== 10 && s.id !== 11) continue;
    const r = new Reader(bytes, s.contentStart, s.end);
    const count = r.uleb();
    for (let i = 0; i < count; i++) {
      const name = readExternName(r);
      if (s.id === 10) {
        out.imports.push({ name, kind: readExternDesc(r) });
      } else {
        const sort = r.byte();
        if (sort === 0x00) r.byte(); // core sort
        r.uleb(); // index
        const hasType = r.byte();
        if (hasType === 0x01) readExternDesc(r);
        else if (hasType !== 0x00) throw new WasmFormatError('bad export type ascription');
        out.exports.push({ name, kind: SORT_NAMES[sort] ?? `sort 0x${sort.toString(16)}` });
      }
    }
    if (!r.done) throw new WasmFormatError(`trailing bytes in ${s.id === 10 ? 'import' : 'export'} section`);
  }
  return out;
}

const INTERFACE_NAME = /^([a-z][a-z0-9-]*:[a-z][a-z0-9-]*\/[a-z][a-z0-9-]*)(?:@(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?)?$/;

/** Why `name` is not an allowed import, or undefined if it is. */
function importRefusal(item: ComponentItem): string | undefined {
  if (item.kind !== 'instance' && item.kind !== 'type') return `a ${item.kind} import`;
  const m = INTERFACE_NAME.exec(item.name);
  if (!m) return 'not an interface of the sandbox world';
  const [, iface, major, minor, patch] = m;
  if (!ALLOWED_IMPORTS.includes(iface!)) return 'not in the sandbox world';
  if (iface!.startsWith('warden:')) {
    if (`${major}.${minor}.${patch}` !== BACKEND_API_VERSION) return `this host implements warden:backend@${BACKEND_API_VERSION}`;
  } else if (major !== '0' || minor !== '2') {
    return 'this host implements WASI 0.2.x';
  }
  return undefined;
}

/**
 * Checks a component against the `sandbox` world; returns its surface.
 * @throws TritonError INVALID_ARG naming the first refused import / missing or extra export,
 *   or saying why the binary is not a component.
 */
export function checkComponent(bytes: Uint8Array, what = 'model.wasm'): ComponentSurface {
  let surface: ComponentSurface;
  try {
    surface = componentSurface(bytes);
  } catch (e) {
    if (e instanceof WasmFormatError) throw invalidArg(`${what}: ${e.message}`);
    throw e;
  }
  for (const item of surface.imports) {
    const why = importRefusal(item);
    if (why !== undefined) {
      throw new TritonError(
        'INVALID_ARG',
        `${what} imports '${item.name}' (${why}); sandboxed backends may import only warden:backend/{types,host}@${BACKEND_API_VERSION} and the WASI clocks, random, io and cli interfaces of the sandbox world`,
      );
    }
  }
  const backend = surface.exports.filter((e) => e.name === BACKEND_EXPORT && e.kind === 'instance');
  if (backend.length !== 1) throw invalidArg(`${what} does not export '${BACKEND_EXPORT}' (the backend interface of the sandboxed-backend world)`);
  const extra = surface.exports.find((e) => e.name !== BACKEND_EXPORT);
  if (extra) throw invalidArg(`${what} exports '${extra.name}'; a sandboxed backend exports only '${BACKEND_EXPORT}'`);
  return surface;
}
