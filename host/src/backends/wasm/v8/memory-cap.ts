/**
 * Caps the linear memories a core module defines, by rewriting the maximum in its memory section
 * (section 5) before V8 compiles it. V8 then refuses `memory.grow` past the cap (the guest sees
 * -1), which Worker `resourceLimits` cannot do: they do not bound wasm memory.
 *
 * The rewrite is plain binary editing, but only the V8 engine needs it (wasmtime bounds memory
 * with StoreLimits at run time), so it lives with that engine.
 */
import * as err from '../sandbox.errors.js';
import { binaryKind, encodeUleb, Reader, sections, WASM_PAGE_BYTES, WasmFormatError } from '../binary.js';

/** Result of {@link capMemories}. */
export interface CappedModule {
  /** The module bytes (the input itself when it defines no memory). */
  bytes: Uint8Array;
  /** Initial size of each defined memory, in bytes. */
  initialBytes: number[];
}

/**
 * Rewrites every memory defined by a core module so that its maximum is at most `maxPages`
 * (64 KiB pages). Imported memories are left alone (they are some other module's memory).
 *
 * @param bytes core module
 * @param maxPages cap, in 64 KiB pages (>= 1)
 * @param what name for messages, e.g. 'model.wasm core module 0'
 * @throws TritonError INVALID_ARG if a memory's initial size already exceeds the cap,
 *   UNSUPPORTED for memory64 or shared memories, INVALID_ARG for a malformed module.
 */
export function capMemories(bytes: Uint8Array, maxPages: number, what: string): CappedModule {
  if (binaryKind(bytes) !== 'module') throw err.notCoreModule(what);
  let secs;
  try {
    secs = sections(bytes);
  } catch (e) {
    throw err.componentMalformed(what, (e as Error).message);
  }
  const mem = secs.find((s) => s.id === 5);
  if (!mem) return { bytes, initialBytes: [] };

  const r = new Reader(bytes, mem.contentStart, mem.end);
  const out: number[] = [];
  const initialBytes: number[] = [];
  try {
    const count = r.uleb();
    out.push(...encodeUleb(count));
    for (let i = 0; i < count; i++) {
      const flags = r.byte();
      if (flags & 0x04) throw err.memoryFeatureUnsupported(what, 'memory64 memories');
      if (flags & 0x02) throw err.memoryFeatureUnsupported(what, 'shared memories');
      if (flags & ~0x0b) throw new WasmFormatError(`unknown memory flags 0x${flags.toString(16)}`);
      const min = r.uleb();
      const max = flags & 0x01 ? r.uleb() : undefined;
      // custom page sizes (flag 0x08) carry a log2 page size; only the default 64 KiB is accepted
      if (flags & 0x08) throw err.memoryFeatureUnsupported(what, 'custom page sizes');
      if (min > maxPages) {
        throw err.memoryAtStartTooLarge(what, min * WASM_PAGE_BYTES, maxPages * WASM_PAGE_BYTES);
      }
      initialBytes.push(min * WASM_PAGE_BYTES);
      const newMax = max === undefined ? maxPages : Math.min(max, maxPages);
      out.push(0x01, ...encodeUleb(min), ...encodeUleb(newMax));
    }
    if (!r.done) throw new WasmFormatError('trailing bytes in the memory section');
  } catch (e) {
    if (e instanceof WasmFormatError) throw err.componentMalformed(what, e.message);
    throw e;
  }

  const header = [5, ...encodeUleb(out.length)];
  const result = new Uint8Array(bytes.length - (mem.end - mem.start) + header.length + out.length);
  result.set(bytes.subarray(0, mem.start), 0);
  result.set(header, mem.start);
  result.set(out, mem.start + header.length);
  result.set(bytes.subarray(mem.end), mem.start + header.length + out.length);
  return { bytes: result, initialBytes };
}
