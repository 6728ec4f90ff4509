/**
 * Removes a top-level instance export from a component binary: componentize-py (Python guests)
 * leaves its pre-initialisation interface `exports` exported after it ran it at build time, and
 * the server admits a component that exports `warden:backend/backend` only (backends/wasm/
 * component-check.ts).
 *
 * An export makes a new index in its sort's index space, so removing it shifts every later
 * instance index: references to the removed export's own index are pointed at the instance it
 * exported, later ones move down by one, in every place a component instance index occurs at the
 * top level (instance sections' arguments and inline exports, aliases of instance exports,
 * exports). Nested components have index spaces of their own and are copied as they are; the
 * top-level `component-name` section, whose labels would no longer match, is dropped. The
 * engines validate the result as they validate every upload: a mistake here could fail a load,
 * never pass a component the checks refuse.
 */
import { encodeUleb, Reader, sections, WasmFormatError } from '../backends/wasm/binary.js';

const SORT_CORE = 0x00;
const SORT_INSTANCE = 0x05;

/** Copies bytes read from `r` between two positions into `out`. */
function copy(out: number[], bytes: Uint8Array, from: number, to: number): void {
  for (let i = from; i < to; i++) out.push(bytes[i]!);
}

/** Reads a name (length + UTF-8) and copies it. */
function copyName(r: Reader, out: number[]): string {
  const start = r.pos;
  const name = r.name();
  copy(out, r.bytes, start, r.pos);
  return name;
}

/** Reads an `exportname'` / `importname'` (0x00 name | 0x01 name version-suffix) and copies it. */
function copyExternName(r: Reader, out: number[]): string {
  const form = r.byte();
  if (form !== 0x00 && form !== 0x01) throw new WasmFormatError(`unknown extern name form 0x${form.toString(16)}`);
  out.push(form);
  const name = copyName(r, out);
  if (form === 0x01) copyName(r, out);
  return name;
}

/** Reads a `sortidx`, copying it with an instance index mapped by `map`. @returns the sort */
function copySortIdx(r: Reader, out: number[], map: (i: number) => number): number {
  const sort = r.byte();
  out.push(sort);
  if (sort === SORT_CORE) out.push(r.byte());
  const idx = r.uleb();
  out.push(...encodeUleb(sort === SORT_INSTANCE ? map(idx) : idx));
  return sort;
}

/** Reads an `externdesc` and copies it. @returns its tag (0x05: an instance) */
function copyExternDesc(r: Reader, out: number[]): number {
  const start = r.pos;
  const tag = r.byte();
  if (tag === 0x00) {
    r.byte();
    r.uleb();
  } else if (tag === 0x01 || tag === 0x04 || tag === 0x05) r.uleb();
  else if (tag === 0x03) {
    if (r.byte() === 0x00) r.uleb();
  } else throw new WasmFormatError(`unsupported extern descriptor 0x${tag.toString(16)}`);
  copy(out, r.bytes, start, r.pos);
  return tag;
}

/** A vector of `count` items, each copied by `item`, re-encoded with `count` first. */
function copyVec(r: Reader, item: () => void): void {
  const count = r.uleb();
  for (let i = 0; i < count; i++) item();
}

/**
 * `bytes` without its top-level instance export `name` (unchanged when it has none).
 * @throws WasmFormatError for a malformed component, or when `name` exports something other than
 *   an instance
 */
export function stripComponentExport(bytes: Uint8Array, name: string): Uint8Array {
  /** Component instances defined so far (the next instance index). */
  let instances = 0;
  /** Once removed: the index its export made, and the instance it exported. */
  let removed: { made: number; target: number } | undefined;
  const map = (i: number): number => (removed === undefined || i < removed.made ? i : i === removed.made ? removed.target : i - 1);
  const parts: Uint8Array[] = [bytes.subarray(0, 8)];
  for (const s of sections(bytes)) {
    // the names section labels indices by their old numbers: dropped (names are for debuggers only)
    if (s.id === 0 && new Reader(bytes, s.contentStart, s.end).name() === 'component-name') continue;
    if (![5, 6, 10, 11].includes(s.id)) {
      parts.push(bytes.subarray(s.start, s.end));
      continue;
    }
    const r = new Reader(bytes, s.contentStart, s.end);
    const body: number[] = [];
    let kept = 0;
    copyVec(r, () => {
      const item: number[] = [];
      let keep = true;
      switch (s.id) {
        case 10: // imports
          copyExternName(r, item);
          if (copyExternDesc(r, item) === 0x05) instances++;
          break;
        case 6: {
          // aliases: sort, then target 0x00 (export of a component instance), 0x01 (core), 0x02 (outer)
          const sort = r.byte();
          item.push(sort);
          if (sort === SORT_CORE) item.push(r.byte());
          const target = r.byte();
          item.push(target);
          if (target === 0x00) {
            item.push(...encodeUleb(map(r.uleb())));
            copyName(r, item);
          } else if (target === 0x01) {
            item.push(...encodeUleb(r.uleb()));
            copyName(r, item);
          } else if (target === 0x02) {
            item.push(...encodeUleb(r.uleb()), ...encodeUleb(r.uleb()));
          } else throw new WasmFormatError(`unknown alias target 0x${target.toString(16)}`);
          if (sort === SORT_INSTANCE) instances++;
          break;
        }
        case 5: {
          // instances: 0x00 instantiate(component, args) | 0x01 inline exports
          const form = r.byte();
          item.push(form);
          if (form === 0x00) {
            item.push(...encodeUleb(r.uleb()));
            const n = r.uleb();
            item.push(...encodeUleb(n));
            for (let i = 0; i < n; i++) {
              copyName(r, item);
              copySortIdx(r, item, map);
            }
          } else if (form === 0x01) {
            const n = r.uleb();
            item.push(...encodeUleb(n));
            for (let i = 0; i < n; i++) {
              copyExternName(r, item);
              copySortIdx(r, item, map);
            }
          } else throw new WasmFormatError(`unknown instance form 0x${form.toString(16)}`);
          instances++;
          break;
        }
        case 11: {
          // exports: name, sortidx, optional type ascription
          const n = copyExternName(r, item);
          const sortAt = r.pos;
          const sort = r.byte();
          if (sort === SORT_CORE) r.byte();
          const target = r.uleb();
          r.pos = sortAt;
          copySortIdx(r, item, map);
          const ascribed = r.byte();
          item.push(ascribed);
          if (ascribed === 0x01) copyExternDesc(r, item);
          else if (ascribed !== 0x00) throw new WasmFormatError('bad export type ascription');
          if (n === name && removed === undefined) {
            if (sort !== SORT_INSTANCE) throw new WasmFormatError(`export '${name}' is not an instance`);
            removed = { made: instances, target };
            keep = false;
          }
          if (sort === SORT_INSTANCE) instances++;
          break;
        }
      }
      if (keep) {
        body.push(...item);
        kept++;
      }
    });
    if (!r.done) throw new WasmFormatError(`trailing bytes in section ${s.id}`);
    if (kept === 0) continue; // a section left empty is dropped
    const content = [...encodeUleb(kept), ...body];
    parts.push(Uint8Array.from([s.id, ...encodeUleb(content.length), ...content]));
  }
  return removed === undefined ? bytes : Buffer.concat(parts);
}
